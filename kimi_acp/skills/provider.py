"""Skills: `SKILL.md` files in the skill directories, as slash commands and as a list the model reads.

A skill is a directory holding a `SKILL.md`; its YAML front matter (between `---` lines at the top)
gives `name` (default: the directory's name), `description` and `type` (`standard`, or `flow` for a
Mermaid flowchart or D2 diagram, see `flows.py` here). `/skill:<name> [request]` sends the file's text
(plus the request) as the turn's user message; `/flow:<name>` walks a flow skill's chart.

Where skills are found, the first of a name winning (Kimi Code CLI's directories; its order but for
the project, which comes last here so that it never replaces a skill of yours, issue #30):

1. `--skills-dir D` (repeatable) — given, it replaces the user and project directories;
2. the user: `$KIMI_SHARE_DIR/skills` (`~/.kimi/skills`), `~/.claude/skills`, `~/.codex/skills`
   (all that exist, or only the first with `merge_all_available_skills = false`), then the first
   of `~/.config/agents/skills` and `~/.agents/skills`;
3. config `extra_skill_dirs` (`~` expanded, relative paths from the work dir);
4. the skills bundled with the package (`sources.BUILTIN_SKILLS_DIR`), also with `--skills-dir`;
5. the project: `.kimi/skills`, `.claude/skills`, `.codex/skills` (the same rule), then
   `.agents/skills`.

A file that cannot be used (unreadable, bad YAML, a name that cannot be typed as a command) is
skipped, logged, and shown under "Not loaded" by `/help` with its path and the reason; typing its
command says so too. Discovery is cheap: the directories are listed and each SKILL.md is stat'ed;
a file is read again only when it changed, and PyYAML is imported only for a file with front matter.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from ..util.regular_file import open_regular
from ..util.yaml_text import YamlTextError, load_yaml
from .sources import SkillSources, may_have_skills  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from ..core.prompt import SkillSummary
    from ..core.slash import SlashCommand
    from ..core.slash_host import SlashHost
    from ..core.turn import SlashPrompt, TurnResult
    from .flows import Flow

# The early Wire `initialize` answer imports this module on the main thread while the server
# loads: its imports are the standard library's lightest, the rest is imported where it is used.


def _log() -> Any:
    import logging

    return logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 1024 * 1024
NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
NO_DESCRIPTION = "No description provided."
SKILL_PREFIX, FLOW_PREFIX = "skill:", "flow:"


class SkillError(ConfigError, ValueError):
    """Why a SKILL.md cannot be used (one line)."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md
    type: Literal["standard", "flow"] = "standard"
    flow: Flow | None = field(default=None, compare=False)  # a parsed `flows.Flow`

    @property
    def dir(self) -> Path:
        return self.path.parent


@dataclass(frozen=True)
class SkillProblem:
    path: Path
    reason: str

    @property
    def dir_name(self) -> str:
        return self.path.parent.name

    def describe(self) -> str:
        return f"{self.path}: {self.reason}"


# --------------------------------------------------------------------------- where


# --------------------------------------------------------------------------- reading


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter text or None, body)."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise SkillError("the front matter (the --- line at the top) is never closed by another --- line")


_PLAIN_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*): +(\S.*?) *")
_NOT_PLAIN = re.compile(r":\s|:$|\s#")
_YAML_WORDS = frozenset("true false yes no on off y n null".split())


def _plain_front_matter(front: str) -> dict[str, Any] | None:
    """`key: value` lines whose values PyYAML would surely read as the same strings (a value that
    starts with a letter, no `: `, no ` #`, no tab, not a YAML boolean/null word); None for anything
    else, which PyYAML then reads. Spares the PyYAML import for the usual `name:` /
    `description:` front matter, which matters on the early Wire `initialize` path
    (figures: docs/performance.md, Figures that used to live in the code)."""
    data: dict[str, Any] = {}
    for line in front.split("\n"):
        if not line.isprintable():  # tabs, other line breaks, odd spaces: YAML's own rules apply
            return None
        if not line.strip(" ") or line.startswith("#"):
            continue
        match = _PLAIN_LINE.fullmatch(line)
        if match is None:
            return None
        key, value = match.groups()
        if key in data or not value[0].isalpha() or _NOT_PLAIN.search(value) or value.lower() in _YAML_WORDS:
            return None
        data[key] = value
    return data


def parse_front_matter(front: str) -> dict[str, Any]:
    plain = _plain_front_matter(front)
    if plain is not None:
        return plain
    try:  # PyYAML is imported only for front matter beyond plain `key: value` lines
        data = load_yaml(front)
    except YamlTextError as exc:
        where = f" (line {exc.line + 1})" if exc.line is not None else ""  # of SKILL.md: after the ---
        raise SkillError(f"invalid YAML front matter{where}: {exc.problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillError("the front matter must be YAML keys (name: ..., description: ...), not a single value")
    return data


def parse_skill(text: str, path: Path) -> tuple[Skill, str | None]:
    """The skill a SKILL.md describes, and a warning (a flow that fell back to a standard skill)."""
    front, _ = split_front_matter(text)
    data = parse_front_matter(front) if front is not None else {}
    name = data.get("name", path.parent.name)
    if not isinstance(name, str) or not name.strip():
        raise SkillError("`name` must be a non-empty string")
    name = name.strip()
    if not NAME_RE.fullmatch(name):
        raise SkillError(f"the name {name!r} cannot be typed as /skill:{name}: use letters, digits, - and _ (at most 64)")
    description = data.get("description", NO_DESCRIPTION)
    if not isinstance(description, str):
        raise SkillError("`description` must be a string")
    description = " ".join(description.split()) or NO_DESCRIPTION
    kind = data.get("type", "standard") or "standard"
    if kind not in ("standard", "flow"):
        raise SkillError(f"`type` must be standard or flow, not {kind!r}")
    if kind == "standard":
        return Skill(name, description, path), None
    from .flows import FlowError, flow_from_skill

    try:
        flow = flow_from_skill(text)
    except FlowError as exc:
        # Kimi's behaviour: the skill still works as a standard one; /flow:<name> does not exist.
        return Skill(name, description, path), f"its flowchart cannot be used ({exc}); loaded as a standard skill, without /flow:{name}"
    return Skill(name, description, path, "flow", flow), None


def read_skill_text(skill: Skill) -> str:
    """The SKILL.md as the model gets it (read now: it may have changed since discovery)."""
    with open_regular(skill.path) as f:  # a project's file: never a FIFO or a device
        return f.read().decode("utf-8").strip()


def skill_prompt(skill: Skill, request: str) -> str:
    """The user message of `/skill:<name> [request]`."""
    text = read_skill_text(skill)
    request = request.strip()
    return f"{text}\n\nUser request:\n{request}" if request else text


# --------------------------------------------------------------------------- discovery


class _Cached:
    __slots__ = ("problem", "skill", "stamp")

    def __init__(self, stamp: tuple[int, int], skill: Skill | None, problem: str | None) -> None:
        self.stamp, self.skill, self.problem = stamp, skill, problem


class SkillProvider:
    """A session's skills, as a `CommandProvider` of its slash registry (see `core/slash.py`)."""

    def __init__(self, sources: SkillSources, *, log_problems: bool = True) -> None:
        """`log_problems=False` for the early Wire answer: logging is not set up yet (it would go to stderr)."""
        self.sources = sources
        self._log_problems = log_problems
        self.skills_found: list[Skill] = []
        self.problems: list[SkillProblem] = []
        self._cache: dict[Path, _Cached] = {}
        self._signature: tuple[Any, ...] | None = None
        self._logged: set[tuple[Path, str]] = set()
        self.refresh()

    # ---------------------------------------------------------------- CommandProvider

    def slash_commands(self) -> list[SlashCommand]:
        from ..core.slash import SlashCommand

        commands = [
            SlashCommand(f"{SKILL_PREFIX}{s.name}", s.description, hint="optional request", handler=self._skill_handler(s))
            for s in self.skills_found
        ]
        commands += [
            SlashCommand(f"{FLOW_PREFIX}{s.name}", s.description, handler=self._flow_handler(s))
            for s in self.skills_found
            if s.flow is not None
        ]
        return commands

    def skills(self) -> list[SkillSummary]:
        from ..core.prompt import SkillSummary

        return [SkillSummary(s.name, s.description, str(s.path)) for s in self.skills_found]

    def notes(self) -> list[str]:
        return [p.describe() for p in self.problems]

    def explain(self, name: str) -> str | None:
        prefix, _, rest = name.partition(":")
        if f"{prefix}:" not in (SKILL_PREFIX, FLOW_PREFIX) or not rest:
            return None
        for problem in self.problems:
            if problem.dir_name.casefold() == rest.casefold():
                return f"The skill `{rest}` was not loaded: {problem.describe()}"
        if prefix == "flow":
            skill = next((s for s in self.skills_found if s.name.casefold() == rest.casefold()), None)
            if skill is not None:
                return f"`{skill.name}` is not a flow skill: run /skill:{skill.name}"
        return None

    def refresh(self) -> bool:
        skills, problems = self._discover()
        signature = (
            tuple((s.name, s.description, s.type, str(s.path)) for s in skills),
            tuple((str(p.path), p.reason) for p in problems),
        )
        changed = self._signature is not None and signature != self._signature
        self._signature = signature
        self.skills_found, self.problems = skills, problems
        return changed

    # ---------------------------------------------------------------- discovery

    def _discover(self) -> tuple[list[Skill], list[SkillProblem]]:
        found: dict[str, Skill] = {}
        problems: list[SkillProblem] = []
        seen_files: set[Path] = set()
        for root in self.sources.roots():
            try:
                entries = sorted(os.scandir(root), key=lambda e: e.name)
            except OSError as exc:
                if root.exists():
                    problems.append(SkillProblem(root / SKILL_FILE, f"cannot list the skills directory: {exc.strerror or exc}"))
                continue
            for entry in entries:
                path = Path(entry.path) / SKILL_FILE
                try:
                    if not entry.is_dir():
                        continue
                    st = path.stat()
                except OSError:
                    continue  # a directory without a SKILL.md is not a skill
                seen_files.add(path)
                cached = self._load(path, (st.st_mtime_ns, st.st_size))
                if cached.problem is not None and cached.skill is None:
                    problems.append(SkillProblem(path, cached.problem))
                    continue
                assert cached.skill is not None
                if cached.problem is not None:
                    problems.append(SkillProblem(path, cached.problem))
                key = cached.skill.name.casefold()
                if key in found:
                    if self._log_problems:
                        _log().info("skill %s at %s is shadowed by %s", cached.skill.name, path, found[key].path)
                    continue
                found[key] = cached.skill
        self._cache = {p: c for p, c in self._cache.items() if p in seen_files}
        for problem in problems if self._log_problems else ():
            if (problem.path, problem.reason) not in self._logged:
                self._logged.add((problem.path, problem.reason))
                _log().warning("skill skipped: %s", problem.describe())
        return sorted(found.values(), key=lambda s: s.name.casefold()), problems

    def _load(self, path: Path, stamp: tuple[int, int]) -> _Cached:
        cached = self._cache.get(path)
        if cached is not None and cached.stamp == stamp:
            return cached
        try:
            if stamp[1] > MAX_SKILL_BYTES:
                raise SkillError(f"the file is larger than {MAX_SKILL_BYTES // 1024} KiB")
            with open_regular(path) as f:  # a project's file: a FIFO would hold every turn up
                text = f.read(MAX_SKILL_BYTES + 1).decode("utf-8")
            skill, warning = parse_skill(text, path)
            cached = _Cached(stamp, skill, warning)
        except UnicodeDecodeError:
            cached = _Cached(stamp, None, "not UTF-8 text")
        except OSError as exc:
            cached = _Cached(stamp, None, f"cannot be read: {exc.strerror or exc}")
        except SkillError as exc:
            cached = _Cached(stamp, None, str(exc))
        self._cache[path] = cached
        return cached

    # ---------------------------------------------------------------- commands

    @staticmethod
    def _skill_handler(skill: Skill) -> Any:
        async def run(host: SlashHost, args: str) -> TurnResult | SlashPrompt:
            from ..core.turn import SlashPrompt, TurnResult

            try:
                return SlashPrompt(skill_prompt(skill, args))
            except (OSError, UnicodeDecodeError) as exc:
                host.say(f'Failed to load skill "/{SKILL_PREFIX}{skill.name}" from {skill.path}: {getattr(exc, "strerror", None) or exc}')
                return TurnResult("finished")

        return run

    @staticmethod
    def _flow_handler(skill: Skill) -> Any:
        async def run(host: SlashHost, args: str) -> TurnResult:
            from .flows import run_flow

            assert skill.flow is not None
            return await run_flow(host, skill.name, skill.flow, args)

        return run


def provider_for(work_dir: Path, config: Any, skills_dirs: Sequence[str | Path] = ()) -> SkillProvider:
    """A session's skills (discovered now), for `AgentCore(commands=[...])`."""
    return SkillProvider(sources_for(work_dir, config, skills_dirs))


def sources_for(work_dir: Path, config: Any, skills_dirs: Sequence[str | Path] = ()) -> SkillSources:
    """The skill sources of a session from its config (`extra_skill_dirs`,
    `merge_all_available_skills`) and `--skills-dir`."""
    extra = getattr(config, "extra_skill_dirs", None) or ()
    merge = getattr(config, "merge_all_available_skills", True)
    return SkillSources(
        work_dir=work_dir,
        skills_dirs=tuple(Path(d).expanduser() for d in skills_dirs),
        extra_dirs=tuple(str(e) for e in extra),
        merge_brands=bool(merge),
    )
