"""Where a session's plan file lives, and reading or clearing it.

While plan mode is on, the agent may write exactly one file: the session's plan,
`$KIMI_SHARE_DIR/plans/<slug>.md`. The layout is Kimi Code CLI's, so sessions move between the two:
`state.json` names the plan with `plan_session_id` (a hex uuid) and `plan_slug` (three hero names
joined by `-`); both are set when plan mode turns on and cleared when it turns off, so each planning
round gets a fresh file. (Kimi Code CLI 1.49 put the folder under `~/.kimi` even when
`KIMI_SHARE_DIR` pointed elsewhere; here it follows the share dir, which is the same by default.)

A successful write of the plan file (WriteFile, StrReplaceFile) carries the plan as it now is in
its ToolResult's `extras` (`plan_extras`): the record of the session then says what the plan was at
each point, so a front end showing the plan as an object of its own (ACP plan operations) shows
the same plans live and when the session is loaded again.
"""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ..util.fs import private_dir
from ..util.share_dir import share_dir

if TYPE_CHECKING:
    from ..sessions import Session

log = logging.getLogger(__name__)

SLUG_WORDS = 3
_SAFE_SLUG = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
SLUG_ATTEMPTS = 20
PLAN_EXTRAS_KEY = "plan_file"  # ToolReturnValue.extras[key] = {"path", "content"} after a plan write
PLAN_EXTRAS_MAX = 100_000  # characters of the plan kept there (the file itself is not cut)
HEROES = (
    "iron-man", "spider-man", "captain-america", "thor", "hulk", "black-widow", "hawkeye",
    "black-panther", "doctor-strange", "scarlet-witch", "vision", "falcon", "ant-man", "wasp",
    "captain-marvel", "groot", "rocket", "gamora", "star-lord", "shang-chi", "moon-knight",
    "ms-marvel", "wolverine", "storm", "cyclops", "jean-grey", "rogue", "beast", "nightcrawler",
    "colossus", "jubilee", "iceman", "daredevil", "luke-cage", "iron-fist", "jessica-jones",
    "silver-surfer", "nova", "squirrel-girl", "she-hulk", "batman", "superman", "wonder-woman",
    "flash", "aquaman", "green-lantern", "martian-manhunter", "cyborg", "hawkgirl", "green-arrow",
    "black-canary", "zatanna", "shazam", "blue-beetle", "booster-gold", "firestorm", "starfire",
    "raven", "beast-boy", "nightwing", "batgirl", "supergirl", "stargirl", "static", "mister-miracle",
    "big-barda", "kid-flash", "miss-martian", "doctor-fate", "plastic-man",
)


def plans_dir() -> Path:
    return share_dir() / "plans"


def _new_slug(session_id: str) -> str:
    """Three random hero names not yet used by a plan file; a collision streak adds an id prefix."""
    folder = plans_dir()
    slug = ""
    for _ in range(SLUG_ATTEMPTS):
        slug = "-".join(secrets.choice(HEROES) for _ in range(SLUG_WORDS))
        if not (folder / f"{slug}.md").exists():
            return slug
    return f"{slug}-{session_id[:8]}"


def ensure_plan(session: Session) -> str:
    """The session's plan slug, allocated (and saved in state.json) if it has none yet."""
    state = session.state
    if state.plan_session_id and state.plan_slug and _SAFE_SLUG.fullmatch(state.plan_slug):
        return state.plan_slug
    state.plan_session_id = state.plan_session_id or uuid.uuid4().hex
    state.plan_slug = _new_slug(state.plan_session_id)
    session.save_state()
    return state.plan_slug


def release_plan(session: Session) -> None:
    """Plan mode ended: the next round gets a new plan file (the old one stays on disk).

    The caller saves the state (it changes plan_mode in the same write)."""
    session.state.plan_session_id = None
    session.state.plan_slug = None


def plan_file_path(session: Session) -> Path:
    """The plan file of the session's current planning round; its folder exists afterwards.

    Allocates the round's slug when there is none, so the path stays the same from here until
    plan mode turns off (also across restarts: it is in state.json)."""
    path = plans_dir() / f"{ensure_plan(session)}.md"
    try:
        private_dir(path.parent)  # 0700 like the rest of the share dir: plans quote the user's code
    except OSError as exc:
        log.warning("cannot create %s: %s", path.parent, exc)
    return path


def current_plan_path(session: Session) -> Path | None:
    """The plan file path if a planning round has one; never allocates."""
    slug = session.state.plan_slug
    if not slug or not session.state.plan_session_id or not _SAFE_SLUG.fullmatch(slug):
        return None  # none yet, or a state.json slug that would name a file outside the folder
    return plans_dir() / f"{slug}.md"


def read_plan(session: Session) -> str | None:
    """The plan's text, or None when there is no plan file (or it cannot be read)."""
    path = current_plan_path(session)
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("cannot read plan file %s: %s", path, exc)
        return None


def clear_plan(session: Session) -> Path | None:
    """Delete the plan file (plan mode and the slug stay as they are); its path, if the round has one."""
    path = current_plan_path(session)
    if path is None:
        return None
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    return path


def plan_extras(path: Path, content: str) -> dict[str, dict[str, str]]:
    """What a plan write's ToolResult carries in `extras`: the plan file and its text now (cut at
    PLAN_EXTRAS_MAX characters, with a line saying so)."""
    if len(content) > PLAN_EXTRAS_MAX:
        cut = len(content) - PLAN_EXTRAS_MAX
        content = content[:PLAN_EXTRAS_MAX] + f"\n\n… ({cut} more characters in `{path}`)\n"
    return {PLAN_EXTRAS_KEY: {"path": str(path), "content": content}}


def plan_in_extras(extras: dict[str, object] | None) -> tuple[str, str] | None:
    """(path, content) of the plan a ToolResult's `extras` carries (`plan_extras`), if any."""
    found = (extras or {}).get(PLAN_EXTRAS_KEY)
    if not isinstance(found, dict):
        return None
    path, content = found.get("path"), found.get("content")
    return (path, content) if isinstance(path, str) and path and isinstance(content, str) else None


