"""Every git operation robot-to makes, as argv lists with ``GIT_TERMINAL_PROMPT=0``.

A required command that fails raises ``PermanentError("git <subcommand> failed: ...")``;
a failed commit raises ``CommitFailedError`` with git's output.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from robotlab.errors import CommitFailedError, PermanentError
from robotlab.to.config import git_environment


class Git:
    """Git in one working directory (the repository root)."""

    def __init__(self, work_dir: str | os.PathLike[str]) -> None:
        self.work_dir = str(work_dir)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.work_dir,
            env=git_environment(),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if check and proc.returncode != 0:
            detail = proc.stderr.strip() or proc.stdout.strip()
            raise PermanentError(f"git {args[0]} failed: {detail}")
        return proc

    def toplevel(self) -> str | None:
        """The repository root, or None outside a repository."""
        proc = self._run("rev-parse", "--show-toplevel", check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def git_dir(self) -> Path:
        """The real ``.git`` directory (a worktree's ``.git`` is a file)."""
        path = Path(self._run("rev-parse", "--git-common-dir").stdout.strip())
        return path if path.is_absolute() else Path(self.work_dir) / path

    def head_exists(self) -> bool:
        """True when HEAD names a commit."""
        return self._run("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0

    def head_sha(self) -> str:
        """The full sha of HEAD."""
        return self._run("rev-parse", "HEAD").stdout.strip()

    def current_branch(self) -> str:
        """The checked-out branch name."""
        return self._run("rev-parse", "--abbrev-ref", "HEAD").stdout.strip()

    def dirty_files(self) -> list[str]:
        """Tracked changes and untracked, not-ignored files, as paths."""
        out = self._run("status", "--porcelain", "--untracked-files=all").stdout
        return [line[3:] for line in out.splitlines() if line.strip()]

    def branch_exists(self, name: str) -> bool:
        """True when a local branch ``name`` exists."""
        proc = self._run("rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False)
        return proc.returncode == 0

    def create_branch(self, name: str, start: str | None = None) -> None:
        """``git checkout -b name`` from HEAD (or from ``start``)."""
        self._run("checkout", "-b", name, *([start] if start else []))

    def delete_branch(self, name: str) -> None:
        """``git branch -D name`` (never the branch checked out)."""
        self._run("branch", "-q", "-D", name)

    def checkout_branch(self, name: str) -> None:
        """``git checkout name``."""
        self._run("checkout", name)

    def add_all(self) -> None:
        """``git add -A``."""
        self._run("add", "-A")

    def staged(self) -> bool:
        """True when something is staged."""
        return self._run("diff", "--cached", "--quiet", check=False).returncode != 0

    def commit(self, message: str) -> None:
        """Commit the index with signing off; raises CommitFailedError on failure."""
        proc = self._run(
            "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "commit", "-q", "-m", message,
            check=False,
        )
        if proc.returncode != 0:
            raise CommitFailedError((proc.stdout + proc.stderr).strip())

    def reset_hard(self) -> None:
        """Throw away every uncommitted change: ``reset --hard HEAD`` and ``clean -fd``.

        Ignored files (and so the run directory) survive.
        """
        if not self.head_exists():
            return
        self._run("reset", "-q", "--hard", "HEAD")
        self._run("clean", "-q", "-fd")

    def diff_stat(self, base: str) -> tuple[int, int, int]:
        """(insertions, deletions, files) of ``base..HEAD``; zeros on error."""
        proc = self._run("diff", "--shortstat", f"{base}..HEAD", check=False)
        text = proc.stdout if proc.returncode == 0 else ""

        def number(pattern: str) -> int:
            match = re.search(pattern, text)
            return int(match.group(1)) if match else 0

        return number(r"(\d+) insertion"), number(r"(\d+) deletion"), number(r"(\d+) file")

    def add_to_local_exclude(self, entry: str) -> None:
        """Add ``entry`` as a line of ``.git/info/exclude`` unless it is already there."""
        exclude = self.git_dir() / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if entry in text.splitlines():
            return
        prefix = "" if not text or text.endswith("\n") else "\n"
        exclude.write_text(text + prefix + entry + "\n", encoding="utf-8")

    def changed_vs_worktree(self, ref: str) -> list[str]:
        """Tracked files differing from ``ref`` plus untracked, not-ignored files."""
        tracked = self._run("diff", "--name-only", ref, check=False).stdout.splitlines()
        untracked = self._run("ls-files", "--others", "--exclude-standard",
                              check=False).stdout.splitlines()
        return list(dict.fromkeys(path for path in tracked + untracked if path))

    def show(self, ref: str, path: str) -> str:
        """``path``'s content at ``ref``, or "" when it did not exist there."""
        proc = self._run("show", f"{ref}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else ""

    def tracked_files(self) -> list[str]:
        """``git ls-files``, or [] on failure."""
        proc = self._run("ls-files", check=False)
        return proc.stdout.splitlines() if proc.returncode == 0 else []

    def staged_files(self) -> list[str]:
        """The paths staged for the next commit (``git diff --cached --name-only``)."""
        proc = self._run("diff", "--cached", "--name-only", check=False)
        if proc.returncode != 0:
            return []
        return [line for line in proc.stdout.splitlines() if line.strip()]

    def log_subjects(self, base: str) -> list[str]:
        """Commit subjects in ``base..HEAD``, newest first."""
        return self._run("log", "--format=%s", f"{base}..HEAD").stdout.splitlines()
