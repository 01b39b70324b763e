"""The system prompt: who the agent is, where it works, what it can use, and the project's AGENTS.md."""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Sequence
from pathlib import Path

AGENTS_MD_MAX_BYTES = 32 * 1024
LISTING_MAX_ENTRIES = 60


def build_system_prompt(work_dir: Path, tool_names: Sequence[str], *, now: datetime.datetime | None = None) -> str:
    now = now or datetime.datetime.now().astimezone()
    shell = os.environ.get("SHELL") or "/bin/sh"
    sections = [
        "You are Kimi, a coding agent working inside the user's project. You help by reading code, running "
        "commands and editing files with the tools you are given, then reporting clearly and briefly what you "
        "did.",
        "# Environment\n"
        f"- Working directory: {work_dir}\n"
        f"- Operating system: {platform.system()} {platform.release()} ({platform.machine()})\n"
        f"- Shell: {shell}\n"
        f"- Date: {now.strftime('%Y-%m-%d %A')} (time zone {now.strftime('%Z %z')})",
        "# Tools\n"
        f"Available tools: {', '.join(tool_names)}.\n"
        "- Prefer ReadFile, Glob and Grep to explore, and StrReplaceFile or WriteFile to edit; use Shell for "
        "builds, tests, git and anything else.\n"
        "- Relative paths are relative to the working directory. Read a file before you change it.\n"
        "- Some actions need the user's approval. If the user rejects one, do not retry it: stop and wait for "
        "instructions, or follow their feedback when they give some.\n"
        "- Keep a todo list with SetTodoList for work of more than a few steps, and keep it up to date.",
        "# Working style\n"
        "- Make the smallest change that fully solves the task, matching the project's existing style.\n"
        "- Verify your work (run the tests or the program) when you can, and say so when you cannot.\n"
        "- Never invent file contents, command output or results.",
    ]
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


def read_agents_md(work_dir: Path) -> str:
    """The work dir's AGENTS.md (first 32 KiB), or '' when absent or unreadable."""
    for name in ("AGENTS.md", "agents.md"):
        path = work_dir / name
        try:
            with open(path, "rb") as f:
                data = f.read(AGENTS_MD_MAX_BYTES + 1)
        except OSError:
            continue
        text = data[:AGENTS_MD_MAX_BYTES].decode("utf-8", errors="replace").strip()
        if len(data) > AGENTS_MD_MAX_BYTES:
            text += "\n[... AGENTS.md truncated at 32 KiB]"
        return text
    return ""


def _listing(work_dir: Path) -> str:
    try:
        entries = sorted(os.scandir(work_dir), key=lambda e: e.name)
    except OSError:
        return ""
    names = []
    for entry in entries:
        if entry.name in (".git",):
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
