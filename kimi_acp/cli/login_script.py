"""`kimi login --provider …`: the same set-up as the dialog (login.py), without a question, for
scripts, dotfiles and CI.

The API key never goes on the command line (where `ps` and shell history would show it): it is
read from an environment variable the caller names (`--api-key-env VAR`) or from the first line
of stdin (`--api-key-stdin`). The key is checked with the provider before anything is saved
(`--no-check` skips that); a rejected key saves nothing. A missing answer is a one-line error,
never a question.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, TypeVar

from ..config import default_config_path
from ..config_edit import read_existing_config
from ..errors import ConfigError
from .login import (
    MENU,
    Answers,
    ModelInfo,
    Probe,
    ProviderKind,
    derive_alias,
    models_url,
    parse_alias,
    parse_api_key,
    parse_base_url,
    parse_context_size,
    parse_model_answer,
    probe_provider,
    save_config,
    say_saved,
)
from .login_account import SignIn, sign_in_account
from .login_common import EXIT_CONFIG, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Console, InvalidAnswer

PROVIDERS: dict[str, ProviderKind] = {kind.slug: kind for kind in MENU}
T = TypeVar("T")


class ScriptError(InvalidAnswer):
    """An option that cannot be used; the message is the one line the user sees (exit code 2)."""


@dataclass(frozen=True)
class Script:
    """What the options say; None: not given."""

    provider: str
    base_url: str | None = None
    model: str | None = None
    max_context_size: int | None = None
    name: str | None = None
    api_key_env: str | None = None
    api_key_stdin: bool = False
    check: bool = True


def _refuse(_prompt: str) -> str:
    raise ScriptError("this answer has no option (kimi login --help)")


def run_scripted_login(
    script: Script,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    config_path: Path | None = None,
    probe: Probe = probe_provider,
    sign_in: SignIn | None = None,
) -> int:
    """Returns the exit code: 0 saved, 1 rejected key, write or sign-in failure, 2 bad options or config."""
    console = Console(_refuse, _refuse, out or sys.stdout, err or sys.stderr)
    path = config_path or default_config_path()
    try:
        read_existing_config(path)  # a config we could not edit fails before anything is asked of a server
        kind = PROVIDERS.get(script.provider)
        if kind is None:
            raise ScriptError(f"--provider: unknown provider {script.provider!r} (one of: {', '.join(PROVIDERS)})")
        if kind.account:
            _no_key_options(script)
            return sign_in_account(console, path, sign_in)
        answers = _answers(console, script, kind, os.environ if environ is None else environ, stdin or sys.stdin, probe)
        if answers is None:
            return EXIT_FAILED
        written = save_config(path, answers)
    except (InvalidAnswer, ConfigError) as exc:
        console.warn(f"kimi: error: {exc}")
        return EXIT_CONFIG
    except OSError as exc:
        console.warn(f"kimi: error: cannot write {path}: {exc.strerror or exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        console.warn("Login cancelled.")
        return EXIT_INTERRUPTED
    say_saved(console, written, answers)
    return EXIT_OK


def _no_key_options(script: Script) -> None:
    given = [name for name, value in (("--base-url", script.base_url), ("--model", script.model),
                                      ("--api-key-env", script.api_key_env)) if value is not None]
    if script.api_key_stdin:
        given.append("--api-key-stdin")
    if given:
        raise ScriptError(f"{', '.join(given)}: the Kimi account signs in with the browser and needs none of them")


def _answers(
    console: Console, script: Script, kind: ProviderKind, environ: Mapping[str, str], stdin: TextIO, probe: Probe
) -> Answers | None:
    """The dialog's answers from the options; None when the server rejected the key (said why)."""
    base_url = _option("--base-url", lambda: parse_base_url(script.base_url or "", kind.base_url))
    api_key = _option("API key", lambda: parse_api_key(_read_key(script, kind, environ, stdin), optional=kind.key_optional))
    listed: tuple[ModelInfo, ...] = ()
    if script.check:
        console.say(f"Checking {models_url(kind.type, base_url)} ...")
        result = probe(kind, base_url, api_key)
        if result.outcome == "rejected":
            what = "API key" if api_key else "request without a key"
            console.warn(f"kimi: error: the server rejected the {what} ({result.reason}); nothing was saved "
                         "(--no-check saves it unchecked)")
            return None
        if result.outcome == "unverified":
            console.warn(f"warning: could not verify ({result.reason}); saving anyway")
        listed = result.models
    default_model = kind.model
    if not script.model and not default_model:
        offered = f" (the server offers: {', '.join(m.id for m in listed[:10])})" if listed else ""
        raise ScriptError(f"--model: required for this provider{offered}")
    model = _option("--model", lambda: parse_model_answer(script.model or "", default_model, ()))
    listed_context = next((m.context for m in listed if m.id == model and m.context), None)
    context_default = listed_context or kind.max_context_size
    given = "" if script.max_context_size is None else str(script.max_context_size)
    max_context = _option("--max-context-size", lambda: parse_context_size(given, context_default))
    alias = _option("--name", lambda: parse_alias(script.name or "", derive_alias(model)))
    return Answers(kind, base_url, api_key, model, max_context, alias)


def _read_key(script: Script, kind: ProviderKind, environ: Mapping[str, str], stdin: TextIO) -> str:
    if script.api_key_env is not None and script.api_key_stdin:
        raise ScriptError("--api-key-env and --api-key-stdin: give the key one way")
    if script.api_key_env is not None:
        key = environ.get(script.api_key_env, "")
        if not key.strip():
            raise ScriptError(f"--api-key-env: the environment variable {script.api_key_env} is not set or empty")
        return key
    if script.api_key_stdin:
        line = stdin.readline()
        if not line.strip():
            raise ScriptError("--api-key-stdin: stdin has no key (one line, e.g. from a password manager)")
        return line
    if kind.key_optional:
        return ""
    raise ScriptError("this provider needs an API key: --api-key-env VAR or --api-key-stdin (never on the command line)")


def _option(name: str, parse: Callable[[], T]) -> T:
    """A parser's verdict on an option, its message prefixed with the option's name."""
    try:
        return parse()
    except ScriptError:
        raise
    except InvalidAnswer as exc:
        raise ScriptError(f"{name}: {exc}") from None
