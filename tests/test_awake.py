"""The CLI's event loop runner works from any thread: the signal wake-up fd is the main
thread's alone (set_wakeup_fd raises elsewhere), so another thread runs the loop without it."""

from __future__ import annotations

import threading

from agent_lsp.cli import awake


async def answer() -> int:
    return 42


def test_run_from_a_thread_other_than_the_main_one() -> None:
    results: list[object] = []

    def in_thread() -> None:
        try:
            results.append(awake.run(answer()))
        except Exception as exc:  # what the thread met, for the assertion below
            results.append(exc)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(30)
    assert results == [42]
    assert awake.run(answer()) == 42  # and from the main thread, with the wake-up fd
