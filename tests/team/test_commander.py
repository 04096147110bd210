"""The commander: the task record from the user's words, the README's head and the root's
config files; a retry after an answer that is not a record; diagnose-only ends with the
diagnosis and writes nothing; a task resumed in PLANNING keeps its record."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.messages import TaskStatus
from agent_lsp.team import Phase, TeamStore
from agent_lsp.team.record import TaskRecord, TaskType
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.records import read_signed
from tests.team.conftest import COMMANDER, PLANNER, TASK, plan_reply, record_reply
from tests.team.helpers import first_user, requests_of, run_team

README_HEAD = "# shapes\n\nSquares, measured. Run the tests with `pytest`.\n"
README_TAIL = "A LINE FAR DOWN THE README"


def disk(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".agent-lsp" not in p.parts and ".pytest_cache" not in p.parts
    }


async def test_the_record_is_built_from_the_task_readme_head_and_config_files(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    (shapes / "README.md").write_text(README_HEAD + "filler line\n" * 400 + README_TAIL + "\n")
    (shapes / "tox.ini").write_text("[tox]\n")
    fake_openai.script_for(COMMANDER, record_reply(type="Bug fix", priority="high"))
    fake_openai.script_for(PLANNER, Reply("no plan, sorry"))  # stops the task after planning
    outcome = await run_team(shapes, fake_openai)

    commander = requests_of(fake_openai, COMMANDER)
    assert len(commander) == 1
    told = first_user(commander[0])
    assert TASK in told and "Squares, measured." in told
    assert README_TAIL not in told  # the README's head only
    assert "## Config files at the project's root\npyproject.toml\ntox.ini" in told
    assert not {t["function"]["name"] for t in commander[0]["tools"]} & {
        "edit_file",
        "write_file",
        "run_command",
    }
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["record"] == {
        "type": "bug_fix",
        "goal": "implement the two stubs",
        "modules": ["area.py", "perimeter.py"],
        "priority": "high",
        "constraints": [],
        "problem": "code",
        "diagnose_only": False,
        "diagnosis": "",
    }
    planner = first_user(requests_of(fake_openai, PLANNER)[0])
    assert "type: bug_fix\ngoal: implement the two stubs" in planner
    assert "Squares, measured." not in planner  # the record, not the raw README
    assert outcome.phase is Phase.FAILED  # the plan was not JSON


async def test_an_answer_that_is_not_a_record_is_retried_once_then_the_task_fails(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    before = disk(shapes)
    fake_openai.script_for(
        COMMANDER,
        Reply("It is a feature, I think."),
        Reply('```json\n{"type": "chore", "goal": "x"}\n```'),
    )
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.FAILED and outcome.status is TaskStatus.FAILED
    assert outcome.summary.startswith(
        "failed in PLANNING: no task record after a retry: the task record is malformed: type:"
    )
    retry = requests_of(fake_openai, COMMANDER)
    assert len(retry) == 2 and len(fake_openai.requests) == 2  # no planner, no worker
    assert "Your last answer was refused: the task record is not JSON" in first_user(retry[1])
    assert "refused" not in first_user(retry[0])
    assert disk(shapes) == before


async def test_a_diagnose_only_task_ends_with_the_diagnosis_and_changes_nothing(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    before = disk(shapes)
    diagnosis = "square_area raises NotImplementedError: area.py line 2 is a stub"
    fake_openai.script_for(
        COMMANDER,
        Reply("not json"),  # one retry, then a diagnosis
        record_reply(type="diagnosis", diagnose_only=True, diagnosis=diagnosis),
    )
    outcome = await run_team(shapes, fake_openai, "Why does test_area fail? Do not fix it.")
    assert outcome.phase is Phase.DONE and outcome.status is TaskStatus.COMPLETED
    assert outcome.summary.startswith(
        f"diagnosis (code problem, nothing changed): {diagnosis}; tokens by role: commander"
    )
    assert outcome.steps == [] and outcome.changed_files == []
    assert [first_user(r).splitlines()[0] for r in fake_openai.requests] == [COMMANDER] * 2
    assert disk(shapes) == before
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["history"] == ["INIT→PLANNING", "PLANNING→DONE"]
    assert saved["record"]["diagnosis"] == diagnosis


async def test_a_task_resumed_in_planning_keeps_its_record(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    store = TeamStore(shapes)
    state = store.new(TASK)
    store.move(state, Phase.PLANNING)
    state.record = TaskRecord(type=TaskType.REFACTOR, goal="split the shapes module")
    store.save(state)
    fake_openai.script_for(PLANNER, plan_reply())  # an empty plan fails the task: enough
    outcome = await run_team(shapes, fake_openai, resume=True)
    assert [first_user(r).splitlines()[0] for r in fake_openai.requests] == [PLANNER]
    assert "goal: split the shapes module" in first_user(fake_openai.requests[0])
    assert outcome.summary.startswith("failed in PLANNING: the plan has no steps")


async def test_a_readme_linked_out_of_the_project_is_never_given(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    # a repository may ship README.md as a link to a file of the user's: the commander reads
    # it as read_file would, so a link out of the project (or a secret file) is not given
    private = shapes.parent / "private-notes.txt"
    private.write_text("SENTINEL_PRIVATE_TEXT of the user\n")
    (shapes / "README.md").symlink_to(private)
    fake_openai.script_for(COMMANDER, Reply("It is a feature, I think."), Reply("still not"))
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.FAILED
    sent = "\n".join(str(r) for r in fake_openai.requests)
    assert len(fake_openai.requests) == 2 and "SENTINEL_PRIVATE_TEXT" not in sent
    assert "## The project's README" not in first_user(requests_of(fake_openai, COMMANDER)[0])
