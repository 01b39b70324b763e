"""The sandbox's policy and how each mechanism states it (issue #24): what is writable, hidden and
kept read-only; bubblewrap's argv in its order; the Seatbelt profile's text (it cannot run here);
the note a refused command gets; which mode a session is in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.config import SANDBOX_MODES, SandboxSettings
from kimi_acp.sandbox import MODES, detect
from kimi_acp.sandbox.bubblewrap import bwrap_argv
from kimi_acp.sandbox.landlock import LAUNCHER, launcher_argv
from kimi_acp.sandbox.policy import SandboxPolicy, build_policy
from kimi_acp.sandbox.seatbelt import dot_git_regex, profile, quote, seatbelt_argv
from kimi_acp.sandbox.session import Confinement, SessionSandbox, failure_note


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("KEY")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("AWS")
    (home / ".netrc").write_text("machine x password y")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]\n")
    return work


def policy_for(repo: Path, tmp_path: Path, mode: str = "workspace-write", **kw: object) -> SandboxPolicy:
    temp = tmp_path / "sbx-temp"
    temp.mkdir(exist_ok=True)
    return build_policy(
        mode,
        work_dir=repo,
        dirs=kw.pop("dirs", []),
        temp_dir=temp,
        allow_network=bool(kw.pop("network", False)),
    )  # type: ignore[arg-type]


def test_the_modes_are_the_same_everywhere() -> None:
    assert MODES == SANDBOX_MODES


def test_workspace_write_writes_the_workspace_and_hides_credentials(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    share = Path(os.environ["KIMI_SHARE_DIR"])
    (share / "skills").mkdir(exist_ok=True)
    extra = tmp_path / "extra"
    extra.mkdir()
    policy = policy_for(repo, tmp_path, dirs=[extra, tmp_path / "gone"])
    assert policy.writable == (repo, extra)  # a dir that does not exist is left out
    assert share in policy.hidden_dirs and home / ".ssh" in policy.hidden_dirs
    assert {home / ".aws" / "credentials", home / ".netrc"} <= set(policy.hidden_files)
    assert share / "skills" in policy.readable_again
    assert policy.read_only == (repo / ".git",) and policy.missing_git == (extra / ".git",)
    assert not policy.network
    assert policy.writes_to(repo / "src" / "a.py") and policy.writes_to(policy.temp_dir / "x")
    for planted in ("hooks/pre-commit", "config", "commondir", "config.worktree", "info/attributes", "index"):
        assert not policy.writes_to(repo / ".git" / planted), planted
    assert not policy.writes_to(extra / ".git" / "config")  # no repository there: none may be made
    assert not policy.writes_to(home / "outside")


def test_read_only_writes_only_the_temp_dir(home: Path, repo: Path, tmp_path: Path) -> None:
    policy = policy_for(repo, tmp_path, mode="read-only")
    assert policy.writable == () and policy.read_only == () and policy.workspace == (repo,)
    assert f"--ro-bind {repo} {repo}" in " ".join(bwrap_argv("bwrap", policy, ["true"], repo))
    assert not policy.writes_to(repo / "a") and policy.writes_to(policy.temp_dir / "a")


def test_a_linked_worktree_keeps_its_git_file_its_git_dir_and_the_common_dir_read_only(
    home: Path, tmp_path: Path
) -> None:
    main = tmp_path / "main"
    (main / ".git" / "hooks").mkdir(parents=True)
    (main / ".git" / "config").write_text("")
    linked = main / ".git" / "worktrees" / "wt"
    linked.mkdir(parents=True)
    (linked / "commondir").write_text("../..\n")
    tree = main / "wt"  # inside the writable main tree, as `git worktree add wt` makes it
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {linked}\n")
    policy = policy_for(tree, tmp_path, dirs=[main])
    assert policy.read_only == (tree / ".git", main / ".git")  # the git dir is inside main's .git
    alone = policy_for(tree, tmp_path)  # main outside the workspace: read-only anyway
    assert alone.read_only == (tree / ".git",) and alone.missing_git == ()


def test_a_git_dir_elsewhere_its_commondir_and_the_submodules_are_kept(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    data = work / ".gitdata"  # `git init --separate-git-dir .gitdata`
    common = work / "common"
    data.mkdir(parents=True)
    common.mkdir()
    (data / "commondir").write_text("../common\n")
    (work / ".git").write_text("gitdir: .gitdata\n")
    (work / ".gitmodules").write_text(
        '[submodule "lib"]\n\tpath = vendor/lib\n\turl = x\n[submodule "gone"]\n\tpath = gone\n'
        '[submodule "out"]\n\tpath = ../outside\n'
    )
    (work / "vendor" / "lib").mkdir(parents=True)
    (work / "vendor" / "lib" / ".git").write_text("gitdir: ../../.gitdata/modules/lib\n")
    policy = policy_for(work, tmp_path)
    assert policy.read_only == (work / ".git", data, common, work / "vendor" / "lib" / ".git")
    assert not policy.writes_to(work / "vendor" / "lib" / ".git") and policy.writes_to(work / "vendor" / "x")
    shutil.rmtree(common)  # a `commondir` naming what is gone: nothing to bind (bwrap would fail)
    assert policy_for(work, tmp_path).read_only == (work / ".git", data, work / "vendor" / "lib" / ".git")


def test_bubblewrap_binds_in_an_order_that_keeps_the_denials_last(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    policy = policy_for(repo, tmp_path)
    argv = bwrap_argv("/usr/bin/bwrap", policy, ["/bin/sh", "-c", "true"], repo)
    text = " ".join(argv)
    assert argv[:9] == ["/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind"]
    assert argv[9:11] == [str(policy.temp_dir), "/tmp"]
    assert text.index(f"--bind {repo} {repo}") < text.index(f"--ro-bind {repo}/.git {repo}/.git")
    assert argv[-4:] == ["--", "/bin/sh", "-c", "true"]
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert f"--setenv TMPDIR /tmp --chdir {repo} --" in text
    # home is under the real /tmp here: the private /tmp hides it already, nothing is mounted on it
    assert str(home / ".ssh") not in text
    assert "--unshare-net" not in bwrap_argv(
        "bwrap", policy_for(repo, tmp_path, network=True), ["true"], repo
    )


def test_bubblewrap_hides_what_is_visible(tmp_path: Path, repo: Path) -> None:
    hidden, reopened = Path("/srv/home/.ssh"), Path("/srv/kimi/skills")
    policy = SandboxPolicy(
        mode="workspace-write", workspace=(repo, Path("/srv/kimi/work")), writable=(repo, Path("/srv/kimi/work")), temp_dir=tmp_path, hidden_dirs=(hidden, Path("/srv/kimi")),
        hidden_files=(Path("/srv/home/.netrc"), Path("/srv/home/.ssh/config")), readable_again=(reopened,), read_only=(),
        missing_git=(Path("/srv/kimi/work/.git"),), network=False,
    )  # fmt: skip
    text = " ".join(bwrap_argv("bwrap", policy, ["true"], repo))
    assert "--tmpfs /srv/home/.ssh --remount-ro /srv/home/.ssh" in text
    # the share dir: hidden, its skills readable again, a work dir inside it writable again, then read-only
    assert ("--tmpfs /srv/kimi --ro-bind /srv/kimi/skills /srv/kimi/skills --bind /srv/kimi/work /srv/kimi/work "
            "--remount-ro /srv/kimi") in text  # fmt: skip
    assert "--ro-bind /dev/null /srv/home/.netrc" in text
    assert "/srv/home/.ssh/config" not in text  # inside a hidden dir already
    assert text.endswith("--tmpfs /srv/kimi/work/.git --remount-ro /srv/kimi/work/.git --unshare-net --unshare-pid "
                         f"--die-with-parent --new-session --setenv TMPDIR /tmp --chdir {repo} -- true")


def test_the_landlock_launcher_line(repo: Path, tmp_path: Path, home: Path) -> None:
    policy = policy_for(repo, tmp_path)
    argv = launcher_argv(policy, ["/bin/sh", "-c", "true"], repo)
    assert argv[1:4] == ["-I", "-S", str(LAUNCHER)]
    assert argv[4:] == ["--write", str(repo), "--write", str(policy.temp_dir), "--no-network", "--tmpdir",
                        str(policy.temp_dir), "--chdir", str(repo), "--", "/bin/sh", "-c", "true"]  # fmt: skip


def test_the_seatbelt_profile(tmp_path: Path) -> None:
    policy = SandboxPolicy(
        mode="workspace-write", workspace=(Path("/Users/me/proj"),), writable=(Path("/Users/me/proj"),), temp_dir=Path("/private/var/folders/x/T/kimi-sandbox-1"),
        hidden_dirs=(Path("/Users/me/.kimi"), Path("/Users/me/.ssh")), hidden_files=(Path('/Users/me/.aws/cre"d'),),
        readable_again=(Path("/Users/me/.kimi/skills"),), read_only=(Path("/Users/me/proj/.git"), Path("/Users/me/main/.git")),
        missing_git=(), network=False,
    )  # fmt: skip
    text = profile(policy)
    lines = text.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert (
        '(deny file-read* file-write* (subpath "/Users/me/.kimi") (subpath "/Users/me/.ssh") (literal "/Users/me/.aws/cre\\"d"))'
        in lines
    )
    assert '(allow file-read* (subpath "/Users/me/.kimi/skills"))' in lines
    write = next(line for line in lines if line.startswith("(allow file-write*"))
    assert (
        '(subpath "/Users/me/proj")' in write
        and '(subpath "/private/var/folders/x/T/kimi-sandbox-1")' in write
    )
    assert '(literal "/dev/null")' in write
    kept = ('(deny file-write* (regex #"^/Users/me/proj/\\.[Gg][Ii][Tt](/|$)") (subpath "/Users/me/proj/.git") '
            '(subpath "/Users/me/main/.git"))')  # fmt: skip
    assert lines.index(write) < lines.index(kept)
    assert lines.index("(allow file-read*)") < lines.index(
        next(line for line in lines if line.startswith("(deny file-read*"))
    )
    assert "(allow network*)" not in text and "(allow signal (target same-sandbox))" in lines
    assert "(allow network*)" in profile(SandboxPolicy(**{**policy.__dict__, "network": True}))
    argv = seatbelt_argv(policy, ["/bin/zsh", "-c", "ls"])
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"] and argv[2] == text
    assert argv[3:] == [
        "/usr/bin/env",
        "TMPDIR=/private/var/folders/x/T/kimi-sandbox-1",
        "/bin/zsh",
        "-c",
        "ls",
    ]
    assert quote('a\\b"c') == '"a\\\\b\\"c"'
    # a project without a .git: Seatbelt decides on paths, so the one that is not there is denied as it is
    fresh = profile(SandboxPolicy(**{**policy.__dict__, "read_only": (), "missing_git": (Path("/Users/me/proj/.git"),)}))
    assert '(deny file-write* (regex #"^/Users/me/proj/\\.[Gg][Ii][Tt](/|$)") (subpath "/Users/me/proj/.git"))' in fresh
    assert dot_git_regex(Path("/Users/me/my.proj (1)/")) == '#"^/Users/me/my\\.proj \\(1\\)/\\.[Gg][Ii][Tt](/|$)"'


@pytest.mark.parametrize(
    ("output", "noted"),
    [
        ("touch: cannot touch '/home/me/x': Read-only file system", True),
        ("curl: (7) Failed to connect to 127.0.0.1 port 8080: Connection refused", True),
        ("urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>", True),
        ("cat: /tmp/build.log: No such file or directory", True),  # the private /tmp
        ("cat: ./build.log: No such file or directory", False),
        ("FAILED tests/test_x.py::test_y - AssertionError", False),
    ],
)
def test_the_note_of_a_refused_command(
    tmp_path: Path, repo: Path, home: Path, output: str, noted: bool
) -> None:
    confinement = Confinement("bubblewrap", policy_for(repo, tmp_path), "/usr/bin/bwrap")
    note = failure_note(confinement, output)
    assert (note is not None) == noted
    if note:
        assert (
            "workspace-write sandbox (bubblewrap)" in note
            and "`outside_sandbox: true`" in note
            and "no network" in note
        )


def test_a_hidden_path_in_the_output_gets_the_note(tmp_path: Path, repo: Path, home: Path) -> None:
    confinement = Confinement("bubblewrap", policy_for(repo, tmp_path))
    share = os.environ["KIMI_SHARE_DIR"]
    assert failure_note(confinement, f"cat: {share}/config.toml: No such file or directory") is not None


def test_the_sessions_choice_comes_before_the_command_line_and_the_config(tmp_path: Path, repo: Path) -> None:
    session = sessions.create(repo)
    sandbox = SessionSandbox(session, SandboxSettings(mode="read-only"))
    assert sandbox.mode == "read-only"
    sandbox.runtime_mode = "workspace-write"
    assert sandbox.mode == "workspace-write"
    sandbox.set_mode("off")
    assert sandbox.mode == "off" and sessions.find(repo, session.id).state.sandbox == "off"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="unknown sandbox mode"):
        sandbox.set_mode("on")
    assert (
        sandbox.describe() == "off" and sandbox.card_note() is None and sandbox.confinement(repo, []) is None
    )


def test_the_detector_can_be_told_what_to_consider(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, repo: Path
) -> None:
    monkeypatch.setenv(detect.ENV_VAR, "none")
    detect.forget()
    try:
        found = detect.machine()
        assert found.backend is None and "allows none" in found.why_not
        sandbox = SessionSandbox(sessions.create(repo), SandboxSettings(mode="workspace-write"))
        assert not sandbox.confining and sandbox.confinement(repo, []) is None
        assert sandbox.describe().startswith("workspace-write requested, but not enforced")
        assert sandbox.card_note().startswith("Runs unconfined")  # type: ignore[union-attr]
        notice = sandbox.unavailable_notice()
        assert notice.severity == "warning" and "ask for approval as before" in notice.body
    finally:
        detect.forget()


@pytest.mark.parametrize(
    ("args", "mode"),
    [(["--sandbox", "workspace-write"], "workspace-write"), (["--sandbox=read-only"], "read-only"),
     (["--sandbox", "on"], None), (["--sandbox"], None), (["--help"], None), (["--sandbox", "off", "x"], None)],
)  # fmt: skip
def test_kimi_acp_takes_sandbox_without_click(args: list[str], mode: str | None) -> None:
    from kimi_acp.cli.main import _sandbox_option

    assert _sandbox_option(args) == mode  # None: click parses it (and says what is wrong)
