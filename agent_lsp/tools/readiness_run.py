"""Run a long-running command as a readiness check: start it, wait (bounded) for a port to
accept connections or a ready line in its output, stop its whole process group (TERM, then
KILL after a grace), and say what happened.

The wait runs inside the same shell as the command — a small bash script around it, run by
the same `ConfinedShell` — so a port is checked where the server listens (the sandbox's own
network namespace) and nothing about the confinement changes."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.tools.readiness import Readiness

__all__ = ["ReadyOutcome", "readiness_script", "run_until_ready"]

GRACE = 3.0  # seconds between TERM and KILL
TAIL = 12_000  # bytes of output kept
_MARK = "\x1eagent-lsp-readiness"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# The wrapper. `__any`: any new listening TCP port counts (only where the command has a
# network namespace of its own). Times are in microseconds (EPOCHREALTIME, bash >= 5).
_SCRIPT = r"""
__listening() {
  local f a l r st x
  for f in /proc/net/tcp /proc/net/tcp6; do
    [[ -r $f ]] || continue
    while read -r a l r st x; do
      [[ $st == 0A ]] && printf '%d\n' "$((16#${l##*:}))"
    done < "$f"
  done
}
__us() { __t=${EPOCHREALTIME/[.,]/}; }
__listens() {  # sets __port to a port it listens on
  local p
  for p in "${__ports[@]}"; do
    if (: <>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || (: <>"/dev/tcp/::1/$p") 2>/dev/null
    then __port=$p; return 0; fi
  done
  if ((__any)); then
    for p in $(__listening); do
      [[ $__before == *" $p "* ]] || { __port=$p; return 0; }
    done
  fi
  return 1
}
__log=$(mktemp "${TMPDIR:-/tmp}/agent-lsp-ready.XXXXXX") || exit 126
__before=" " __busy= __free=()
for __p in "${__ports[@]}"; do  # a port taken before the start says nothing about this one
  if (: <>"/dev/tcp/127.0.0.1/$__p") 2>/dev/null || (: <>"/dev/tcp/::1/$__p") 2>/dev/null
  then __busy+="$__p "; else __free+=("$__p"); fi
done
__ports=("${__free[@]}")
if ((__any)); then for __p in $(__listening); do __before+="$__p "; done; fi
set -m
"$BASH" --noprofile --norc -c "$__cmd" </dev/null >"$__log" 2>&1 &
__pid=$!
set +m
trap 'kill -KILL -- -"$__pid" 2>/dev/null; rm -f "$__log"' EXIT
trap 'exit 143' TERM INT HUP
__us; __start=$__t
__status=timeout __port= __hit= __code=
while :; do
  if ! kill -0 "$__pid" 2>/dev/null; then
    wait "$__pid" 2>/dev/null; __code=$?; __status=exited; break
  fi
  __listens && { __status=port; break; }
  if [[ -n $__line ]] && __hit=$(grep -a -E -m1 -e "$__line" "$__log" 2>/dev/null); then
    __status=line
    __listens && __status=port  # it printed just after it started listening
    break
  fi
  __us; (( __t - __start >= __wait )) && break
  sleep 0.2
done
__us; __ready=$(( __t - __start ))
if [[ $__status != exited ]]; then
  kill -TERM -- -"$__pid" 2>/dev/null
  __us; __t0=$__t
  while kill -0 -- -"$__pid" 2>/dev/null; do
    __us; (( __t - __t0 >= __grace )) && break
    sleep 0.1
  done
  __killed=0
  kill -KILL -- -"$__pid" 2>/dev/null && __killed=1
  wait "$__pid" 2>/dev/null; __code=$?
else
  __killed=0
  kill -KILL -- -"$__pid" 2>/dev/null && __killed=1
fi
__us; __stop=$(( __t - __start ))
__size=$(wc -c < "$__log")
tail -c "$__tail" "$__log"
__hit=${__hit//[$'\t\r\n']/ }
printf '\n%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$__mark" "$__status" "$__ready" \
  "$__stop" "$__code" "$__port" "$__killed" "$__size" "$__busy" "${__hit:0:300}"
"""


@dataclass(frozen=True)
class ReadyOutcome:
    """What the readiness check saw."""

    status: str  # "port", "line" (ready), "exited" (died first), "timeout" (never ready)
    ready_after: float  # seconds from the start to ready / exit / giving up
    stopped_after: float  # seconds from the start until the group was gone
    exit_code: int | None
    port: int | None
    line: str
    output: str  # the tail of the output
    omitted: int  # bytes of output left out before the tail
    killed: bool  # something of the group was still there after TERM's grace
    busy: tuple[int, ...] = ()  # ports that already accepted connections before the start

    @property
    def ready(self) -> bool:
        return self.status in {"port", "line"}


def readiness_script(
    command: str, readiness: Readiness, any_port: bool, wait: float, grace: float = GRACE
) -> str:
    """The bash script that runs `command` as a readiness check."""
    values = {
        "__cmd": shlex.quote(command),
        "__ports": "(" + " ".join(str(p) for p in readiness.ports) + ")",
        "__any": "1" if any_port else "0",
        "__line": shlex.quote(readiness.line),
        "__wait": str(int(wait * 1e6)),
        "__grace": str(int(grace * 1e6)),
        "__tail": str(TAIL),
        "__mark": shlex.quote(_MARK),
    }
    return "".join(f"{k}={v}\n" for k, v in values.items()) + _SCRIPT


def parse_outcome(text: str) -> ReadyOutcome | None:
    """The wrapper's output; None when it did not finish (killed from outside)."""
    head, sep, tail = text.rpartition("\n" + _MARK + "\t")
    if not sep:
        return None
    fields = tail.rstrip("\n").split("\t")
    if len(fields) < 9:
        return None
    status, ready, stop, code, port, killed, size, busy, line = fields[:9]
    return ReadyOutcome(
        status=status,
        ready_after=int(ready or 0) / 1e6,
        stopped_after=int(stop or 0) / 1e6,
        exit_code=int(code) if code.lstrip("-").isdigit() else None,
        port=int(port) if port.isdigit() else None,
        line=_ANSI.sub("", line).strip(),
        busy=tuple(int(p) for p in busy.split() if p.isdigit()),
        output=head,
        omitted=max(0, int(size.strip() or 0) - len(head.encode()))
        if size.strip().isdigit()
        else 0,
        killed=killed == "1",
    )


async def run_until_ready(
    shell: ConfinedShell,
    command: str,
    cwd: Path,
    readiness: Readiness,
    *,
    any_port: bool,
    wait: float,
) -> tuple[ReadyOutcome | None, str]:
    """Run the check; the outcome (None if the wrapper itself failed) and the raw output."""
    script = readiness_script(command, readiness, any_port, wait)
    result = await shell.run_script(script, cwd=cwd, timeout=wait + GRACE + 20)
    return parse_outcome(result.output), result.output
