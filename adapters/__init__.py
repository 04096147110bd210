"""Leaf adapters: subprocess shell, test runners and the shadow workspace (stdlib only)."""

from adapters.pytest_runner import PytestRunner
from adapters.results import CommandResult, TestFailure, TestReport
from adapters.shadow import ShadowWorkspace
from adapters.shell import PosixShell, Shell
from adapters.toolchain import ToolchainAdapter, describe_project, detect_toolchain

__all__ = [
    "CommandResult",
    "PosixShell",
    "PytestRunner",
    "ShadowWorkspace",
    "Shell",
    "TestFailure",
    "TestReport",
    "ToolchainAdapter",
    "describe_project",
    "detect_toolchain",
]
