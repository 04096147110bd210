from __future__ import annotations

from pathlib import Path

from agent_lsp.config.reference import render

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_configuration_reference_matches_the_schema() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: run `python -m agent_lsp.config.reference`"
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


def test_the_reference_says_what_an_untrusted_workspace_may_do() -> None:
    rows = {
        line.split(" | ")[0].strip("| `"): line.split(" | ")[3]
        for line in render().split("\n")
        if line.startswith("| `")
    }
    assert (
        rows["tests.runOnSave"] == rows["lint.enabled"] == rows["suggestions.enabled"] == "turn off"
    )
    assert (
        rows["sandbox.enabled"] == "turn on"
        and rows["permissionLevel"] == rows["applyMode"] == "stricter values"
    )
    assert rows["extraRoots"] == rows["sandbox.passEnv"] == "remove entries"
    assert {rows[k] for k in rows if k.startswith("model.")} == {"no", "never"}
    assert rows["maxSteps"] == "set" and rows["model.apiKey"] == "never"
