"""`agent-lsp doctor`: each check of the setup (the settings and where they came from, the model
endpoint, the sandbox, the toolchain, the memory), with its next step when it fails."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from adapters import describe_project
from agent_lsp.config.endpoint import endpoint_problem
from agent_lsp.config.schema import ModelSettings, Settings
from agent_lsp.config.settings import load_settings
from agent_lsp.errors import ModelError
from agent_lsp.messages import ChatMessage, ModelReply, ToolSpec
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.sandbox import Confinement
from agent_lsp.safety.setup import build_policy
from agent_lsp.tools import RESERVED_NAMES, read_project_tools

if TYPE_CHECKING:
    from agent_lsp.models.openai_compat import OpenAICompatModel

EXIT_OK, EXIT_NOT_DONE = 0, 1  # all checks passed; a problem (its next step said)

# The settings `doctor` says the source of (dotted camelCase paths).
ORIGIN_KEYS = (
    "model.baseUrl",
    "model.name",
    "model.apiKey",
    "model.toolCalling",
    "model.maxTokens",
    "permissionLevel",
)


_ENV_NAMES = {
    "model.baseUrl": ("AGENT_LSP_BASE_URL", "OPENAI_BASE_URL"),
    "model.name": ("AGENT_LSP_MODEL",),
    "model.apiKey": ("AGENT_LSP_API_KEY", "OPENAI_API_KEY"),
}


PROBE_TOOL = ToolSpec(
    name="ping",
    description="Answer the probe: call this tool once.",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string", "description": "the word ok"}},
        "required": ["text"],
    },
)


def _lookup(tree: object, dotted: str) -> object:
    node = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = cast("dict[str, object]", node)[part]
    return node


def setting_origins(
    root: Path, environ: Mapping[str, str] | None = None, user_config: Path | None = None
) -> dict[str, str]:
    """Where each of ORIGIN_KEYS came from: the environment (which variable), the project
    config, the user config, or the default. A layer counts only if its value is the one in
    force (an untrusted project's widening value is ignored, and said so in the warnings)."""
    from agent_lsp.config import settings as st

    environ = os.environ if environ is None else environ
    user_path = (user_config or st.USER_CONFIG).expanduser()
    loaded = st.load_settings(root, environ=environ, user_config=user_config)
    final = loaded.settings.model_dump(mode="json", by_alias=True)
    if loaded.settings.model.api_key is not None:
        final["model"]["apiKey"] = loaded.settings.model.api_key.get_secret_value()
    layers: list[tuple[str, dict[str, Any]]] = []
    for label, path in (
        (f"project config {root / st.PROJECT_CONFIG}", root / st.PROJECT_CONFIG),
        (f"user config {user_path}", user_path),
    ):
        try:
            layers.append((label, st.read_toml(path)))
        except (OSError, ValueError):
            continue
    env = st.env_layer(environ)
    origins: dict[str, str] = {}
    for key in ORIGIN_KEYS:
        value = _lookup(final, key)
        names = [n for n in _ENV_NAMES.get(key, ()) if environ.get(n)]
        if names and _lookup(env, key) == value:
            origins[key] = f"environment {names[0]}"
            continue
        origin = "default"
        for label, layer in layers:
            if _lookup(layer, key) is not None and _lookup(layer, key) == value:
                origin = label
                break
        origins[key] = origin
    return origins


class _Doctor:
    def __init__(self) -> None:
        self.problems = 0

    def ok(self, text: str) -> None:
        print(text, flush=True)

    def problem(self, text: str, next_step: str) -> None:
        self.problems += 1
        print(f"{text}\n    next: {next_step}", flush=True)


async def doctor(root: Path) -> int:
    """What agent-lsp would use here and where each setting came from; whether the workspace
    is trusted, the sandbox runs a command, the endpoint answers, the model name is served and
    tool calls work (one tiny request). Every failure comes with the next step; exit 1 then."""
    import openai

    from agent_lsp import __version__
    from agent_lsp.models.openai_compat import OpenAICompatModel
    from agent_lsp.models.text_tools import TextToolModel, refuses_tools

    doc = _Doctor()
    loaded = load_settings(root)
    model = loaded.settings.model
    origins = setting_origins(root)
    doc.ok(f"agent-lsp {__version__}")
    doc.ok(f"project: {root}\n  {describe_project(root)}")
    safety = build_policy(root, loaded.settings)
    if safety.trusted:
        doc.ok("workspace: trusted (its .agent-lsp/config.toml and policy allow rules apply)")
    else:
        doc.ok(
            "workspace: not trusted: its .agent-lsp/config.toml may only restrict your own "
            "settings and its policy allow rules are ignored (agent-lsp trust to trust it)"
        )
    declared = read_project_tools(root, safety.trusted, RESERVED_NAMES)
    for warning in declared.warnings:
        doc.ok(f"project tools: {warning}")
    if declared.tools:
        doc.ok(f"project tools (.agent-lsp/tools.toml): {', '.join(declared.tools)}")
    status = safety.sandbox.status()
    if status.available:
        shell = ConfinedShell(safety.sandbox, Confinement(writable=(), visible=(root,)))
        result = await shell.run(["sh", "-c", "echo sandbox-ok"], cwd=root, timeout=30)
        if result.exit_code == 0 and "sandbox-ok" in result.output:
            doc.ok(f"sandbox: {status.mode}: commands, tests and git run confined (checked)")
        else:
            doc.problem(
                f"sandbox: {status.mode} is installed but a confined command failed "
                f"(exit {result.exit_code}): {result.output.strip()[:300]}",
                "check that unprivileged user namespaces are enabled "
                "(sysctl kernel.unprivileged_userns_clone=1), or set [sandbox] enabled = false "
                "to run commands unconfined, each asked first",
            )
    else:
        doc.ok(
            f"sandbox: NONE ({status.reason}): every command but a few vetted read-only ones "
            "asks, and the tests ask once per task. Install bubblewrap to run them confined."
        )
    doc.ok(f"model: {model.name} at {model.base_url}")
    doc.ok(f"  name from {origins['model.name']}; baseUrl from {origins['model.baseUrl']}")
    key_origin = f" ({origins['model.apiKey']})" if model.api_key else ""
    doc.ok(f"  API key: {'set' if model.api_key else 'not set'}{key_origin}")
    doc.ok(
        f"  toolCalling: {model.tool_calling.value} ({origins['model.toolCalling']}); "
        f"maxTokens: {model.max_tokens} ({origins['model.maxTokens']}); "
        f"permissionLevel: {loaded.settings.permission_level.value} "
        f"({origins['permissionLevel']})"
    )
    for warning in loaded.warnings:
        doc.ok(f"warning: {warning}")
    where = origins["model.baseUrl"]
    if _settings_cannot_work(doc, model, where):
        return _doctor_end(doc)
    key = model.api_key.get_secret_value() if model.api_key else "no-key"
    try:
        async with openai.AsyncOpenAI(
            api_key=key, base_url=model.base_url, timeout=10, max_retries=0
        ) as client:
            names = [m.id async for m in await client.models.list()]
    except openai.APIConnectionError as exc:
        doc.problem(
            f"  endpoint NOT reachable at {model.base_url}: {exc}",
            f"start the model server, or set [model] baseUrl (now from {where}) to where it "
            "listens, e.g. AGENT_LSP_BASE_URL=http://127.0.0.1:8080/v1; then run "
            "agent-lsp doctor again",
        )
        return _doctor_end(doc)
    except openai.AuthenticationError as exc:
        doc.problem(
            f"  endpoint refused the API key (HTTP 401): {exc.message}",
            "set the key in the environment (AGENT_LSP_API_KEY) or as [model] apiKey in "
            "~/.config/agent-lsp/config.toml (never in a project)",
        )
        return _doctor_end(doc)
    except openai.APIStatusError as exc:
        names = None
        doc.ok(
            f"  endpoint reachable; it lists no models (HTTP {exc.status_code}), so the probe "
            "below tells whether the name works"
        )
    except openai.OpenAIError as exc:
        doc.problem(
            f"  endpoint answered something unexpected: {exc}",
            f"check that [model] baseUrl (now from {where}) is an OpenAI-compatible "
            "endpoint ending in /v1",
        )
        return _doctor_end(doc)
    if names is not None:
        doc.ok(f"  endpoint reachable; models: {', '.join(names[:10]) or '(none listed)'}")
        if names and model.name not in names:
            doc.problem(
                f"  model {model.name!r} is NOT served here",
                f"set [model] name (now from {origins['model.name']}) to one of: "
                f"{', '.join(names[:10])} (AGENT_LSP_MODEL=... or [model] name = ...)",
            )
            return _doctor_end(doc)
        if names:
            doc.ok(f"  model {model.name!r} is served")
    await _window_lines(doc, root, loaded.settings)
    probe_settings = model.model_copy(
        update={"max_tokens": 64, "max_retries": 0, "timeout": min(model.timeout, 60.0)}
    )
    raw = OpenAICompatModel(probe_settings)
    text = model.tool_calling.value == "text"
    probe = TextToolModel(raw) if text else raw
    messages = [
        ChatMessage(role="system", content="You are a probe. Call the tool `ping` once."),
        ChatMessage(role="user", content='Call ping with {"text": "ok"} now.'),
    ]
    try:
        reply = await probe.complete(messages, [PROBE_TOOL])
    except ModelError as exc:
        hint = (
            'set [model] toolCalling = "text" (the endpoint refuses tools)'
            if refuses_tools(exc)
            else f"check the model name (from {origins['model.name']}) and the server's log"
        )
        doc.problem(f"  tool-call probe FAILED: {exc}", hint)
        await raw.aclose()
        return _doctor_end(doc)
    await raw.aclose()
    tokens = _usage_text(reply)
    protocol = "text protocol" if text else "native"
    if any(c.name == "ping" for c in reply.tool_calls):
        doc.ok(f"  tool calls work ({protocol}; probe: {tokens})")
    elif model.tool_calling.value == "native":
        doc.problem(
            f"  tool calls NOT made: the model answered in words ({tokens}): "
            f"{' '.join((reply.content or '').split())[:120]!r}",
            'set [model] toolCalling = "auto" (switches to text tools after the first answer '
            'in words) or "text"; or use a model with tool calling',
        )
    else:
        doc.ok(
            f"  tool calls: the model answered in words ({tokens}); toolCalling = "
            f"{model.tool_calling.value} "
            + (
                "switches to text tools after its first answer in words"
                if not text
                else "describes the tools in the prompt"
            )
            + "; a model this weak may not finish tasks"
        )
    _probe_lines(doc, raw, reply)
    return _doctor_end(doc)


def _usage_text(reply: ModelReply) -> str:
    """e.g. "120 in, 8 out", or "~120 in, ~8 out (estimated)" when the endpoint said none."""
    usage = reply.usage
    about = "~" if usage.estimated else ""
    said = f"{about}{usage.prompt_tokens} in, {about}{usage.completion_tokens} out"
    return f"{said} (estimated)" if usage.estimated else said


async def _window_lines(doc: _Doctor, root: Path, settings: Settings) -> None:
    """The server's context window against a task's first request (see `serving`)."""
    from agent_lsp.cli.serving import report_window
    from agent_lsp.models.openai_compat import OpenAICompatModel

    model = OpenAICompatModel(settings.model.model_copy(update={"max_retries": 0}))
    try:
        await report_window(doc.ok, doc.problem, root, settings, model)
    finally:
        await model.aclose()


def _probe_lines(doc: _Doctor, raw: OpenAICompatModel, reply: ModelReply) -> None:
    """What the tool-call probe showed of the server (see `serving`)."""
    from agent_lsp.cli.serving import report_probe

    report_probe(doc.ok, doc.problem, raw, reply)


def _settings_cannot_work(doc: _Doctor, model: ModelSettings, origin: str) -> bool:
    """A base URL that is no URL, or no key for an endpoint that needs one: said as the
    problem (nothing is sent), instead of a connection error."""
    problem = endpoint_problem(model, origin)
    if problem is not None:
        doc.problem(f"  {problem.text}", problem.next_step)
    return problem is not None


def _doctor_end(doc: _Doctor) -> int:
    if doc.problems:
        print(f"{doc.problems} problem(s): see the next steps above", flush=True)
        return EXIT_NOT_DONE
    print("all checks passed", flush=True)
    return EXIT_OK
