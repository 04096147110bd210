"""`agent-lsp demo`: the real pipeline on a bundled sample project.

Without `--live` a scripted model stands in for the LLM: its replies are fixed, everything else
(tools, edits, pytest in the shadow workspace, the done-check) is the real thing.

May import: `agent_lsp.models` and the shared root modules.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from agent_lsp.messages import ModelReply, ToolCall
from agent_lsp.models.scripted import ScriptedModel

BUG = "    return sum(values) / (len(values) + 1)\n"
FIX = "    return sum(values) / len(values)\n"
TASK = "make the failing test pass"


EXPERIENCE = {
    "topic": "average off by one",
    "tags": ["calc", "average", "off-by-one"],
    "symbols": ["average"],
    "goal": "Make tests/test_calc.py::test_average pass.",
    "steps": ["ran the tests", "read calc.py", "fixed the divisor", "ran the tests again"],
    "key_decisions": ["divide by len(values) - the mean of n values divides by n"],
    "pitfalls": ["an extra + 1 in a divisor passes for empty-list guards but skews every mean"],
    "open_questions": ["should average([]) raise a clearer error?"],
}


def _call(n: int, name: str, **arguments: object) -> ModelReply:
    return ModelReply(
        content=None,
        tool_calls=[ToolCall(id=f"demo_{n}", name=name, arguments=json.dumps(arguments))],
    )


def demo_model() -> ScriptedModel:
    """The scripted stand-in: run the tests, read the code, fix it, run the tests, report."""
    return ScriptedModel(
        [
            _call(1, "run_tests"),
            _call(2, "read_file", path="calc.py"),
            _call(3, "edit_file", path="calc.py", old_text=BUG, new_text=FIX),
            _call(4, "run_tests"),
            ModelReply(
                content="Fixed average() in calc.py: it divided by len(values) + 1 instead of "
                "len(values). The test suite passes."
            ),
            # A failure followed by a passing fix is worth remembering: one distillation call.
            ModelReply(content=json.dumps(EXPERIENCE)),
        ]
    )


def copy_sample(dest: Path | None = None) -> Path:
    """Copy the bundled sample project into `dest` (a new or empty folder; a new temporary
    folder by default)."""
    target = dest or Path(tempfile.mkdtemp(prefix="agent-lsp-demo-")) / "calc-sample"
    source = resources.files("agent_lsp.demo") / "sample"
    with resources.as_file(source) as folder:
        shutil.copytree(
            folder, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
        )
    return target
