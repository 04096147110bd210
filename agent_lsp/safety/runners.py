"""Programs that run other code or reach other machines: shells (`bash -c` is parsed, `sh -c`
in the dash dialect, other shells not at all), interpreters (any operand but exactly
`--version`, `-V` or `--help` runs code — `python3 help` runs a file named help; inline code is
scanned for secrets and network use) and network tools."""

from __future__ import annotations

import re

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.grammar import pathish
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["CODE_FLAGS", "DOWNLOADERS", "NETWORK", "SHELLS", "interpreter", "network", "shell"]

Args = list[Word]
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "GET"})
NETWORK = DOWNLOADERS | frozenset(
    {"nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "rsync", "ping"}
    | {"ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "mtr", "whois", "nmap"}
    | {"openssl", "gh", "aws", "gcloud", "az", "kubectl", "docker", "podman", "helm"}
    | {"terraform", "npx", "bunx", "pnpx", "lwp-request", "POST", "HEAD", "ssh-copy-id"}
)
BASH_LIKE = frozenset({"bash", "rbash"})
DASH_LIKE = frozenset({"sh", "dash", "ash"})
SHELLS = BASH_LIKE | DASH_LIKE | frozenset({"zsh", "ksh", "mksh", "fish", "yash", "tcsh", "csh"})
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
VERSION_ONLY = frozenset({"--version", "-V", "--help"})
SECRET_CODE = re.compile(
    r"\.ssh\b|id_(rsa|dsa|ecdsa|ed25519)|\.aws\b|\.gnupg|\.netrc|\.env\b|\.pgpass|"
    r"\.git-credentials|\.pem\b|agent-lsp/config|environ|getenv|process\.env|ENV\[|%ENV"
)
NET_CODE = re.compile(
    r"socket|urllib|requests|http\.client|httpx|aiohttp|urlopen|fetch\(|XMLHttpRequest|"
    r"net/http|Net::|LWP|open-uri|\bcurl\b|\bwget\b|/dev/tcp|smtplib|ftplib|paramiko"
)
PATH_LITERAL = re.compile(r"""["'](/[^"'\s]*|~[^"'\s]*)["']""")
_OUT_FLAGS = frozenset({"-o", "--output", "-O", "--output-document", "-P", "--directory-prefix"})
_BASH_FLAGS = frozenset({"--noprofile", "--norc", "--posix", "--login", "-l", "--restricted"})
_SET_O = frozenset({"errexit", "nounset", "pipefail", "xtrace", "noclobber", "verbose"})


def network(b: Builder, name: str, args: Args) -> None:
    b.add(Risk.NETWORK, f"{name} uses the network")
    b.add(Risk.EXEC, f"runs {name}")
    b.part.network = True
    b.part.downloads = b.part.downloads or name in DOWNLOADERS
    for i, w in enumerate(args):
        v = w.value
        if v.startswith("@") or "=@" in v:
            b.path(b.token(i), v.split("@", 1)[1], "read")
        elif i and args[i - 1].value in _OUT_FLAGS and not v.startswith("-"):
            b.arg(i, w, "write")
        elif "://" in v or ":" in v.split("/", 1)[0] or v.startswith("-"):
            continue  # a URL, host:path, an option
        elif w.dynamic or w.brace or w.glob or pathish(b, v):
            b.arg(i, w, "write" if name == "rsync" and i == len(args) - 1 else "read")


def shell(b: Builder, name: str, args: Args) -> None:
    if len(args) == 1 and args[0].value in ("--version", "--help") and name in BASH_LIKE:
        return
    i, command_mode, stdin_mode = 0, False, False
    while i < len(args):
        v = args[i].value
        if v in _BASH_FLAGS:
            i += 1
        elif v in ("--", "-"):
            i += 1
            break
        elif v.startswith("--"):
            b.add(Risk.EXEC, f"{name} {v}")
            i += 2 if v in ("--rcfile", "--init-file") else 1
        elif v[:1] in "-+" and len(v) > 1:
            command_mode = command_mode or "c" in v[1:]
            stdin_mode = stdin_mode or "s" in v[1:]
            option = args[i + 1].value if i + 1 < len(args) else ""
            if "O" in v[1:] or ("o" in v[1:] and option not in _SET_O):
                b.add(Risk.UNDECIDABLE, f"{name} {v} {option} changes how commands are parsed")
            if "i" in v[1:]:
                b.add(Risk.EXEC, f"{name} -i reads start-up files")
            i += 2 if "o" in v[1:] or "O" in v[1:] else 1
        else:
            break
    rest = args[i:]
    dialect = "dash" if name in DASH_LIKE else "bash"
    parsed_here = name in BASH_LIKE or name in DASH_LIKE
    if command_mode:
        if rest and rest[0].static and parsed_here:
            b.nested_script(rest[0].value, f"{name} -c", dialect)
            return
        reason = "not known before running" if parsed_here else f"in {name}'s own language"
        b.add(Risk.UNDECIDABLE, f"{name} -c runs a command line {reason}")
        b.add(Risk.EXEC, f"{name} -c runs code")
        b.part.runs_code = True
    elif rest and not stdin_mode:
        b.add(Risk.EXEC, f"{name} runs the script {rest[0].raw}")
        b.part.runs_code = True
        b.arg(i, rest[0], "read")
    elif b.stdin is not None and parsed_here:
        b.nested_script(b.stdin, f"{name} <<", dialect)
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
    """Runs code whatever its operands, but `--version`, `-V` or `--help` alone."""
    if len(args) == 1 and args[0].value in VERSION_ONLY:
        return
    b.part.runs_code = True
    flags = CODE_FLAGS[name]
    for i, w in enumerate(args):
        v = w.value
        inline = name == "python" and v.startswith("-c") and len(v) > 2
        if v in flags or inline:
            b.add(Risk.EXEC, f"{name} runs inline code")
            code = Word(v[2:], v[2:]) if inline else (args[i + 1] if i + 1 < len(args) else None)
            if code is None or not code.static:
                b.add(Risk.UNDECIDABLE, "the inline code is not known before running")
            else:
                scan_code(b, b.token(i + 1), code.value)
            return
        if v.startswith("-"):
            continue
        b.add(Risk.EXEC, f"{name} runs {w.raw}")
        b.arg(i, w, "read")
        return
    if b.stdin is not None:
        b.add(Risk.EXEC, f"{name} runs code from a here-document")
        scan_code(b, b.offset, b.stdin)
    else:
        b.add(Risk.EXEC, f"{name} runs code from its standard input")
