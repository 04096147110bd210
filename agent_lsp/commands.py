"""The headless subcommands behind the CLI."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from adapters import describe_project, detect_toolchain
from agent_lsp.messages import TaskOutcome, TaskStatus
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.sandbox import Confinement
from agent_lsp.safety.setup import build_policy
from agent_lsp.seams import Model
from agent_lsp.session import Session
from agent_lsp.settings import load_settings
from agent_lsp.task import Task, TaskKind
from agent_lsp.terminal import TerminalChannel
from agent_lsp.verify import format_report

EXIT_OK, EXIT_NOT_DONE, EXIT_USAGE = 0, 1, 2


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def run(
    root: Path,
    instruction: str,
    max_steps: int | None = None,
    model: Model | None = None,
    resume: bool = False,
) -> int:
    """Run a task headless; with `resume`, continue the one a crash or restart cut short."""
    if not root.is_dir():  # noqa: ASYNC240 - one stat before anything starts
        _err(f"agent-lsp: {root} is not a folder")
        return EXIT_USAGE
    loaded = load_settings(root)
    for warning in loaded.warnings:
        _err(f"agent-lsp: warning: {warning}")
    settings = loaded.settings
    if max_steps is not None:
        settings = settings.model_copy(update={"max_steps": max_steps})
    session = Session(root, settings, model)
    channel = TerminalChannel()
    task = Task(kind=TaskKind.TASK, instruction=instruction)
    if resume:
        offer = session.pending_resume()
        if offer is None:
            _err("agent-lsp: no interrupted task to resume")
            await session.aclose()
            return EXIT_USAGE
        task = offer.task
    try:
        outcome = await session.run_task(task, channel, resume=resume)
    finally:
        await session.aclose()
    _print_outcome(outcome)
    return EXIT_OK if outcome.status is TaskStatus.COMPLETED else EXIT_NOT_DONE


def _print_outcome(outcome: TaskOutcome) -> None:
    print(f"■ {outcome.status.value} after {outcome.steps} steps: {outcome.summary}", flush=True)
    if outcome.changed_files:
        print(f"  changed: {', '.join(outcome.changed_files)}", flush=True)
        if outcome.task_id:
            print(f"  undo: agent-lsp undo --task {outcome.task_id} [--all]", flush=True)
    print(
        f"  tokens: {outcome.usage.prompt_tokens} in, {outcome.usage.completion_tokens} out",
        flush=True,
    )


async def demo(live: bool = False, dest: Path | None = None) -> int:
    from agent_lsp.demo import TASK, copy_sample, demo_model

    project = copy_sample(dest)
    if live:
        print(f"agent-lsp demo: sample project in {project}; using the configured model")
        return await run(project, TASK)
    print(f"agent-lsp demo: sample project copied to {project}")
    print(
        "agent-lsp demo: a SCRIPTED MODEL stands in for the LLM (fixed replies); the tools, "
        "edits and pytest runs are real. Use --live to use your configured endpoint."
    )
    return await run(project, TASK, model=demo_model())


async def test(root: Path, targets: Sequence[str]) -> int:
    adapter = detect_toolchain(root)
    if adapter is None:
        _err(f"agent-lsp: {describe_project(root)}")
        return EXIT_USAGE
    loaded = load_settings(root)
    sandbox = build_policy(root, loaded.settings).sandbox
    roots = (root, *sandbox.extra_writable)
    shell = ConfinedShell(sandbox, Confinement(writable=roots, visible=roots))
    report = await adapter.run(root, root, list(targets), shell=shell, timeout=600)
    print(format_report(report), flush=True)
    return EXIT_OK if report.ok else EXIT_NOT_DONE


async def doctor(root: Path) -> int:
    """Print what agent-lsp would use here, and whether the model endpoint answers."""
    import openai

    from agent_lsp import __version__

    loaded = load_settings(root)
    model = loaded.settings.model
    print(f"agent-lsp {__version__}")
    print(f"project: {root}\n  {describe_project(root)}")
    safety = build_policy(root, loaded.settings)
    status = safety.sandbox.status()
    if status.available:
        print(f"sandbox: {status.mode}: commands, tests and git run confined")
    else:
        print(
            f"sandbox: NONE ({status.reason}): every command but a few vetted read-only ones "
            "asks, and the tests ask once per task. Install bubblewrap to run them confined."
        )
    print(f"workspace: {'trusted' if safety.trusted else 'not trusted (agent-lsp trust)'}")
    print(f"model: {model.name} at {model.base_url}")
    print(f"  API key: {'set' if model.api_key else 'not set'}")
    for warning in loaded.warnings:
        print(f"warning: {warning}")
    key = model.api_key.get_secret_value() if model.api_key else "no-key"
    try:
        async with openai.AsyncOpenAI(
            api_key=key, base_url=model.base_url, timeout=10, max_retries=0
        ) as client:
            names = [m.id async for m in await client.models.list()][:10]
    except openai.OpenAIError as exc:
        print(f"  endpoint NOT reachable: {exc}")
        return EXIT_NOT_DONE
    print(f"  endpoint reachable; models: {', '.join(names) or '(none listed)'}")
    return EXIT_OK
