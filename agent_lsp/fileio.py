"""File helpers: atomic writes, appends, content hashes, and text that keeps its bytes.

A project file is read in the encoding it is in and written back in the same one, so that
every byte outside an edit stays as it was. What is told apart (`detect_encoding`): a UTF-8,
UTF-16 or UTF-32 byte-order mark; valid UTF-8; otherwise a single-byte file with no UTF-8
sequence in it, read as Windows-1252 when it uses bytes 0x80-0x9F (curly quotes, the euro
sign) and as Latin-1 otherwise. A NUL byte (without a UTF-16/32 mark) means binary; UTF-8
sequences mixed with bytes that are not UTF-8 mean undecodable: both are shown with
replacement characters and never written back (`EncodingError`). Line endings are left as they
are: text is read and written with no newline translation.

Writes under a workspace's `.agent-lsp/` never follow a link: from the folder holding
`.agent-lsp` (or the `within` folder a caller names) down to the file, every component must be
a real folder and the file itself no link. Each folder is opened relative to the one above it
with `O_NOFOLLOW` (where the OS has `dir_fd`), so a link swapped in between is refused too.
A refused write raises `UnsafePathError` (an `OSError`), saying which part is a link."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from agent_lsp.errors import WorkspaceError

AGENT_DIR = ".agent-lsp"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and bool(_NOFOLLOW)


class UnsafePathError(OSError):
    """A write refused: a link (or something that is not a folder) on the way to the file."""


class EncodingError(WorkspaceError):
    """Text that cannot be written in its file's encoding, or a file that is not text."""


@dataclass(frozen=True)
class TextEncoding:
    name: str  # as told to the user and the model
    codec: str  # Python's codec for the bytes after the mark
    bom: bytes = b""


UTF8 = TextEncoding("UTF-8", "utf-8")
_BOMS = (  # longest first: a UTF-32 LE mark starts like a UTF-16 LE one
    TextEncoding("UTF-32 LE with BOM", "utf-32-le", b"\xff\xfe\x00\x00"),
    TextEncoding("UTF-32 BE with BOM", "utf-32-be", b"\x00\x00\xfe\xff"),
    TextEncoding("UTF-8 with BOM", "utf-8", b"\xef\xbb\xbf"),
    TextEncoding("UTF-16 LE with BOM", "utf-16-le", b"\xff\xfe"),
    TextEncoding("UTF-16 BE with BOM", "utf-16-be", b"\xfe\xff"),
)
_CP1252 = TextEncoding("Windows-1252", "cp1252")
_LATIN1 = TextEncoding("Latin-1", "latin-1")
_C1 = re.compile(rb"[\x80-\x9f]")
_DECODED = re.compile("[\u0080-\udc7f\udd00-\U0010ffff]")  # not an escaped stray byte
_SNIFF = 8000  # bytes looked at for a NUL (as git does)
_BOM_BYTES = tuple(enc.bom for enc in _BOMS)


def detect_encoding(data: bytes) -> TextEncoding | None:
    """The encoding `data` is in, by the rules above; None: binary or undecodable."""
    for enc in _BOMS:
        if data.startswith(enc.bom):
            try:
                data[len(enc.bom) :].decode(enc.codec)
            except UnicodeDecodeError:
                return None
            return enc
    if b"\x00" in data[:_SNIFF]:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return UTF8
    loose = data.decode("utf-8", "surrogateescape")
    if _DECODED.search(loose):
        return None  # UTF-8 sequences and stray bytes: mixed encodings
    if _C1.search(data):
        try:
            data.decode("cp1252")
        except UnicodeDecodeError:
            return _LATIN1  # bytes Windows-1252 leaves undefined: Latin-1 keeps them
        return _CP1252
    return _LATIN1


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8000 bytes (of `data`, which may be just those), without a
    UTF-16/32 byte-order mark."""
    wide = any(data.startswith(enc.bom) for enc in _BOMS if enc.codec != "utf-8")
    return not wide and b"\x00" in data[:_SNIFF]


def not_text(data: bytes) -> str:
    """Why `data` is not edited as text (for a file `detect_encoding` gives None for)."""
    if is_binary(data):
        return f"binary file, {len(data)} bytes"
    return f"not in one text encoding (UTF-8 mixed with other bytes), {len(data)} bytes"


def decode_text(data: bytes) -> tuple[str, TextEncoding | None]:
    """`data` as text in its encoding (without the byte-order mark); for a binary or
    undecodable file, UTF-8 with replacement characters and None."""
    if not data.startswith(_BOM_BYTES) and b"\x00" not in data[:_SNIFF]:
        try:  # what `detect_encoding` finds first for most files, decoded once
            return data.decode("utf-8"), UTF8
        except UnicodeDecodeError:
            pass
    enc = detect_encoding(data)
    if enc is None:
        return data.decode("utf-8", errors="replace"), None
    return data[len(enc.bom) :].decode(enc.codec), enc


def encode_text(text: str, enc: TextEncoding, name: str = "the file") -> bytes:
    """`text` in `enc` (with its mark); `EncodingError` naming the first character that does
    not fit, and its line."""
    try:
        return enc.bom + text.encode(enc.codec)
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        line = text.count("\n", 0, exc.start) + 1
        raise EncodingError(
            f"{name} is {enc.name} and the new text has {bad!r} (U+{ord(bad):04X}, line {line}), "
            f"which {enc.name} cannot hold; nothing written. Write it without that character "
            "(an ASCII spelling or an escape the language allows)"
        ) from exc


def file_encoding(path: Path, name: str | None = None) -> TextEncoding:
    """The encoding of the file at `path` (UTF-8 if there is none yet); `EncodingError` for a
    binary or undecodable file, which agent-lsp does not rewrite."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return UTF8
    enc = detect_encoding(data)
    if enc is None:
        raise EncodingError(f"{name or path.name}: {not_text(data)}; agent-lsp does not rewrite it")
    return enc


def guarded_top(path: Path) -> Path | None:
    """The folder holding the first `.agent-lsp` component of `path` (None: none there)."""
    parts = path.parts
    if AGENT_DIR not in parts:
        return None
    return Path(*parts[: parts.index(AGENT_DIR)])  # Path() for a relative `.agent-lsp/...`


def _refused(path: Path, part: str) -> UnsafePathError:
    return UnsafePathError(
        errno.ELOOP,
        f"{part} is a link (or not a folder); agent-lsp does not write through links "
        "(remove the link)",
        str(path),
    )


def _parts(top: Path, folder: Path) -> tuple[str, ...]:
    try:
        rel = folder.relative_to(top)
    except ValueError as exc:
        raise UnsafePathError(errno.EXDEV, f"not inside {top}", str(folder)) from exc
    if any(p in ("..", "") for p in rel.parts):
        raise UnsafePathError(errno.EINVAL, "'..' in a guarded path", str(folder))
    return rel.parts


@contextlib.contextmanager
def _folder_fd(top: Path, folder: Path, create: bool) -> Generator[int]:
    """A descriptor of `folder`, reached from `top` one folder at a time, links refused."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    fd = os.open(top, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        walked = top
        for part in _parts(top, folder):
            walked = walked / part
            try:
                nfd = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                try:
                    nfd = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    raise _refused(walked, part) from exc
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _refused(walked, part) from exc
                raise
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def _check_components(top: Path, path: Path, create: bool) -> None:
    """Without `dir_fd` (Windows): each component checked with lstat, folders created."""
    walked = top
    for part in _parts(top, path):
        walked = walked / part
        try:
            st = os.lstat(walked)
        except FileNotFoundError:
            if walked == path or not create:
                return
            with contextlib.suppress(FileExistsError):
                walked.mkdir()
            continue
        is_junction = getattr(walked, "is_junction", lambda: False)()
        if stat.S_ISLNK(st.st_mode) or is_junction or (walked != path and not walked.is_dir()):
            raise _refused(walked, part)


def ensure_dir(folder: Path, within: Path | None = None) -> None:
    """`mkdir -p`, refusing links below `within` (default: below the `.agent-lsp` holder)."""
    top = within if within is not None else guarded_top(folder)
    if top is None:
        folder.mkdir(parents=True, exist_ok=True)
    elif _DIR_FD:
        with _folder_fd(top, folder, create=True):
            pass
    else:
        _check_components(top, folder, create=True)
        folder.mkdir(exist_ok=True)


def _atomic_write_at(dfd: int, path: Path, data: bytes) -> None:
    name = path.name
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        mode = None
    else:
        if stat.S_ISLNK(st.st_mode):
            raise _refused(path, name)
        mode = st.st_mode & 0o7777
    tmp = f".{name}.{os.urandom(6).hex()}.agent-lsp.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dfd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def atomic_write(path: Path, text: str, within: Path | None = None) -> None:
    """Write `text` to `path` through a temporary file and a rename, keeping the file's mode.
    Under `.agent-lsp/` (or below `within`) no component may be a link (`UnsafePathError`) and
    the text is UTF-8; elsewhere (a project file) it is written in the encoding the file is in
    (`EncodingError` if it cannot hold the text, or the file is binary or undecodable)."""
    top = within if within is not None else guarded_top(path)
    if top is None:
        enc = file_encoding(path)
        atomic_write_bytes(path, encode_text(text, enc, path.name))
        return
    atomic_write_bytes(path, text.encode("utf-8"), within=top)


def atomic_write_bytes(path: Path, data: bytes, within: Path | None = None) -> None:
    """`atomic_write` of bytes, exactly as given."""
    top = within if within is not None else guarded_top(path)
    if top is not None and _DIR_FD:
        with _folder_fd(top, path.parent, create=True) as dfd:
            _atomic_write_at(dfd, path, data)
        return
    if top is not None:
        _check_components(top, path, create=True)
    _plain_atomic_write(path, data)


def _plain_atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".agent-lsp.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise


def open_append(path: Path, within: Path | None = None) -> IO[str]:
    """`path` opened for appending text (created if missing); under `.agent-lsp/` (or below
    `within`) never through a link (`UnsafePathError`)."""
    top = within if within is not None else guarded_top(path)
    if top is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("a", encoding="utf-8")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
    if _DIR_FD:
        with _folder_fd(top, path.parent, create=True) as dfd:
            try:
                fd = os.open(path.name, flags, 0o600, dir_fd=dfd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK):
                    raise _refused(path, path.name) from exc
                raise
    else:
        _check_components(top, path, create=True)
        fd = os.open(path, flags, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def read_disk_text(path: Path) -> str:
    """The file's text in its own encoding (see the module docstring), line endings as they
    are; a binary or undecodable file with replacement characters."""
    return decode_text(path.read_bytes())[0]
