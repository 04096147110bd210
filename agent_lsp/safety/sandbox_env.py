"""The environment of everything the agent runs: an allowlist, not a scrub.

A command, a test run, a linter, an init.d step or git gets only the variables a toolchain
needs (named below), plus the names the user passes with `sandbox.passEnv`. API keys, tokens,
passwords and anything named like them are dropped even when allowlisted; `HOME` and `TMPDIR`
point at the sandbox's private folders."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["ENV_NAMES", "ENV_PREFIXES", "is_secret_name", "sandbox_env"]

ENV_NAMES = frozenset(
    {"PATH", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "COLUMNS", "LINES"}
    | {"CI", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "LD_LIBRARY_PATH"}
    | {"VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_EXE", "PYENV_VERSION"}
    | {"PYENV_ROOT", "NODE_ENV", "NODE_PATH", "NODE_OPTIONS", "NVM_DIR", "NVM_BIN", "VOLTA_HOME"}
    | {"CACHE_DIR", "JAVA_HOME", "CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"}
    | {"PKG_CONFIG_PATH", "SOURCE_DATE_EPOCH", "DJANGO_SETTINGS_MODULE", "TESTING", "LC_ALL"}
    # git's hardening (agent_lsp.project.git): they only switch things off
    | {"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_OPTIONAL_LOCKS", "GIT_TERMINAL_PROMPT"}
    | {"GIT_PAGER"}
    | {"GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GOSUMDB"}
    | {"GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE", "GOTOOLCHAIN", "GO111MODULE"}
    | {"GOOS", "GOARCH", "GOARM", "GOAMD64", "GOEXPERIMENT", "GOWORK", "GODEBUG", "GOTMPDIR"}
    | {"GOBIN", "GOMAXPROCS", "GOGC", "GOTELEMETRY"}
)
ENV_PREFIXES = ("LC_", "PYTHON", "PYTEST_", "CGO_", "CARGO_", "RUST", "npm_config_")
_SECRET = re.compile(
    r"API_?KEY|TOKEN|SECRET|PASS|PW($|_)|CREDENTIAL|PRIVATE_KEY|ACCESS_KEY|(^|_)KEY($|_)|"
    r"SESSION|COOKIE|AUTH",
    re.I,
)
_NEVER_PREFIXES = ("AGENT_LSP_", "OPENAI_")
# what agent-lsp itself tells an init.d step (never a key)
STEP_VARS = frozenset({"AGENT_LSP_ROOT", "AGENT_LSP_REASON", "AGENT_LSP_TASK_FILE"})
_URL_WITH_PASSWORD = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


def is_secret_name(name: str) -> bool:
    return bool(_SECRET.search(name)) or name.startswith(_NEVER_PREFIXES)


def sandbox_env(
    environ: Mapping[str, str],
    home: Path,
    tmp: str = "/tmp",
    pass_env: Iterable[str] = (),
) -> dict[str, str]:
    """The variables of `environ` a sandboxed program gets. `pass_env`: names the user asked
    to pass as well (their own setting, so a secret-looking name passes too, but never one of
    agent-lsp's own variables)."""
    extra = {n for n in pass_env if not n.startswith(_NEVER_PREFIXES)}
    out: dict[str, str] = {}
    for name, value in environ.items():
        if name in extra or name in STEP_VARS:
            out[name] = value
            continue
        if name not in ENV_NAMES and not name.startswith(ENV_PREFIXES):
            continue
        if is_secret_name(name) or _URL_WITH_PASSWORD.search(value):
            continue
        out[name] = value
    out["HOME"] = str(home)
    out["TMPDIR"] = tmp
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return out
