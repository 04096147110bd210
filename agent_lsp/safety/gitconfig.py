"""git configuration that runs programs (`core.fsmonitor`, `core.hooksPath`, `diff.external`,
`core.pager`, `filter.*.clean`, `alias.*`, `credential.helper`, `include.path` ...): setting
it — with `git config`, `git -c` or `--config-env` — is forbidden, never a mere ask."""

from __future__ import annotations

__all__ = ["executable_key"]

# section.name (case-insensitive) or section.*.name (the subsection case-sensitive: any)
_KEYS = frozenset(
    {"core.fsmonitor", "core.hookspath", "core.pager", "core.editor", "core.sshcommand"}
    | {"core.askpass", "core.gitproxy", "core.worktree", "core.alternaterefscommand"}
    | {"diff.external", "credential.helper", "sequence.editor", "gpg.program"}
    | {"include.path", "uploadpack.packobjectshook", "uploadpack.allowanysha1inwant"}
    | {"receive.procreceiverefs", "ssh.variant", "man.viewer", "web.browser", "pager"}
    | {"interactive.difffilter", "sendemail.smtpserver", "sendemail.tocmd", "sendemail.cccmd"}
    | {"merge.tool", "diff.tool", "diff.guitool", "merge.guitool", "protocol.allow"}
    | {"http.proxy", "https.proxy", "core.attributesfile", "init.templatedir"}
)
_SUB_KEYS = frozenset(
    {"filter.clean", "filter.smudge", "filter.process", "diff.textconv", "diff.command"}
    | {"merge.driver", "credential.helper", "gpg.program", "includeif.path", "url.insteadof"}
    | {"url.pushinsteadof", "pager", "man.cmd", "man.path", "browser.cmd", "browser.path"}
    | {"difftool.cmd", "mergetool.cmd", "remote.uploadpack", "remote.receivepack"}
    | {"remote.vcs", "remote.proxy", "submodule.update", "protocol.allow", "http.proxy"}
    | {"uploadpack.packobjectshook", "alias", "sendemail.tocmd", "sendemail.cccmd"}
    | {"sendemail.smtpserver", "hook.command", "hook.event", "trailer.command", "trailer.cmd"}
)
_SECTIONS = frozenset({"alias", "pager", "hook", "includeif", "url", "filter", "credential"})


def executable_key(key: str) -> bool:
    """Whether setting `key` (section.name or section.sub.name) can make git run a program."""
    key = key.strip()
    section, _, rest = key.partition(".")
    section = section.lower()
    if not rest:
        return section in _SECTIONS  # a whole section (`--remove-section`, rename)
    sub, _, name = rest.rpartition(".")
    name = name.lower()
    if section in _SECTIONS - {"url", "filter", "credential"}:
        return True
    if not sub:
        return f"{section}.{name}" in _KEYS
    return f"{section}.{name}" in _SUB_KEYS
