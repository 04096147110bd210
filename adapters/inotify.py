"""Linux inotify through ctypes (no dependency): one non-blocking instance, watches per folder.

`Inotify.open()` returns None where there is none (another OS, no libc symbol, the per-user
instance limit reached): the caller then walks the tree as before."""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from typing import NamedTuple

__all__ = ["Event", "Inotify"]

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)
_READ_SIZE = 1 << 16


class Event(NamedTuple):
    wd: int
    mask: int
    name: str


class Inotify:
    """One inotify file descriptor; `read()` never blocks."""

    def __init__(self, fd: int, libc: ctypes.CDLL) -> None:
        self.fd = fd
        self._add = libc.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._add.restype = ctypes.c_int
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
        self._rm.restype = ctypes.c_int

    @classmethod
    def open(cls) -> Inotify | None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init = libc.inotify_init1
        except (OSError, AttributeError):
            return None
        init.argtypes = [ctypes.c_int]
        init.restype = ctypes.c_int
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        return None if fd < 0 else cls(fd, libc)

    def add(self, path: str, mask: int) -> int:
        """The watch descriptor of `path` (the same one for a folder already watched); raises
        `OSError` (ENOENT: gone; ENOSPC: the watch limit; ENOTDIR with IN_ONLYDIR)."""
        wd = self._add(self.fd, os.fsencode(path), mask)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return wd

    def remove(self, wd: int) -> None:
        self._rm(self.fd, wd)  # an error means it is gone already

    def read(self) -> list[Event]:
        """Every event queued so far."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                return events
            except OSError as error:
                if error.errno == errno.EINTR:
                    continue
                raise
            if not data:
                return events
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                start = offset + _HEADER.size
                name = data[start : start + size].split(b"\0", 1)[0]
                events.append(Event(wd, mask, os.fsdecode(name)))
                offset = start + size

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
