"""Configuration: the settings (`schema`: the tree; `settings`: loading the user file, the project
file and the editor settings, validated, with clear errors; `untrusted`: what a layer the user
did not write may set), which repositories are trusted to ship settings (`trust`), and the
generators of what is derived from the settings — the configuration reference in `docs/`
(`reference`) and the VS Code extension's settings (`vscode`).

May import only the shared root modules. Everything else may import it.
"""
