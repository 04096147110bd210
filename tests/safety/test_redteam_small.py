"""Red team of the small-model profile: what a hostile repository and a hostile model can make
its first look show, its edits in words write, and its start over undo. The real openai client
against the scripted fake model, the real tool box and policy; what is asserted is what the
model was sent, what is on disk or in the editor's buffers, and what was asked."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from agent_lsp.loop.small import first_look
from agent_lsp.project.workspace import Workspace
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.test_small_model import small

TASK = Task(kind=TaskKind.TASK, instruction="Make the failing test in test_calc.py pass.")


def sent(server: FakeOpenAIServer) -> str:
    """Everything the model was sent, as one text."""
    return "\n".join(
        str(m.get("content") or "") for r in server.requests for m in r.get("messages", [])
    )


# ---- the start over: it undoes the model's edit, never the user's ------------------------
USER_LINE = "\n\ndef mine() -> int:  # the user's own, typed while the agent ran\n    return 7\n"


class TypingUser(RecordingChannel):
    """An editor whose user types into calc.py right after the agent's first edit of it."""

    def __init__(self, calc: Path) -> None:
        super().__init__({calc: calc.read_text()})
        self.calc = calc.resolve()
        self.typed = False

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        await super().apply_edit(path, new_text, label)
        if not self.typed and path.resolve() == self.calc:
            self.typed = True
            self.open[self.calc] = new_text + USER_LINE


async def test_the_start_over_never_undoes_what_the_user_typed_meanwhile(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The model's wrong edit lands, the user then adds a function of their own to the same
    file, the model writes the file back as it was shown (with the user's function): an echo.
    The start over may undo the model's edit, but it must not put the whole file back as it
    was before the model — the user's function would go with it."""
    calc = project / "calc.py"
    before = calc.read_text()
    wrong = before.replace(BUG, "    return sum(values) / (len(values) + 2)\n")
    channel = TypingUser(calc)

    def echo(_body: dict[str, Any]) -> Reply:
        return Reply(f"calc.py\n```python\n{channel.open[channel.calc]}```\n")

    fake_openai.script(Reply(f"calc.py\n```python\n{wrong}```\n"), echo)
    fake_openai.default_reply = Reply("Ok.")
    session = small(project, fake_openai)
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert channel.typed, outcome.summary
    assert USER_LINE.strip() in channel.open[channel.calc], [e.message for e in channel.events]
    assert not any("undoing it" in e.message for e in channel.events)


# ---- the first look: what the harness itself reads and shows --------------------------
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose test imports, by every form the first look follows, secret files, a
    link out, files a rule hides, and the files the agent may never write; and a folder beside
    it with the canaries."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    files = {
        outside / "key.py": "CANARY_LINK_OUT = 'sk-outside-1'\n",
        outside / "pkg/mod.py": "CANARY_LINKED_FOLDER = 'sk-outside-2'\n",
        ws / "app.py": "def main():\n    return 1\n",
        ws / "private.py": "CANARY_DENIED = 'sk-denied'\n",
        ws / "asked.py": "CANARY_ASKED = 'sk-asked'\n",
        ws / ".env": "CANARY_ENV=sk-env\n",
        ws / ".env.js": "export const CANARY_ENV_JS = 'sk-env-js';\n",
        ws / "server.pem.js": "// not a key\n",
        ws / "config/server.pem": "CANARY-PEM\n",
        ws / ".npmrc": "//registry/:_authToken=CANARY-NPMRC\n",
        ws / "id_rsa": "CANARY-ID-RSA\n",
        ws / ".ssh/config.py": "CANARY_SSH = 1\n",
        ws / ".agent-lsp/policy.toml": (
            '[[deny]]\npath = "private.py"\n\n[[ask]]\npath = "asked.py"\n'
        ),
        ws / "tests/test_app.py": (
            "import app\nimport key\nimport private\nimport asked\nimport vendor.mod\n"
            "from .ssh import config\n\n\ndef test_main():\n    assert app.main() == 1\n"
        ),
        ws / "main.test.js": (
            'import "./.env";\nimport "./.env.js";\nimport "./config/server.pem";\n'
            'import "./.npmrc";\nimport "./id_rsa";\nimport "./key.js";\n'
            "test('x', () => {});\n"
        ),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (ws / "key.py").symlink_to(outside / "key.py")
    (ws / "key.js").symlink_to(outside / "key.py")
    (ws / "vendor").symlink_to(outside / "pkg")
    return ws, outside


async def test_the_first_look_shows_no_secret_no_link_out_and_nothing_a_rule_hides(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    """Held: every file the first look shows passes the read guard read_file passes (secret
    files by name, links out, deny and ask path rules): none of the canaries reaches the
    model, and the code the test imports is shown."""
    ws, _outside = hostile_repo(tmp_path)
    fake_openai.script(Reply("Ok."))
    session = small(ws, fake_openai)
    task = Task(kind=TaskKind.TASK, instruction="Make tests/test_app.py and main.test.js pass.")
    channel = RecordingChannel()
    await session.run_task(task, channel)
    await session.aclose()

    text = sent(fake_openai)
    assert "def main():" in text  # app.py was shown: the first look did look
    assert "CANARY" not in text and "sk-" not in text
    assert channel.questions == []  # nothing asked: what would need a question is left out


async def test_the_first_look_finds_no_import_in_a_file_it_may_not_read(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The imports of a file are looked for only in a file the guard lets the first look
    read: a link out of the workspace (leak.py -> a file beside it) and a file a deny rule
    hides are not opened, so what they hold decides nothing the model is shown (here: which
    workspace file follows)."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "tests").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.py").write_text("import picked_by_outside\n")
    (ws / "leak.py").symlink_to(outside / "secret.py")
    (ws / "private.py").write_text("import picked_by_denied\n")
    (ws / "picked_by_outside.py").write_text("SHOWN_FROM_OUTSIDE = 1\n")
    (ws / "picked_by_denied.py").write_text("SHOWN_FROM_DENIED = 1\n")
    (ws / ".agent-lsp").mkdir()
    (ws / ".agent-lsp/policy.toml").write_text('[[deny]]\npath = "private.py"\n')
    (ws / "tests/test_leak.py").write_text(
        "import leak\nimport private\n\n\ndef test_x():\n    assert True\n"
    )
    fake_openai.script(Reply("Ok."))
    session = small(ws, fake_openai)
    task = Task(kind=TaskKind.TASK, instruction="Make tests/test_leak.py pass.")
    await session.run_task(task, RecordingChannel())
    await session.aclose()

    text = sent(fake_openai)
    assert "import leak" in text  # the test was shown
    assert "SHOWN_FROM_OUTSIDE" not in text
    assert "SHOWN_FROM_DENIED" not in text


async def test_the_first_look_shows_no_file_the_agent_may_never_write(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    """`import "./.git/config"` in a repository's test: git's config (a remote's URL may
    carry a token), agent-lsp's own folder and the editor settings are never shown as files
    to change — the agent may not write them, and the harness does not volunteer them."""
    ws = tmp_path / "ws"
    files = {
        ws / ".git/config": '[remote "origin"]\n\turl = https://u:CANARY-GIT@example.com/r\n',
        ws / ".agent-lsp/prompt-notes.md": "CANARY-AGENT-LSP\n",
        ws / ".vscode/settings.json": '{"CANARY-VSCODE": 1}\n',
        ws / "sub/.envrc": "export CANARY_ENVRC=1\n",
        ws / "main.test.js": (
            'import "./.git/config";\nimport "./.agent-lsp/prompt-notes.md";\n'
            'import "./.vscode/settings.json";\nimport "./sub/.envrc";\n'
            "test('x', () => {});\n"
        ),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    fake_openai.script(Reply("Ok."))
    session = small(ws, fake_openai)
    task = Task(kind=TaskKind.TASK, instruction="Make main.test.js pass.")
    await session.run_task(task, RecordingChannel())
    await session.aclose()

    text = sent(fake_openai)
    assert "test('x'" in text
    assert "CANARY" not in text


async def test_the_first_look_never_blocks_on_a_fifo_a_repository_ships(tmp_path: Path) -> None:
    """A FIFO named like a Go file of the package under test (an archive can hold one): the
    first look lists the package's files and looks into each for imports; opening the FIFO
    would wait for a writer forever, and the task would never start."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "go.mod").write_text("module calc\n\ngo 1.21\n")
    (ws / "calc.go").write_text("package calc\n\nfunc Add(a, b int) int { return a + b }\n")
    (ws / "calc_test.go").write_text(
        'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {}\n'
    )
    fifo = ws / "zz.go"
    os.mkfifo(fifo)
    workspace = Workspace(ws, RecordingChannel())
    task = Task(kind=TaskKind.TASK, instruction="Make calc_test.go pass.")
    try:
        look = await asyncio.wait_for(first_look(task, workspace, None, 24_000), 10)
    finally:
        _release(fifo)
    assert look.shown == ["calc_test.go", "calc.go"]


def _release(fifo: Path) -> None:
    """A reader blocked opening the FIFO gets its end of file (so no thread is left hanging)."""
    for _ in range(50):
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader waiting (ENXIO): nothing to release
            return
        os.close(fd)
        time.sleep(0.05)
