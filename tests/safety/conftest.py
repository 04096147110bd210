"""A fake home with credentials and shell start-up files, and a workspace with secrets, git
internals, a committed symlink into ~/.ssh and a symlinked folder — for every safety test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_lsp.config.schema import PermissionLevel
from agent_lsp.safety.engine import SafetyPolicy
from agent_lsp.safety.rules import RuleSet


@dataclass
class Layout:
    home: Path
    ws: Path

    def policy(
        self, level: str = "L2", rules: RuleSet | None = None, sandboxed: bool = True
    ) -> SafetyPolicy:
        return SafetyPolicy(
            self.ws, PermissionLevel(level), rules, home=self.home, sandboxed=sandboxed
        )

    def fmt(self, text: str) -> str:
        return text.replace("{home}", str(self.home)).replace("{ws}", str(self.ws))


def make_layout(base: Path) -> Layout:
    home, ws = base / "home", base / "ws"
    files = {
        home / ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        home / ".ssh/config": "Host *\n",
        home / ".aws/credentials": "[default]\naws_secret_access_key=x\n",
        home / ".netrc": "machine x login y password z\n",
        home / ".bashrc": "# rc\n",
        home / ".config/agent-lsp/config.toml": '[model]\napi_key = "sk-user"\n',
        home / "notes.txt": "home notes\n",
        ws / "src/app.py": "def main():\n    return 1\n",
        ws / "tests/test_app.py": "from src.app import main\n",
        ws / "README.md": "# demo\n",
        ws / ".env": "API_KEY=sk-project\n",
        ws / ".env.example": "API_KEY=\n",
        ws / "config/server.pem": "-----BEGIN PRIVATE KEY-----\n",
        ws / ".git/config": "[core]\n",
        ws / ".git/hooks/.keep": "",
        ws / ".agent-lsp/policy.toml": "",
        ws / "build/out.o": "x",
        ws / "files.txt": "src/app.py\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (ws / "keylink").symlink_to(home / ".ssh/id_rsa")  # a committed symlink into ~/.ssh
    (ws / "sshdir").symlink_to(home / ".ssh")  # a symlinked parent folder
    (ws / "homelink").symlink_to(home)
    return Layout(home.resolve(), ws.resolve())


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return make_layout(tmp_path)


@pytest.fixture(scope="module")
def shared_layout(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    """One layout for a module's read-only tests (the corpora: nothing runs)."""
    return make_layout(tmp_path_factory.mktemp("shared"))
