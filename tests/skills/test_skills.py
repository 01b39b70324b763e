"""Skill discovery and parsing: where SKILL.md files are found, which wins, what is skipped and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_acp.skills.provider import SkillError, SkillProvider, SkillSources, parse_skill, split_front_matter


def write_skill(root: Path, directory: str, text: str) -> Path:
    path = root / directory / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_md(name: str, description: str, body: str = "Do it.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    return directory


def sources(work_dir: Path, home: Path, **kwargs: object) -> SkillSources:
    """Without the bundled skills unless asked: these tests count the skills they wrote."""
    kwargs.setdefault("builtin", False)
    return SkillSources(work_dir, home=home, **kwargs)  # type: ignore[arg-type]


def test_front_matter_gives_name_and_description(tmp_path: Path) -> None:
    skill, warning = parse_skill(skill_md("review", "Review  the\n  code"), tmp_path / "x" / "SKILL.md")
    assert (skill.name, skill.description, skill.type, warning) == ("review", "Review the code", "standard", None)


def test_without_front_matter_the_directory_names_the_skill(tmp_path: Path) -> None:
    skill, _ = parse_skill("Just instructions.\n", tmp_path / "lint-all" / "SKILL.md")
    assert skill.name == "lint-all" and skill.description == "No description provided."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nname: [oops\n---\nbody\n", "invalid YAML front matter"),
        ("---\n- a\n- b\n---\n", "must be YAML keys"),
        ("---\nname: my skill\n---\n", "cannot be typed"),
        ("---\nname: 12\n---\n", "`name` must be a non-empty string"),
        ("---\ndescription: [1, 2]\n---\n", "`description` must be a string"),
        ("---\ntype: macro\n---\n", "`type` must be standard or flow"),
        ("---\nname: x\n", "never closed"),
    ],
)
def test_bad_front_matter_is_an_error_with_the_reason(tmp_path: Path, text: str, reason: str) -> None:
    with pytest.raises(SkillError, match=reason):
        parse_skill(text, tmp_path / "d" / "SKILL.md")


def test_split_front_matter_keeps_the_body() -> None:
    assert split_front_matter("\ufeff---\na: 1\n---\nbody\n") == ("a: 1\n", "body\n")
    assert split_front_matter("no front matter") == (None, "no front matter")


def test_a_flow_skill_with_a_bad_chart_falls_back_to_a_standard_skill(tmp_path: Path) -> None:
    text = "---\nname: f\ntype: flow\n---\n```mermaid\nflowchart TD\nA[BEGIN] --> B[work]\n```\n"
    skill, warning = parse_skill(text, tmp_path / "f" / "SKILL.md")
    assert skill.type == "standard" and skill.flow is None
    assert warning is not None and "END" in warning


def test_the_user_wins_over_extra_which_wins_over_the_project(tmp_path: Path, home: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #30: a project's skill never replaces one of yours (nor an `extra_skill_dirs` one,
    named in your config); it only adds names. Kimi Code CLI puts the project first."""
    share = tmp_path / "share"
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    write_skill(work_dir / ".kimi" / "skills", "a", skill_md("dup", "from the project"))
    write_skill(work_dir / ".agents" / "skills", "b", skill_md("extra-dup", "from the project too"))
    write_skill(work_dir / ".kimi" / "skills", "c", skill_md("project-only", "project"))
    write_skill(share / "skills", "a", skill_md("dup", "from the user"))
    write_skill(share / "skills", "b", skill_md("user-only", "user"))
    write_skill(home / ".claude" / "skills", "c", skill_md("claude", "claude's user dir"))
    write_skill(tmp_path / "extra", "d", skill_md("DUP", "from extra"))
    write_skill(tmp_path / "extra", "e", skill_md("extra-dup", "extra"))
    provider = SkillProvider(sources(work_dir, home, extra_dirs=(str(tmp_path / "extra"),)))
    found = {s.name: s.description for s in provider.skills_found}
    assert found == {
        "dup": "from the user", "user-only": "user", "claude": "claude's user dir", "extra-dup": "extra",
        "project-only": "project",
    }  # fmt: skip


def test_skills_dir_replaces_project_and_user_dirs(tmp_path: Path, home: Path, work_dir: Path) -> None:
    write_skill(work_dir / ".kimi" / "skills", "a", skill_md("project", "p"))
    write_skill(tmp_path / "mine", "b", skill_md("mine", "m"))
    provider = SkillProvider(sources(work_dir, home, skills_dirs=(tmp_path / "mine",)))
    assert [s.name for s in provider.skills_found] == ["mine"]


def test_only_the_first_brand_dir_without_merge(home: Path, work_dir: Path) -> None:
    write_skill(work_dir / ".kimi" / "skills", "a", skill_md("kimi", "k"))
    write_skill(work_dir / ".claude" / "skills", "b", skill_md("claude", "c"))
    write_skill(work_dir / ".agents" / "skills", "c", skill_md("generic", "g"))
    merged = SkillProvider(sources(work_dir, home))
    assert [s.name for s in merged.skills_found] == ["claude", "generic", "kimi"]
    first = SkillProvider(sources(work_dir, home, merge_brands=False))
    assert [s.name for s in first.skills_found] == ["generic", "kimi"]


def test_relative_extra_dirs_are_taken_from_the_work_dir(home: Path, work_dir: Path) -> None:
    write_skill(work_dir / "team" / "skills", "a", skill_md("team", "t"))
    provider = SkillProvider(sources(work_dir, home, extra_dirs=("team/skills",)))
    assert [s.name for s in provider.skills_found] == ["team"]


def test_bad_files_are_skipped_and_reported_by_path(home: Path, work_dir: Path) -> None:
    root = work_dir / ".kimi" / "skills"
    good = write_skill(root, "good", skill_md("good", "fine"))
    bad = write_skill(root, "bad", "---\nname: [oops\n---\n")
    binary = write_skill(root, "binary", "x")
    binary.write_bytes(b"\xff\xfe\x00bad")
    (root / "no-skill-file").mkdir()
    provider = SkillProvider(sources(work_dir, home))
    assert [s.path for s in provider.skills_found] == [good]
    notes = provider.notes()
    assert any(n.startswith(f"{bad}: invalid YAML") for n in notes)
    assert any(n.startswith(f"{binary}: not UTF-8") for n in notes)
    assert len(notes) == 2
    assert "was not loaded" in (provider.explain("skill:bad") or "")
    assert provider.explain("skill:good") is None and provider.explain("compact") is None
    assert "not a flow skill" in (provider.explain("flow:good") or "")


def test_refresh_sees_added_changed_and_removed_skills(home: Path, work_dir: Path) -> None:
    root = work_dir / ".kimi" / "skills"
    write_skill(root, "a", skill_md("a", "first"))
    provider = SkillProvider(sources(work_dir, home))
    assert provider.refresh() is False  # nothing changed
    path = write_skill(root, "b", skill_md("b", "second"))
    assert provider.refresh() is True
    assert [c.name for c in provider.slash_commands()] == ["skill:a", "skill:b"]
    path.write_text(skill_md("b", "second, reworded at length"))
    assert provider.refresh() is True
    assert provider.skills()[1].description == "second, reworded at length"
    path.unlink()
    assert provider.refresh() is True and [s.name for s in provider.skills()] == ["a"]


def test_unchanged_files_are_not_read_again(home: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_skill(work_dir / ".kimi" / "skills", "a", skill_md("a", "first"))
    provider = SkillProvider(sources(work_dir, home))
    reads = []
    original = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: reads.append(self) or original(self, *a, **k))
    provider.refresh()
    assert reads == []


def test_flow_skills_get_both_commands(home: Path, work_dir: Path) -> None:
    chart = "```mermaid\nflowchart TD\nA([BEGIN]) --> B[work]\nB --> C([END])\n```\n"
    write_skill(work_dir / ".kimi" / "skills", "f", skill_md("ship", "Ship it", body=chart, extra="type: flow\n"))
    provider = SkillProvider(sources(work_dir, home))
    commands = {c.name: c.description for c in provider.slash_commands()}
    assert commands == {"skill:ship": "Ship it", "flow:ship": "Ship it"}


def test_the_early_wire_answer_lists_the_skills_or_waits(tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kimi_acp.frontends.wire import main as wire_main

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    message = {"jsonrpc": "2.0", "id": "1", "method": "initialize", "params": {"protocol_version": "1.10"}}
    config = tmp_path / "config.json"
    config.write_text("{}")
    options = {"work_dir": str(work_dir), "config_file": str(config)}
    answer = wire_main._early_initialize(message, options)
    bundled = ["skill:kimi-cli-help", "skill:skill-creator"]
    assert answer is not None and [c["name"] for c in answer["slash_commands"] if c["name"].startswith("skill:")] == bundled
    write_skill(work_dir / ".kimi" / "skills", "a", skill_md("review", "Review"))
    answer = wire_main._early_initialize(message, options)
    assert answer is not None and {"name": "skill:review", "description": "Review", "aliases": []} in answer["slash_commands"]
    write_skill(tmp_path / "extra", "b", skill_md("deploy", "Deploy"))
    config.write_text('{"extra_skill_dirs": ["%s"]}' % (tmp_path / "extra"))
    answer = wire_main._early_initialize(message, options)
    assert answer is not None and [c["name"] for c in answer["slash_commands"][-4:]] == ["skill:deploy", *bundled[:1], "skill:review", bundled[1]]
    config.write_text('{"extra_skill_dirs": "not a list"}')
    assert wire_main._early_initialize(message, options) is None  # unsure: the loaded session answers


def test_plain_front_matter_reads_what_pyyaml_reads() -> None:
    """The fast path for `key: value` front matter (no PyYAML import) never disagrees with PyYAML:
    it either gives PyYAML's answer or leaves the text to PyYAML."""
    import random

    import yaml

    from kimi_acp.skills.provider import _plain_front_matter

    assert _plain_front_matter("name: review\ndescription: Review the code, carefully\n") == {
        "name": "review",
        "description": "Review the code, carefully",
    }
    for text in ("name: yes\n", "name: 12\n", "description: a: b\n", "description: 'q'\n", "name: x # c\n", "d: multi\n  line\n"):
        assert _plain_front_matter(text) is None, text
    rng = random.Random(7)
    chars = "abZé :#'\"-,[]{}&*!|>%@`?.0123456789~=\\/()\t\u00a0\u2028\r"
    for _ in range(3000):
        text = rng.choice(["name", "description", "type"]) + ": " + rng.choice("abZé-~=.")
        text += "".join(rng.choice(chars) for _ in range(rng.randint(0, 10))) + rng.choice(["\n", "\nname: ok\n", "\n  \n"])
        plain = _plain_front_matter(text)
        if plain is not None:
            assert plain == yaml.safe_load(text), repr(text)


def test_the_bundled_skills_yield_to_the_users_not_to_the_projects(
    work_dir: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    bundled = SkillProvider(sources(work_dir, home, builtin=True))
    assert {s.name for s in bundled.skills_found} == {"kimi-cli-help", "skill-creator"} and not bundled.problems
    write_skill(work_dir / ".kimi" / "skills", "ours", skill_md("skill-creator", "The project's way"))
    write_skill(work_dir / ".kimi" / "skills", "help", skill_md("kimi-cli-help", "The project's help"))
    write_skill(tmp_path / "share" / "skills", "mine", skill_md("skill-creator", "My own way"))
    provider = SkillProvider(sources(work_dir, home, builtin=True))
    found = {s.name: s.description for s in provider.skills_found}
    assert found["skill-creator"] == "My own way" and found["kimi-cli-help"] != "The project's help"
    with_flag = SkillProvider(sources(work_dir, home, builtin=True, skills_dirs=(tmp_path / "none",)))
    assert [s.name for s in with_flag.skills_found] == ["kimi-cli-help", "skill-creator"]  # --skills-dir keeps them


def test_the_bundled_skills_are_package_data() -> None:
    """A regular (non-editable) install has them only if pyproject.toml's package-data names them."""
    import fnmatch
    import tomllib

    from kimi_acp.skills.sources import BUILTIN_SKILLS_DIR

    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["kimi_acp.skills"]
    files = [p.relative_to(BUILTIN_SKILLS_DIR.parent).as_posix() for p in BUILTIN_SKILLS_DIR.rglob("*") if p.is_file()]
    assert sorted(files) == ["builtin/kimi-cli-help/SKILL.md", "builtin/skill-creator/SKILL.md"]
    assert all(any(fnmatch.fnmatch(f, pattern) for pattern in patterns) for f in files)
    # the early Wire answer reads them on every start: plain front matter, no PyYAML import
    from kimi_acp.skills.provider import _plain_front_matter

    for path in BUILTIN_SKILLS_DIR.glob("*/SKILL.md"):
        front, _ = split_front_matter(path.read_text(encoding="utf-8"))
        assert front is not None and _plain_front_matter(front) is not None, path
