"""REVIEWING's own checks: the merged diff against git's HEAD, `git diff --check`'s rules and
the scans of the added lines, given to the reviewer and, as errors, counted even when the
reviewer model finds nothing; they go to the planner, which plans the fix."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.messages import TaskStatus
from agent_lsp.team import Phase
from agent_lsp.team.orchestrator import TeamOptions
from agent_lsp.team.review_scan import added_lines, ignored_errors, leaked_secrets
from tests.fakes.openai_server import FakeOpenAIServer
from tests.records import read_signed
from tests.team.conftest import (
    COMMANDER,
    PLANNER,
    REVIEWER,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import edit_replies, first_user, git_repo, requests_of, run_team

SLOPPY = 'region = "eu"\nkey = "AKIAIOSFODNN7EXAMPLE"\nretries = 3  \n'
CLEAN = 'region = "eu"\nretries = 3\n'
WHITESPACE = "error app.ini:3 [whitespace] trailing whitespace — remove the spaces at the end"
SECRET = "error app.ini:2 [secret] an AWS access key id in the code — remove it from the code"


def plain(tmp_path: Path) -> Path:
    """A git repository without a test runner (no suite to run) holding `app.ini`."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "app.ini").write_text('region = "eu"\n')
    (folder / "notes.txt").write_text("todo\n")
    git_repo(folder)
    return folder


async def test_a_whitespace_error_and_a_secret_become_findings_and_planned_steps(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = plain(tmp_path)
    steps = (
        {"id": "s1", "goal": "configure the key and retries", "files": ["app.ini"]},
        {"id": "s2", "goal": "mark the notes done", "files": ["notes.txt"]},
    )
    fix = {"id": "r1", "goal": "fix the review findings in app.ini", "files": ["app.ini"]}
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(*steps), plan_reply(fix))
    fake_openai.script_for(
        step_marker("s1"), *edit_replies("app.ini", 'region = "eu"\n', SLOPPY, "set")
    )
    fake_openai.script_for(
        step_marker("s2"), *edit_replies("notes.txt", "todo\n", "done\n", "marked")
    )
    fake_openai.script_for(step_marker("r1"), *edit_replies("app.ini", SLOPPY, CLEAN, "fixed"))
    fake_openai.script_for(REVIEWER, review([]), review([]))  # the model sees nothing wrong
    outcome = await run_team(root, fake_openai, options=TeamOptions(workers=2))

    assert outcome.phase is Phase.DONE and outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert (root / "app.ini").read_text() == CLEAN
    assert [(s.id, s.status.value) for s in outcome.steps] == [
        ("s1", "done"),
        ("s2", "done"),
        ("r1", "done"),
    ]
    # the reviewer was given the merged diff of both workers and the checks' findings
    first_review = first_user(requests_of(fake_openai, REVIEWER)[0])
    assert "## The merged diff\n" in first_review
    assert "+++ b/app.ini" in first_review and "+++ b/notes.txt" in first_review
    assert "+retries = 3  \n" in first_review and "+done\n" in first_review
    assert WHITESPACE in first_review and SECRET in first_review
    # the planner was given them as findings and planned the step; nothing else was
    planner = requests_of(fake_openai, PLANNER)
    assert len(planner) == 2
    told = first_user(planner[1]).split("## Review findings: plan the steps that resolve them\n")
    findings = told[1].split("\n## ")[0]  # the section alone (the decisions follow)
    assert len(findings.strip().splitlines()) == 2
    assert WHITESPACE in told[1] and SECRET in told[1]
    # the second review saw a clean diff and no findings
    second_review = first_user(requests_of(fake_openai, REVIEWER)[1])
    assert "AKIA" not in second_review and "## Findings of the checks" not in second_review
    saved = read_signed(root / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["history"][-5:] == [
        "REVIEWING→PLANNING",
        "PLANNING→EXECUTING",
        "EXECUTING→VERIFYING",
        "VERIFYING→REVIEWING",
        "REVIEWING→DONE",
    ]
    assert len(saved["findings"]) == 2 and saved["review_round"] == 1


async def test_a_checks_error_left_unfixed_ends_at_the_round_limit(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = plain(tmp_path)
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "mark the notes done", "files": ["notes.txt"]})
    )
    fake_openai.script_for(
        step_marker("s1"), *edit_replies("notes.txt", "todo\n", "done \n", "marked")
    )
    fake_openai.script_for(REVIEWER, review([]))
    options = TeamOptions(review_rounds=0)
    outcome = await run_team(root, fake_openai, options=options)
    assert outcome.phase is Phase.FAILED
    assert outcome.summary.startswith(
        "failed in REVIEWING: review round limit (0) reached; open: error notes.txt:1 "
        "[whitespace] trailing whitespace"
    )
    assert len(requests_of(fake_openai, PLANNER)) == 1
    assert (root / "notes.txt").read_text() == "done \n"


async def test_without_git_the_checks_are_shown_but_not_forced(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    # no commit to diff against: the whole file counts as changed, its old lines too, so
    # what the scans find there is a warning for the reviewer, not a forced finding
    root = tmp_path / "nogit"
    root.mkdir()
    (root / "app.ini").write_text('key = "AKIAIOSFODNN7EXAMPLE"\nretries = 2\n')
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "retry three times", "files": ["app.ini"]})
    )
    fake_openai.script_for(
        step_marker("s1"), *edit_replies("app.ini", "retries = 2\n", "retries = 3\n", "set")
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(root, fake_openai)
    assert outcome.phase is Phase.DONE, outcome.summary
    shown = first_user(requests_of(fake_openai, REVIEWER)[0])
    assert "(no git commit to compare with: the changed files in whole)" in shown
    assert "warning app.ini:1 [secret] an AWS access key id in the code" in shown
    assert len(requests_of(fake_openai, PLANNER)) == 1


def scan(path: str, *lines: str) -> list[str]:
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
    diff += "".join(f"+{line}\n" for line in lines)
    added = added_lines(diff)
    return [f.text() for f in leaked_secrets(added) + ignored_errors(added)]


def test_the_scans_name_secrets_and_ignored_errors_by_line() -> None:
    assert scan("a.go", "x := 1", "_ = err") == [
        "warning a.go:2 [ignored-error] an error is discarded (`_ = err`) — return or handle "
        "the error"
    ]
    assert [f.split(" [")[0] for f in scan("a.py", "try:", "    f()", "except:", "    pass")] == [
        "warning a.py:3"
    ]
    assert scan("a.py", "try:", "    f()", "except ValueError:", "    log(x)") == []
    assert [f.split(" — ")[0] for f in scan("a.ts", "try { f() } catch (e) {}")] == [
        "warning a.ts:1 [ignored-error] an empty catch block ignores the error"
    ]
    assert [f.split(" — ")[0] for f in scan("k.pem", "-----BEGIN RSA PRIVATE KEY-----")] == [
        "error k.pem:1 [secret] a private key in the code"
    ]
    assert [f.split(" — ")[0] for f in scan("c.py", 'API_TOKEN = "f3a9c2d1e8b7a6c5"')] == [
        "error c.py:1 [secret] a credential assigned in the code"
    ]
    assert scan("c.py", 'password = "changeme"', 'token = os.environ["TOKEN"]') == []
