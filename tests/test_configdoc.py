from __future__ import annotations

from pathlib import Path

from agent_lsp.configdoc import render

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_configuration_reference_matches_the_schema() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: run `python -m agent_lsp.configdoc`"
    )


def test_every_contract_key_is_documented() -> None:
    text = render()
    for key in (
        "model.baseUrl",
        "model.name",
        "applyMode",
        "permissionLevel",
        "suggestions.enabled",
        "tests.runOnSave",
        "maxSteps",
    ):
        assert f"| `{key}` |" in text
