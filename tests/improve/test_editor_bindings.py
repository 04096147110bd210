"""The editor configurations bind agentLsp.improve / improveList / improveRevert: the VS Code
extension contributes palette commands for them (and activates on them), its source sends the
server's commands; Neovim defines :AgentImprove, :AgentImproveList, :AgentImproveRevert;
Emacs defines agent-lsp-improve, -improve-list, -improve-revert."""

from __future__ import annotations

import json
import re
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[2] / "editor-configs"
SERVER = ("agentLsp.improve", "agentLsp.improveList", "agentLsp.improveRevert")


def test_vscode_contributes_and_sends_the_improve_commands() -> None:
    package = json.loads((CONFIGS / "vscode" / "package.json").read_text())
    palette = ["agentLsp.palette.improve", "agentLsp.palette.improveList"]
    palette.append("agentLsp.palette.improveRevert")
    contributed = {c["command"]: c for c in package["contributes"]["commands"]}
    for command in palette:
        assert contributed[command]["category"] == "agent-lsp"
        assert f"onCommand:{command}" in package["activationEvents"]
    logic = (CONFIGS / "vscode" / "src" / "logic.ts").read_text()
    extension = (CONFIGS / "vscode" / "src" / "extension.ts").read_text()
    for command in (*SERVER, *palette):
        assert f'"{command}"' in logic
    for name in ("improve", "improveList", "improveRevert"):
        assert f"registerCommand(PALETTE.{name}," in extension


def test_neovim_and_emacs_bind_the_improve_commands() -> None:
    lua = (CONFIGS / "neovim" / "lua" / "agent_lsp" / "init.lua").read_text()
    for name in ("AgentImprove", "AgentImproveList", "AgentImproveRevert"):
        assert re.search(rf'command\("{name}",', lua), name
    elisp = (CONFIGS / "emacs" / "agent-lsp.el").read_text()
    for name in ("agent-lsp-improve", "agent-lsp-improve-list", "agent-lsp-improve-revert"):
        assert f"(defun {name} (" in elisp
    for command in SERVER:
        assert f'"{command}"' in lua and f'"{command}"' in elisp
