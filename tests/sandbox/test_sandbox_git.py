"""Git's metadata in the bubblewrap sandbox (issue #30), on real `bwrap` processes: nothing a
command plants in or around a repository's `.git` survives to run at the user's next `git status`
outside the sandbox. Each planted path is tried; the control shows the same plant, made outside,
does run (so a test here fails if the protection goes)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.sandbox.policy import build_policy
from kimi_acp.sandbox.session import Confinement

pytestmark = pytest.mark.requires_tool("bwrap", "git")


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory outside /tmp (the sandbox's /tmp is its own: what is outside the workspace
    under the real /tmp is not there at all), as a user's projects are."""
    path = Path("/var/tmp") / f"kimi-git-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)

QUIET_GIT = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t",
             "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}  # fmt: skip


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the user runs it, outside any sandbox (without their own config)."""
    env = {**os.environ, **QUIET_GIT}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30, check=False)


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    assert git(path, "init", "-q").returncode == 0
    (path / "f.txt").write_text("one\n")
    git(path, "add", "f.txt")
    assert git(path, "commit", "-qm", "first").returncode == 0
    return path


def sandboxed(command: str, work_dir: Path, temp: Path, *dirs: Path) -> subprocess.CompletedProcess[str]:
    """`command` as the Shell tool runs it in the workspace-write sandbox of `work_dir` (+ `dirs`)."""
    temp.mkdir(exist_ok=True)
    policy = build_policy("workspace-write", work_dir=work_dir, dirs=list(dirs), temp_dir=temp, allow_network=False)
    argv = Confinement("bubblewrap", policy, shutil.which("bwrap")).wrap(["/bin/sh", "-c", command], work_dir)
    env = {**os.environ, **QUIET_GIT}
    return subprocess.run(argv, cwd=work_dir, env=env, capture_output=True, text=True, timeout=30, check=False)


def fingerprint(directory: Path) -> dict[str, str]:
    """Every entry under `directory` (names, kinds, contents): what a plant would change."""
    found = {}
    for path in sorted(directory.rglob("*")):
        rel = str(path.relative_to(directory))
        if path.is_symlink():
            found[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[rel] = "dir"
    return found


def payload(marker: Path) -> str:
    return f"[core]\n\tfsmonitor = \"touch {marker}\"\n"


# The plants of issue #30 and their neighbours: each one, made outside, runs `touch MARKER` at the
# next `git status` (or at the next commit, for the hook), or sends git to a config that does.
PLANTS = {
    "commondir": "cp -r .git .gx && printf '{p}' > .gx/config && echo ../.gx > .git/commondir",
    "rename": "mv .git .git-orig && cp -r .git-orig .git && printf '{p}' >> .git/config",
    "replace": "rm -rf .git; cp -r {spare} .git && printf '{p}' >> .git/config",
    "config": "printf '{p}' >> .git/config",
    "config.worktree": "git config extensions.worktreeConfig true; printf '{p}' > .git/config.worktree",
    "hooks": "printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "info": "mkdir -p .git/info && printf '* diff=evil\\n' > .git/info/attributes",
    "commondir link": "cp -r .git .gx && printf '{p}' > .gx/config && echo ../.gx > to && ln -s ../to .git/commondir",
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_nothing_planted_in_git_runs_at_the_users_next_git_command(base: Path, plant: str) -> None:
    repo = make_repo(base / "repo")
    spare = make_repo(base / "spare") / ".git"  # a clean repository to put in place of the real one
    marker = base / "ran"
    before = fingerprint(repo / ".git")
    command = PLANTS[plant].format(p=payload(marker).replace("\n", "\\n"), marker=marker, spare=spare)
    done = sandboxed(command, repo, base / "temp")
    said = done.stdout + done.stderr
    assert done.returncode != 0 and ("Read-only file system" in said or "Device or resource busy" in said), done
    assert fingerprint(repo / ".git") == before  # nothing in .git changed, nothing was added
    assert git(repo, "status").returncode == 0
    (repo / "f.txt").write_text("two\n")
    git(repo, "commit", "-qam", "second")  # runs a planted pre-commit hook, if there were one
    assert not marker.exists(), f"{plant}: the user's git ran what the sandbox planted"


@pytest.mark.parametrize("plant", [p for p in PLANTS if p != "info"])  # attributes alone run nothing
def test_the_plants_run_when_made_outside(base: Path, plant: str) -> None:
    """The control: the same commands without the sandbox do take over the user's next git command."""
    repo = make_repo(base / "repo")
    spare = make_repo(base / "spare") / ".git"
    marker = base / "ran"
    command = PLANTS[plant].format(p=payload(marker).replace("\n", "\\n"), marker=marker, spare=spare)
    assert subprocess.run(["/bin/sh", "-c", command], cwd=repo, check=False).returncode == 0
    git(repo, "status")
    (repo / "f.txt").write_text("two\n")
    git(repo, "commit", "-qam", "second")
    assert marker.exists()


def test_git_reads_inside_and_what_changes_the_repository_says_so(base: Path) -> None:
    repo = make_repo(base / "repo")
    (repo / "f.txt").write_text("two\n")
    done = sandboxed("git status --short && git log --oneline && git diff --stat", repo, base / "temp")
    assert done.returncode == 0 and " M f.txt" in done.stdout and "first" in done.stdout, done
    done = sandboxed("git add f.txt && git commit -qm second", repo, base / "temp")
    assert done.returncode == 128 and "index.lock': Read-only file system" in done.stderr
    assert git(repo, "status", "--short").stdout == " M f.txt\n"  # unchanged; outside, it works:
    assert git(repo, "commit", "-qam", "second").returncode == 0


def test_a_workspace_dir_without_git_gets_none(base: Path) -> None:
    work, extra = base / "work", base / "extra"
    work.mkdir()
    extra.mkdir()
    marker = base / "ran"
    for where in (work, extra):
        plant = f"git init -q {where} && printf '{payload(marker)}' >> {where}/.git/config".replace("\n", "\\n")
        done = sandboxed(plant, work, base / "temp", extra)
        assert done.returncode != 0 and "Read-only file system" in done.stderr, done
        done = sandboxed(f"mkdir {where}/.git/hooks; mv {where}/.git {where}/old", work, base / "temp", extra)
        assert "Read-only file system" in done.stderr and "Device or resource busy" in done.stderr
        assert list((where / ".git").iterdir()) == []  # the empty directory bwrap mounted on, left behind
        done = git(where, "status")  # git takes an empty .git for no repository
        assert done.returncode == 128 and "not a git repository" in done.stderr and not marker.exists()
    assert sandboxed("touch made", work, base / "temp").returncode == 0 and (work / "made").exists()


def test_a_linked_worktree_keeps_its_git_file_and_the_repository_it_points_to(base: Path) -> None:
    main = make_repo(base / "main")
    tree = base / "main" / "wt"  # inside the main tree: both writable when both are in the workspace
    assert git(main, "worktree", "add", "-q", str(tree)).returncode == 0
    gitdir = main / ".git" / "worktrees" / "wt"
    marker = base / "ran"
    before = fingerprint(main / ".git"), (tree / ".git").read_text()
    for command in (
        f"cp -r {main}/.git .gx && printf '{payload(marker)}' > .gx/config && echo 'gitdir: .gx' > .git",
        "mv .git .git-old",
        f"cp -r {main}/.git .gx && printf '{payload(marker)}' > .gx/config && echo {tree}/.gx > {gitdir}/commondir",
        f"printf '{payload(marker)}' > {gitdir}/config.worktree",
    ):
        for dirs in ((), (main,)):  # main outside the workspace, then in it
            done = sandboxed(f"rm -rf .gx; {command}".replace("\n", "\\n"), tree, base / "temp", *dirs)
            said = done.stdout + done.stderr
            assert "Read-only file system" in said or "Device or resource busy" in said, (command, done)
    assert (fingerprint(main / ".git"), (tree / ".git").read_text()) == before
    git(tree, "status")
    assert not marker.exists()


def test_a_submodules_git_file_is_kept(base: Path) -> None:
    library = make_repo(base / "library")
    repo = make_repo(base / "repo")
    added = git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/lib")
    assert added.returncode == 0, added.stderr
    git(repo, "commit", "-qm", "submodule")
    marker = base / "ran"
    gx = repo / "vendor" / "lib" / ".gx"
    command = (f"cp -r {repo}/.git/modules/vendor/lib {gx} && printf '{payload(marker)}' > {gx}/config && "
               "echo 'gitdir: .gx' > vendor/lib/.git").replace("\n", "\\n")  # fmt: skip
    done = sandboxed(command, repo, base / "temp")
    assert done.returncode != 0 and "Read-only file system" in done.stderr, done
    assert (repo / "vendor" / "lib" / ".git").read_text().startswith("gitdir: ../../.git/modules/vendor/lib")
    git(repo, "status")  # runs git in each submodule
    assert not marker.exists()
