"""Configuration: the settings (user file, project file, editor settings; validated, with
clear errors), which repositories are trusted to ship settings (`trust`), and the generators
of what is derived from the settings — the configuration reference in `docs/` (`reference`)
and the VS Code extension's settings (`vscode`).

May import only the shared root modules. Everything else may import it.
"""
