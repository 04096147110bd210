"""A hostile repository and a prompt-injected model against the newest surfaces: the
repeated-commands record, the symbol index, the team reviewer's diff, project tools. Each
canary lies outside the workspace (or is a secret in it) and must not reach the model."""

from __future__ import annotations

import asyncio
import io
import json
import re
import subprocess
from pathlib import Path

import pytest

from adapters import detect_toolchain
from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.errors import EditRejectedError
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.memory.commands import commands_ran, normalise, record_commands
from agent_lsp.messages import AgentEvent, ChatMessage, EventKind, ToolCall, ToolStatus
from agent_lsp.project.git import Git
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.engine import SafetyPolicy
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.rules import parse_rules
from agent_lsp.safety.sandbox import Confinement, Sandbox
from agent_lsp.symbols import SymbolIndex, repo_map
from agent_lsp.team.channel import RoleChannel, WriteLocks
from agent_lsp.team.review import review_checks
from agent_lsp.team.verdict import may_test_write
from agent_lsp.tools import RESERVED_NAMES, ProjectTool, ReadFileTool
from agent_lsp.tools.project_spec import ProjectToolsError, parse_project_tools
from tests.fakes.channel import RecordingChannel
from tests.records import read_signed, write_signed

CANARY = "CANARY_7f3a_outside_the_workspace"


def outside(tmp_path: Path) -> Path:
    """A folder of the user's next to the workspace, holding a canary source file."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "private.py").write_text(f'def {CANARY.lower()}():\n    return "{CANARY}"\n')
    return folder


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def inside():\n    return 1\n")
    return root


# ---- the repeated-commands record (.agent-lsp/cache/commands.json) ------------------------


def crafted_record(root: Path, body: object) -> Path:
    """A record signed with the user's key (one that is not is ignored, see
    tests/improve/test_repeated_commands.py): what it holds is still checked."""
    path = root / ".agent-lsp" / "cache" / "commands.json"
    return write_signed(path, "commands", json.dumps(body))


def test_a_crafted_commands_record_of_the_wrong_shape_is_started_again(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    for body in ({"commands": [], "suggested": 5}, {"commands": {"ls": "t1"}, "suggested": "x"}):
        path = crafted_record(root, body)
        assert record_commands(root, "t9", ["ls"]) == []
        assert read_signed(path, "commands") == {
            "version": 1,
            "commands": {"ls": ["t9"]},
            "suggested": [],
        }
        path.unlink()
        path.parent.rmdir()
        path.parent.parent.rmdir()


def test_the_suggested_improve_command_runs_nothing_when_pasted_into_a_shell(
    tmp_path: Path,
) -> None:
    """Two earlier "tasks" in the record make the model's one run of a command a suggestion,
    whose shell line once held the command in double quotes."""
    root = workspace(tmp_path)
    pwned = tmp_path / "PWNED"
    commands = [normalise(f'echo "$(touch {pwned})" `touch {pwned}`'), 'echo "a!!b\\" \'x']
    crafted_record(root, {"commands": {c: ["a", "b"] for c in commands}})
    lines = record_commands(root, "t3", commands)
    assert len(lines) == 2
    for command, line in zip(commands, lines, strict=True):
        shown = re.fullmatch(
            r"`.*` ran in 3 tasks: `agent-lsp improve (.*)` makes it a project tool", line
        )
        assert shown is not None
        shell = f"printf '%s' {shown.group(1)}"
        done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, cwd=tmp_path)
        assert not pwned.exists()
        assert done.stdout == f"add a tool for {command}"
    assert record_commands(root, "t4", ["echo ready"]) == []  # seen once: no suggestion
    escape = ChatMessage(
        role="assistant",
        tool_calls=[ToolCall(id="c", name="run_command", arguments='{"command": "ls \\u001b[2J"}')],
    )
    assert commands_ran([escape]) == []  # an escape sequence is never repeated to a terminal


# ---- the symbol index and links leading out ------------------------------------------------


def test_the_symbol_index_follows_no_link_out_of_the_workspace(tmp_path: Path) -> None:
    root, mine = workspace(tmp_path), outside(tmp_path)
    (root / "src" / "leak.py").symlink_to(mine / "private.py")
    (root / "linked").symlink_to(mine, target_is_directory=True)
    (root / ".env").write_text("API_TOKEN = 'secret-value'\n")
    (root / "src" / "settings.py").symlink_to(root / ".env")  # a secret under a source name
    (root / "src" / "alias.py").symlink_to(root / "src" / "app.py")  # inside: indexed
    index = SymbolIndex(root, engine="regex")
    index.refresh()
    assert sorted(f.path for f in index.files()) == ["src/alias.py", "src/app.py"]
    assert index.definitions(CANARY.lower()) == []
    assert index.definitions("API_TOKEN") == []
    shown = repo_map(index, 4000, mentioned=[CANARY.lower(), "API_TOKEN"])
    assert CANARY.lower() not in shown
    assert "API_TOKEN" not in shown
    (root / "src" / "later.py").symlink_to(mine / "private.py")  # a change the editor reports
    index.refresh_paths([root / "src" / "later.py", root / "src" / "leak.py"])
    assert sorted(f.path for f in index.files()) == ["src/alias.py", "src/app.py"]
    index.close()


# ---- the team reviewer's diff --------------------------------------------------------------


def test_the_reviewer_diff_reads_no_file_out_of_the_project(tmp_path: Path) -> None:
    """The changed files come from the team's checkpoint (a file the repository can ship):
    a path out of the project, or a link to a secret, is not read into the diff."""
    root, mine = workspace(tmp_path), outside(tmp_path)
    (root / ".env").write_text(f"TOKEN={CANARY}\n")
    (root / "notes.txt").symlink_to(root / ".env")
    (root / "src" / "app.py").write_text("def inside():\n    return 2\n")
    changed = [str(mine / "private.py"), "../outside/private.py", "notes.txt", "src/app.py"]
    git = Git(root, hide=lambda rel: rel == ".env")
    checks = asyncio.run(review_checks(root, git, RecordingChannel(), changed, None))
    assert CANARY not in checks.diff
    assert CANARY.lower() not in checks.diff
    assert "+++ b/src/app.py" in checks.diff
    assert "return 2" in checks.diff


# ---- project tools (.agent-lsp/tools.toml, a trusted workspace) and the model's arguments ---


def project_tool(root: Path, name: str, toml: str) -> tuple[ProjectTool, RecordingChannel]:
    """The one tool `toml` declares, run in the sandbox, confined to `root`."""
    (decl,) = parse_project_tools(toml, RESERVED_NAMES).values()
    channel = RecordingChannel()
    policy = CommandPolicy(channel, engine=SafetyPolicy(root))
    shell = ConfinedShell(Sandbox(), Confinement(writable=(root,), visible=(root,)))
    return ProjectTool(name, decl, Workspace(root, channel, policy), shell, policy), channel


def sort_tool(root: Path) -> tuple[ProjectTool, RecordingChannel]:
    return project_tool(
        root,
        "sort_file",
        '[tools.sort_file]\ndescription = "Sort a file"\ncommand = ["sort", "{path}"]\n'
        '[tools.sort_file.args.path]\ntype = "path"\nrequired = true\n',
    )


def test_a_path_argument_never_becomes_an_option_after_it_is_resolved(tmp_path: Path) -> None:
    """`./-o/x` passes the "no leading -" check, then resolves to `-o/x`: sort's output
    file. It is given as `./-o/x`, a path, as the model wrote it."""
    root = workspace(tmp_path)
    tool, channel = sort_tool(root)
    canary = tmp_path / "outside-canary"
    args = tool.args_model.model_validate({"path": f"./-o{canary}"})
    result = asyncio.run(tool.run(args))
    assert result.metadata["argv"] == ["sort", f"./-o{canary}"]
    assert channel.questions == []  # a read of a file of the project: nothing to ask
    assert not canary.exists()
    assert "No such file" in (result.output or result.error or "")


def test_a_project_tool_program_that_reads_as_an_assignment_is_refused() -> None:
    """Shown to the policy and the user as `X=./evil pytest`, the argv runs a program named
    `X=./evil` (the file `evil` in a folder `X=.`)."""
    toml = '[tools.t]\ndescription = "d"\ncommand = ["X=./evil", "pytest"]\n'
    with pytest.raises(ProjectToolsError, match="variable assignment"):
        parse_project_tools(toml, RESERVED_NAMES)


def head_tool(root: Path) -> ProjectTool:
    """A project tool with a count: `head -n {lines} {path}`."""
    return project_tool(
        root,
        "head_file",
        '[tools.head_file]\ndescription = "The first lines of a file"\n'
        'command = ["head", "-n", "{lines}", "{path}"]\n'
        '[tools.head_file.args.lines]\ntype = "integer"\nrequired = true\n'
        '[tools.head_file.args.path]\ntype = "path"\nrequired = true\n',
    )[0]


def test_a_negative_integer_argument_of_a_project_tool_is_an_error_result(tmp_path: Path) -> None:
    """An integer argument is a count, a limit, a line, a port: `-1` is none of them, and as an
    argv element it is an option (`head -n -1` prints all but the last line; `kill -1` signals
    every process). The model sees the bound in the schema; a negative value (a number or its
    text) is an error result that says so, nothing runs, and the next call works."""
    root = workspace(tmp_path)
    (root / "data.txt").write_text("1\n2\n3\n")
    tool = head_tool(root)
    box = ToolBox([tool], 10, 10)
    [spec] = box.specs()
    assert spec.parameters["properties"]["lines"]["minimum"] == 0
    for value in ("-1", '"-2"'):
        call = ToolCall(
            id="c1", name="head_file", arguments=f'{{"lines": {value}, "path": "data.txt"}}'
        )
        result = asyncio.run(box.call(call))
        assert result.status is ToolStatus.ERROR
        assert result.error == (
            "invalid arguments for head_file: lines: Input should be greater than or equal to 0"
        )
        assert "argv" not in result.metadata  # nothing ran
    arguments = '{"lines": 2, "path": "data.txt"}'
    done = asyncio.run(box.call(ToolCall(id="c2", name="head_file", arguments=arguments)))
    assert (done.status, done.output, done.metadata["argv"]) == (
        ToolStatus.SUCCESS,
        "1\n2\n",
        ["head", "-n", "2", "data.txt"],
    )
    assert (root / "data.txt").read_text() == "1\n2\n3\n"


def test_tool_arguments_with_an_integer_too_long_to_read_are_an_error_result(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    box = ToolBox([ReadFileTool(Workspace(root, RecordingChannel()))], 10, 10)
    call = ToolCall(
        id="c1", name="read_file", arguments='{"path": "a", "offset": ' + "9" * 5000 + "}"
    )
    result = asyncio.run(box.call(call))
    assert result.status is ToolStatus.ERROR
    assert result.error is not None
    assert result.error.startswith("arguments for read_file are not valid JSON")


# ---- team mode: the tester writes test files only ------------------------------------------


def test_the_tester_writes_no_runner_config_or_plugin_file_in_a_test_folder(
    tmp_path: Path,
) -> None:
    """`tests/pytest.ini` becomes the config of a run of tests/ (its addopts), a
    `tests/conftest.py` hook can mark every failure passed: the full suite's verdict would
    be the tester's. Links and `..` resolve to the file they name."""
    root = workspace(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_link.py").symlink_to(root / "src" / "app.py")
    editor = RecordingChannel()
    tester = RoleChannel(editor, "tester s2", WriteLocks(), only=may_test_write)
    tester.workspace = Workspace(root, editor)
    refused: list[str] = []
    for name in (
        "tests/conftest.py",
        "tests/pytest.ini",
        "tests/sub/setup.cfg",
        "test/package.json",
        "spec/jest.config.js",
        "tests/go.mod",
        "tests/evil.pth",
        "tests/test_link.py",
        "tests/../src/app.py",
    ):
        try:
            asyncio.run(tester.apply_edit(tester.workspace.resolve(name), "x = 1\n", "edit"))
        except EditRejectedError as exc:
            refused.append(str(exc))
    assert len(refused) == 9
    assert "tester s2: writes test files only, not src/app.py" in refused
    assert editor.edits == []
    for name in ("tests/test_new.py", "tests/helpers.py", "src/app.test.js"):
        asyncio.run(tester.apply_edit(tester.workspace.resolve(name), "x = 1\n", "edit"))
    assert [tester.workspace.relative(p) for p, _, _ in editor.edits] == [
        "tests/test_new.py",
        "tests/helpers.py",
        "src/app.test.js",
    ]


# ---- tests.args (free for an untrusted repository: held by the sandbox) -------------------


def test_tests_args_write_and_delete_nothing_outside_the_workspace(project: Path) -> None:
    """Held: `--basetemp` (pytest empties it first) and `--junitxml` naming a folder of the
    user's: the suite runs, and writes only inside the workspace."""
    if not Sandbox().available:
        pytest.skip("no OS sandbox here")
    mine = project.parent / "outside"
    mine.mkdir()
    (mine / "keep.txt").write_text(CANARY)
    args = [f"--basetemp={mine}", f"--junitxml={mine}/report.xml"]
    adapter = detect_toolchain(project, args)
    assert adapter is not None
    shell = ConfinedShell(Sandbox(), Confinement(writable=(project,), visible=(project,)))
    report = asyncio.run(adapter.run(project, project, [], shell=shell, timeout=120))
    assert (report.passed, report.failed) == (1, 1)  # the sample's one failing test
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt"]
    assert (mine / "keep.txt").read_text() == CANARY


def test_a_tool_rule_denying_a_project_tool_or_run_command_stops_it(tmp_path: Path) -> None:
    """Project tools decide on their command line, as run_command does; the tool rules in
    front of every tool (`[[deny]] tool = ...`) were skipped for them."""
    root = workspace(tmp_path)
    (root / "data.txt").write_text("b\na\n")
    for denied in ("sort_file", "run_command"):
        tool, channel = sort_tool(root)
        guard = tool.workspace.guard
        rules = parse_rules({"deny": [{"tool": denied}]}, "policy.toml", guard)
        engine = SafetyPolicy(root, rules=rules)
        tool.policy = tool.workspace.policy = CommandPolicy(channel, engine=engine)
        args = tool.args_model.model_validate({"path": "data.txt"})
        result = asyncio.run(tool.run(args))
        assert result.status is ToolStatus.ERROR
        assert result.error == f"not run: policy: denied (policy.toml deny #1: deny tool {denied})"
        assert "argv" not in result.metadata  # nothing ran
    tool, _ = sort_tool(root)
    done = asyncio.run(tool.run(tool.args_model.model_validate({"path": "data.txt"})))
    assert done.output == "a\nb\n"


def test_the_terminal_prints_no_escape_sequence_the_model_or_a_file_wrote() -> None:
    """A summary, a suggestion or a path holding ESC, CR or a bidi override could clear the
    screen or rewrite what `agent-lsp run` showed; newlines and tabs stay."""
    out = io.StringIO()
    channel = TerminalChannel(out=out)
    text = "done\x1b[2J\rall fine\nsee\tsrc/\u202eyp.exe"
    asyncio.run(channel.report(AgentEvent(kind=EventKind.MESSAGE, message=text)))
    assert out.getvalue() == "· done\\u001b[2J\\u000dall fine\nsee\tsrc/\\u202eyp.exe\n"
