"""Leaf adapters: subprocess shells, test runners and the shadow workspace (stdlib only).

Imports nothing of `agent_lsp` (a contract in pyproject.toml): the core calls it, never the
other way round.
"""

from adapters.affected import is_test_file, tests_for_source
from adapters.django_runner import DjangoRunner
from adapters.extra import set_extra_args
from adapters.go_runner import GoTestRunner
from adapters.jest_runner import JestRunner
from adapters.multi import CompositeAdapter, FolderAdapter, merge_reports
from adapters.nodetest_runner import NodeTestRunner
from adapters.pyenv import PythonEnv, python_env
from adapters.pytest_runner import PytestRunner
from adapters.results import (
    CommandResult,
    TestFailure,
    TestReport,
    environment_report,
    real_paths,
)
from adapters.shadow import ShadowWorkspace
from adapters.shell import PlatformShell, PosixShell, ScriptShell, Shell, default_shell
from adapters.toolchain import (
    ToolchainAdapter,
    describe_project,
    detect_toolchain,
    detect_toolchains,
)
from adapters.unittest_runner import UnittestRunner
from adapters.vitest_runner import VitestRunner
from adapters.winshell import WindowsShell
from adapters.workspaces import owning_package, workspace_layout

__all__ = [
    "CommandResult",
    "CompositeAdapter",
    "DjangoRunner",
    "FolderAdapter",
    "GoTestRunner",
    "JestRunner",
    "NodeTestRunner",
    "PlatformShell",
    "PosixShell",
    "PytestRunner",
    "PythonEnv",
    "ScriptShell",
    "ShadowWorkspace",
    "Shell",
    "TestFailure",
    "TestReport",
    "ToolchainAdapter",
    "UnittestRunner",
    "VitestRunner",
    "WindowsShell",
    "default_shell",
    "describe_project",
    "detect_toolchain",
    "detect_toolchains",
    "environment_report",
    "is_test_file",
    "merge_reports",
    "owning_package",
    "python_env",
    "real_paths",
    "set_extra_args",
    "tests_for_source",
    "workspace_layout",
]
