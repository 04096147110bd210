"""Hallucinated names in JavaScript/TypeScript and Go edits: what is flagged, what is let
through (real files in temp projects, the real symbol index and tree-sitter), and through the
edit tool the message the model receives and the write on repetition (the real openai client,
the scripted server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_lsp.project.names import undefined_names
from agent_lsp.symbols import SymbolIndex
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages
from tests.test_agent import make_session

CART_JS = """\
import { sum } from "./math.js";
import { format } from "pretty-money";
import "dom-helpers";

export function total(items) {
  return items.length;
}
"""
MATH_JS = "export function sum(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}\n"
PRICING_JS = "export const discount = (n) => n * 0.9;\n"
OLD_JS = "  return items.length;\n"
BAD_JS = "  return formatTotal(sum(items.map((i) => i.price)));\n"
GOOD_JS = """\
  // later: recompute() once the cache lands
  const label = `${items.length} items, see lookupAll() ${items.at(0)}`;
  const { price = 0, ...rest } = items[0] ?? {};
  const pick = (list) => list.filter(Boolean);
  console.log("calls like nowhere() are text", label, rest, new Map(), Math.max(1, price));
  setTimeout(() => pick(items), 0);
  highlight(document.body);
  return format(discount(sum(pick(items).map((i) => i.price))));
"""

GO_MOD = "module example.com/shop\n\ngo 1.21\n"
CART_GO = """\
package cart

import (
\t"fmt"
\t"strings"

\t"example.com/shop/util"
)

type Item struct {
\tName  string
\tPrice float64
}

func Total(items []Item) float64 {
\treturn 0
}

func describe(items []Item) string {
\treturn fmt.Sprint(len(items))
}
"""
HELPERS_GO = "package cart\n\nvar taxRate = 0.2\n\nfunc round2(x float64) float64 { return x }\n"
UTIL_GO = "package util\n\nfunc Clamp(x, lo, hi float64) float64 { return x }\n"
OLD_GO = "\treturn 0\n"
BAD_GO = "\treturn util.Clampp(roundTo(sumPrices(items)), 0, 100)\n"
GOOD_GO = """\
\t// later: cache() the totals
\tsum := 0.0
\tadd := func(x float64) { sum += x }
\tfor _, it := range items {
\t\tadd(it.Price * (1 + taxRate))
\t}
\tfirst := Item{Name: strings.ToUpper("x"), Price: float64(len(items))}
\tshow := describe
\t_ = fmt.Sprintf("calls like nowhere() are text %v %v", first, show)
\treturn util.Clamp(round2(sum), 0, 100)
"""


def js_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src/cart.js").write_text(CART_JS)
    (root / "src/math.js").write_text(MATH_JS)
    (root / "src/pricing.js").write_text(PRICING_JS)
    money = root / "node_modules/pretty-money"
    money.mkdir(parents=True)
    (money / "package.json").write_text(json.dumps({"name": "pretty-money", "main": "lib.js"}))
    (money / "lib.js").write_text("exports.format = (n) => String(n);\n")
    dom = root / "node_modules/dom-helpers"
    dom.mkdir(parents=True)
    (dom / "package.json").write_text(json.dumps({"name": "dom-helpers", "types": "g.d.ts"}))
    (dom / "g.d.ts").write_text("declare global { function highlight(el: Element): void }\n")
    return root


def go_project(root: Path) -> Path:
    (root / "cart").mkdir(parents=True)
    (root / "util").mkdir()
    (root / "go.mod").write_text(GO_MOD)
    (root / "cart/cart.go").write_text(CART_GO)
    (root / "cart/helpers.go").write_text(HELPERS_GO)
    (root / "util/util.go").write_text(UTIL_GO)
    return root


def flagged(root: Path, rel: str, old: str, new: str) -> list[str]:
    index = SymbolIndex(root)
    index.build()
    before = (root / rel).read_text()
    after = before.replace(old, new)
    assert after != before
    return undefined_names(rel, before, after, new, lambda n: bool(index.definitions(n)), root)


def test_js_flags_a_call_bound_nowhere(tmp_path: Path) -> None:
    root = js_project(tmp_path)
    assert flagged(root, "src/cart.js", OLD_JS, BAD_JS) == ["formatTotal"]


def test_js_lets_through_bindings_globals_the_index_packages_and_text(tmp_path: Path) -> None:
    root = js_project(tmp_path)
    assert flagged(root, "src/cart.js", OLD_JS, GOOD_JS) == []


def test_a_global_declared_by_an_imported_package_is_known_only_with_the_package(
    tmp_path: Path,
) -> None:
    root = js_project(tmp_path)
    (root / "src/cart.js").write_text(CART_JS.replace('import "dom-helpers";\n', ""))
    assert flagged(root, "src/cart.js", OLD_JS, "  highlight(items);\n") == ["highlight"]


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        (
            "src/view.tsx",
            "import React from 'react';\n"
            "export function View<T>(props: { rows: T[] }): JSX.Element {\n"
            "  return <div>{props.rows.length}</div>;\n}\n",
        ),
        ("src/view.jsx", "export function View(p) {\n  return <p>{p.n}</p>;\n}\n"),
        ("src/util.ts", "export function clamp(x: number): number {\n  return x;\n}\n"),
    ],
)
def test_ts_and_jsx(tmp_path: Path, rel: str, text: str) -> None:
    root = js_project(tmp_path)
    (root / rel).write_text(text)
    old = "return x;" if rel.endswith(".ts") else "return <"
    good = {
        "src/util.ts": "const f = <U,>(u: U): U => u; return f<number>(Math.abs(x));",
        "src/view.tsx": "const n = Number(1); return <b>call nowhere() {n}</b>; return <",
        "src/view.jsx": "return <span>later() text</span>; return <",
    }[rel]
    assert flagged(root, rel, old, good) == []
    bad = "return roundUp(x);" if rel.endswith(".ts") else "return <a>{renderRows()}</a>; return <"
    assert flagged(root, rel, old, bad) == ["roundUp" if rel.endswith(".ts") else "renderRows"]


def test_go_flags_an_undeclared_call_and_a_missing_function_of_a_project_package(
    tmp_path: Path,
) -> None:
    root = go_project(tmp_path)
    assert flagged(root, "cart/cart.go", OLD_GO, BAD_GO) == [
        "util.Clampp",
        "roundTo",
        "sumPrices",
    ]


def test_go_lets_through_the_package_builtins_locals_literals_and_method_values(
    tmp_path: Path,
) -> None:
    root = go_project(tmp_path)
    assert flagged(root, "cart/cart.go", OLD_GO, GOOD_GO) == []


def test_go_a_dot_import_or_a_broken_file_flags_nothing(tmp_path: Path) -> None:
    root = go_project(tmp_path)
    dotted = CART_GO.replace('\t"strings"\n', '\t. "strings"\n')
    (root / "cart/cart.go").write_text(dotted)
    assert flagged(root, "cart/cart.go", OLD_GO, "\treturn roundTo(1)\n") == []
    (root / "cart/cart.go").write_text(CART_GO)
    assert flagged(root, "cart/cart.go", OLD_GO, "\treturn roundTo(1\n") == []


async def edit_twice(
    root: Path, fake_openai: FakeOpenAIServer, rel: str, old: str, good: str, bad: str
) -> tuple[list[str], str]:
    """A correct edit, a hallucinated one, the same again; the tool messages, the file."""
    good_call = ToolCall("edit_file", {"path": rel, "old_text": old, "new_text": good})
    bad_call = ToolCall("edit_file", {"path": rel, "old_text": good, "new_text": bad})
    fake_openai.script(
        Reply(tool_calls=[good_call]),
        Reply(tool_calls=[bad_call]),
        Reply(tool_calls=[bad_call]),
        Reply("Done."),
    )
    session = make_session(root, fake_openai.base_url)
    await session.run_task(Task(kind=TaskKind.TASK, instruction="total"), RecordingChannel())
    await session.aclose()
    return tool_messages(fake_openai.requests[3]), (root / rel).read_text()


async def test_the_edit_tool_flags_a_js_call_until_it_is_repeated(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = js_project(tmp_path / "shop")
    messages, text = await edit_twice(root, fake_openai, "src/cart.js", OLD_JS, GOOD_JS, BAD_JS)
    assert "edited src/cart.js at line 6" in messages[0]
    assert '"status":"error"' in messages[1]
    assert (
        "not written: `formatTotal` defined nowhere in the project (src/cart.js, the symbol "
        "index, the JavaScript globals, the imported packages); if it is right"
    ) in messages[1]
    assert "edited src/cart.js at line 6" in messages[2]
    assert text == CART_JS.replace(OLD_JS, BAD_JS)


async def test_the_edit_tool_flags_a_go_call_until_it_is_repeated(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = go_project(tmp_path / "shop")
    messages, text = await edit_twice(root, fake_openai, "cart/cart.go", OLD_GO, GOOD_GO, BAD_GO)
    assert "edited cart/cart.go at line 16" in messages[0]
    assert '"status":"error"' in messages[1]
    assert (
        "not written: `util.Clampp`, `roundTo`, `sumPrices` defined nowhere in the project "
        "(cart/cart.go, the package's files, the symbol index, the Go builtins)"
    ) in messages[1]
    assert "edited cart/cart.go at line 16" in messages[2]
    assert text == CART_GO.replace(OLD_GO, BAD_GO)


MORE_GOOD_JS = """\
  const { parse: parseIt } = require("pretty-money");
  for (const [key, { run }] of Object.entries(items)) run(key);
  try { later(); } catch (onError) { onError(); }
  (function () { return 1; })();
  return parseIt(hoisted(items));
"""


def test_js_lets_through_hoisting_patterns_catch_and_calls_of_expressions(
    tmp_path: Path,
) -> None:
    root = js_project(tmp_path)
    text = CART_JS + "\nfunction hoisted(x) {\n  return x;\n}\nfunction later() {}\n"
    (root / "src/cart.js").write_text(text)
    assert flagged(root, "src/cart.js", OLD_JS, MORE_GOOD_JS) == []


MORE_GOOD_GO = """\
\tpick := func(xs []Item) []Item { return xs }
\tvar conv Money = Money(len(pick(items)))
\tget := Item.Price2
\t_ = get
\treturn float64(conv) + Max[float64](1, 2) + util.Clamp(1, 2, 3)
"""
MONEY_GO = """\
package cart

type Money float64

func Max[T ~float64](a, b T) T { return a }

func (i Item) Price2() float64 { return i.Price }
"""


def test_go_lets_through_sibling_types_generics_and_method_expressions(tmp_path: Path) -> None:
    root = go_project(tmp_path)
    (root / "cart/money.go").write_text(MONEY_GO)
    (root / "cart/cart_test.go").write_text(
        'package cart_test\n\nimport "example.com/shop/cart"\n\nvar _ = cart.Total(nil)\n'
    )
    assert flagged(root, "cart/cart.go", OLD_GO, MORE_GOOD_GO) == []
    test_old = "var _ = cart.Total(nil)\n"
    assert flagged(root, "cart/cart_test.go", test_old, "var _ = cart.Totl(nil)\n") == ["cart.Totl"]
