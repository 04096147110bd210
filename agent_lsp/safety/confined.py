"""`ConfinedShell`: the one way the agent runs a program — commands, test runs, linters,
init.d steps and git alike. Every program gets the sandbox environment (an allowlist, no API
keys) and, where the machine has an OS sandbox, runs inside it as its `Confinement` says."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from adapters import PosixShell
from adapters.results import CommandResult
from agent_lsp.safety.homeview import private_home
from agent_lsp.safety.sandbox import (
    Confinement,
    Sandbox,
    SandboxError,
    created_protected,
    existing_protected,
)
from agent_lsp.safety.sandbox_env import sandbox_env

__all__ = ["ConfinedShell"]


class ConfinedShell:
    """A `Shell` (and `ScriptShell`) whose programs run confined. Without an OS sandbox they
    run as they are, with the sandbox environment: whoever calls must have asked the user."""

    def __init__(
        self,
        sandbox: Sandbox,
        confinement: Confinement,
        inner: PosixShell | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.confinement = confinement
        self.inner = inner or PosixShell()
        self._scratch: Path | None = None

    @property
    def scratch_root(self) -> Path:
        """Where the adapters make their temporary folders (`adapters.shell.scratch_dir`):
        writable inside the sandbox, outside its private /tmp."""
        if self._scratch is None or not self._scratch.is_dir():
            self._scratch = Path(tempfile.mkdtemp(prefix="agent-lsp-scratch-"))
        return self._scratch

    @property
    def max_output_bytes(self) -> int:
        return self.inner.max_output_bytes

    @property
    def sandboxed(self) -> bool:
        return self.sandbox.available

    def but(self, **changes: object) -> ConfinedShell:
        """The same shell with some of the confinement changed (`network=True`, ...)."""
        confinement = replace(self.confinement, **changes)  # pyright: ignore[reportArgumentType]
        shell = ConfinedShell(self.sandbox, confinement, self.inner)
        shell._scratch = self._scratch
        return shell

    def environment(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        home = self.sandbox.home
        if not self.sandboxed:  # no private home to mount: a private folder of the agent's
            anchor = (*self.confinement.visible, *self.confinement.writable, Path.cwd())[0]
            home = private_home(Path(os.path.realpath(anchor)), self.sandbox.private_base)
        return sandbox_env(
            os.environ if env is None else env,
            Path(os.path.realpath(home)),
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
        environ = self.environment(env)
        confinement = self.confinement
        if self._scratch is not None:
            confinement = replace(confinement, scratch=(*confinement.scratch, self._scratch))
        try:
            wrapped = await asyncio.to_thread(self.sandbox.wrap, argv, cwd, confinement, environ)
        except SandboxError as exc:
            return CommandResult(tuple(argv), 126, f"not run: {exc}", False, False, 0, 0.0)
        if wrapped is None:
            return await self.inner.run(argv, cwd=cwd, timeout=timeout, env=environ)
        roots = [Path(p) for p in self.confinement.writable]
        before = {root: existing_protected(root) for root in roots}
        result = await self.inner.run(wrapped, cwd=cwd, timeout=timeout, env=environ)
        made = {root: created_protected(root, names) for root, names in before.items()}
        if any(made.values()):
            removed = await asyncio.to_thread(_remove, made)
            result = replace(
                result,
                exit_code=result.exit_code or 126,
                output=result.output
                + f"\n[agent-lsp: removed {', '.join(removed)}: the agent may not create "
                "git, agent-lsp or editor configuration]",
            )
        return replace(result, argv=tuple(argv))

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


def _remove(made: dict[Path, list[str]]) -> list[str]:
    out: list[str] = []
    for root, names in made.items():
        for name in names:
            path = root / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            out.append(name)
    return out
