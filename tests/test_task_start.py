"""What a task starts from is current: the repo map a task's first request carries is rebuilt
from the disk and the editor's buffers as they are when it starts (the session keeps the map
between tasks only while the symbol index has not changed)."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.config.schema import Settings
from agent_lsp.messages import TaskStatus
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply

EXPLAIN = Task(kind=TaskKind.EXPLAIN, instruction="explain average", path="calc.py")
MAP_HEAD = "Project map (definitions by file; find_symbol for more):\n"
SAMPLE_MAP = (
    "calc.py:\n  4: def add(a: float, b: float) -> float\n"
    "  8: def average(values: list[float]) -> float\n"
    "tests/test_calc.py:\n  4: def test_add() -> None\n  8: def test_average() -> None\n"
)


def make_session(project: Path, base_url: str) -> Session:
    settings = Settings.model_validate(
        {"model": {"baseUrl": base_url, "name": "fake-model", "apiKey": "k", "maxRetries": 0}}
    )
    return Session(project, settings, OpenAICompatModel(settings.model))


def project_map(request: dict[str, object]) -> str:
    """The repo map the model was sent in a task's first request (its user message)."""
    messages = request["messages"]
    assert isinstance(messages, list)
    user = str(messages[1]["content"])  # pyright: ignore[reportUnknownArgumentType]
    assert MAP_HEAD in user
    return user.split(MAP_HEAD, 1)[1]


async def run_explains(
    session: Session, fake: FakeOpenAIServer, channels: list[RecordingChannel], between: object
) -> list[str]:
    """One explain task per channel; `between(k)` runs before task k (k >= 1)."""
    maps: list[str] = []
    for k, channel in enumerate(channels):
        if k and callable(between):
            between(k)
        fake.script(Reply("It is the mean of the values."))
        before = len(fake.requests)
        outcome = await session.run_task(EXPLAIN, channel)
        assert outcome.status is TaskStatus.COMPLETED, outcome
        maps.append(project_map(fake.requests[before]))
    return maps


async def test_a_file_created_between_tasks_is_in_the_next_tasks_map(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    session = make_session(project, fake_openai.base_url)

    def add_file(_: int) -> None:
        (project / "stats.py").write_text("def median_of(values: list[float]) -> float:\n    ...\n")

    try:
        first, second = await run_explains(
            session, fake_openai, [RecordingChannel(), RecordingChannel()], add_file
        )
    finally:
        await session.aclose()
    assert first == SAMPLE_MAP
    assert second == SAMPLE_MAP.replace(
        "tests/", "stats.py:\n  1: def median_of(values: list[float]) -> float\ntests/"
    )


async def test_an_edited_file_and_an_unsaved_buffer_show_in_the_next_tasks_map(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    session = make_session(project, fake_openai.base_url)
    calc = project / "calc.py"
    text = calc.read_text()
    buffer = text + "\n\ndef spread(values: list[float]) -> float:\n    return 0.0\n"

    def change_disk(k: int) -> None:
        if k == 1:  # a new name on disk (the editor has nothing open)
            test_file = project / "tests" / "test_calc.py"
            test_file.write_text(test_file.read_text().replace("test_add", "test_plus"))

    channels = [
        RecordingChannel(),
        RecordingChannel(),
        RecordingChannel({calc: buffer}),
        RecordingChannel(),
    ]
    try:
        maps = await run_explains(session, fake_openai, channels, change_disk)
    finally:
        await session.aclose()
    on_disk = SAMPLE_MAP.replace("test_add", "test_plus")
    assert maps[0] == SAMPLE_MAP
    assert maps[1] == on_disk
    assert maps[2] == on_disk.replace(
        "-> float\ntests/", "-> float\n  13: def spread(values: list[float]) -> float\ntests/", 1
    )
    assert maps[3] == on_disk  # the buffer was closed: the disk's text again


async def test_nothing_changed_the_same_map_twice(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    session = make_session(project, fake_openai.base_url)
    try:
        maps = await run_explains(
            session, fake_openai, [RecordingChannel(), RecordingChannel()], None
        )
    finally:
        await session.aclose()
    assert maps == [SAMPLE_MAP, SAMPLE_MAP]
