"""The symbol parse worker's own side: a plain Python process (`python -c`, started with
`subprocess` by `process.Child`) that extracts symbols for its parent over two pipes.

Requests arrive on its stdin and answers leave on its stdout as frames: a 4-byte length, then a
`marshal`led tuple (plain tuples, dicts and strings: fast to load, and nothing in them runs
code). A request is (job id, job name, arguments); an answer is (job id, True, result) or (job
id, False, "Type: message") when the job raised. Jobs run one after the other, in order.

- stdin and stdout are moved to other descriptors first and the standard ones put on
  /dev/null: nothing the extraction libraries print can reach the pipes;
- SIGINT is ignored (the parent decides when it stops);
- it exits when its stdin closes (the parent stopped it, or died) or its answers cannot be
  written (the parent died meanwhile).
"""

from __future__ import annotations

import marshal
import os
import signal
import struct
from collections.abc import Callable
from pathlib import Path
from typing import IO, cast

from agent_lsp.symbols.disk import read_disk_file
from agent_lsp.symbols.extract import extract_rows
from agent_lsp.symbols.model import Engine, Language, Row

HEADER = struct.Struct(">I")

# What crosses the pipe: plain tuples unpickle several times faster than the dataclasses.
Payload = tuple[Language, str, tuple[Row, ...], dict[str, int]]  # a text's symbols
# a disk file's symbols: its definitions' rows and identifier counts each `marshal`led (kept
# packed by the parent until read: `packed.py`), and the names it defines (for the name table)
Packed = tuple[Language, str, bytes, bytes, tuple[str, ...]]
Hashed = tuple[Packed | None, bytes]  # `disk.Indexed` as it crosses the pipe
PathJob = tuple[str, Language, bytes | None]  # path, language, expected digest


def send(stream: IO[bytes], message: object) -> None:
    data = marshal.dumps(message)  # pyright: ignore[reportArgumentType]
    stream.write(HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def receive(stream: IO[bytes]) -> object | None:
    """The next frame's message; None at the end of the stream (or a frame cut short)."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (length,) = HEADER.unpack(head)
    body = stream.read(length)
    if len(body) < length:
        return None
    return marshal.loads(body)


def extract_text(text: str, language: Language, engine: Engine, key: str | None = None) -> Payload:
    used, rows, counts = extract_rows(text, language, engine, key=key, interned=False)
    return language, used, tuple(rows), counts


def index_paths(files: list[PathJob], engine: Engine) -> list[Hashed | None]:
    """Each file read, hashed and (unless its digest is the one expected) extracted, with no
    `Definition` built: the parent keeps them packed."""
    out: list[Hashed | None] = []
    for path, language, expected in files:
        read = read_disk_file(Path(path), expected)
        if read is None:
            out.append(None)
            continue
        text, found = read
        if text is None:
            out.append((None, found))
            continue
        used, rows, counts = extract_rows(text, language, engine, key=path, interned=False)
        packed = (
            language,
            used,
            marshal.dumps(tuple(rows)),  # pyright: ignore[reportArgumentType]
            marshal.dumps(counts),
            tuple(row[0] for row in rows),
        )
        out.append((packed, found))
    return out


JOBS: dict[str, Callable[..., object]] = {"text": extract_text, "paths": index_paths}


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        while (message := receive(requests)) is not None:
            job, name, args = cast(tuple[int, str, tuple[object, ...]], message)
            try:
                answer: tuple[int, bool, object] = (job, True, JOBS[name](*args))
            except Exception as exc:  # the parent does that job itself, and meets it there
                answer = (job, False, f"{type(exc).__name__}: {exc}")
            send(answers, answer)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    os._exit(0)  # nothing to clean up; skip the interpreter's teardown


if __name__ == "__main__":
    main()
