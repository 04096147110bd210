"""The stdio transport: the event loop reads a pipe itself; other stdins use pygls' reader."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

from agent_lsp.lsp.stdio import loop_readable


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def session(root: Path) -> bytes:
    return b"".join(
        [
            frame(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}},
                }
            ),
            frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
            frame({"jsonrpc": "2.0", "method": "exit"}),
        ]
    )


def answers(out: bytes) -> dict[int, dict[str, object]]:
    found: dict[int, dict[str, object]] = {}
    while out:
        header, _, rest = out.partition(b"\r\n\r\n")
        lengths = [h for h in header.split(b"\r\n") if h.lower().startswith(b"content-length:")]
        length = int(lengths[0].split(b":")[1])
        message = json.loads(rest[:length])
        out = rest[length:]
        if "id" in message:
            found[message["id"]] = message
    return found


def serve(
    tmp_path: Path, *, stdin: BinaryIO | None = None, data: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`agent-lsp serve` reading `stdin` (a file), or `data` through a pipe."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_LSP_"))}
    return subprocess.run(
        [sys.executable, "-m", "agent_lsp", "serve"],
        stdin=stdin,
        input=data,
        capture_output=True,
        cwd=tmp_path,
        env={**env, "HOME": str(tmp_path)},
        timeout=60,
        check=False,
    )


def test_pipe_is_read_by_the_loop(tmp_path: Path) -> None:
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb", closefd=False) as into, (tmp_path / "o").open("wb") as out:
            assert loop_readable(into, out)
            assert not loop_readable(out, out)  # a regular file
    finally:
        os.close(read)
        os.close(write)


def test_a_socket_shared_with_stdout_is_not(tmp_path: Path) -> None:
    left, right = socket.socketpair()
    try:
        with left.makefile("rb") as into, left.makefile("wb") as out:
            assert not loop_readable(into, out)  # one open file both ways
        with left.makefile("rb") as into, (tmp_path / "o").open("wb") as out:
            assert loop_readable(into, out)
    finally:
        left.close()
        right.close()


def test_serves_a_session_over_a_pipe(tmp_path: Path) -> None:
    proc = serve(tmp_path, data=session(tmp_path))
    got = answers(proc.stdout)
    assert proc.returncode == 0, proc.stderr.decode()
    result = got[1]["result"]
    assert isinstance(result, dict) and result["serverInfo"]["name"] == "agent-lsp"  # pyright: ignore[reportIndexIssue, reportUnknownMemberType]
    assert got[2]["result"] is None


def test_serves_a_session_from_a_regular_file(tmp_path: Path) -> None:
    messages = tmp_path / "in.lsp"
    messages.write_bytes(session(tmp_path))
    with messages.open("rb") as stdin:
        proc = serve(tmp_path, stdin=stdin)
    got = answers(proc.stdout)
    assert proc.returncode == 0, proc.stderr.decode()
    assert set(got) == {1, 2}
    assert got[2]["result"] is None


def test_a_truncated_body_ends_the_server_cleanly(tmp_path: Path) -> None:
    cut = session(tmp_path)[:-10]  # exit's body is cut short, then the pipe closes
    proc = serve(tmp_path, data=cut)
    got = answers(proc.stdout)
    assert set(got) == {1, 2}  # everything before the cut was answered
    assert b"Traceback" not in proc.stderr
