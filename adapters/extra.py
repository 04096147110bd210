"""Extra arguments for every test run (the `tests.args` setting): given to each runner a
detected adapter holds (inside folder and composite adapters too). pytest, Django, jest,
vitest, node --test and go test put them after their own options and before the targets;
the unittest runner has no command line to extend and ignores them."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.base import ToolchainAdapter
from adapters.django_runner import DjangoRunner
from adapters.go_runner import GoTestRunner
from adapters.jest_runner import JestRunner
from adapters.multi import CompositeAdapter, FolderAdapter
from adapters.nodetest_runner import NodeTestRunner
from adapters.pytest_runner import PytestRunner
from adapters.vitest_runner import VitestRunner

__all__ = ["set_extra_args"]

_TAKES_ARGS = (PytestRunner, DjangoRunner, JestRunner, VitestRunner, NodeTestRunner, GoTestRunner)


def set_extra_args(adapter: ToolchainAdapter | None, args: Sequence[str]) -> None:
    """Every later run of `adapter` passes `args` to its test command."""
    if isinstance(adapter, CompositeAdapter):
        for inner in adapter.adapters:
            set_extra_args(inner, args)
    elif isinstance(adapter, FolderAdapter):
        set_extra_args(adapter.inner, args)
    elif isinstance(adapter, _TAKES_ARGS):
        adapter.extra_args = tuple(args)
