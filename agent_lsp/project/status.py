"""Project status for the prompt (SPEC P3): git branch, changed files, last commits — from
git run confined and hardened (`agent_lsp.project.git`), never from the repository's own hooks."""

from __future__ import annotations

from agent_lsp.project.git import Git, git_text

__all__ = ["parse_status", "project_status"]


def parse_status(porcelain: str) -> tuple[str, list[str], list[str], list[str]]:
    """(branch, modified, staged, untracked) from `git status --porcelain=v1 -b -z`."""
    branch, modified, staged, untracked = "", [], [], []
    entries = porcelain.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if entry.startswith("## "):
            head = entry[3:]
            if head.startswith("No commits yet on "):
                branch = head.removeprefix("No commits yet on ")
            elif head.startswith("HEAD (no branch)"):
                branch = "detached HEAD"
            else:
                branch = head.split("...", 1)[0]
            continue
        if len(entry) < 4:
            continue
        x, y, path = entry[0], entry[1], entry[3:]
        if x in "RC":
            i += 1  # the original path follows
        if x == "?":
            untracked.append(path)
            continue
        if x not in " ?!":
            staged.append(path)
        if y in "MDT":
            modified.append(path)
    return branch, modified, staged, untracked


async def project_status(git: Git, max_files: int = 15) -> str:
    """A few lines about the repository."""
    porcelain = await git_text(
        git, "status", "--porcelain=v1", "-b", "-z", "-uall", "--ignore-submodules=all"
    )
    if porcelain is None:
        return "git: not a git repository (or git unavailable)"
    branch, changed, staged, untracked = parse_status(porcelain)
    changed, staged, untracked = (
        [f for f in files if not git.hide(f)] for files in (changed, staged, untracked)
    )
    log = await git_text(git, "log", "-5", "--format=%h %s") or ""
    commits = [line[:68] for line in log.splitlines() if line.strip()]
    stat = await _diff_stat(git)
    lines = [f"git: branch {branch or 'unknown'}"]
    for label, files in (("modified", changed), ("staged", staged), ("untracked", untracked)):
        if files:
            unique = sorted(set(files))
            more = f" (+{len(unique) - max_files} more)" if len(unique) > max_files else ""
            lines.append(f"  {label}: {', '.join(unique[:max_files])}{more}")
    if stat:
        lines.append(f"  uncommitted: {stat}")
    if commits:
        lines.append("  last commits: " + "; ".join(commits))
    return "\n".join(lines)


async def _diff_stat(git: Git, max_files: int = 8) -> str:
    """`git diff --stat HEAD` in a line: files changed with their +/- counts, and the total
    (the names `git.hide` hides left out)."""
    numstat = await git_text(git, "diff", "--numstat", "-z", "HEAD")
    if not numstat:
        return ""
    files: list[tuple[str, str, str]] = []
    for entry in numstat.split("\0"):
        added, _, rest = entry.partition("\t")
        deleted, _, path = rest.partition("\t")
        if path and not git.hide(path):
            files.append((path, added, deleted))
    if not files:
        return ""
    plus = sum(int(a) for _, a, _ in files if a.isdigit())
    minus = sum(int(d) for _, _, d in files if d.isdigit())
    shown = ", ".join(
        f"{p} +{a}/-{d}" if a.isdigit() else f"{p} (binary)" for p, a, d in files[:max_files]
    )
    more = f" (+{len(files) - max_files} more)" if len(files) > max_files else ""
    return f"{len(files)} files, +{plus}/-{minus}: {shown}{more}"
