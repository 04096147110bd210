"""Benchmark agent-lsp's language server against a bare pygls server, side by side in one run.

Figures (see bench/README.md): start-up time to the `initialize` response, idle resident memory
with a big buffer open, textDocument/codeAction latency (median, p99) with a 5,000-line and a
20,000-line buffer, and the import-time difference between the two servers.

The servers are driven by the small asyncio JSON-RPC client below (Content-Length framing over
the child's stdin/stdout); every wait has a timeout and every child is killed at the end.

Run: `bench/run.sh` (or `.venv/bin/python bench/lsp_bench.py --help`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_PATH = BENCH_DIR / "results" / "lsp.json"

OURS, BARE = "ours", "bare"
NO_MODEL_URL = "http://127.0.0.1:9/v1"  # discard port: nothing listens, nothing is contacted
STREAM_LIMIT = 16 * 1024 * 1024

Json = dict[str, Any]


# --------------------------------------------------------------------------- JSON-RPC client


class ServerError(RuntimeError):
    """The server died, answered with an error, or did not answer in time."""


@dataclass
class Response:
    result: Any
    sent_ns: int
    received_ns: int

    @property
    def elapsed_ms(self) -> float:
        return (self.received_ns - self.sent_ns) / 1e6


@dataclass
class LspClient:
    """One language-server child process and a minimal LSP client talking to it over stdio."""

    name: str
    proc: asyncio.subprocess.Process
    spawned_ns: int
    pending: dict[int, asyncio.Future[tuple[Json, int]]] = field(default_factory=dict)
    notifications: dict[str, int] = field(default_factory=dict)
    stderr_tail: bytearray = field(default_factory=bytearray)
    next_id: int = 1
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    dead: str | None = None

    @classmethod
    async def spawn(
        cls, name: str, argv: Sequence[str], env: dict[str, str], cwd: Path
    ) -> LspClient:
        spawned_ns = time.perf_counter_ns()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            limit=STREAM_LIMIT,
        )
        client = cls(name, proc, spawned_ns)
        client.tasks = [
            asyncio.create_task(client._read_messages()),
            asyncio.create_task(client._drain_stderr()),
        ]
        return client

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _write(self, message: Json) -> None:
        if self.dead is not None or self.proc.stdin is None or self.proc.stdin.is_closing():
            raise ServerError(f"{self.name}: cannot write, server is gone ({self.dead})")
        body = json.dumps(message, separators=(",", ":")).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def request(self, method: str, params: Any, timeout: float = 10.0) -> Response:
        """Send a request and wait for its response; `received_ns` is taken when it was read."""
        request_id = self.next_id
        self.next_id += 1
        future: asyncio.Future[tuple[Json, int]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        sent_ns = time.perf_counter_ns()
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            message, received_ns = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise ServerError(
                f"{self.name}: no response to {method} within {timeout} s{self._stderr_hint()}"
            ) from None
        finally:
            self.pending.pop(request_id, None)
        if "error" in message:
            raise ServerError(f"{self.name}: {method} failed: {message['error']}")
        return Response(message.get("result"), sent_ns, received_ns)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _read_messages(self) -> None:
        reader = self.proc.stdout
        assert reader is not None
        try:
            while True:
                header = await reader.readuntil(b"\r\n\r\n")
                length = _content_length(header)
                body = await reader.readexactly(length)
                received_ns = time.perf_counter_ns()
                self._dispatch(json.loads(body), received_ns)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self._die(f"stdout closed ({type(exc).__name__})")
        except Exception as exc:
            self._die(f"protocol error: {exc!r}")
            raise

    def _dispatch(self, message: Json, received_ns: int) -> None:
        method = message.get("method")
        if method is None:  # a response to one of our requests
            future = self.pending.get(message.get("id", -1))
            if future is not None and not future.done():
                future.set_result((message, received_ns))
        elif "id" in message:  # a request from the server: answer like an agreeable editor
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": _reply_to(message)})
        else:
            self.notifications[method] = self.notifications.get(method, 0) + 1

    async def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self.stderr_tail += chunk
            del self.stderr_tail[:-8192]

    def _die(self, reason: str) -> None:
        self.dead = reason
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ServerError(f"{self.name}: {reason}{self._stderr_hint()}"))

    def _stderr_hint(self) -> str:
        text = self.stderr_tail.decode(errors="replace").strip()
        return f"\n--- {self.name} stderr (tail) ---\n{text[-2000:]}" if text else ""

    async def shutdown(self, timeout: float = 5.0) -> None:
        """Polite LSP shutdown + exit; kill if the server does not go within `timeout`."""
        with contextlib.suppress(ServerError, OSError):
            await self.request("shutdown", None, timeout)
            self.notify("exit", None)
        await self.kill(grace=timeout)

    async def kill(self, grace: float = 0.0) -> None:
        if self.proc.returncode is None and grace > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), grace)
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 5.0)
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _content_length(header: bytes) -> int:
    for line in header.decode("ascii", errors="replace").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return int(value.strip())
    raise ServerError(f"no Content-Length in header {header!r}")


def _reply_to(request: Json) -> Any:
    if request.get("method") == "workspace/configuration":
        items = (request.get("params") or {}).get("items") or []
        return [None for _ in items]
    return None


# --------------------------------------------------------------------------- LSP session data


def client_capabilities() -> Json:
    """Roughly what VS Code 1.9x announces (the parts a code-action server can notice)."""
    return {
        "general": {
            "positionEncodings": ["utf-16"],
            "staleRequestSupport": {
                "cancel": True,
                "retryOnContentModified": [
                    "textDocument/semanticTokens/full",
                    "textDocument/semanticTokens/range",
                    "textDocument/semanticTokens/full/delta",
                ],
            },
        },
        "window": {
            "workDoneProgress": True,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}},
            "showDocument": {"support": True},
        },
        "workspace": {
            "applyEdit": True,
            "configuration": True,
            "workspaceFolders": True,
            "didChangeConfiguration": {"dynamicRegistration": True},
            "executeCommand": {"dynamicRegistration": True},
            "workspaceEdit": {
                "documentChanges": True,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "textOnlyTransactional",
                "normalizesLineEndings": True,
                "changeAnnotationSupport": {"groupsOnLabel": True},
            },
        },
        "textDocument": {
            "synchronization": {
                "dynamicRegistration": True,
                "willSave": True,
                "willSaveWaitUntil": True,
                "didSave": True,
            },
            "publishDiagnostics": {
                "relatedInformation": True,
                "versionSupport": False,
                "tagSupport": {"valueSet": [1, 2]},
                "codeDescriptionSupport": True,
                "dataSupport": True,
            },
            "codeAction": {
                "dynamicRegistration": True,
                "isPreferredSupport": True,
                "disabledSupport": True,
                "dataSupport": True,
                "resolveSupport": {"properties": ["edit"]},
                "codeActionLiteralSupport": {
                    "codeActionKind": {
                        "valueSet": [
                            "",
                            "quickfix",
                            "refactor",
                            "refactor.extract",
                            "refactor.inline",
                            "refactor.rewrite",
                            "source",
                            "source.organizeImports",
                        ]
                    }
                },
                "honorsChangeAnnotations": False,
            },
        },
    }


def initialize_params(root: Path) -> Json:
    uri = root.as_uri()
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "lsp-bench", "version": "1.0"},
        "locale": "en",
        "rootPath": str(root),
        "rootUri": uri,
        "workspaceFolders": [{"uri": uri, "name": root.name}],
        "capabilities": client_capabilities(),
        "trace": "off",
    }


# --------------------------------------------------------------------------- generated buffer


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_NOUNS = _words(
    "order account invoice customer payment shipment ledger report session token record batch "
    "item price user event queue cache setting metric warehouse vendor refund coupon"
)
_VERBS = _words(
    "load save parse render validate compute fetch sync merge apply build resolve normalize "
    "export schedule collect reconcile archive"
)
_TYPES = ("int", "str", "float", "bool", "bytes", "Path", "datetime")


def _camel(word: str) -> str:
    return "".join(part.capitalize() for part in word.split("_"))


def _function(rng: random.Random, indent: str = "", method: bool = False) -> list[str]:
    verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
    other = rng.choice(_NOUNS)
    ret = rng.choice(("int", f"list[{_camel(noun)}]", "dict[str, Any]", "None", "bool"))
    args = ", ".join(
        [*(["self"] if method else []), f"{noun}s: Sequence[{_camel(noun)}]"]
        + [
            f"{w}: {rng.choice(_TYPES)} | None = None"
            for w in rng.sample(_NOUNS, rng.randint(0, 2))
        ]
    )
    name = f"{verb}_{noun}s" if not method or rng.random() < 0.7 else f"_{verb}_{other}"
    i, j = indent + "    ", indent + "        "
    signature = f"{indent}def {name}({args}) -> {ret}:"
    if len(signature) > 100:  # wrapped the way ruff/black would
        params = [f"{indent}    {arg}," for arg in args.split(", ")]
        signature = "\n".join([f"{indent}def {name}(", *params, f"{indent}) -> {ret}:"])
    lines = [
        *signature.split("\n"),
        f'{i}"""{verb.capitalize()} every {noun} and return the {other} summary.',
        "",
        f"{i}Entries without a {other} are skipped; the order of `{noun}s` is kept.",
        f'{i}"""',
    ]
    body = [
        [f"{i}if not {noun}s:", f'{j}log.debug("no {noun}s to {verb}")', f"{j}return {_zero(ret)}"],
        [
            f"{i}seen: set[str] = set()",
            f"{i}for {noun} in {noun}s:",
            f'{j}key = f"{{{noun}.id}}:{{{noun}.{other}_id}}"',
            f"{j}if key in seen:",
            f"{j}    continue",
            f"{j}seen.add(key)",
        ],
        [
            f"{i}try:",
            f"{j}payload = json.loads({noun}s[0].raw_{other})",
            f"{i}except (ValueError, IndexError) as exc:",
            f'{j}log.warning("cannot {verb} %s: %s", {noun}s, exc)',
            f"{j}payload = {{}}",
        ],
        [
            f"{i}totals = defaultdict(int)",
            f"{i}for {noun} in {noun}s:",
            f"{j}totals[{noun}.{other}_id] += {noun}.quantity * {noun}.unit_price",
        ],
        [
            f"{i}pending = [{noun} for {noun} in {noun}s if {noun}.status == Status.PENDING]",
            f"{i}if len(pending) > MAX_{noun.upper()}S:",
            f"{j}raise TooMany{_camel(noun)}sError(len(pending), MAX_{noun.upper()}S)",
        ],
        [
            f'{i}with open(CACHE_DIR / f"{{{noun}s[0].id}}.json", encoding="utf-8") as fh:',
            f"{j}cached = json.load(fh)",
            f'{i}{other}_map = {{entry["id"]: entry for entry in cached.get("{other}s", [])}}',
        ],
    ]
    for block in rng.sample(body, rng.randint(2, 4)):
        lines += block
    lines.append(f"{i}return {_zero(ret)}")
    return [*lines, ""]


def _zero(ret: str) -> str:
    return {"int": "0", "None": "None", "bool": "False", "dict[str, Any]": "{}"}.get(ret, "[]")


def _class(rng: random.Random) -> list[str]:
    noun = rng.choice(_NOUNS)
    cls = _camel(noun) + rng.choice(("", "Service", "Repository", "Manager", "Builder"))
    lines = [
        "@dataclass",
        f"class {cls}:",
        f'    """Keeps the {noun}s of one {rng.choice(_NOUNS)} and what was done to them."""',
        "",
    ]
    for word in rng.sample(_NOUNS, rng.randint(3, 6)):
        lines.append(f"    {word}_id: {rng.choice(_TYPES)}")
    lines += [
        "    tags: list[str] = field(default_factory=list)",
        "    created_at: datetime = field(default_factory=datetime.now)",
        "",
    ]
    for _ in range(rng.randint(2, 4)):
        lines += _function(rng, indent="    ", method=True)
    return [*lines, ""]


def _constants(rng: random.Random) -> list[str]:
    noun = rng.choice(_NOUNS)
    lines = [f"{noun.upper()}_DEFAULTS: dict[str, Any] = {{"]
    for word in rng.sample(_NOUNS, rng.randint(3, 7)):
        lines.append(f'    "{word}": {rng.choice(("None", "0", "True", "[]", repr(word)))},')
    return [*lines, "}", f"MAX_{noun.upper()}S = {rng.randint(10, 10_000)}", ""]


HEADER = [
    '"""Billing back-office: orders, invoices and their reconciliation (lsp-bench)."""',
    "",
    "from __future__ import annotations",
    "",
    "import json",
    "import logging",
    "from collections import defaultdict",
    "from collections.abc import Sequence",
    "from dataclasses import dataclass, field",
    "from datetime import datetime",
    "from enum import Enum",
    "from pathlib import Path",
    "from typing import Any",
    "",
    "log = logging.getLogger(__name__)",
    'CACHE_DIR = Path.home() / ".cache" / "billing"',
    "",
    "",
    "class Status(Enum):",
    '    PENDING = "pending"',
    '    DONE = "done"',
    "",
    "",
]


def generate_python(n_lines: int, seed: int = 1) -> str:
    """Deterministic, realistic-looking Python source of exactly `n_lines` lines."""
    rng = random.Random(seed)
    lines = list(HEADER)
    while True:
        kind = rng.random()
        block = _class(rng) if kind < 0.35 else _constants(rng) if kind < 0.45 else _function(rng)
        if kind >= 0.35:
            block.append("")
        if len(lines) + len(block) > n_lines - 1:
            break
        lines += block
    lines += ["# end of generated module"] * (n_lines - len(lines))
    return "\n".join(lines) + "\n"


_DIAGNOSTICS: tuple[tuple[str, str, int, str], ...] = (
    ("Pylance", "reportAttributeAccessIssue", 1, 'Cannot access attribute "{w}" for class "{c}"'),
    ("Pylance", "reportUndefinedVariable", 1, '"{w}" is not defined'),
    (
        "Pylance",
        "reportArgumentType",
        1,
        'Argument of type "str | None" cannot be assigned to parameter "{w}" of type "str" in '
        'function "{c}"\n  Type "str | None" is not assignable to type "str"\n    "None" is not '
        'assignable to "str"',
    ),
    ("Pylance", "reportOptionalMemberAccess", 1, '"{w}" is not a known attribute of "None"'),
    ("ruff", "F841", 2, "Local variable `{w}` is assigned to but never used"),
    ("ruff", "B007", 2, "Loop control variable `{w}` not used within loop body"),
    ("mypy", "union-attr", 1, 'Item "None" of "{c} | None" has no attribute "{w}"'),
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def code_action_params(text: str, uri: str, count: int, seed: int = 2) -> list[Json]:
    """`count` codeAction requests at random non-blank lines, one realistic diagnostic each."""
    rng = random.Random(seed)
    lines = text.splitlines()
    candidates = [n for n, line in enumerate(lines) if _WORD.search(line)]
    requests: list[Json] = []
    for k in range(count):
        line_no = rng.choice(candidates)
        words = list(_WORD.finditer(lines[line_no]))
        word = rng.choice(words)
        source, code, severity, template = rng.choice(_DIAGNOSTICS)
        rng_ = {
            "start": {"line": line_no, "character": word.start()},
            "end": {"line": line_no, "character": word.end()},
        }
        diagnostic: Json = {
            "range": rng_,
            "severity": severity,
            "code": code,
            "source": source,
            "message": template.format(w=word.group(), c=_camel(rng.choice(_NOUNS))),
        }
        if source == "Pylance":
            diagnostic["codeDescription"] = {
                "href": f"https://github.com/microsoft/pyright/blob/main/docs/configuration.md#{code}"
            }
        requests.append(
            {
                "textDocument": {"uri": uri},
                "range": rng_,
                # VS Code asks automatically on cursor moves (2) and on Ctrl+. (1).
                "context": {"diagnostics": [diagnostic], "triggerKind": 2 if k % 3 else 1},
            }
        )
    return requests


# --------------------------------------------------------------------------- measurements


@dataclass(frozen=True)
class Setup:
    python: str
    home: Path
    root: Path
    env: dict[str, str]
    startup_runs: int
    requests: int
    warmup: int
    sizes: tuple[int, ...]
    idle_seconds: float
    timeout: float
    import_runs: int

    def argv(self, which: str) -> list[str]:
        if which == OURS:
            return [self.python, "-m", "agent_lsp", "serve"]
        return [self.python, str(BENCH_DIR / "bare_server.py")]


async def spawn(setup: Setup, which: str) -> LspClient:
    # cwd = the repository (both servers): `python -m agent_lsp` then imports the checkout.
    return await LspClient.spawn(which, setup.argv(which), setup.env, REPO_ROOT)


async def start_once(setup: Setup, which: str) -> float:
    """Milliseconds from spawning the process to reading its `initialize` response."""
    client = await spawn(setup, which)
    try:
        response = await client.request(
            "initialize", initialize_params(setup.root), timeout=setup.timeout
        )
        return (response.received_ns - client.spawned_ns) / 1e6
    finally:
        await client.kill()


async def interpreter_floor(setup: Setup, runs: int) -> float:
    """Median milliseconds to spawn `python -c pass` and see it exit: the floor of any start-up."""
    samples: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        proc = await asyncio.create_subprocess_exec(setup.python, "-c", "pass", env=setup.env)
        try:
            await asyncio.wait_for(proc.wait(), setup.timeout)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(samples)


async def measure_startup(setup: Setup) -> Json:
    for which in (OURS, BARE):  # warm the page cache and the .pyc files; not measured
        await start_once(setup, which)
    samples: dict[str, list[float]] = {OURS: [], BARE: []}
    for run in range(setup.startup_runs):
        order = (OURS, BARE) if run % 2 == 0 else (BARE, OURS)
        for which in order:
            samples[which].append(await start_once(setup, which))
    result: Json = {which: summary(values, raw=True) for which, values in samples.items()}
    result["ratio_median"] = result[OURS]["median"] / result[BARE]["median"]
    result["interpreter_floor_ms"] = await interpreter_floor(setup, setup.startup_runs)
    return result


def cpu_ticks(pid: int) -> int:
    """utime + stime of a live process, in clock ticks."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        raise ServerError(f"pid {pid} exited") from None
    fields = stat.rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


async def wait_quiet(pid: int, timeout: float, quiet_polls: int = 4) -> None:
    """Wait until the process has used no CPU for `quiet_polls` x 50 ms (i.e. it is booted)."""
    deadline = time.monotonic() + timeout
    last, quiet = cpu_ticks(pid), 0
    while quiet < quiet_polls:
        if time.monotonic() > deadline:
            raise ServerError(f"pid {pid} still busy after {timeout} s")
        await asyncio.sleep(0.05)
        now = cpu_ticks(pid)
        quiet = quiet + 1 if now == last else 0
        last = now


def vm_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM / RssAnon of a live process, in KiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        raise ServerError(f"pid {pid} exited") from None
    values: dict[str, int] = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            values[key] = int(value.split()[0])
    return values


async def measure_buffer(setup: Setup, n_lines: int) -> Json:
    """Fresh ours+bare sessions with an `n_lines` buffer: idle RSS and codeAction latency."""
    path = setup.root / f"big_{n_lines}.py"
    text = generate_python(n_lines)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    plan = code_action_params(text, uri, setup.warmup + setup.requests, seed=n_lines)
    clients: dict[str, LspClient] = {}
    try:
        for which in (OURS, BARE):
            clients[which] = await spawn(setup, which)
        for client in clients.values():  # booted (imports done) before timing `initialize`
            await wait_quiet(client.pid, setup.timeout)
        rss_init: dict[str, dict[str, int]] = {}
        initialize_ms: dict[str, float] = {}
        for which, client in clients.items():
            response = await client.request(
                "initialize", initialize_params(setup.root), setup.timeout
            )
            initialize_ms[which] = response.elapsed_ms
            client.notify("initialized", {})
            await asyncio.sleep(0.2)
            rss_init[which] = vm_status(client.pid)
            client.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
            )
        await asyncio.sleep(setup.idle_seconds)
        rss_idle = {which: vm_status(client.pid) for which, client in clients.items()}

        latencies: dict[str, list[float]] = {OURS: [], BARE: []}
        actions: dict[str, int] = {OURS: 0, BARE: 0}
        for k, params in enumerate(plan):
            # One request in flight at a time; alternate which server goes first.
            for which in (OURS, BARE) if k % 2 == 0 else (BARE, OURS):
                response = await clients[which].request(
                    "textDocument/codeAction", params, setup.timeout
                )
                if not isinstance(response.result, list) or not response.result:
                    raise ServerError(f"{which}: no code action returned: {response.result!r}")
                actions[which] += len(response.result)
                if k >= setup.warmup:
                    latencies[which].append(response.elapsed_ms)
        rss_after = {which: vm_status(client.pid) for which, client in clients.items()}
    finally:
        await asyncio.gather(*(client.shutdown() for client in clients.values()))

    stats = {which: summary(values, raw=True) for which, values in latencies.items()}
    return {
        "lines": n_lines,
        "bytes": len(text.encode()),
        "initialize_on_booted_server_ms": {
            **initialize_ms,
            "ratio": initialize_ms[OURS] / initialize_ms[BARE],
        },
        "rss_after_initialize_kib": _pair(rss_init, "VmRSS"),
        "rss_idle_kib": _pair(rss_idle, "VmRSS"),
        "rss_after_requests_kib": _pair(rss_after, "VmRSS"),
        "vm_status_idle": rss_idle,
        "code_action_ms": {
            **stats,
            "ratio_median": stats[OURS]["median"] / stats[BARE]["median"],
            "ratio_p99": stats[OURS]["p99"] / stats[BARE]["p99"],
        },
        "actions_returned": actions,
    }


def _pair(values: dict[str, dict[str, int]], key: str) -> Json:
    ours, bare = values[OURS][key], values[BARE][key]
    return {OURS: ours, BARE: bare, "ratio": ours / bare}


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 1,000 samples is the 990th smallest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def summary(values: Sequence[float], raw: bool = False) -> Json:
    result: Json = {
        "n": len(values),
        "median": statistics.median(values),
        "mean": statistics.fmean(values),
        "min": min(values),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": max(values),
    }
    if raw:
        result["samples"] = [round(v, 4) for v in values]
    return result


# --------------------------------------------------------------------------- import analysis


@dataclass
class ImportLine:
    name: str
    depth: int
    self_us: int
    cumulative_us: int
    parent: str | None = None


def parse_importtime(stderr: str) -> list[ImportLine]:
    """`-X importtime` lines, with each module's importer (the output is in post-order)."""
    rows: list[ImportLine] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        raw = parts[2].rstrip()
        depth = (len(raw) - len(raw.lstrip()) - 1) // 2
        rows.append(ImportLine(raw.strip(), depth, int(parts[0]), int(parts[1])))
    ancestors: list[str] = []
    for row in reversed(rows):
        del ancestors[row.depth :]
        row.parent = ancestors[-1] if ancestors else None
        ancestors.append(row.name)
    return rows


async def importtime(setup: Setup, which: str) -> list[ImportLine]:
    argv = setup.argv(which)
    proc = await asyncio.create_subprocess_exec(
        argv[0],
        "-X",
        "importtime",
        *argv[1:],
        stdin=subprocess.DEVNULL,  # EOF at once: the server imports, starts, and exits
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=setup.env,
        cwd=REPO_ROOT,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(), setup.timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return parse_importtime(err.decode(errors="replace"))


OWN_GROUP = "agent_lsp + adapters (own modules)"


def _top(name: str) -> str:
    return name.split(".")[0]


def _own(name: str) -> bool:
    return _top(name) in ("agent_lsp", "adapters")


async def measure_imports(setup: Setup) -> Json:
    """Which modules ours imports that the bare server does not, and who pulls them in."""
    runs: dict[str, list[list[ImportLine]]] = {OURS: [], BARE: []}
    for _ in range(setup.import_runs):
        for which in (OURS, BARE):
            runs[which].append(await importtime(setup, which))

    def medians(which: str) -> tuple[dict[str, float], dict[str, float]]:
        selfs: dict[str, list[int]] = {}
        cums: dict[str, list[int]] = {}
        for rows in runs[which]:
            for row in rows:
                selfs.setdefault(row.name, []).append(row.self_us)
                cums.setdefault(row.name, []).append(row.cumulative_us)
        return (
            {k: statistics.median(v) / 1000 for k, v in selfs.items()},
            {k: statistics.median(v) / 1000 for k, v in cums.items()},
        )

    ours_self, ours_cum = medians(OURS)
    bare_self, _ = medians(BARE)
    rows = runs[OURS][0]
    parent = {row.name: row.parent for row in rows}

    def entry_point(name: str) -> tuple[str, str]:
        """The outermost third-party module above `name` and the own module that imported it."""
        node = name
        while (up := parent.get(node)) is not None and not _own(up):
            node = up
        return node, parent.get(node) or "(at run time)"

    extra = [name for name in ours_self if name not in bare_self]
    groups: dict[str, Json] = {}
    for name in extra:
        if _own(name):
            group, by = OWN_GROUP, None
        else:
            entry_module, by = entry_point(name)
            group = _top(entry_module)
        entry = groups.setdefault(
            group, {"self_ms": 0.0, "modules": 0, "packages": [], "imported_by": []}
        )
        entry["self_ms"] += ours_self[name]
        entry["modules"] += 1
        if _top(name) not in entry["packages"]:
            entry["packages"].append(_top(name))
        if by is not None and by not in entry["imported_by"]:
            entry["imported_by"].append(by)
    ranked = dict(sorted(groups.items(), key=lambda kv: -kv[1]["self_ms"]))
    own_cumulative = {
        name: ours_cum[name]
        for name in sorted((n for n in ours_cum if _own(n)), key=lambda n: -ours_cum[n])
    }
    return {
        "runs": setup.import_runs,
        "total_self_ms": {OURS: sum(ours_self.values()), BARE: sum(bare_self.values())},
        "modules": {OURS: len(ours_self), BARE: len(bare_self)},
        "extra_self_ms": sum(ours_self[n] for n in extra),
        "extra_by_package": ranked,
        "own_module_cumulative_ms": own_cumulative,
    }


# --------------------------------------------------------------------------- report


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value >= 10 else f"{value:.3f} ms"


def _mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def render(results: Json) -> str:
    meta, startup = results["meta"], results["startup_ms"]
    rows: list[tuple[str, str, str, str]] = [
        (
            f"start-up to initialize response, median of {startup[OURS]['n']}",
            _ms(startup[OURS]["median"]),
            _ms(startup[BARE]["median"]),
            f"{startup['ratio_median']:.2f}x",
        ),
        (
            "  start-up min / max",
            f"{startup[OURS]['min']:.0f} / {startup[OURS]['max']:.0f} ms",
            f"{startup[BARE]['min']:.0f} / {startup[BARE]['max']:.0f} ms",
            "",
        ),
    ]
    init = [buf["initialize_on_booted_server_ms"] for buf in results["buffers"]]
    init_ours = statistics.median(i[OURS] for i in init)
    init_bare = statistics.median(i[BARE] for i in init)
    rows.append(
        (
            f"  of which initialize handling (booted server, n={len(init)})",
            _ms(init_ours),
            _ms(init_bare),
            f"{init_ours / init_bare:.2f}x",
        )
    )
    for buf in results["buffers"]:
        n = f"{buf['lines']:,} lines"
        ca = buf["code_action_ms"]
        rows += [
            (
                f"RSS after initialize ({n} session)",
                _mib(buf["rss_after_initialize_kib"][OURS]),
                _mib(buf["rss_after_initialize_kib"][BARE]),
                f"{buf['rss_after_initialize_kib']['ratio']:.2f}x",
            ),
            (
                f"RSS idle, {n} buffer open + 1 s",
                _mib(buf["rss_idle_kib"][OURS]),
                _mib(buf["rss_idle_kib"][BARE]),
                f"{buf['rss_idle_kib']['ratio']:.2f}x",
            ),
            (
                f"codeAction median, {n} (n={ca[OURS]['n']})",
                _ms(ca[OURS]["median"]),
                _ms(ca[BARE]["median"]),
                f"{ca['ratio_median']:.2f}x",
            ),
            (
                f"codeAction p99, {n}",
                _ms(ca[OURS]["p99"]),
                _ms(ca[BARE]["p99"]),
                f"{ca['ratio_p99']:.2f}x",
            ),
        ]
    head = ("figure", "ours", "bare pygls", "ours/bare")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]

    def fmt(r: tuple[str, str, str, str]) -> str:
        return "  ".join(
            [r[0].ljust(widths[0]), *(cell.rjust(widths[i + 1]) for i, cell in enumerate(r[1:]))]
        ).rstrip()

    out = [
        f"agent-lsp vs bare pygls -- Python {meta['python']}, pygls {meta['pygls']}, "
        f"lsprotocol {meta['lsprotocol']}, {meta['cpus']} CPUs, {meta['platform']}",
        "",
        fmt(head),
        "  ".join("-" * w for w in widths),
        *(fmt(r) for r in rows),
        "",
        f"interpreter floor (spawn `python -c pass` to exit): "
        f"{_ms(startup['interpreter_floor_ms'])}",
    ]
    imports = results.get("imports")
    if imports:
        out += [
            "",
            f"imports (-X importtime, median of {imports['runs']}): ours "
            f"{imports['total_self_ms'][OURS]:.0f} ms in {imports['modules'][OURS]} modules, "
            f"bare {imports['total_self_ms'][BARE]:.0f} ms in {imports['modules'][BARE]}; "
            f"only in ours: {imports['extra_self_ms']:.0f} ms",
            "imports only ours makes, by entry point (self times summed over the subtree):",
        ]
        for name, entry in list(imports["extra_by_package"].items())[:10]:
            others = [p for p in entry["packages"] if p != name and name != OWN_GROUP]
            incl = f", incl. {', '.join(others[:5])}" if others else ""
            by = ", ".join(entry["imported_by"][:3])
            via = f"  <- {by}" if by else ""
            out.append(
                f"  {entry['self_ms']:7.1f} ms  {name} ({entry['modules']} modules{incl}){via}"
            )
    return "\n".join(out)


def environment() -> Json:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "?"

    commit = "?"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    return {
        "python": platform.python_version(),
        "executable": sys.executable,
        "pygls": version("pygls"),
        "lsprotocol": version("lsprotocol"),
        "agent_lsp": version("agent-lsp"),
        "git_commit": commit,
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "loadavg_at_start": list(os.getloadavg()),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# --------------------------------------------------------------------------- main


def server_env(home: Path) -> dict[str, str]:
    """Inherited environment minus anything that could point the agent at a real model."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AGENT_LSP_", "XDG_", "PYTHONSTARTUP"))
    }
    env.update(HOME=str(home), AGENT_LSP_BASE_URL=NO_MODEL_URL, PYTHONUNBUFFERED="1")
    return env


async def run(args: argparse.Namespace) -> Json:
    tmp = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    try:
        home, root = tmp / "home", tmp / "project"
        home.mkdir()
        root.mkdir()
        setup = Setup(
            python=args.python,
            home=home,
            root=root,
            env=server_env(home),
            startup_runs=args.startup_runs,
            requests=args.requests,
            warmup=args.warmup,
            sizes=tuple(args.sizes),
            idle_seconds=args.idle,
            timeout=args.timeout,
            import_runs=args.import_runs,
        )
        # The root folder holds the big file before anyone initializes on it.
        (root / f"big_{setup.sizes[0]}.py").write_text(generate_python(setup.sizes[0]))
        results: Json = {"meta": environment(), "config": _config(setup)}
        _progress("start-up ...")
        results["startup_ms"] = await measure_startup(setup)
        results["buffers"] = []
        for n_lines in setup.sizes:
            _progress(f"{n_lines:,}-line buffer: memory and code actions ...")
            results["buffers"].append(await measure_buffer(setup, n_lines))
        if setup.import_runs > 0:
            _progress("import times ...")
            results["imports"] = await measure_imports(setup)
        return results
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _config(setup: Setup) -> Json:
    return {
        "ours": setup.argv(OURS)[1:],
        "bare": [str(Path(setup.argv(BARE)[1]).relative_to(REPO_ROOT))],
        "startup_runs": setup.startup_runs,
        "requests": setup.requests,
        "warmup": setup.warmup,
        "sizes": list(setup.sizes),
        "idle_seconds": setup.idle_seconds,
        "timeout_seconds": setup.timeout,
        "import_runs": setup.import_runs,
    }


def _progress(text: str) -> None:
    print(f"[lsp-bench] {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter for both servers")
    parser.add_argument("--startup-runs", type=int, default=20, help="spawns per server (>= 10)")
    parser.add_argument("--requests", type=int, default=1000, help="measured codeActions per size")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured codeActions first")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000], help="buffer lines")
    parser.add_argument("--idle", type=float, default=1.0, help="seconds idle before reading RSS")
    parser.add_argument("--timeout", type=float, default=15.0, help="seconds per response")
    parser.add_argument("--import-runs", type=int, default=5, help="-X importtime runs (0: skip)")
    parser.add_argument("--output", type=Path, default=RESULTS_PATH, help="JSON results file")
    args = parser.parse_args(argv)

    try:
        results = asyncio.run(run(args))
    except ServerError as exc:
        print(f"lsp-bench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lsp-bench: interrupted (servers killed)", file=sys.stderr)
        return 130
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))
    print(f"\nresults: {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
