"""What the LSP benchmark sends: client capabilities, generated Python buffers, code-action
requests with realistic diagnostics, single-character edits, hover positions.

Everything is deterministic (seeded), so two servers (and two runs) get the same requests.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Json = dict[str, Any]


def client_capabilities() -> Json:
    """Roughly what VS Code 1.9x announces (the parts a code-action server can notice)."""
    return {
        "general": {
            "positionEncodings": ["utf-16"],
            "staleRequestSupport": {
                "cancel": True,
                "retryOnContentModified": [
                    "textDocument/semanticTokens/full",
                    "textDocument/semanticTokens/range",
                    "textDocument/semanticTokens/full/delta",
                ],
            },
        },
        "window": {
            "workDoneProgress": True,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}},
            "showDocument": {"support": True},
        },
        "workspace": {
            "applyEdit": True,
            "configuration": True,
            "workspaceFolders": True,
            "didChangeConfiguration": {"dynamicRegistration": True},
            "executeCommand": {"dynamicRegistration": True},
            "workspaceEdit": {
                "documentChanges": True,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "textOnlyTransactional",
                "normalizesLineEndings": True,
                "changeAnnotationSupport": {"groupsOnLabel": True},
            },
        },
        "textDocument": {
            "synchronization": {
                "dynamicRegistration": True,
                "willSave": True,
                "willSaveWaitUntil": True,
                "didSave": True,
            },
            "publishDiagnostics": {
                "relatedInformation": True,
                "versionSupport": False,
                "tagSupport": {"valueSet": [1, 2]},
                "codeDescriptionSupport": True,
                "dataSupport": True,
            },
            "codeAction": {
                "dynamicRegistration": True,
                "isPreferredSupport": True,
                "disabledSupport": True,
                "dataSupport": True,
                "resolveSupport": {"properties": ["edit"]},
                "codeActionLiteralSupport": {
                    "codeActionKind": {
                        "valueSet": [
                            "",
                            "quickfix",
                            "refactor",
                            "refactor.extract",
                            "refactor.inline",
                            "refactor.rewrite",
                            "source",
                            "source.organizeImports",
                        ]
                    }
                },
                "honorsChangeAnnotations": False,
            },
        },
    }


def initialize_params(root: Path) -> Json:
    uri = root.as_uri()
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "lsp-bench", "version": "1.0"},
        "locale": "en",
        "rootPath": str(root),
        "rootUri": uri,
        "workspaceFolders": [{"uri": uri, "name": root.name}],
        "capabilities": client_capabilities(),
        "trace": "off",
    }


# --------------------------------------------------------------------------- generated buffer


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_NOUNS = _words(
    "order account invoice customer payment shipment ledger report session token record batch "
    "item price user event queue cache setting metric warehouse vendor refund coupon"
)
_VERBS = _words(
    "load save parse render validate compute fetch sync merge apply build resolve normalize "
    "export schedule collect reconcile archive"
)
_TYPES = ("int", "str", "float", "bool", "bytes", "Path", "datetime")


def _camel(word: str) -> str:
    return "".join(part.capitalize() for part in word.split("_"))


def _function(rng: random.Random, indent: str = "", method: bool = False) -> list[str]:
    verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
    other = rng.choice(_NOUNS)
    ret = rng.choice(("int", f"list[{_camel(noun)}]", "dict[str, Any]", "None", "bool"))
    args = ", ".join(
        [*(["self"] if method else []), f"{noun}s: Sequence[{_camel(noun)}]"]
        + [
            f"{w}: {rng.choice(_TYPES)} | None = None"
            for w in rng.sample(_NOUNS, rng.randint(0, 2))
        ]
    )
    name = f"{verb}_{noun}s" if not method or rng.random() < 0.7 else f"_{verb}_{other}"
    i, j = indent + "    ", indent + "        "
    signature = f"{indent}def {name}({args}) -> {ret}:"
    if len(signature) > 100:  # wrapped the way ruff/black would
        params = [f"{indent}    {arg}," for arg in args.split(", ")]
        signature = "\n".join([f"{indent}def {name}(", *params, f"{indent}) -> {ret}:"])
    lines = [
        *signature.split("\n"),
        f'{i}"""{verb.capitalize()} every {noun} and return the {other} summary.',
        "",
        f"{i}Entries without a {other} are skipped; the order of `{noun}s` is kept.",
        f'{i}"""',
    ]
    body = [
        [f"{i}if not {noun}s:", f'{j}log.debug("no {noun}s to {verb}")', f"{j}return {_zero(ret)}"],
        [
            f"{i}seen: set[str] = set()",
            f"{i}for {noun} in {noun}s:",
            f'{j}key = f"{{{noun}.id}}:{{{noun}.{other}_id}}"',
            f"{j}if key in seen:",
            f"{j}    continue",
            f"{j}seen.add(key)",
        ],
        [
            f"{i}try:",
            f"{j}payload = json.loads({noun}s[0].raw_{other})",
            f"{i}except (ValueError, IndexError) as exc:",
            f'{j}log.warning("cannot {verb} %s: %s", {noun}s, exc)',
            f"{j}payload = {{}}",
        ],
        [
            f"{i}totals = defaultdict(int)",
            f"{i}for {noun} in {noun}s:",
            f"{j}totals[{noun}.{other}_id] += {noun}.quantity * {noun}.unit_price",
        ],
        [
            f"{i}pending = [{noun} for {noun} in {noun}s if {noun}.status == Status.PENDING]",
            f"{i}if len(pending) > MAX_{noun.upper()}S:",
            f"{j}raise TooMany{_camel(noun)}sError(len(pending), MAX_{noun.upper()}S)",
        ],
        [
            f'{i}with open(CACHE_DIR / f"{{{noun}s[0].id}}.json", encoding="utf-8") as fh:',
            f"{j}cached = json.load(fh)",
            f'{i}{other}_map = {{entry["id"]: entry for entry in cached.get("{other}s", [])}}',
        ],
    ]
    for block in rng.sample(body, rng.randint(2, 4)):
        lines += block
    lines.append(f"{i}return {_zero(ret)}")
    return [*lines, ""]


def _zero(ret: str) -> str:
    return {"int": "0", "None": "None", "bool": "False", "dict[str, Any]": "{}"}.get(ret, "[]")


def _class(rng: random.Random) -> list[str]:
    noun = rng.choice(_NOUNS)
    cls = _camel(noun) + rng.choice(("", "Service", "Repository", "Manager", "Builder"))
    lines = [
        "@dataclass",
        f"class {cls}:",
        f'    """Keeps the {noun}s of one {rng.choice(_NOUNS)} and what was done to them."""',
        "",
    ]
    for word in rng.sample(_NOUNS, rng.randint(3, 6)):
        lines.append(f"    {word}_id: {rng.choice(_TYPES)}")
    lines += [
        "    tags: list[str] = field(default_factory=list)",
        "    created_at: datetime = field(default_factory=datetime.now)",
        "",
    ]
    for _ in range(rng.randint(2, 4)):
        lines += _function(rng, indent="    ", method=True)
    return [*lines, ""]


def _constants(rng: random.Random) -> list[str]:
    noun = rng.choice(_NOUNS)
    lines = [f"{noun.upper()}_DEFAULTS: dict[str, Any] = {{"]
    for word in rng.sample(_NOUNS, rng.randint(3, 7)):
        lines.append(f'    "{word}": {rng.choice(("None", "0", "True", "[]", repr(word)))},')
    return [*lines, "}", f"MAX_{noun.upper()}S = {rng.randint(10, 10_000)}", ""]


HEADER = [
    '"""Billing back-office: orders, invoices and their reconciliation (lsp-bench)."""',
    "",
    "from __future__ import annotations",
    "",
    "import json",
    "import logging",
    "from collections import defaultdict",
    "from collections.abc import Sequence",
    "from dataclasses import dataclass, field",
    "from datetime import datetime",
    "from enum import Enum",
    "from pathlib import Path",
    "from typing import Any",
    "",
    "log = logging.getLogger(__name__)",
    'CACHE_DIR = Path.home() / ".cache" / "billing"',
    "",
    "",
    "class Status(Enum):",
    '    PENDING = "pending"',
    '    DONE = "done"',
    "",
    "",
]


def generate_python(n_lines: int, seed: int = 1) -> str:
    """Deterministic, realistic-looking Python source of exactly `n_lines` lines."""
    rng = random.Random(seed)
    lines = list(HEADER)
    while True:
        kind = rng.random()
        block = _class(rng) if kind < 0.35 else _constants(rng) if kind < 0.45 else _function(rng)
        if kind >= 0.35:
            block.append("")
        if len(lines) + len(block) > n_lines - 1:
            break
        lines += block
    lines += ["# end of generated module"] * (n_lines - len(lines))
    return "\n".join(lines) + "\n"


_DIAGNOSTICS: tuple[tuple[str, str, int, str], ...] = (
    ("Pylance", "reportAttributeAccessIssue", 1, 'Cannot access attribute "{w}" for class "{c}"'),
    ("Pylance", "reportUndefinedVariable", 1, '"{w}" is not defined'),
    (
        "Pylance",
        "reportArgumentType",
        1,
        'Argument of type "str | None" cannot be assigned to parameter "{w}" of type "str" in '
        'function "{c}"\n  Type "str | None" is not assignable to type "str"\n    "None" is not '
        'assignable to "str"',
    ),
    ("Pylance", "reportOptionalMemberAccess", 1, '"{w}" is not a known attribute of "None"'),
    ("ruff", "F841", 2, "Local variable `{w}` is assigned to but never used"),
    ("ruff", "B007", 2, "Loop control variable `{w}` not used within loop body"),
    ("mypy", "union-attr", 1, 'Item "None" of "{c} | None" has no attribute "{w}"'),
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def code_action_params(text: str, uri: str, count: int, seed: int = 2) -> list[Json]:
    """`count` codeAction requests at random non-blank lines, one realistic diagnostic each."""
    rng = random.Random(seed)
    lines = text.splitlines()
    candidates = [n for n, line in enumerate(lines) if _WORD.search(line)]
    requests: list[Json] = []
    for k in range(count):
        line_no = rng.choice(candidates)
        words = list(_WORD.finditer(lines[line_no]))
        word = rng.choice(words)
        source, code, severity, template = rng.choice(_DIAGNOSTICS)
        rng_ = {
            "start": {"line": line_no, "character": word.start()},
            "end": {"line": line_no, "character": word.end()},
        }
        diagnostic: Json = {
            "range": rng_,
            "severity": severity,
            "code": code,
            "source": source,
            "message": template.format(w=word.group(), c=_camel(rng.choice(_NOUNS))),
        }
        if source == "Pylance":
            diagnostic["codeDescription"] = {
                "href": f"https://github.com/microsoft/pyright/blob/main/docs/configuration.md#{code}"
            }
        requests.append(
            {
                "textDocument": {"uri": uri},
                "range": rng_,
                # VS Code asks automatically on cursor moves (2) and on Ctrl+. (1).
                "context": {"diagnostics": [diagnostic], "triggerKind": 2 if k % 3 else 1},
            }
        )
    return requests


# --------------------------------------------------------------------------- edits and hovers


@dataclass(frozen=True)
class Insert:
    """One single-character insertion (LSP positions: zero-based line, UTF-16 column)."""

    line: int
    character: int
    text: str

    def change(self) -> Json:
        position = {"line": self.line, "character": self.character}
        return {"range": {"start": position, "end": position}, "text": self.text}


def insert_plan(text: str, count: int, seed: int = 3) -> list[Insert]:
    """`count` one-character inserts at random lines and columns, valid one after the other.

    Typing-like characters only (no newline), so line numbers never shift; each insert makes its
    line one character longer, which later picks may use. ASCII buffer: columns are UTF-16 units.
    """
    rng = random.Random(seed)
    lengths = [len(line) for line in text.splitlines()]
    alphabet = "abcdefghijklmnopqrstuvwxyz_0123456789 ().,:"
    plan: list[Insert] = []
    for _ in range(count):
        line = rng.randrange(len(lengths))
        column = rng.randint(0, lengths[line])
        lengths[line] += 1
        plan.append(Insert(line, column, rng.choice(alphabet)))
    return plan


def did_change(uri: str, version: int, edit: Insert) -> Json:
    return {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [edit.change()],
    }


def hover_positions(text: str, count: int, seed: int = 4) -> list[Json]:
    """`count` hover requests' positions, each inside an identifier on a non-blank line."""
    rng = random.Random(seed)
    lines = text.splitlines()
    candidates = [n for n, line in enumerate(lines) if _WORD.search(line)]
    positions: list[Json] = []
    for _ in range(count):
        line_no = rng.choice(candidates)
        word = rng.choice(list(_WORD.finditer(lines[line_no])))
        column = rng.randrange(word.start(), word.end())
        positions.append({"line": line_no, "character": column})
    return positions
