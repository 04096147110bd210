"""`agent-lsp test` as a user runs it on shapes of real projects tried from outside (second
round): each test is a small project of our own doing what a real one did, run by the real
runner natively and through `agent-lsp test --json` (the sandboxed shadow copy)."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.conftest import ProjectFactory
from tests.adapters.test_cli_runners import agent_lsp_test, counts, native


def test_a_vite_config_bundled_by_an_earlier_native_run(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    # a real project (unjs/pathe) with a vite.config.ts: a native `vitest run` bundles the
    # config into node_modules/.vite-temp and leaves that folder; the shadow shared it as the
    # user's (read-only in the sandbox), and every run was one error "EROFS: read-only file
    # system, open 'node_modules/.vite-temp/vite.config.ts.timestamp-....mjs'".
    root = js_project("js-vitest")
    (root / "vite.config.ts").write_text(
        'import { defineConfig } from "vitest/config";\n\n'
        "export default defineConfig({ test: { testTimeout: 10000 } });\n"
    )
    own = native(["npx", "vitest", "run"], root)
    assert "2 failed | 2 passed | 1 skipped" in own.stdout, own.stdout
    assert (root / "node_modules" / ".vite-temp").is_dir()
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (1, (2, 2, 0)), report
    assert {t["path"] for t in report["tests"]} == {"src/calc.test.js", "src/calc.js"}
