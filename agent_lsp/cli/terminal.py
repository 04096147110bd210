"""`TerminalChannel`: the EditorChannel of `agent-lsp run` — disk, printed steps, prompts, and
the time spent waiting on the model or a tool (a spinner on a terminal, a line a minute
otherwise)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from agent_lsp.cli.output import control, shown
from agent_lsp.fileio import atomic_write
from agent_lsp.messages import AgentEvent, EventKind
from agent_lsp.safety.policy import visible

_MARK = {
    EventKind.STARTED: "▶",
    EventKind.THINKING: "…",
    EventKind.TOOL_CALL: "→",
    EventKind.TOOL_RESULT: "←",
    EventKind.EDIT: "✎",
    EventKind.MESSAGE: "·",
    EventKind.FINISHED: "■",
}


_SPIN = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_YES, _NO = ("y", "yes"), ("n", "no")
PLAIN_EVERY = 60.0  # seconds between "still waiting" lines when the output is not a terminal


def parse_answer(text: str, options: Sequence[str]) -> str | None:
    """The option an answer picks (None: it picks none, or more than one): trimmed and in any
    case, the option's name, its number, the start of its name when only one option starts
    so, `y`/`yes` for the first option and `n`/`no` for the last."""
    said = " ".join(text.split()).casefold()
    if not said or not options:
        return None
    names = [o.casefold() for o in options]
    if said in names:
        return options[names.index(said)]
    if said.isdigit() and 1 <= int(said) <= len(options):
        return options[int(said) - 1]
    if len(options) >= 2 and said in _YES:
        return options[0]
    if len(options) >= 2 and said in _NO:
        return options[-1]
    starts = [o for o, name in zip(options, names, strict=True) if name.startswith(said)]
    return starts[0] if len(starts) == 1 else None


async def _read_line(prompt: str) -> str:
    """`input(prompt)` on a daemon thread: Ctrl-C while it waits ends the run at once (the
    default executor's thread would keep the process waiting for a line at exit)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str] = loop.create_future()

    def settle(value: str | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value or "")

    def read() -> None:
        try:
            value, error = input(prompt), None
        except (EOFError, OSError, ValueError) as exc:
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=read, name="agent-lsp-prompt", daemon=True).start()
    return await done


def _choices(options: Sequence[str]) -> str:
    return " | ".join(f"{n} {o}" for n, o in enumerate(options, 1))


class TerminalChannel:
    def __init__(self, out: TextIO | None = None, assume_yes: bool = False) -> None:
        self.out = out or sys.stdout
        self.assume_yes = assume_yes
        self._ticker: asyncio.Task[None] | None = None
        self._shown = False  # a spinner line is on screen
        # A line still being read when its question went unanswered (a timeout): the next
        # question reads it, so two readers never compete for the terminal.
        self._reading: asyncio.Future[str] | None = None

    def buffers(self) -> Mapping[Path, str]:
        return {}

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        await asyncio.to_thread(atomic_write, path, new_text)
        self._print(f"  ✎ {label}")

    async def report(self, event: AgentEvent) -> None:
        step = f"[{event.step:>2}] " if event.step else ""
        self._print(f"{step}{_MARK[event.kind]} {event.message}")
        if event.kind is EventKind.THINKING:
            self._wait("waiting for the model")
        elif event.kind is EventKind.TOOL_CALL:
            self._wait(f"{event.data.get('tool') or 'tests'} running")

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        """The whole question first (escaped: nothing in it can move the cursor or hide text),
        then the numbered options, asked again until the answer picks one (see
        `parse_answer`); without options, the answer in words (an empty line: none); without a
        terminal to answer on, or at the end of input, it is no."""
        self._print(f"? {visible(question)}")
        if self.assume_yes:
            return options[0] if options else None
        if not sys.stdin.isatty():
            self._print("  no terminal to answer on: no answer")
            return None
        # shown here too: input() may write the prompt to the terminal itself, past the filter
        prompt = shown(f"  [{_choices(options)}] ") if options else "  your answer: "
        while True:
            try:
                answer = await self._line(prompt)
            except (EOFError, OSError, ValueError):  # end of input, or stdin closed
                self._print(f"\n  no answer (end of input): {options[-1] if options else 'no'}")
                return None
            if not options:
                return answer.strip() or None
            picked = parse_answer(answer, options)
            if picked is not None:
                return picked
            self._print(
                f"  {visible(answer.strip()) or 'no answer'}: please answer with a number "
                f"(1-{len(options)}), the start of an option, or y/n"
            )

    async def _line(self, prompt: str) -> str:
        reading = self._reading
        if reading is None or reading.done():
            reading = asyncio.ensure_future(_read_line(prompt))
            self._reading = reading
        else:
            self._print(prompt.strip())
        line = await asyncio.shield(reading)
        self._reading = None
        return line

    def close(self) -> None:
        """Stop showing the time spent waiting (before the caller prints its summary)."""
        self._stop()

    def _wait(self, what: str) -> None:
        self._stop()
        with contextlib.suppress(RuntimeError):  # no running loop: no ticker
            self._ticker = asyncio.get_running_loop().create_task(self._tick(what))

    async def _tick(self, what: str) -> None:
        start, frame = time.monotonic(), 0
        tty = self._tty()
        next_line = PLAIN_EVERY
        while True:
            await asyncio.sleep(0.25 if tty else 1.0)
            elapsed = time.monotonic() - start
            if tty:
                frame += 1
                spin = _SPIN[frame % len(_SPIN)]
                control(self.out, f"\r  {spin} {what} {elapsed:.0f} s\x1b[K")
                self._shown = True
            elif elapsed >= next_line:
                print(f"  … {what} {elapsed:.0f} s", file=self.out, flush=True)
                next_line += PLAIN_EVERY

    def _stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._shown:
            control(self.out, "\r\x1b[K")
            self._shown = False

    def _tty(self) -> bool:
        isatty = getattr(self.out, "isatty", None)
        return bool(isatty and isatty())

    def _print(self, text: str) -> None:
        """`text` with control characters but newlines and tabs escaped: what the model or a
        file wrote (a summary, a path, a command) never moves the cursor or clears a line."""
        self._stop()
        print(shown(text), file=self.out, flush=True)
