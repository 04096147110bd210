"""Run ``go test -json`` keeping its whole event stream in a file (script, stdlib only).

Usage: ``python gojson_tee.py EVENTS_FILE go test -json ...``. Every line the command prints
(events and the plain build errors go writes to stderr) goes to EVENTS_FILE in order; stdout
gets the human text (each event's ``Output``), which the caller may cap. The exit code is the
command's. The file stays complete even when a test prints megabytes."""

from __future__ import annotations

import json
import subprocess
import sys


def _human(line: bytes) -> bytes:
    if line.startswith(b"{"):
        try:
            data = json.loads(line)
        except ValueError:
            return line
        if isinstance(data, dict):
            output = data.get("Output")  # pyright: ignore[reportUnknownMemberType]
            return str(output).encode() if output else b""
    return line


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: gojson_tee.py EVENTS_FILE COMMAND...", file=sys.stderr)
        return 2
    events, command = argv[1], argv[2:]
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        print(f"{command[0]}: {exc}", file=sys.stderr)
        return 127
    assert proc.stdout is not None
    out = sys.stdout.buffer
    with open(events, "wb") as sink:  # noqa: PTH123
        for line in proc.stdout:
            sink.write(line)
            human = _human(line)
            if human:
                out.write(human)
                out.flush()
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
