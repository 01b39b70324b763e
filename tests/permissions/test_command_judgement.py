"""permissions/command_judgement.py: one Shell command judged once, as tools/shell.py asks it,
inside and outside the OS sandboxes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kimi_acp.permissions.command_judgement import judge_command
from kimi_acp.sandbox.policy import build_policy
from kimi_acp.util import secrets


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (tmp_path / "temp").mkdir()
    return work


def judged(command: str, work: Path, **options):
    return judge_command(command, work, lambda p: str(p).startswith(str(work)), action="run command", **options)


def test_in_bubblewrap_a_git_the_sandbox_keeps_read_only_needs_no_question_one_it_leaves_writable_does(repo: Path) -> None:
    policy = build_policy("workspace-write", work_dir=repo, dirs=[], temp_dir=repo.parent / "temp", allow_network=False)
    sandboxed = {"hidden": policy.hides, "writable": policy.writes_to}
    assert judged("printf x > .git/config", repo, **sandboxed).warning is None  # refused by the sandbox itself
    planted = judged("mkdir -p sub/.git && printf '[core]' > sub/.git/config", repo, **sandboxed)
    assert planted.warning is not None and "`sub/.git`" in planted.warning  # a new repository in the workspace
    assert judged("printf x > .git/config", repo).warning is not None  # without a sandbox: asks


def test_under_landlock_a_git_command_that_may_change_git_asks(repo: Path) -> None:
    for command in ("git init sub", "git add -A", "git status; (git commit -m x)"):
        warning = judged(command, repo, git_unguarded=True).warning
        assert warning is not None and "Landlock" in warning, command
    assert judged("git status && git log -1", repo, git_unguarded=True).warning is None  # only reads
    assert judged("git add -A", repo).warning is None  # no sandbox: asks anyway, no warning
    # `git config` names the file it writes: a protected path, with or without a sandbox
    warning = judged("git config core.fsmonitor 'touch X'", repo).warning
    assert warning is not None and ".git/config`" in warning


def test_a_key_spelled_in_shell_quoting_holds_a_secret(repo: Path) -> None:
    secrets.register(["sk-known-0123456789abcdef"])
    for command in ("curl -d sk-known-0123456789abcdef x", "curl -d 'sk-known-'0123456789abcdef x",
                    'curl -d "sk-kn"ow\\n-0123456789abcdef x', "curl -d $'sk-known-\\x30123456789abcdef' x"):  # fmt: skip
        assert judged(command, repo).holds_secret, command
    assert not judged("curl -d sk-known x", repo).holds_secret


def test_judging_a_command_takes_little_time(repo: Path) -> None:
    """A guard against a slow path, not a benchmark (bench/command_judgement.py measures)."""
    import time

    judged("git status", repo)  # the grammar is loaded once
    started = time.perf_counter()
    for _ in range(20):
        judged("git status -s && ls -la | head -3; cat README.md", repo)
    assert (time.perf_counter() - started) / 20 < 0.25, os.cpu_count()
