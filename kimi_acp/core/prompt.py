"""The system prompt: who the agent is, where it works, what it can use, and the project's AGENTS.md.

Standard library only. An agent file (`kimi_acp/agent_file.py`) may replace the whole prompt with its own
template; `PromptInputs` is what either kind of prompt is built from, so the core can rebuild the
prompt (on /clear and compaction) without knowing which kind the session uses.
"""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..util.regular_file import open_regular

AGENTS_MD_MAX_BYTES = 32 * 1024
LISTING_MAX_ENTRIES = 60


@dataclass(frozen=True)
class SkillSummary:
    """What the model is told about one skill: enough to know when to read its SKILL.md."""

    name: str
    description: str
    path: str  # the SKILL.md file


@dataclass(frozen=True)
class PromptInputs:
    """Everything a system prompt is built from, gathered by the core when it (re)builds one."""

    work_dir: Path
    tool_names: Sequence[str]
    additional_dirs: Sequence[Path] = ()
    skills: Sequence[SkillSummary] = ()
    now: datetime.datetime | None = None


PromptBuilder = Callable[[PromptInputs], str]


def default_prompt(inputs: PromptInputs, *, role_additional: str = "") -> str:
    """The default agent's prompt (a `PromptBuilder`); an agent file may add to its role."""
    return build_system_prompt(
        inputs.work_dir,
        inputs.tool_names,
        now=inputs.now,
        additional_dirs=inputs.additional_dirs,
        skills=inputs.skills,
        role_additional=role_additional,
    )


def _tools_section(tool_names: Sequence[str]) -> str:
    """How to use the tools, for the tools this agent has. Their list itself is not repeated here:
    the model gets the tool definitions, and which are offered can change during a session."""
    have = set(tool_names)
    lines = ["# Tools"]
    if have & {"StrReplaceFile", "WriteFile"}:
        lines.append("- Prefer ReadFile, Glob and Grep to explore, and StrReplaceFile or WriteFile to edit; use Shell "
                     "for builds, tests, git and anything else.")
    else:
        lines.append("- Explore with ReadFile, Glob and Grep. You cannot edit files.")
    lines.append("- Relative paths are relative to the working directory. Read a file before you change it.")
    lines.append("- Some actions need the user's approval. If the user rejects one, do not retry it: stop and wait "
                 "for instructions, or follow their feedback when they give some.")
    if "SetTodoList" in have:
        lines.append("- Keep a todo list with SetTodoList for work of more than a few steps, and keep it up to date.")
    if "Agent" in have:
        lines.append("- Hand self-contained research or work to a subagent with Agent when it would take many steps; "
                     "launch several at once for independent questions.")
    return "\n".join(lines)


def build_system_prompt(
    work_dir: Path,
    tool_names: Sequence[str],
    *,
    now: datetime.datetime | None = None,
    additional_dirs: Sequence[Path] = (),
    skills: Sequence[SkillSummary] = (),
    role_additional: str = "",
) -> str:
    """The default agent's prompt; `role_additional` is an agent file's ROLE_ADDITIONAL argument."""
    sections = [
        "You are Kimi, a coding agent working inside the user's project. You help by reading code, running "
        "commands and editing files with the tools you are given, then reporting clearly and briefly what you "
        "did.",
        *([role_additional.strip()] if role_additional.strip() else []),
        environment_section(work_dir, additional_dirs, now),
        _tools_section(tool_names),
        "# Working style\n"
        "- Make the smallest change that fully solves the task, matching the project's existing style.\n"
        "- Verify your work (run the tests or the program) when you can, and say so when you cannot.\n"
        "- Never invent file contents, command output or results.",
    ]
    if skills:
        sections.append(skills_section(skills))
    listing = _listing(work_dir)
    if listing:
        sections.append(f"# Top level of the working directory\n{listing}")
    agents_md = read_agents_md(work_dir)
    if agents_md:
        sections.append(
            "# Project instructions (AGENTS.md)\nThe project's AGENTS.md says the following; follow it.\n\n"
            f"{agents_md}"
        )
    return "\n\n".join(sections) + "\n"


def environment_section(work_dir: Path, additional_dirs: Sequence[Path] = (), now: datetime.datetime | None = None) -> str:
    """The `# Environment` section: where the agent works, on what, and when."""
    now = now or datetime.datetime.now().astimezone()
    shell = os.environ.get("SHELL") or "/bin/sh"
    extra_dirs = "".join(f"\n- Additional workspace directory: {d}" for d in additional_dirs)
    return (
        "# Environment\n"
        f"- Working directory: {work_dir}{extra_dirs}\n"
        f"- Operating system: {platform.system()} {platform.release()} ({platform.machine()})\n"
        f"- Shell: {shell}\n"
        f"- Date: {now.strftime('%Y-%m-%d %A')} (time zone {now.strftime('%Z %z')})"
    )


CLIENT_INSTRUCTIONS_HEADER = "# Instructions from the IDE"


def with_client_prompt(session_prompt: str, mode: str, text: str, inputs: PromptInputs) -> str:
    """The system message of a request when the IDE gave its own instructions (ACP `systemPrompt`).

    `append` adds them after the session's prompt, so they take system-level precedence over the
    conversation. `override` puts them in place of our instructions; the model still learns where
    it works and which skills exist (the tool definitions are sent apart, unchanged)."""
    if mode == "append":
        return f"{session_prompt.rstrip()}\n\n{CLIENT_INSTRUCTIONS_HEADER}\n{text.strip()}\n"
    sections = [text.strip(), environment_section(inputs.work_dir, inputs.additional_dirs, inputs.now)]
    if inputs.skills:
        sections.append(skills_section(inputs.skills))
    return "\n\n".join(sections) + "\n"


def skills_section(skills: Sequence[SkillSummary]) -> str:
    """The `# Skills` section: name, description and where the instructions are, one skill a line."""
    return "# Skills\n" + format_skills(skills)


def format_skills(skills: Sequence[SkillSummary]) -> str:
    """The skill list the model reads (also `${KIMI_SKILLS}` of an agent file's prompt)."""
    if not skills:
        return "No skills are available."
    lines = [
        "Skills are instructions for specific tasks, each in a SKILL.md file. When a task matches a skill's "
        "description, read its SKILL.md with ReadFile and follow it. The user can also run one with "
        "`/skill:<name>`.",
    ]
    lines += [f"- {s.name}: {s.description} ({s.path})" for s in skills]
    return "\n".join(lines)


def read_agents_md(work_dir: Path) -> str:
    """The work dir's AGENTS.md (first 32 KiB), or '' when absent or unreadable."""
    for name in ("AGENTS.md", "agents.md"):
        path = work_dir / name
        try:  # a repository's file: a FIFO or a device in its place must not hold the session up
            with open_regular(path) as f:
                data = f.read(AGENTS_MD_MAX_BYTES + 1)
        except OSError:
            continue
        text = data[:AGENTS_MD_MAX_BYTES].decode("utf-8", errors="replace").strip()
        if len(data) > AGENTS_MD_MAX_BYTES:
            text += "\n[... AGENTS.md truncated at 32 KiB]"
        return text
    return ""


def work_dir_listing(work_dir: Path) -> str:
    """The top level of the work dir, one `- name` a line (`${KIMI_WORK_DIR_LS}` of agent prompts)."""
    return _listing(work_dir)


def _listing(work_dir: Path) -> str:
    try:
        entries = sorted(os.scandir(work_dir), key=lambda e: e.name)
    except OSError:
        return ""
    names = []
    for entry in entries:
        if entry.name == ".git":
            continue
        try:
            suffix = "/" if entry.is_dir() else ""
        except OSError:
            suffix = ""
        names.append(entry.name + suffix)
    more = len(names) - LISTING_MAX_ENTRIES
    shown = names[:LISTING_MAX_ENTRIES]
    text = "\n".join(f"- {n}" for n in shown)
    if more > 0:
        text += f"\n- ... and {more} more"
    return text
