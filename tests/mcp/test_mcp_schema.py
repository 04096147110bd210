"""A tool's schema is the server's: the model's arguments are checked against it in
agent-lsp's own process, before anyone is asked — so nothing in it may reach out. A `$ref` to a
URL or a `file://` path is refused, never fetched (a server without the network would have
one, and what it read at start-up would leave in the URL); local references still work; a
schema or arguments too large to check are refused."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.tools.mcp_tools import MAX_ARGUMENT_CHARS, check_arguments, schema_problems


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server answering every GET with a schema; the paths it was asked for."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"type": "integer"}')

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", hits
    finally:
        server.shutdown()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_reference_outside_the_schema_is_refused_not_fetched(
    listener: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, hits = listener
    local = tmp_path / "schema.json"
    local.write_text('{"type": "integer"}')
    for ref in (f"{url}/roadmap-canary", local.as_uri(), "other.json"):
        schema = {
            "$id": f"{url}/base/" if ref == "other.json" else "urn:tool",
            "type": "object",
            "properties": {"q": {"$ref": ref}},
        }
        problems = schema_problems(schema, {"q": "x"})
        assert len(problems) == 1 and "outside itself: not followed" in problems[0], problems
    assert hits == []


def test_a_local_reference_is_followed() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/word"}},
        "$defs": {"word": {"type": "string"}},
    }
    assert schema_problems(schema, {"q": "x"}) == []
    assert schema_problems(schema, {"q": 1}) == ["q: 1 is not of type 'string'"]


async def test_what_is_too_large_to_check_is_refused() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    big = {"q": "x" * MAX_ARGUMENT_CHARS}
    (problem,) = await check_arguments(schema, big)
    assert problem.startswith("the arguments are too large to check (")
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(20_000)}}
    (problem,) = await check_arguments(huge, {})
    assert problem.startswith("its schema is too large to check (")
    assert await check_arguments(schema, {"q": 1}) == ["q: 1 is not of type 'string'"]
