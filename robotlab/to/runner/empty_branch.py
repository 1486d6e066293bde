"""A run that committed nothing leaves no branch behind: back to where it started, branch deleted.

The run directory stays (it is excluded from git, so switching branches never touches it), and
``--resume`` recreates the branch at the run's base commit.
"""

from __future__ import annotations

from robotlab.to.runner.session import Session


def leave_if_empty(session: Session) -> str | None:
    """Return to the starting branch and delete the run's branch when it holds no commit.

    Returns:
        The branch (or commit) checked out again, or None when the branch was kept: it has
        commits, or the working tree holds changes (a failed commit waiting for repair).
    """
    run, git = session.run, session.git
    if (run.commits or git.current_branch() != run.branch or git.head_sha() != run.base_commit
            or git.dirty_files()):
        return None
    back = run.start_branch if run.start_branch and run.start_branch != "HEAD" else run.base_commit
    git.checkout_branch(back)
    git.delete_branch(run.branch)
    session.log.event("branch:deleted", branch=run.branch, returned_to=back)
    return back


def restore(session: Session) -> None:
    """Check out the run's branch for ``--resume``, recreating it at the base if it was deleted."""
    run, git = session.run, session.git
    if git.branch_exists(run.branch):
        git.checkout_branch(run.branch)
    else:
        git.create_branch(run.branch, run.base_commit)
