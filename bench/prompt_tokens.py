"""Input tokens per fix task: agent-lsp's harness against a naive one, on the same scripted
conversations (the same tool calls, in the same order, on the same projects).

The naive harness is what many agents do: the whole project in the first prompt, whole files from
read_file, the full console output of the test runner. Ours: a perception snapshot (the
diagnostic's neighbourhood, the profile, git status), line ranges, structured test results.
Tokens are estimated the same way for both (4 characters per token), including tool schemas.

Run: .venv/bin/python bench/prompt_tokens.py   (writes bench/results/prompt_tokens.json)
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.config.schema import Settings
from agent_lsp.messages import ChatMessage, ModelReply, ToolCall, ToolSpec, estimate_tokens
from agent_lsp.models.scripted import ScriptedModel
from agent_lsp.session import Session
from agent_lsp.task import DiagnosticInfo, Task, TaskKind

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Scenario:
    name: str
    files: dict[str, str]
    path: str  # the buggy file
    bug: str
    fix: str
    message: str  # the diagnostic the user asked about
    naive_tests: tuple[str, ...] = ("{python}", "-m", "pytest", "-vv", "-p", "no:cacheprovider")
    node: bool = False  # needs jest in node_modules


def _module(index: int, functions: int) -> str:
    body = [f'"""Helpers for area {index}: parsing, scoring and formatting records."""\n']
    for n in range(functions):
        body.append(
            textwrap.dedent(
                f'''
                def score_{index}_{n}(values: list[float], weight: float = 1.0) -> float:
                    """Weighted score of `values` for rule {n} of area {index}."""
                    if not values:
                        return 0.0
                    total = 0.0
                    for position, value in enumerate(values):
                        factor = weight * (1 + position % {n + 2})
                        total += value * factor
                    return round(total / len(values), {n % 4 + 1})
                '''
            )
        )
    return "".join(body)


def _scenario(name: str, modules: int, functions: int, big: int = 0) -> Scenario:
    files = {f"pkg/area_{i}.py": _module(i, functions) for i in range(modules)}
    files["pkg/__init__.py"] = ""
    target = "pkg/stats.py"
    filler = _module(99, big) if big else ""
    files[target] = filler + textwrap.dedent(
        '''

        def median(values: list[float]) -> float:
            """The middle value of a non-empty list."""
            ordered = sorted(values)
            middle = len(ordered) // 2
            if len(ordered) % 2:
                return ordered[middle]
            return (ordered[middle - 1] + ordered[middle + 1]) / 2
        '''
    )
    files["tests/test_stats.py"] = textwrap.dedent(
        """
        from pkg.stats import median


        def test_odd() -> None:
            assert median([3, 1, 2]) == 2


        def test_even() -> None:
            assert median([4, 1, 3, 2]) == 2.5
        """
    )
    for i in range(modules):
        files[f"tests/test_area_{i}.py"] = (
            f"from pkg.area_{i} import score_{i}_0\n\n\n"
            f"def test_empty_{i}() -> None:\n    assert score_{i}_0([]) == 0.0\n"
        )
    files["pyproject.toml"] = '[tool.pytest.ini_options]\npythonpath = ["."]\n'
    return Scenario(
        name=name,
        files=files,
        path=target,
        bug="    return (ordered[middle - 1] + ordered[middle + 1]) / 2\n",
        fix="    return (ordered[middle - 1] + ordered[middle]) / 2\n",
        message="median([4, 1, 3, 2]) returned 3.5, expected 2.5",
    )


def _js_module(index: int, functions: int) -> str:
    body = [f"// Helpers for area {index}: parsing, scoring and formatting records.\n"]
    for n in range(functions):
        body.append(
            f"""
/** Weighted score of `values` for rule {n} of area {index}. */
function score{index}_{n}(values, weight = 1) {{
  if (values.length === 0) return 0;
  let total = 0;
  values.forEach((value, position) => {{
    total += value * weight * (1 + (position % {n + 2}));
  }});
  return Number((total / values.length).toFixed({n % 4 + 1}));
}}
"""
        )
    names = ", ".join(f"score{index}_{n}" for n in range(functions))
    return "".join(body) + f"\nmodule.exports = {{ {names} }};\n"


def _js_scenario(name: str, modules: int, functions: int) -> Scenario:
    files = {f"src/area{i}.js": _js_module(i, functions) for i in range(modules)}
    files["src/stats.js"] = textwrap.dedent(
        """
        /** The middle value of a non-empty array. */
        function median(values) {
          const ordered = [...values].sort((a, b) => a - b);
          const middle = Math.floor(ordered.length / 2);
          if (ordered.length % 2) return ordered[middle];
          return (ordered[middle - 1] + ordered[middle + 1]) / 2;
        }

        module.exports = { median };
        """
    )
    files["tests/stats.test.js"] = textwrap.dedent(
        """
        const { median } = require("../src/stats");

        test("odd", () => expect(median([3, 1, 2])).toBe(2));
        test("even", () => expect(median([4, 1, 3, 2])).toBe(2.5));
        """
    )
    files["package.json"] = json.dumps(
        {
            "name": name,
            "private": True,
            "scripts": {"test": "jest"},
            "devDependencies": {"jest": "30.2.0"},
        },
        indent=2,
    )
    return Scenario(
        name=name,
        files=files,
        path="src/stats.js",
        bug="  return (ordered[middle - 1] + ordered[middle + 1]) / 2;\n",
        fix="  return (ordered[middle - 1] + ordered[middle]) / 2;\n",
        message="median([4, 1, 3, 2]) returned 3.5, expected 2.5",
        naive_tests=("node_modules/.bin/jest", "--verbose"),
        node=True,
    )


def _go_scenario(name: str, modules: int, functions: int) -> Scenario:
    files: dict[str, str] = {"go.mod": "module example.com/stats\n\ngo 1.19\n"}
    for i in range(modules):
        funcs = "".join(
            f"""
// Score{i}x{n} is the weighted score of values for rule {n} of area {i}.
func Score{i}x{n}(values []float64, weight float64) float64 {{
    if len(values) == 0 {{
        return 0
    }}
    total := 0.0
    for position, value := range values {{
        total += value * weight * float64(1+position%{n + 2})
    }}
    return total / float64(len(values))
}}
"""
            for n in range(functions)
        )
        files[f"area{i}.go"] = f"package stats\n{funcs}"
    files["median.go"] = textwrap.dedent(
        """
        package stats

        import "sort"

        // Median is the middle value of a non-empty slice.
        func Median(values []float64) float64 {
            ordered := append([]float64(nil), values...)
            sort.Float64s(ordered)
            middle := len(ordered) / 2
            if len(ordered)%2 == 1 {
                return ordered[middle]
            }
            return (ordered[middle-1] + ordered[middle+1]) / 2
        }
        """
    )
    files["median_test.go"] = textwrap.dedent(
        """
        package stats

        import "testing"

        func TestOdd(t *testing.T) {
            if got := Median([]float64{3, 1, 2}); got != 2 {
                t.Fatalf("Median odd = %v, want 2", got)
            }
        }

        func TestEven(t *testing.T) {
            if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
                t.Fatalf("Median even = %v, want 2.5", got)
            }
        }
        """
    )
    return Scenario(
        name=name,
        files=files,
        path="median.go",
        bug="    return (ordered[middle-1] + ordered[middle+1]) / 2\n",
        fix="    return (ordered[middle-1] + ordered[middle]) / 2\n",
        message="Median even = 3.5, want 2.5",
        naive_tests=("go", "test", "-v", "./..."),
    )


SCENARIOS = [
    _scenario("py-small", modules=2, functions=3),
    _scenario("py-medium", modules=6, functions=8),
    _scenario("py-large", modules=12, functions=12),
    _scenario("py-long-file", modules=3, functions=4, big=40),
    _scenario("py-many-modules", modules=25, functions=5),
    _js_scenario("js-medium", modules=6, functions=8),
    _js_scenario("js-large", modules=14, functions=10),
    _go_scenario("go-medium", modules=6, functions=8),
    _go_scenario("go-large", modules=14, functions=10),
]
JEST_CACHE = Path(tempfile.gettempdir()) / "agent-lsp-bench-jest"


def _jest_modules() -> Path | None:
    """jest installed once into a cache folder, shared by the JS scenarios."""
    modules = JEST_CACHE / "node_modules"
    if (modules / ".bin" / "jest").exists():
        return modules
    if shutil.which("npm") is None:
        return None
    JEST_CACHE.mkdir(parents=True, exist_ok=True)
    (JEST_CACHE / "package.json").write_text('{"private": true}')
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "jest@30.2.0"],
        cwd=JEST_CACHE,
        capture_output=True,
        check=False,
    )
    return modules if (modules / ".bin" / "jest").exists() else None


def _write(root: Path, s: Scenario) -> None:
    for rel, text in s.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    modules = _jest_modules() if s.node else None
    if modules is not None:
        (root / "node_modules").symlink_to(modules)


def _bug_line(s: Scenario) -> int:
    return s.files[s.path][: s.files[s.path].index(s.bug)].count("\n") + 1


def _script(s: Scenario, line: int) -> list[tuple[str, dict[str, object]]]:
    """What a good model does: run the tests, read the function, fix it, run them again."""
    return [
        ("run_tests", {}),
        ("read_file", {"path": s.path, "start_line": max(line - 8, 1), "end_line": line + 1}),
        ("edit_file", {"path": s.path, "old_text": s.bug, "new_text": s.fix}),
        ("run_tests", {}),
    ]


class CountingModel:
    """Replays the script and counts the input tokens of every request."""

    def __init__(self, steps: list[ModelReply]) -> None:
        self.inner = ScriptedModel(steps)
        self.tokens: list[int] = []

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        schema = sum(len(json.dumps(t.to_openai())) for t in tools) // 4
        self.tokens.append(estimate_tokens(messages) + schema)
        return await self.inner.complete(messages, tools)


def _replies(script: list[tuple[str, dict[str, object]]]) -> list[ModelReply]:
    calls = [
        ModelReply(tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=json.dumps(a))])
        for i, (n, a) in enumerate(script)
    ]
    return [*calls, ModelReply(content="Fixed median() for even-length lists.")]


async def ours(s: Scenario, root: Path) -> tuple[list[int], str]:
    line = _bug_line(s)
    model = CountingModel(_replies(_script(s, line)))
    settings = Settings.model_validate({"maxSteps": 10})
    session = Session(root, settings, model)
    task = Task(
        kind=TaskKind.FIX,
        instruction="",
        path=s.path,
        diagnostic=DiagnosticInfo(message=s.message, line=line - 1, source="pytest"),
    )
    outcome = await session.run_task(task, TerminalChannel(out=io.StringIO()))
    await session.aclose()
    return model.tokens, outcome.status.value


def naive(s: Scenario, root: Path) -> list[int]:
    """Whole project up front, whole files, full `pytest -vv` output, same calls."""
    tools = 3 * 120  # three short tool schemas
    repo = "\n\n".join(f"### {rel}\n{text}" for rel, text in sorted(s.files.items()))
    history = [f"System: you are a coding agent.\nTask: {s.message}\nThe repository:\n{repo}"]
    tokens: list[int] = []
    for name, args in _script(s, _bug_line(s)):
        tokens.append(sum(len(h) for h in history) // 4 + tools)
        history.append(json.dumps({"call": name, "arguments": args}))
        if name == "read_file":
            history.append((root / s.path).read_text())
        elif name == "edit_file":
            path = root / s.path
            path.write_text(path.read_text().replace(s.bug, s.fix, 1))
            history.append("ok")
        else:
            argv = [a.replace("{python}", sys.executable) for a in s.naive_tests]
            run = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
            history.append(run.stdout + run.stderr)
    tokens.append(sum(len(h) for h in history) // 4 + tools)
    return tokens


async def main() -> None:
    rows: list[dict[str, object]] = []
    print(f"{'scenario':<18}{'files':>6}{'ours':>9}{'naive':>9}{'saved':>8}  outcome")
    for s in SCENARIOS:
        if (s.node and _jest_modules() is None) or (
            s.naive_tests[0] == "go" and shutil.which("go") is None
        ):
            print(f"{s.name:<18} skipped (toolchain missing)")
            continue
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            _write(Path(a), s)
            _write(Path(b), s)
            mine, status = await ours(s, Path(a))
            base = naive(s, Path(b))
        saved = 1 - sum(mine) / sum(base)
        rows.append(
            {
                "scenario": s.name,
                "files": len(s.files),
                "ours": sum(mine),
                "naive": sum(base),
                "saved": round(saved, 3),
                "outcome": status,
                "ours_per_call": mine,
                "naive_per_call": base,
            }
        )
        print(f"{s.name:<18}{len(s.files):>6}{sum(mine):>9}{sum(base):>9}{saved:>8.0%}  {status}")
    total_ours = sum(int(str(r["ours"])) for r in rows)
    total_naive = sum(int(str(r["naive"])) for r in rows)
    print(f"{'all':<18}{'':>6}{total_ours:>9}{total_naive:>9}{1 - total_ours / total_naive:>8.0%}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "prompt_tokens.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
