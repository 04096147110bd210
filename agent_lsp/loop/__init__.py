"""The agent loop, the part every front end reuses (the editor, the terminal, team mode).

`agent` runs one task: model → tool calls → results, and the end check that decides "done"
(`verify` runs the project's tests against the editor's text, `done` asks whether the
diagnostic a fix started from is gone). Around it: `prompt` (the messages the model is sent),
`compaction` (a long conversation made short), `guard` (repeated calls stop a loop),
`outputs` (long tool outputs kept on disk), `toolbox` (dispatches the model's calls to tools),
`control` (the user in a running task: steer notes, questions, the conflict pause) and
`summary` (what a task cost).

May import: `agent_lsp.memory`, `agent_lsp.project`, `agent_lsp.safety`, `agent_lsp.config`,
the shared root modules and `adapters`. Never the concrete tools (they reach the loop only as
`seams.Tool`), the model providers (only `seams.Model`), the LSP layer or the CLI.
"""
