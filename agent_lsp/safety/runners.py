"""Programs that run other code or reach other machines: shells (`bash -c` is parsed),
interpreters (inline code scanned for secrets and network use), network tools and package
managers."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agent_lsp.safety.programs import generic
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

if TYPE_CHECKING:
    from agent_lsp.safety.classify import Builder

__all__ = [
    "CODE_FLAGS",
    "NETWORK",
    "PACKAGES",
    "SHELLS",
    "interpreter",
    "network",
    "package",
    "shell",
]

Args = list[Word]
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "GET"})
NETWORK = DOWNLOADERS | frozenset(
    {"nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "rsync", "ping"}
    | {"ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "mtr", "whois", "nmap"}
    | {"openssl", "gh", "aws", "gcloud", "az", "kubectl", "docker", "podman", "helm"}
    | {"terraform", "npx", "bunx", "pnpx", "lwp-request", "POST", "HEAD", "ssh-copy-id"}
)
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "rbash", "yash"})
CODE_FLAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"-c"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "deno": frozenset({"eval"}),
    "bun": frozenset({"-e", "--eval", "-p", "--print"}),
    "ruby": frozenset({"-e"}),
    "perl": frozenset({"-e", "-E"}),
    "php": frozenset({"-r"}),
    "lua": frozenset({"-e"}),
    "Rscript": frozenset({"-e"}),
    "pwsh": frozenset({"-c", "-Command", "-command"}),
    "tclsh": frozenset(),
    "osascript": frozenset({"-e"}),
}
VERSION_FLAGS = frozenset({"--version", "-V", "-v", "version", "--help", "-h", "help"})
PACKAGES: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # name -> (read, network)
_PY_READ = frozenset({"list", "show", "freeze", "check", "help", "inspect", "tree", "config"})
_PY_NET = frozenset(
    {"install", "download", "add", "sync", "update", "upgrade", "lock", "publish", "pip"}
)
_JS_READ = frozenset({"ls", "list", "help", "root", "bin", "prefix", "why", "explain"})
_JS_NET = frozenset(
    {"install", "i", "ci", "add", "update", "up", "upgrade", "publish", "dlx"}
    | {"create", "init", "exec", "x", "audit", "outdated", "view", "info"}
)
for _n in ("pip", "pip3", "uv", "poetry", "pipenv", "pipx", "conda", "mamba", "pdm", "hatch"):
    PACKAGES[_n] = (_PY_READ, _PY_NET | {"uninstall", "remove", "venv", "run", "tool", "self"})
for _n in ("npm", "pnpm", "yarn"):
    PACKAGES[_n] = (_JS_READ, _JS_NET | {"login", "whoami", "remove", "uninstall", "link"})
PACKAGES["cargo"] = (frozenset({"help"}), frozenset({"install", "add", "update", "fetch"}))
PACKAGES["go"] = (
    frozenset({"version", "env", "help", "doc"}),
    frozenset({"get", "install", "mod"}),
)
for _n in ("gem", "bundle", "composer", "apt", "apt-get", "dnf", "yum", "pacman", "apk", "brew"):
    PACKAGES[_n] = (frozenset({"list", "show", "search", "help", "info"}), _PY_NET | {"remove"})
SECRET_CODE = re.compile(
    r"\.ssh\b|id_(rsa|dsa|ecdsa|ed25519)|\.aws\b|\.gnupg|\.netrc|\.env\b|\.pgpass|"
    r"\.git-credentials|\.pem\b|agent-lsp/config|environ|getenv|process\.env|ENV\[|%ENV"
)
NET_CODE = re.compile(
    r"socket|urllib|requests|http\.client|httpx|aiohttp|urlopen|fetch\(|XMLHttpRequest|"
    r"net/http|Net::|LWP|open-uri|\bcurl\b|\bwget\b|/dev/tcp|smtplib|ftplib|paramiko"
)
PATH_LITERAL = re.compile(r"""["'](/[^"'\s]*|~[^"'\s]*)["']""")


def network(b: Builder, name: str, args: Args) -> None:
    b.add(Risk.NETWORK, f"{name} uses the network")
    b.add(Risk.EXEC, f"runs {name}")
    b.part.network = True
    b.part.downloads = b.part.downloads or name in DOWNLOADERS
    out_flags = {"-o", "--output", "-O", "--output-document", "-P", "--directory-prefix"}
    for i, w in enumerate(args):
        v = w.value
        if v.startswith("@") or "=@" in v:
            b.path(b.offset + 1 + i, v.split("@", 1)[1], "read")
        elif i and args[i - 1].value in out_flags and not v.startswith("-"):
            b.arg(i, w, "write")
    generic(b, args)


def shell(b: Builder, name: str, args: Args) -> None:
    i, command_mode = 0, False
    while i < len(args):
        v = args[i].value
        if v in ("--noprofile", "--norc", "--posix", "--login", "-l"):
            i += 1
        elif v in ("--", "-"):
            i += 1
            break
        elif v.startswith("--"):
            b.add(Risk.EXEC, f"{name} {v}")
            i += 2 if v in ("--rcfile", "--init-file") else 1
        elif v[:1] in "-+" and len(v) > 1:
            command_mode = command_mode or "c" in v[1:]
            if "O" in v[1:]:
                b.add(Risk.UNDECIDABLE, f"{name} {v} changes how commands are parsed")
            if "i" in v[1:]:
                b.add(Risk.EXEC, f"{name} -i reads start-up files")
            i += 2 if "o" in v[1:] or "O" in v[1:] else 1
        else:
            break
    rest = args[i:]
    if command_mode:
        if rest and rest[0].static:
            b.nested_script(rest[0].value, f"{name} -c")
        else:
            b.add(Risk.UNDECIDABLE, f"{name} -c runs a command line not known before running")
            b.add(Risk.EXEC, f"{name} -c runs code")
            b.part.runs_code = True
    elif rest:
        b.add(Risk.EXEC, f"{name} runs the script {rest[0].raw}")
        b.part.runs_code = True
        b.arg(i, rest[0], "read")
    elif b.stdin is not None:
        b.nested_script(b.stdin, f"{name} <<")
    else:
        b.add(Risk.EXEC, f"{name} runs commands from its standard input")
        b.part.runs_code = True


def scan_code(b: Builder, token: int, code: str) -> None:
    if match := SECRET_CODE.search(code):
        b.add(Risk.SECRET, f"inline code mentions secrets ({match.group()})", token)
    if match := NET_CODE.search(code):
        b.add(Risk.NETWORK, f"inline code may use the network ({match.group()})", token)
        b.part.network = True
    for literal in PATH_LITERAL.findall(code):
        b.path(token, literal, "read")


def interpreter(b: Builder, name: str, args: Args) -> None:
    if len(args) == 1 and args[0].value in VERSION_FLAGS:
        return
    flags = CODE_FLAGS[name]
    for i, w in enumerate(args):
        v = w.value
        inline = name == "python" and v.startswith("-c") and len(v) > 2
        if v in flags or inline:
            b.add(Risk.EXEC, f"{name} runs inline code")
            b.part.runs_code = True
            code = Word(v[2:], v[2:]) if inline else (args[i + 1] if i + 1 < len(args) else None)
            if code is None or not code.static:
                b.add(Risk.UNDECIDABLE, "the inline code is not known before running")
            else:
                scan_code(b, b.offset + 2 + i, code.value)
            return
        if name == "python" and v == "-m":
            module = args[i + 1].value if i + 1 < len(args) else ""
            b.add(Risk.EXEC, f"runs the Python module {module}")
            if module == "pip":
                package(b, "pip", args[i + 2 :])
            elif module in ("http.server", "ensurepip", "smtpd", "ftplib", "webbrowser"):
                network(b, module, args[i + 2 :])
            else:
                generic(b, args[i + 2 :])
            return
        if v.startswith("-"):
            continue
        b.add(Risk.EXEC, f"{name} runs {w.raw}")
        b.part.runs_code = True
        b.arg(i, w, "read")
        generic(b, args[i + 1 :])
        return
    b.part.runs_code = True
    if b.stdin is not None:
        b.add(Risk.EXEC, f"{name} runs code from a here-document")
        scan_code(b, b.offset, b.stdin)
    else:
        b.add(Risk.EXEC, f"{name} runs code from its standard input")


def package(b: Builder, name: str, args: Args) -> None:
    reads, nets = PACKAGES[name]
    sub = next((w.value for w in args if not w.value.startswith("-")), "")
    if not sub and all(w.value in VERSION_FLAGS for w in args):
        return
    if sub in reads:
        generic(b, args)
        return
    b.add(Risk.EXEC, f"{name} {sub}".strip())
    if sub in nets:
        b.add(Risk.NETWORK, f"{name} {sub} downloads packages")
        b.part.network = True
    generic(b, args)
