"""Where a session's skill directories are, and whether any exists: standard library only.

Apart from `provider.py` because the early Wire `initialize` answer asks it before anything heavy is
loaded: when no skill directory exists, that answer lists the built-in commands at once.

The user's own skills come first, then the skills bundled with the package (`builtin/`:
`kimi-cli-help`, `skill-creator`, as Kimi Code CLI bundles two of those names), and the project's
last (issue #30): a cloned repository's skill of the same name as yours or a bundled one is left
out, so `/skill:<name>` never sends a repository's text where you expect your own. (Kimi Code CLI
puts the project first.)
"""

from __future__ import annotations

import os
from pathlib import Path

from ..util.share_dir import share_dir

BUILTIN_SKILLS_DIR = Path(__file__).parent / "builtin"  # package data (pyproject.toml)


class SkillSources:
    """What decides a session's skill directories (looked at again on every refresh).

    A plain class, not a dataclass: building one at import time is paid on the early Wire path
    (figures: docs/performance.md, Figures that used to live in the code)."""

    def __init__(
        self,
        work_dir: Path,
        skills_dirs: tuple[Path, ...] = (),  # --skills-dir
        extra_dirs: tuple[str, ...] = (),  # config extra_skill_dirs
        merge_brands: bool = True,  # config merge_all_available_skills
        home: Path | None = None,  # for tests; default Path.home()
        builtin: bool = True,  # the bundled skills, after all others (tests may leave them out)
    ) -> None:
        self.work_dir = work_dir
        self.skills_dirs = tuple(skills_dirs)
        self.extra_dirs = tuple(extra_dirs)
        self.merge_brands = merge_brands
        self.home = home
        self.builtin = builtin

    def roots(self) -> list[Path]:
        home = self.home or Path.home()
        roots: list[Path] = []
        if self.skills_dirs:
            roots += self.skills_dirs
        else:
            user = [share_dir() / "skills", home / ".claude" / "skills", home / ".codex" / "skills"]
            roots += _existing(user, self.merge_brands)
            roots += _existing([home / ".config" / "agents" / "skills", home / ".agents" / "skills"], False)
        for extra in self.extra_dirs:  # named in the user's own config
            path = Path(extra).expanduser()
            roots.append(path if path.is_absolute() else self.work_dir / path)
        if self.builtin:  # also with --skills-dir, as Kimi's
            roots.append(BUILTIN_SKILLS_DIR)
        if not self.skills_dirs:  # last: a project's skill only adds a name, never replaces one
            work = self.work_dir
            brands = [work / ".kimi" / "skills", work / ".claude" / "skills", work / ".codex" / "skills"]
            roots += _existing(brands, self.merge_brands)
            roots += _existing([work / ".agents" / "skills"], False)
        unique: list[Path] = []
        seen: set[str] = set()
        for root in roots:
            key = os.path.realpath(root)
            if key not in seen:
                seen.add(key)
                unique.append(root)
        return unique


def _existing(candidates: list[Path], all_of_them: bool) -> list[Path]:
    found = [c for c in candidates if c.is_dir()]
    return found if all_of_them else found[:1]


def may_have_skills(sources: SkillSources) -> bool:
    """Whether any skill directory exists (cheap: a few stat calls). The early Wire `initialize`
    answer lists only the built-in commands, so it is given only when this is False (never with
    the bundled skills: the answer then reads them, two small files with plain front matter)."""
    return any(root.is_dir() for root in sources.roots())
