"""Agent files: extend, prompts and their variables, tool selection by Kimi's import paths."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from kimi_acp.agent_file import AgentFileError, load_agent_file, setup, tool_name
from kimi_acp.core.prompt import PromptInputs, SkillSummary
from kimi_acp.tools import builtin_tools


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def inputs(work_dir: Path) -> PromptInputs:
    skills = [SkillSummary("review", "Review code", "/s/review/SKILL.md")]
    now = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    return PromptInputs(work_dir, ["ReadFile"], [Path("/extra")], skills, now)


def test_kimi_tool_paths_map_to_our_tools() -> None:
    assert tool_name("kimi_cli.tools.shell:Shell") == "Shell"
    assert tool_name("kimi_cli.tools.file:ReadFile") == "ReadFile"
    assert tool_name("Glob") == "Glob"


def test_extend_default_and_exclude_a_tool(tmp_path: Path, work_dir: Path) -> None:
    agent = write(tmp_path / "agent.yaml", "version: 1\nagent:\n  extend: default\n  exclude_tools:\n    - kimi_cli.tools.shell:Shell\n")
    made = setup(load_agent_file(agent))
    names = [t.name for t in made.tools]
    assert "Shell" not in names
    assert names == [t.name for t in builtin_tools() if t.name != "Shell"]  # the rest, in their order
    prompt = made.system_prompt(inputs(work_dir))
    assert "You are Kimi" in prompt and "review: Review code" in prompt


def test_tools_list_selects_in_the_files_order_and_skips_kimi_only_tools(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "agent.yaml",
        "agent:\n  extend: default\n  tools:\n"
        "    - kimi_cli.tools.file:Grep\n    - kimi_cli.tools.think:Think\n    - kimi_cli.tools.file:ReadFile\n",
    )
    assert [t.name for t in setup(load_agent_file(agent)).tools] == ["Grep", "ReadFile"]


def test_an_unknown_tool_is_an_error_naming_the_file(tmp_path: Path) -> None:
    agent = write(tmp_path / "agent.yaml", "agent:\n  extend: default\n  tools: [my.module:Teleport]\n")
    with pytest.raises(AgentFileError, match=r"agent\.yaml.*unknown tool 'Teleport'"):
        setup(load_agent_file(agent))


def test_prompt_template_with_builtin_and_own_args(tmp_path: Path, work_dir: Path) -> None:
    (work_dir / "AGENTS.md").write_text("Use tabs.")
    (work_dir / "src").mkdir()
    write(tmp_path / "prompts" / "system.md", "Role: ${ROLE}. Dir ${KIMI_WORK_DIR}. ${KIMI_NOW}\n${KIMI_WORK_DIR_LS}\n"
          "${KIMI_AGENTS_MD}\n${KIMI_SKILLS}\n${KIMI_ADDITIONAL_DIRS_INFO}\nCost: $5 and $HOME stay.")
    write(tmp_path / "base.yaml", "agent:\n  extend: default\n  system_prompt_path: ./prompts/system.md\n"
                 "  system_prompt_args: {ROLE: reviewer, OTHER: kept}\n")
    child = write(tmp_path / "sub" / "child.yaml", "agent:\n  extend: ../base.yaml\n  name: child\n  system_prompt_args: {ROLE: critic}\n")
    spec = load_agent_file(child)
    assert spec.name == "child" and spec.system_prompt_args == {"ROLE_ADDITIONAL": "", "ROLE": "critic", "OTHER": "kept"}
    prompt = setup(spec).system_prompt(inputs(work_dir))
    assert prompt.startswith(f"Role: critic. Dir {work_dir}. 2030-01-02T03:04:05+00:00")
    assert "- src/" in prompt and "Use tabs." in prompt and "- review: Review code" in prompt
    assert "- /extra" in prompt and "Cost: $5 and $HOME stay." in prompt


def test_role_additional_reaches_the_default_prompt(tmp_path: Path, work_dir: Path) -> None:
    agent = write(tmp_path / "a.yaml", "agent:\n  extend: default\n  system_prompt_args:\n    ROLE_ADDITIONAL: You only review.\n")
    assert "You only review." in setup(load_agent_file(agent)).system_prompt(inputs(work_dir))


def test_subagents_are_read_and_checked(tmp_path: Path) -> None:
    write(tmp_path / "coder.yaml", "agent:\n  extend: ./agent.yaml\n  exclude_tools: [kimi_cli.tools.todo:SetTodoList]\n")
    agent = write(tmp_path / "agent.yaml", "agent:\n  extend: default\n  subagents:\n    coder: {path: ./coder.yaml, description: Codes.}\n")
    with pytest.raises(AgentFileError, match="extends itself"):
        load_agent_file(agent)  # coder extends agent.yaml, which lists coder: a cycle
    write(tmp_path / "coder.yaml", "agent:\n  extend: default\n  exclude_tools: [kimi_cli.tools.todo:SetTodoList]\n")
    spec = load_agent_file(agent)
    assert spec.subagents["coder"].description == "Codes."
    assert spec.subagents["coder"].spec.exclude_tools == ("SetTodoList",)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("agent: [1\n", "invalid YAML at line"),
        ("- a\n", "expected YAML keys"),
        ("version: 2\nagent: {}\n", "unsupported version"),
        ("agent:\n  extend: default\n  system_prompt_path: ./missing.md\n", "cannot be read"),
        ("agent:\n  extend: default\n  tools: shell\n", "must be a list of tool names"),
        ("agent:\n  extend: ./nope.yaml\n", "does not exist"),
        ("agent:\n  subagents:\n    x: {description: no path}\n", "needs a `path`"),
    ],
)
def test_bad_agent_files_are_errors_with_the_reason(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(AgentFileError, match=problem):
        load_agent_file(write(tmp_path / "agent.yaml", text))


def test_a_missing_agent_file(tmp_path: Path) -> None:
    with pytest.raises(AgentFileError, match="does not exist"):
        load_agent_file(tmp_path / "nope.yaml")
