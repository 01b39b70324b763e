"""A session's settings, changed in one place: model, thinking, the modes, sandbox, directories, title.

Whoever changes a setting — a slash command (`/model`, `/yolo`, `/sandbox`, ...), an ACP mode or
config option, the web page's toggles, Wire's `set_plan_mode`, the plan tools — calls these
`SessionControls`. So each value is checked once and refused in the same words everywhere
(`SettingError`), kept in the session's state.json, and announced once on the session's stream
when it changed: an internal signal of `core/turn.py` (ModeChanged, ModelChanged, SandboxChanged,
TitleChanged, PlanCleared) that each front end shows its own way. A workspace directory is told to the model
instead (by `/add-dir`, or at the next turn for this process's directories).

A subagent's core has controls that refuse every change (`refusing=True`, issue #30): its prompts
come from the model, and the user's session is not the model's to change. Automatic titles (the
first prompt's, the model's) are the core's own bookkeeping and are not refused.

`AgentCore` keeps the turn (run, cancel, steer, close) and reads the settings here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from ..config import Config, ConfigError, ResolvedModel, resolve_model
from ..errors import PermissionDenied
from ..sandbox import MODES as SANDBOX_MODES
from ..sandbox.session import SessionSandbox, mode_text
from ..sessions import Session
from ..wire.types import StatusUpdate
from .approvals import SUBAGENT_REFUSED, Approvals
from .plan_file import clear_plan, ensure_plan, plan_file_path, release_plan
from .stream import MessageStream
from .titles import user_title
from .turn import ModeChanged, ModelChanged, PlanCleared, SandboxChanged, TitleChanged

log = logging.getLogger(__name__)

LEGACY_THINKING_SUFFIX = ",thinking"  # older model picker values were `<alias>,thinking`
MODES = ("default", "ask", "yolo", "plan")  # a session's mode as one choice (ACP's mode picker)
NO_MODEL = "No model is configured. Run `kimi login` in a terminal to add one."
EMPTY_TITLE = "The title is empty."
DIR_LISTING_MAX = 50


class SettingError(ConfigError, ValueError):
    """A value a session setting cannot take. The message says why in the user's words, the same
    in every front end (a slash command's reply, an ACP -32602, a web 400)."""


class SessionControls:
    """The settings of one session (see the module docstring). Implements `tools/base.PlanHost`."""

    def __init__(
        self,
        *,
        session: Session,
        config: Config,
        stream: MessageStream,
        approvals: Approvals,
        sandbox: SessionSandbox,
        model_alias: str | None = None,
        thinking: bool | None = None,
        extra_dirs: Sequence[Path] = (),
        refusing: bool = False,
        on_model_change: Callable[[], None] = lambda: None,
        after_status: Callable[[], None] = lambda: None,
    ) -> None:
        """`model_alias`, `thinking`: this process's choice (`--model`, `--thinking`), else the
        session's own. `extra_dirs`: this process's workspace directories (ACP
        additionalDirectories, --add-dir). `on_model_change`: the core drops its chat provider;
        `after_status`: a StatusUpdate was recorded (the core closes its files between turns)."""
        self.session = session
        self.config = config
        self.stream = stream
        self.approvals = approvals
        self.sandbox = sandbox
        self.refusing = refusing
        self._on_model_change = on_model_change
        self._after_status = after_status
        self.model_alias = model_alias or stored_model(session, config)  # None: the config's default
        self.thinking = thinking if thinking is not None else session.state.thinking  # None: the config's default
        self.extra_dirs: list[Path] = list(extra_dirs)
        # extra_dirs the model has not been told of yet (the core tells it at the next turn)
        self.dirs_changed = False

    # ------------------------------------------------------------------ reading

    @property
    def plan_mode(self) -> bool:
        return self.session.state.plan_mode

    @property
    def mode(self) -> str:
        """The modes as one choice (`MODES`): plan mode first, then yolo, then always-ask."""
        if self.plan_mode:
            return "plan"
        if self.approvals.yolo:
            return "yolo"
        return "ask" if self.approvals.always_ask else "default"

    def current_model(self) -> str | None:
        """The alias the session talks to: its own choice, else the config's default."""
        return self.model_alias or self.config.default_model or None

    def resolved_model(self) -> ResolvedModel | None:
        try:
            return resolve_model(self.config, self.model_alias)
        except ConfigError:
            return None

    def wanted_thinking(self) -> bool | None:
        """Thinking as asked for: the session's choice, else the config's default."""
        return self.thinking if self.thinking is not None else self.config.default_thinking

    def thinking_on(self) -> bool:
        """Whether the session's next request thinks (`ResolvedModel.thinks`)."""
        resolved = self.resolved_model()
        return resolved is not None and resolved.thinks(self.wanted_thinking())

    def workspace_dirs(self) -> list[Path]:
        """Directories the tools treat as inside the workspace besides the work dir: the session's
        own (`/add-dir`, in state.json) and this process's (`extra_dirs`)."""
        dirs = [Path(d) for d in self.session.state.additional_dirs]
        dirs += [d for d in self.extra_dirs if d not in dirs]
        return dirs

    def plan_file_path(self) -> Path:
        """The plan file of the current planning round (`core/plan_file.py`)."""
        return plan_file_path(self.session)

    # ------------------------------------------------------------------ model and thinking

    def set_model(self, choice: str) -> str:
        """Talk to a configured model from the next request (persisted in the session only);
        `choice` is an alias, or an older picker value `<alias>,thinking` (thinking on). Returns the
        alias; SettingError for a model that is not configured or cannot be used."""
        self._may_change("its model")
        alias, thinking = self._model_choice(choice)
        self._set_model(alias, thinking)
        return alias

    def set_thinking(self, on: bool) -> None:
        """The model's thinking from the next request (persisted in the session only); SettingError
        when the model has no thinking mode, or always thinks and `on` is False."""
        self._may_change("thinking")
        resolved = self.resolved_model()
        if resolved is None:
            raise SettingError(NO_MODEL)
        if not resolved.supports_thinking:
            raise SettingError(f"`{resolved.alias}` has no thinking mode (its capabilities have no `thinking`).")
        if resolved.always_thinking and not on:
            raise SettingError(f"`{resolved.alias}` always thinks: its thinking cannot be turned off.")
        self._set_model(self.model_alias, on)

    def _model_choice(self, choice: str) -> tuple[str, bool | None]:
        models = self.config.models
        alias, thinking = choice, self.thinking
        base = legacy_model_base(choice)
        if choice not in models and base in models:
            alias, thinking = base, True  # an older picker value (a client or a saved session)
        if alias not in models:
            names = ", ".join(f"`{name}`" for name in models) or "none"
            raise SettingError(f"Unknown model `{choice}`. Configured models: {names}.")
        try:
            resolved = resolve_model(self.config, alias)
        except ConfigError as exc:
            raise SettingError(f"Cannot switch to `{alias}`: {exc}") from None
        if resolved is None or not resolved.usable:
            raise SettingError(f"Model `{alias}` cannot be used: its provider needs a base_url and the model a name.")
        return alias, thinking

    def _set_model(self, alias: str | None, thinking: bool | None) -> None:
        if (alias, thinking) == (self.model_alias, self.thinking):
            return
        self.model_alias, self.thinking = alias, thinking
        self.session.state.model, self.session.state.thinking = alias, thinking
        self.session.save_state()
        self._on_model_change()
        self.stream.send(ModelChanged(alias, thinking))

    # ------------------------------------------------------------------ modes

    def set_mode(self, mode: str) -> None:
        """The modes as one choice (`MODES`: ACP's picker): plan; or out of plan mode, yolo,
        always-ask or neither."""
        self._may_change("its mode")
        if mode not in MODES:
            raise SettingError(f"Unknown mode `{mode}` (available: {', '.join(MODES)}).")
        changed = self._plan_mode_to(mode == "plan")
        if mode != "plan":
            changed = self._yolo_to(mode == "yolo") | changed
            changed = self._always_ask_to(mode == "ask") | changed
        self._modes_changed(changed)

    def set_plan_mode(self, on: bool) -> None:
        """Plan mode on or off (persisted; recorded as StatusUpdate(plan_mode)). Turning it on gives
        the round its plan file, turning it off forgets it, so the next round starts a fresh plan
        (as Kimi does)."""
        self._may_change("plan mode")
        self._modes_changed(self._plan_mode_to(on))

    def clear_plan(self) -> None:
        """Delete the plan file of the current planning round (`/plan clear`); plan mode stays.
        Announced (PlanCleared) when the round had a plan file, so a plan shown as an object of
        its own goes away."""
        self._may_change("its plan")
        path = clear_plan(self.session)
        if path is not None:
            self.stream.send(PlanCleared(str(path)))

    def set_yolo(self, on: bool) -> None:
        """Yolo on or off (persisted); off also ends this process's `--yolo`."""
        self._may_change("yolo mode")
        self._modes_changed(self._yolo_to(on), status=False)

    def set_afk(self, on: bool) -> None:
        """Afk on or off (persisted): tool calls approved, questions dismissed (nobody is there)."""
        self._may_change("afk mode")
        changed = self.approvals.afk != on
        self.approvals.set_afk(on)
        self._modes_changed(changed, status=False)

    def set_always_ask(self, on: bool) -> None:
        """Every command asks, read-only ones too (the session's own choice, persisted)."""
        self._may_change("always-ask mode")
        self._modes_changed(self._always_ask_to(on), status=False)

    def _plan_mode_to(self, on: bool) -> bool:
        state = self.session.state
        if state.plan_mode == on:
            return False
        state.plan_mode = on
        if on:
            ensure_plan(self.session)
        else:
            release_plan(self.session)
        self.session.save_state()
        return True

    def _yolo_to(self, on: bool) -> bool:
        if self.approvals.yolo == on:
            return False
        self.approvals.set_yolo(on)
        return True

    def _always_ask_to(self, on: bool) -> bool:
        changed = self.approvals.always_ask != on
        self.approvals.set_always_ask(on)  # the session's own choice, kept even when it is the default
        return changed

    def _modes_changed(self, changed: bool, *, status: bool = True) -> None:
        """The plan mode is recorded (StatusUpdate, what Wire clients see) whenever it is set; a
        change of any mode is announced once."""
        if status:
            self.stream.send(StatusUpdate(plan_mode=self.plan_mode))
        if changed:
            approvals = self.approvals
            self.stream.send(ModeChanged(approvals.yolo, self.plan_mode, always_ask=approvals.always_ask, afk=approvals.afk))
        if status:
            self._after_status()

    # ------------------------------------------------------------------ sandbox

    def set_sandbox(self, mode: str) -> None:
        """Where Shell commands run, from the next command (persisted in the session)."""
        self._may_change("the sandbox")
        if mode not in SANDBOX_MODES:
            modes = ", ".join(f"`{m}` ({mode_text(m)})" for m in SANDBOX_MODES)
            raise SettingError(f"Unknown sandbox mode `{mode}`. Modes: {modes}.")
        before = self.sandbox.mode
        self.sandbox.set_mode(mode)
        if self.sandbox.mode != before:
            self.stream.send(SandboxChanged(self.sandbox.mode))

    # ------------------------------------------------------------------ workspace directories

    async def add_dir(self, path: Path) -> str:
        """Add a directory to the session's workspace (persisted); returns its top level, for the
        model. SettingError when it is missing, not a directory, unreadable, or already inside."""
        self._may_change("its directories")
        if not path.exists():
            raise SettingError(f"Directory does not exist: {path}")
        if not path.is_dir():
            raise SettingError(f"Not a directory: {path}")
        real = Path(os.path.realpath(path))
        if _within(real, self.session.work_dir):
            raise SettingError(f"Directory is already within the working directory: {path}")
        for existing in self.workspace_dirs():
            if _within(real, existing):
                what = "in the workspace" if real == Path(os.path.realpath(existing)) else f"within an added directory `{existing}`"
                raise SettingError(f"Directory is already {what}: {path}")
        try:
            listing = await asyncio.to_thread(_list_dir, path)
        except OSError as exc:
            raise SettingError(f"Cannot read directory: {path} ({exc.strerror or exc})") from None
        self.session.state.additional_dirs.append(str(path))
        self.session.save_state()
        return listing

    def set_extra_dirs(self, dirs: Sequence[Path]) -> None:
        """This process's workspace directories (an ACP client's roots on load/resume); the model
        is told of a change at the next turn."""
        self._may_change("its directories")
        dirs = list(dirs)
        if dirs != self.extra_dirs:
            self.extra_dirs = dirs
            self.dirs_changed = True

    # ------------------------------------------------------------------ title

    def rename(self, title: str) -> str:
        """A title the user gives (`/rename`, ACP `session/set_title`, the web page): stored as
        `user_title` makes it, never replaced by a generated one. Returns it; SettingError when
        nothing is left of it."""
        self._may_change("its title")
        title = _user_title(title)
        self.session.state.title_generated = True
        self._store_title(title)
        return title

    def name_automatically(self, title: str, *, generated: bool) -> bool:
        """A title the agent found: the first prompt's (kept only while the session has none) or,
        `generated`, the model's (never over a title the user gave). True when it was stored."""
        state = self.session.state
        taken = state.title_generated if generated else bool(state.custom_title)
        if taken:
            return False
        if generated:
            state.title_generated = True
        self._store_title(title)
        return True

    def _store_title(self, title: str) -> None:
        changed = self.session.state.custom_title != title
        self.session.state.custom_title = title
        self.session.save_state()
        if changed:
            self.stream.send(TitleChanged(title))

    # ------------------------------------------------------------------ refusal

    def _may_change(self, what: str) -> None:
        if self.refusing:
            _refuse(what)


def rename_stored(session: Session, title: str) -> str:
    """A title the user gives a session no process of ours has open (ACP `session/set_title`, the
    web page): as `SessionControls.rename` stores it, with nobody to announce it to."""
    title = _user_title(title)
    session.state.custom_title = title
    session.state.title_generated = True
    session.save_state()
    return title


def stored_model(session: Session, config: Config) -> str | None:
    """The session's own model choice, unless it was removed from the config since; an older
    picker value `<alias>,thinking` becomes the alias with thinking on (and is saved so)."""
    alias = session.state.model
    base = legacy_model_base(alias) if alias else None
    if alias and alias not in config.models and base in config.models:
        session.state.model = base
        if session.state.thinking is None:
            session.state.thinking = True
        return base
    if alias and alias not in config.models:
        log.warning("session %s: model %r is no longer configured; using the default", session.id, alias)
        return None
    return alias or None


def legacy_model_base(value: str) -> str | None:
    """The alias of an older model picker value `<alias>,thinking`; None for any other value."""
    return value[: -len(LEGACY_THINKING_SUFFIX)] if value.endswith(LEGACY_THINKING_SUFFIX) else None


def _user_title(title: str) -> str:
    normalized = user_title(title)
    if not normalized:
        raise SettingError(EMPTY_TITLE)
    return normalized


def _refuse(what: str) -> NoReturn:
    raise PermissionDenied(SUBAGENT_REFUSED.format(what=what))


def _list_dir(path: Path) -> str:
    names = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(path) if e.name != ".git")
    more = len(names) - DIR_LISTING_MAX
    text = "\n".join(f"- {n}" for n in names[:DIR_LISTING_MAX]) or "(empty)"
    return text + (f"\n- ... and {more} more" if more > 0 else "")


def _within(real: Path, root: Path) -> bool:
    root_real = Path(os.path.realpath(root))
    return real == root_real or root_real in real.parents
