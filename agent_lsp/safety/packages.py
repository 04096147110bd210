"""Package managers: their global options parsed before the subcommand is taken (`pip --log
list install x` installs; `npm --prefix ls run x` runs a script), a few listing subcommands
read-only with their options checked, everything else a side effect (installs: network).
`npm test`, `cargo test|build`, `go test|vet|build` are the project's own (`projects`)."""

from __future__ import annotations

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import Spec, spec
from agent_lsp.safety.projects import cargo, go, js_test
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["PACKAGES", "package"]

Args = list[Word]
_PIP_GLOBAL = (
    "-h --help", "--debug", "--isolated", "--require-virtualenv", "-v --verbose",
    "-V --version", "-q --quiet", "--no-input", "--keyring-provider =", "--proxy =",
    "--retries =", "--timeout =", "--exists-action =", "--trusted-host =", "--cert =r",
    "--client-cert =r", "--no-cache-dir", "--disable-pip-version-check", "--no-color",
    "--no-python-version-warning", "--use-feature =", "--use-deprecated =",
    "--root-user-action =", "--python =x", "--log --log-file --local-log =w", "--cache-dir =w",
)  # fmt: skip
PIP_GLOBAL = spec(*_PIP_GLOBAL, permute=False)
PIP_READ: dict[str, Spec] = {
    "list": spec(
        *_PIP_GLOBAL, "-e --editable", "-l --local", "--user", "--path =", "--pre",
        "-o --outdated", "-u --uptodate",
        "--format =", "--not-required", "--exclude-editable", "--include-editable",
        "--exclude =",
    ),
    "show": spec(*_PIP_GLOBAL, "-f --files"),
    "freeze": spec(
        *_PIP_GLOBAL, "-r --requirement =r", "-l --local", "--user", "--path =", "--all",
        "--exclude-editable", "--exclude =",
    ),
    "check": spec(*_PIP_GLOBAL),
    "help": spec(*_PIP_GLOBAL),
}  # fmt: skip
_PIP_NETWORK = frozenset({"install", "download", "wheel", "index", "search", "lock"})
NPM_GLOBAL = spec("-s --silent", "-q --quiet", "--loglevel =", "--color =", "-v --version",
                  "-d", "--json", permute=False)  # fmt: skip
NPM_READ: dict[str, Spec] = {
    "ls": spec(
        "--depth =", "-a --all", "--json", "-l --long", "-p --parseable", "--prod",
        "--production", "--dev", "--omit =", "--include =", "--link", "--package-lock-only",
        "--unicode", "-s --silent",
    ),
    "root": spec(),
    "prefix": spec(),
    "bin": spec(),
    "why": spec("--json"),
    "explain": spec("--json"),
}  # fmt: skip
NPM_READ["list"] = NPM_READ["ls"]
_JS_NETWORK = frozenset(
    {"install", "i", "ci", "add", "update", "up", "upgrade", "publish", "dlx", "create"}
    | {"init", "exec", "x", "audit", "outdated", "view", "info", "login", "whoami", "dedupe"}
)
# other managers: (read-only subcommands taking no options, network subcommands)
PACKAGES: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
_PY_NET = frozenset({"install", "download", "add", "sync", "update", "upgrade", "lock"})
for _n in ("uv", "poetry", "pipenv", "pipx", "conda", "mamba", "pdm", "hatch"):
    PACKAGES[_n] = (frozenset({"list", "show"}), _PY_NET | {"publish", "run", "tool", "self"})
for _n in ("gem", "bundle", "composer", "apt", "apt-get", "dnf", "yum", "pacman", "apk", "brew"):
    PACKAGES[_n] = (frozenset({"list"}), _PY_NET | {"remove", "search", "info", "show"})
for _n in ("pip", "pip3", "npm", "pnpm", "yarn", "cargo", "go"):
    PACKAGES[_n] = (frozenset(), frozenset())


def package(b: Builder, name: str, args: Args) -> None:
    if len(args) == 1 and args[0].value in ("--version", "-V"):
        return
    if name in ("pip", "pip3"):
        _pip(b, name, args)
    elif name in ("npm", "pnpm", "yarn"):
        _npm(b, name, args)
    elif name == "cargo":
        if not cargo(b, args):
            b.add(Risk.EXEC, "cargo runs a command not known to be read-only")
    elif name == "go":
        _go(b, args)
    else:
        reads, nets = PACKAGES[name]
        sub = args[0].value if args else ""
        if sub in reads and all(not w.value.startswith("-") for w in args):
            return
        b.add(Risk.EXEC, f"{name} {sub}".strip())
        if sub in nets:
            b.add(Risk.NETWORK, f"{name} {sub} downloads packages")
            b.part.network = True


def pip(b: Builder, args: Args) -> None:
    """`python -m pip ...`."""
    _pip(b, "pip", args)


def _pip(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, PIP_GLOBAL, args)
    if not parsed.operands:
        return
    index, word = parsed.operands[0]
    sub = word.value
    if sub in PIP_READ:
        saved = b.offset
        b.offset += 1 + index
        inner = check(b, f"{name} {sub}", PIP_READ[sub], args[index + 1 :])
        b.offset = saved
        if inner.has("--outdated", "--uptodate"):
            b.add(Risk.NETWORK, f"{name} list --outdated asks the package index")
            b.part.network = True
        return
    b.add(Risk.EXEC, f"{name} {sub}")
    if sub in _PIP_NETWORK:
        b.add(Risk.NETWORK, f"{name} {sub} downloads packages")
        b.part.network = True


def _npm(b: Builder, name: str, args: Args) -> None:
    if js_test(b, name, args):
        return
    parsed = check(b, name, NPM_GLOBAL, args)
    if not parsed.operands:
        return
    index, word = parsed.operands[0]
    sub = word.value
    if sub in NPM_READ and parsed.clean:
        saved = b.offset
        b.offset += 1 + index
        check(b, f"{name} {sub}", NPM_READ[sub], args[index + 1 :])
        b.offset = saved
        return
    b.add(Risk.EXEC, f"{name} {sub}")
    if sub in _JS_NETWORK:
        b.add(Risk.NETWORK, f"{name} {sub} downloads packages")
        b.part.network = True


def _go(b: Builder, args: Args) -> None:
    sub = args[0].value if args else ""
    if sub in ("test", "vet", "build"):
        saved = b.offset
        b.offset += 1
        go(b, sub, args[1:])
        b.offset = saved
    elif sub in ("version", "env") and len(args) == 1:
        return
    else:
        b.add(Risk.EXEC, f"go {sub}".strip())
        if sub in ("get", "install", "mod", "download"):
            b.add(Risk.NETWORK, f"go {sub} downloads modules")
            b.part.network = True
