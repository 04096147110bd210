"""A task killed (`kill -9`) after its first edit, resumed with `agent-lsp run --resume`: the
names in the task's words (`Stock.remove`, `line_total`, `v2.0`) are not files its state
recorded, so nothing is asked and the resumed run finishes with the earlier read and edit in
its conversation; a file the state did record, deleted meanwhile, is still asked about."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall
from tests.scripts import tool_messages
from tests.test_cli import agent_lsp

TASK = "Fix Stock.remove and line_total so the tests pass (the v2.0 behaviour)"
STOCK = """class Stock:
    def __init__(self):
        self.items = {}

    def add(self, name, count):
        self.items[name] = self.items.get(name, 0) + count

    def remove(self, name, count):
        self.items[name] = self.items.get(name, 0) + count


def line_total(price, count):
    return price + count
"""
TESTS = """from stock import Stock, line_total


def test_remove():
    stock = Stock()
    stock.add("pen", 3)
    stock.remove("pen", 2)
    assert stock.items["pen"] == 1


def test_line_total():
    assert line_total(2, 3) == 6
"""
REMOVE_BUG = "        self.items[name] = self.items.get(name, 0) + count\n\n\ndef"
REMOVE_FIX = "        self.items[name] = self.items.get(name, 0) - count\n\n\ndef"
TOTAL_BUG, TOTAL_FIX = "    return price + count\n", "    return price * count\n"
SUMMARY = "Fixed Stock.remove (it added) and line_total (it added the price and the count)."


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "stock.py").write_text(STOCK)
    (root / "test_stock.py").write_text(TESTS)
    (root / "notes.txt").write_text("Stock counts are per item.\n")
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0.1.0"\n')
    return root


def read(path: str) -> Reply:
    return Reply(tool_calls=[ToolCall("read_file", {"path": path})])


def edit(old: str, new: str) -> Reply:
    return Reply(
        tool_calls=[ToolCall("edit_file", {"path": "stock.py", "old_text": old, "new_text": new})]
    )


def killed_after_the_first_edit(
    root: Path, fake_openai: FakeOpenAIServer, env: dict[str, str], *first: Reply
) -> None:
    """`agent-lsp run TASK`: the scripted replies, then a model call that never answers; the
    run is killed (SIGKILL) while it waits on it."""
    fake_openai.script(*first, Hang(120))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", TASK, "--root", str(root)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fake_openai.wait_for_requests(len(first) + 1, timeout=120)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert REMOVE_FIX in (root / "stock.py").read_text()  # the first edit had landed


def test_names_in_the_task_are_no_conflict_and_the_resumed_run_finishes(
    shop: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    killed_after_the_first_edit(
        shop, fake_openai, server_env, read("stock.py"), edit(REMOVE_BUG, REMOVE_FIX)
    )
    fake_openai.script(edit(TOTAL_BUG, TOTAL_FIX), Reply(tool_calls=[ToolCall("run_tests", {})]))
    fake_openai.script(Reply(SUMMARY))
    done = agent_lsp("run", "--resume", "--root", str(shop), env=server_env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "conflict" not in out and "Go on" not in out, out
    assert (shop / "stock.py").read_text() == STOCK.replace(REMOVE_BUG, REMOVE_FIX).replace(
        TOTAL_BUG, TOTAL_FIX
    )
    assert "2 passed, 0 failed" in done.stdout
    # the first resumed request holds the earlier read and edit
    resumed = fake_openai.requests[3]
    tools = tool_messages(resumed)
    assert len(tools) == 2
    assert "def line_total(price, count):" in tools[0]
    assert "edited stock.py" in tools[1]
    assert len(fake_openai.requests) == 6  # two answered, the hung one, three resumed
    # this run's totals: the three model calls it made, the edit and the test run
    totals = re.search(r"(\d+) model calls?, (\d+) tool runs?", out)
    assert totals is not None, out
    assert totals.groups() == ("3", "2"), out


def test_a_recorded_file_deleted_meanwhile_is_still_asked_about(
    shop: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    note = Reply(
        tool_calls=[
            ToolCall(
                "update_task",
                {"section": "progress", "content": "notes.txt says counts are per item"},
            )
        ]
    )
    killed_after_the_first_edit(
        shop, fake_openai, server_env, read("notes.txt"), note, edit(REMOVE_BUG, REMOVE_FIX)
    )
    (shop / "notes.txt").unlink()  # the user moved things while the task was down
    asked_before = len(fake_openai.requests)
    done = agent_lsp("run", "--resume", "--root", str(shop), env=server_env)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "notes.txt, which no longer exists" in out, out
    assert "Go on, or stop" in out and "paused" in out, out
    assert len(fake_openai.requests) == asked_before  # nothing acted on
    totals = re.search(r"(\d+) model calls?, (\d+) tool runs?", out)
    assert totals is not None, out
    assert totals.groups() == ("0", "0"), out
