"""Project status for the prompt (SPEC P3): git branch, changed files, last commits."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def project_status(root: Path, max_files: int = 15) -> str:
    """A few lines about the repository; blocking (GitPython runs git), so call it in a thread."""
    try:
        import git

        repo = git.Repo(root, search_parent_directories=True)
    except Exception:  # not a repository, or git missing: say so, never fail the task
        return "git: not a git repository"
    try:
        branch = "detached HEAD" if repo.head.is_detached else repo.active_branch.name
        changed = (
            [d.a_path for d in repo.index.diff(None) if d.a_path] if repo.head.is_valid() else []
        )
        staged = (
            [d.a_path for d in repo.index.diff("HEAD") if d.a_path] if repo.head.is_valid() else []
        )
        untracked = repo.untracked_files
        commits = (
            [f"{c.hexsha[:7]} {str(c.summary)[:60]}" for c in repo.iter_commits(max_count=3)]
            if repo.head.is_valid()
            else []
        )
    except Exception as exc:
        log.debug("git status failed: %s", exc)
        return "git: status unavailable"
    lines = [f"git: branch {branch}"]
    for label, files in (("modified", changed), ("staged", staged), ("untracked", untracked)):
        if files:
            shown = ", ".join(sorted(set(files))[:max_files])
            more = f" (+{len(set(files)) - max_files} more)" if len(set(files)) > max_files else ""
            lines.append(f"  {label}: {shown}{more}")
    if commits:
        lines.append("  last commits: " + "; ".join(commits))
    return "\n".join(lines)
