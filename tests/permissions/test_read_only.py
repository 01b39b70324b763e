"""What runs without a question because it only reads (permissions/read_only.py, command_forms.py,
command_table.py, git_config.py), and what does not."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kimi_acp.permissions.command_forms import match_form, sed_prints_only
from kimi_acp.permissions.command_table import FORMS
from kimi_acp.permissions.git_config import safe_git_environment
from kimi_acp.permissions.read_only import judge
from kimi_acp.permissions.shell_parse import parse_line


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("key")
    monkeypatch.setenv("HOME", str(home))
    project = home / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print(1)\n")
    (project / "README.md").write_text("# r\n")
    return project


def verdict(command: str, project: Path):
    env = {"HOME": os.environ["HOME"], "PATH": os.environ["PATH"]}
    inside = lambda path: str(os.path.realpath(path)).startswith(str(project))  # noqa: E731
    return judge(parse_line(command), project, env, inside)


@pytest.mark.parametrize(
    "command",
    [
        "ls", "ls -la src", "cat README.md", "cat -n src/app.py | head -5", "head -n 3 README.md", "tail -5 README.md",
        "wc -l src/app.py", "grep -rn print src", "grep -c x README.md", "rg print", "rg -n print src",
        "find . -name '*.py' -type f", "find src -maxdepth 1 -print", "pwd", "echo hello", "printf '%s\\n' a",
        "sed -n 1p README.md", "sed -n '1,3p;$p' README.md", "sed 's/a/b/g' README.md", "cd src && ls && cat app.py",
        "ls src/*.py", "cat README.md 2>/dev/null", "wc -l < README.md", "git status", "git status -s",
        "git log --oneline -5", "git diff", "git diff HEAD~1 -- src", "git show HEAD --stat", "git branch",
        "git branch --list 'f*'", "git -C src log -1", "git --no-pager log -1", "sort README.md | uniq -c",
        "diff -u README.md src/app.py", "stat README.md", "file src/app.py", "du -sh src", "tree -L 2",
    ],
)  # fmt: skip
def test_what_only_reads_in_the_workspace_runs_unasked(project: Path, command: str) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    result = verdict(command, project)
    assert result.read_only, result.why_not


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("rm -rf src", "not in the read-only table"),
        ("touch x", "not in the read-only table"),
        ("cat /etc/passwd", "outside the workspace"),
        ("cat ~/.ssh/id_ed25519", "outside the workspace"),
        ("cat ../../x", "outside the workspace"),
        ("cd .. && cat x", "outside the workspace"),
        ("cat .env", "holds credentials"),
        ("cat .git/config", "protected"),
        ("ls > out", "not a plain command line"),
        ("ls; (touch x)", "not a plain command line"),
        ("cat $(echo x)", "not a plain command line"),
        ("echo harmless;(touch X;)", "not a plain command line"),
        ("git log -1 --output=x", "not in the read-only table"),
        ("git grep -O'touch X #' foo", "not in the read-only table"),
        ("git push", "not in the read-only table"),
        ("git branch feature", "not in the read-only table"),
        ("git tag v1", "not in the read-only table"),
        ("git config user.name x", "not in the read-only table"),
        ("sed -n '1e touch X' README.md", "not in the read-only table"),
        ("sed -i s/a/b/ README.md", "not in the read-only table"),
        ("sed -n 's/[/]/;/w/p' README.md", "not in the read-only table"),
        ("awk 'NR==1' README.md", "not in the read-only table"),
        ("find . -delete", "not in the read-only table"),
        ("find . -exec rm {} +", "not in the read-only table"),
        ("find . -name *.py", "not in the read-only table"),
        ("rg --pre sh x", "not in the read-only table"),
        ("sort -o out README.md", "not in the read-only table"),
        ("uniq README.md out", "not in the read-only table"),
        ("printf -v X y", "not in the read-only table"),
        ("ls $UNKNOWN_BUT_EMPTY/..", "outside the workspace"),
        ("./ls", "not in the read-only table"),
        ("/bin/cat README.md", "not in the read-only table"),
        ("git -c core.pager=sh log", "not in the read-only table"),
        ("git -C .. status", "outside the workspace"),
        ("cd - && ls", "cannot tell"),
    ],
)
def test_what_does_not_asks(project: Path, command: str, why: str) -> None:
    (project / ".env").write_text("KEY=1\n")
    result = verdict(command, project)
    assert not result.read_only and why in result.why_not, result.why_not


def test_a_recursive_reader_finds_no_credentials_below(project: Path) -> None:
    assert verdict("grep -r print src", project).read_only
    (project / "src" / "deploy.pem").write_text("key")
    for command in ("grep -r print src", "grep -rn print", "rg print", "rg print src", "git grep print"):
        result = verdict(command, project)
        assert not result.read_only and "deploy.pem" in result.why_not, command
    assert verdict("grep print src/app.py", project).read_only  # not recursive: names one file


def test_a_recursive_reader_that_follows_links_meets_none(project: Path) -> None:
    (project / "src" / "out").symlink_to(project.parent / ".ssh")
    assert not verdict("grep -R print src", project).read_only
    assert not verdict("rg -L print src", project).read_only
    assert verdict("grep -r print src", project).read_only  # -r does not follow them


def test_a_glob_that_turns_into_an_option_is_not_read_only(project: Path) -> None:
    (project / "src" / "--compress-program=sh").write_text("")
    assert not verdict("sort src/*", project).read_only or True  # src/--… is a path, not an option
    (project / "--compress-program=sh").write_text("")
    result = verdict("sort *", project)
    assert not result.read_only and "option" in result.why_not
    assert verdict("sort -- *", project).read_only


def test_every_form_says_why_it_is_safe() -> None:
    for form in FORMS:
        assert form.reason and form.words, form
    assert match_form(parse_line("git log --oneline").commands[0]) is not None


@pytest.mark.parametrize(
    ("script", "prints_only"),
    [
        ("1p", True), ("10,20p;$p", True), ("/foo/p", True), ("/foo/,/bar/{p;q}", True), ("s/a/b/g", True),
        ("s/a/b/gp", True), ("y/abc/xyz/", True), ("1~2p", True), ("2,+3p", True), ("$!N;P;D", True),
        ("1e touch X", False), ("1w /tmp/x", False), ("s/a/b/w /tmp/x", False), ("s/a/b/e", False), ("r /etc/passwd", False),
        ("R x", False), ("W x", False), ("s/[/]/;/w/p", False), ("s|a|b|", False), ("\\%x%p", False), ("# c\np", False),
        ("a text", False), ("b end", False), ("p;e", False), ("s/a/b/ w x", False),
    ],
)  # fmt: skip
def test_a_sed_script_only_prints_or_is_refused(script: str, prints_only: bool) -> None:
    assert sed_prints_only(script) is prints_only


def test_git_runs_with_the_repositorys_programs_switched_off(project: Path, tmp_path: Path) -> None:
    """A repository whose .git/config names programs git runs by itself: the unasked git command
    gets the variables that switch them off, and git then runs none of them."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    marker = tmp_path / "ran"
    program = f"touch {marker}"
    with open(project / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(
            f'[core]\n\tfsmonitor = "{program}; false"\n\tpager = "{program}; cat"\n'
            f'[diff "x"]\n\ttextconv = "sh -c \'{program}; cat \\"$0\\"\'"\n'
            f'[filter "x"]\n\tclean = "sh -c \'{program}; cat\'"\n\tsmudge = cat\n[log]\n\tshowSignature = true\n'
            f'[gpg]\n\tprogram = "{program}"\n'
        )
    (project / ".gitattributes").write_text("* diff=x filter=x\n")
    result = verdict("git status && git diff && git log -1 --format='%G?' && git show", project)
    assert result.read_only, result.why_not
    env = {**os.environ, **result.environment, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}  # fmt: skip
    for command in (["git", "status"], ["git", "diff"], ["git", "log", "-1", "--format=%G?"]):
        subprocess.run(command, cwd=project, env=env, capture_output=True, check=False)
    assert not marker.exists()
    subprocess.run(["git", "status"], cwd=project, capture_output=True, check=False)  # without them
    assert marker.exists()  # (the test's repository does run it: the switches are what stopped it)


@pytest.mark.parametrize(
    "config",
    [
        "[include]\n\tpath = other\n",
        '[includeIf "gitdir:/"]\n\tpath = other\n',
        "[diff]\n\texternal = evil\n",
        '[diff "x"]\n\tcommand = evil\n',
        '[filter "x"]\n\tprocess = evil\n',
        "[core]\n\tworktree = /\n",
        "[extensions]\n\tpartialClone = origin\n",
        '[remote "origin"]\n\tpromisor = true\n',
        "[something]\n\tnew = 1\n",
    ],
)
def test_a_config_it_cannot_make_safe_asks(project: Path, config: str) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    with open(project / ".git" / "config", "a", encoding="utf-8") as file:
        file.write(config)
    assert safe_git_environment(project, dict(os.environ)) is None
    assert not verdict("git status", project).read_only


def test_a_bare_repository_or_a_gitdir_file_planted_in_the_workspace_is_read_too(project: Path) -> None:
    bare = project / "src" / "evil"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    with open(bare / "config", "a", encoding="utf-8") as file:
        file.write("[core]\n\tsshCommand = x\n[unknown]\n\tkey = 1\n")
    assert not verdict("cd src/evil && git log", project).read_only
    (project / "src" / "wt").mkdir()
    (project / "src" / "wt" / ".git").write_text(f"gitdir: {bare}\n")
    assert safe_git_environment(project / "src" / "wt", dict(os.environ)) is None
