"""`ConfinedShell`: the one way the agent runs a program — commands, test runs, linters,
init.d steps and git alike. Every program gets the sandbox environment (an allowlist, no API
keys) and, where the machine has an OS sandbox, runs inside it as its `Confinement` says."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from adapters import PlatformShell, default_shell
from adapters.reaper import TREE_MARK, end_strays, new_token, subreaper
from adapters.results import CommandResult
from agent_lsp.safety.protect import (
    Identity,
    ProtectionError,
    created_protected,
    existing_protected,
    remove_created,
)
from agent_lsp.safety.sandbox import Confinement, Sandbox, SandboxError
from agent_lsp.safety.sandbox_env import sandbox_env
from agent_lsp.safety.secretscan import SecretScanError
from agent_lsp.safety.tempdirs import make_dir

__all__ = ["ConfinedShell", "tree_note"]

_scratch: list[Path] = []
_TREE_NOTE = "[agent-lsp: "  # the first line of an unconfined run's output, when it ended strays


def tree_note(output: str) -> str:
    """The note an unconfined run puts first in its output about processes it left running
    (ended, or not findable here); "" when there is none."""
    first = output.partition("\n")[0]
    return first if first.startswith(_TREE_NOTE) and "left running" in first else ""


def _scratch_root() -> Path:
    if not _scratch or not _scratch[0].is_dir():
        _scratch[:] = [make_dir("agent-lsp-scratch-")]  # removed at exit, SIGTERM or later
    return _scratch[0]


class ConfinedShell:
    """A `Shell` (and `ScriptShell`) whose programs run confined. Without an OS sandbox they
    run as they are, with the sandbox environment: whoever calls must have asked the user."""

    def __init__(
        self,
        sandbox: Sandbox,
        confinement: Confinement,
        inner: PlatformShell | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.confinement = confinement
        self.inner = inner or default_shell()

    @property
    def scratch_root(self) -> Path:
        """Where the adapters make their temporary folders (`adapters.shell.scratch_dir`):
        writable inside the sandbox, outside its private /tmp; one per process."""
        return _scratch_root()

    @property
    def max_output_bytes(self) -> int:
        return self.inner.max_output_bytes

    @property
    def sandboxed(self) -> bool:
        return self.sandbox.available

    def but(self, **changes: object) -> ConfinedShell:
        """The same shell with some of the confinement changed (`network=True`, ...)."""
        confinement = replace(self.confinement, **changes)  # pyright: ignore[reportArgumentType]
        return ConfinedShell(self.sandbox, confinement, self.inner)

    def environment(
        self, env: Mapping[str, str] | None = None, home: Path | None = None
    ) -> dict[str, str]:
        """The allowlisted environment; `HOME` is the sandbox's private home (or `home`)."""
        return sandbox_env(
            os.environ if env is None else env,
            Path(os.path.realpath(home or self.sandbox.home)),
            "/tmp",
            self.sandbox.pass_env,
        )

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        if not self.sandboxed:
            return await self._run_unconfined(argv, cwd, timeout, env)
        environ = self.environment(env)
        scratch = self.scratch_root
        confinement = replace(self.confinement, scratch=(*self.confinement.scratch, scratch))
        try:
            wrapped = await asyncio.to_thread(self.sandbox.wrap, argv, cwd, confinement, environ)
        except SandboxError as exc:
            return CommandResult(tuple(argv), 126, f"not run: {exc}", False, False, 0, 0.0)
        if wrapped is None:  # the sandbox went away since the check
            return await self._run_unconfined(argv, cwd, timeout, env)
        before = {root: existing_protected(root, gits) for root, gits in wrapped.gits.items()}
        result = await self.inner.run(wrapped.argv, cwd=cwd, timeout=timeout, env=environ)
        try:
            removed = await asyncio.to_thread(self._clean_up, before)
        except ProtectionError as exc:
            removed, failure = [], str(exc)
        else:
            failure = ""
        if removed or failure:
            note = f"removed {', '.join(removed)}" if removed else failure
            result = replace(
                result,
                exit_code=result.exit_code or 126,
                output=result.output + f"\n[agent-lsp: {note}: the agent may not create git, "
                "agent-lsp or editor configuration]",
            )
        return replace(result, argv=tuple(argv))

    def server_argv(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None = None,
        readable: Sequence[Path] = (),
    ) -> tuple[list[str], dict[str, str], tuple[Path, ...]]:
        """How to start a program that keeps running (an MCP server): its argv wrapped in the
        sandbox exactly as a command's (the network only as this shell's confinement says,
        whatever `sandbox.network`; `readable`: folders of the home shown back read-only),
        or as it is without a sandbox; its environment, the sandbox's plus `env`, with
        `PYTHONSAFEPATH=1`; and the empty read-only folders standing where protected names
        were missing at the top of the workspace (`Sandbox.wrap`; `remove_masks` once the
        program ended). `cwd` is an empty folder outside the workspace (made again inside
        the sandbox, whose /tmp is its own): started in the workspace, `python -m x` would
        import the repository's `x/` and `npx -y x` run its `node_modules` copy. Raises
        `SandboxError` when it cannot be confined as asked."""
        environ = self.environment() | dict(env or {}) | {"PYTHONSAFEPATH": "1"}
        shown = (*self.sandbox.toolchains, *readable)
        sandbox = replace(self.sandbox, network=False, toolchains=shown)
        wrapped = sandbox.wrap(argv, cwd, self.confinement, environ, server=True)
        if wrapped is None:
            return list(argv), environ, ()
        return wrapped.argv, environ, wrapped.masks

    def protected_now(self) -> dict[Path, dict[Path, Identity]]:
        """The protected entries (`.git`, editor settings …) under the writable roots now: to
        compare with after a long-running program acted (`tidy`)."""
        if not self.sandboxed:
            return {}
        roots = [Path(os.path.realpath(p)) for p in self.confinement.writable]
        return {
            root: existing_protected(root, self.sandbox.gits_after(root))
            for root in dict.fromkeys(roots)
            if root.is_dir()
        }

    def secrets_now(self) -> dict[Path, Identity] | None:
        """The secret files the sandbox hides in the visible roots now, each with its identity
        (what an atomic replace changes); None when they cannot all be found. A program that
        keeps running saw them hidden as they were at its start: one replaced or added since
        is not hidden from it (compare, and start it again)."""
        if not self.sandboxed or self.confinement.show_secrets:
            return {}
        out: dict[Path, Identity] = {}
        roots = [Path(os.path.realpath(p)) for p in self.confinement.visible]
        for root in dict.fromkeys(roots):
            if not root.is_dir():
                continue
            try:
                found = self.sandbox.scanner(root).scan()
            except SecretScanError:
                return None
            for path in found.secrets:
                with contextlib.suppress(OSError):
                    st = path.lstat()
                    out[path] = (st.st_dev, st.st_ino)
        return out

    def tidy(self, before: dict[Path, dict[Path, Identity]], keep: Sequence[Path] = ()) -> str:
        """Protected entries made since `before` removed, as after every command, but for
        `keep` (a server's masks); what was removed, or why it could not be ("" when nothing
        was made)."""
        try:
            removed = self._clean_up(before, keep)
        except ProtectionError as exc:
            return str(exc)
        return f"removed {', '.join(removed)}" if removed else ""

    @staticmethod
    def remove_masks(masks: Sequence[Path]) -> None:
        """The mount points of a server's masks, once it ended: each was an empty folder the
        sandbox made on the host, which nothing inside could write; one that is not empty
        any more was filled from outside (you ran `git init`) and stays."""
        for mask in masks:
            with contextlib.suppress(OSError):
                mask.rmdir()

    def _clean_up(
        self, before: dict[Path, dict[Path, Identity]], keep: Sequence[Path] = ()
    ) -> list[str]:
        """Protected entries the command created (a `.git`, editor settings, `.envrc`, at any
        depth) are moved away and deleted (but for `keep`)."""
        removed: list[str] = []
        for root, names in before.items():
            made = created_protected(root, names, self.sandbox.gits_after(root))
            removed += remove_created(root, [p for p in made if p not in keep])
        return removed

    async def _run_unconfined(
        self,
        argv: Sequence[str],
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None,
    ) -> CommandResult:
        """No OS sandbox (the policy asked): still no keys, and a fresh empty home each time,
        so nothing one command leaves there configures the next. What the command leaves
        running (`setsid … &`, a double fork: out of reach of a process-group kill) is ended
        with it where this process can adopt orphans (`adapters.reaper`); the result says so
        where it cannot."""
        home = Path(tempfile.mkdtemp(prefix="agent-lsp-home-"))
        token = new_token()
        adopts = subreaper()
        try:
            environ = self.environment(env, home) | {
                "GIT_CONFIG_GLOBAL": os.devnull,
                TREE_MARK: token,
            }
            result = await self.inner.run(argv, cwd=cwd, timeout=timeout, env=environ)
        finally:
            ended = await asyncio.to_thread(end_strays, token) if adopts else 0
            await asyncio.to_thread(shutil.rmtree, home, True)
        if ended:
            note = f"{_TREE_NOTE}ended {ended} process(es) the command left running]\n"
        elif not adopts:
            note = (
                f"{_TREE_NOTE}no OS sandbox, and no way here to find processes the command "
                "left running in the background: any such process was not stopped]\n"
            )
        else:
            return result
        return replace(result, output=note + result.output)

    def script_argv(self, command: str, env: Mapping[str, str] | None = None) -> list[str]:
        return self.inner.script_argv(command, env)

    async def run_script(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        environ = self.environment(env)
        return await self.run(self.script_argv(command, environ), cwd=cwd, timeout=timeout, env=env)
