"""The agent's view of the project: what it may read and write, and what it knows about it.

`workspace` (the project root, the editor's buffers over the files on disk, reads checked by
the safety policy), `editing` (where an edit lands), `syntax` (a broken file is refused before
it lands), `names` (a call to a name defined nowhere is flagged), `diagnostics` (the editor's
and agent-lsp's own problems), `status` (branch, changes, last commits) and `git` (git run
confined and hardened).

May import: `agent_lsp.symbols` (what the project defines), `agent_lsp.safety`,
`agent_lsp.config`, the shared root modules and `adapters`.
"""
