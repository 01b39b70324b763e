"""`kimi login`: an interactive terminal setup that ends with a usable `config.toml`.

It is what an IDE's "terminal auth" runs and what the docs tell a new user to run, so it must
never leave a half-written or unusable config behind: the user's file is only replaced (atomically,
mode 0600) by a version that validates and whose new default model resolves as usable. An existing
file that does not validate is reported and left alone. The file is edited with tomlkit so the
user's comments, formatting and keys we do not know survive.

The API key is a secret: it is read hidden, never printed, never put in a message, and the
server's error bodies (which sometimes echo part of the key) are never shown.

The first choice, "Kimi account", signs in with the OAuth device flow instead
(`login_account.py`, which also holds `kimi logout`); `login_common.py` has what both share.
"""

from __future__ import annotations

import getpass
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO
from urllib.parse import urlsplit

from ..config import DEFAULT_CONFIG_TEXT, default_config_path
from ..config_edit import check_config_text, read_existing_config, table_in, upsert
from ..errors import ConfigError
from ..util.secrets import replace
from .login_account import SignIn, sign_in_account
from .login_common import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    MAX_LISTED_MODELS,
    NEXT_STEP,
    Console,
    InvalidAnswer,
)

PROBE_TIMEOUT = 5.0
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True)
class ProviderKind:
    """One entry of the provider menu and its defaults."""

    label: str
    type: str
    base_url: str
    model: str  # "" = no default model
    max_context_size: int
    capabilities: tuple[str, ...] = ()
    key_optional: bool = False  # local servers (Ollama, llama.cpp) take no key
    account: bool = False  # sign in with a Kimi account (device flow) instead of an API key
    slug: str = ""  # its name for `kimi login --provider` (login_script.py)


KINDS: tuple[ProviderKind, ...] = (
    ProviderKind(
        "Kimi Code subscription with an API key", "kimi", "https://api.kimi.com/coding/v1", "kimi-for-coding", 262144,
        capabilities=("thinking",), slug="kimi-code",
    ),
    ProviderKind(
        "Moonshot AI open platform", "kimi", "https://api.moonshot.ai/v1", "kimi-k2-0905-preview", 262144, slug="moonshot"
    ),
    ProviderKind(
        "OpenAI-compatible server (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp)",
        "openai_legacy", "https://api.openai.com/v1", "", 128000,
        key_optional=True, slug="openai",
    ),
    ProviderKind("Anthropic", "anthropic", "https://api.anthropic.com", "claude-sonnet-4-5", 200000, slug="anthropic"),
    ProviderKind(
        "OpenAI with the Responses API (GPT-5 and Codex models)", "openai_responses", "https://api.openai.com/v1", "", 400000,
        capabilities=("thinking", "image_in"), slug="openai-responses",
    ),
    ProviderKind(
        "Google Gemini (an API key from Google AI Studio)", "gemini", "https://generativelanguage.googleapis.com", "",
        1048576, capabilities=("thinking", "image_in"), slug="gemini",
    ),
)
# The Kimi account comes first: subscription users are the largest group, and need no key.
ACCOUNT = ProviderKind(
    "Kimi account: sign in with your browser (Kimi Code subscription, no API key)", "kimi", "", "", 262144, account=True,
    slug="kimi-account",
)
MENU: tuple[ProviderKind, ...] = (ACCOUNT, *KINDS)


@dataclass(frozen=True)
class ModelInfo:
    """A model the server lists; `context` when the server tells it (vLLM, some gateways)."""

    id: str
    context: int | None = None


@dataclass(frozen=True)
class ProbeResult:
    """What one cheap `GET .../models` said about the base URL and key."""

    outcome: Literal["ok", "rejected", "unverified"]
    reason: str = ""  # never contains the key
    models: tuple[ModelInfo, ...] = ()


@dataclass(frozen=True)
class Answers:
    """Everything the dialog collected; enough to write the config."""

    kind: ProviderKind
    base_url: str
    api_key: str = field(repr=False)
    model: str
    max_context_size: int
    alias: str


Probe = Callable[[ProviderKind, str, str], ProbeResult]


# --------------------------------------------------------------------------- answer validation


def parse_kind_choice(raw: str) -> ProviderKind:
    """A menu number; Enter picks 1 (signing in with the Kimi account most users have)."""
    text = raw.strip()
    if not text:
        return MENU[0]
    if text.isdecimal() and 1 <= int(text) <= len(MENU):
        return MENU[int(text) - 1]
    raise InvalidAnswer(f"Type a number from 1 to {len(MENU)}.")


def parse_base_url(raw: str, default: str) -> str:
    """An http(s) URL with a host, without trailing slashes (we append `/models` and the like)."""
    text = raw.strip() or default
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in text):
        raise InvalidAnswer("Type a URL starting with http:// or https://, e.g. http://localhost:11434/v1.")
    return text.rstrip("/")


def parse_api_key(raw: str, *, optional: bool) -> str:
    """Keys go into an HTTP header, so only printable ASCII without spaces can work."""
    key = raw.strip()
    if not key:
        if optional:
            return ""
        raise InvalidAnswer("This provider needs an API key.")
    if not all(33 <= ord(c) <= 126 for c in key):
        raise InvalidAnswer("That is not an API key: keys are printable ASCII without spaces.")
    return key


def parse_model_answer(raw: str, default: str, listed: Sequence[ModelInfo]) -> str:
    """A number picks from the listed models, other text is a model name, Enter the default."""
    text = raw.strip()
    if not text:
        if default:
            return default
        raise InvalidAnswer("A model name is required.")
    if listed and text.isdecimal():
        index = int(text)
        shown = min(len(listed), MAX_LISTED_MODELS)
        if 1 <= index <= shown:
            return listed[index - 1].id
        raise InvalidAnswer(f"Type a number from 1 to {shown}, or a model name.")
    if any(c.isspace() or not c.isprintable() for c in text):
        raise InvalidAnswer("A model name has no spaces or control characters.")
    return text


def parse_context_size(raw: str, default: int) -> int:
    """A positive whole number of tokens; `_` and `,` separators are allowed (262_144, 128,000)."""
    text = raw.strip().replace("_", "").replace(",", "")
    if not text:
        return default
    if not (text.isascii() and text.isdecimal()) or int(text) <= 0:
        raise InvalidAnswer("Type a positive whole number of tokens, e.g. 128000.")
    return int(text)


ALIAS_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def parse_alias(raw: str, default: str) -> str:
    """The `[models.<alias>]` key: letters, digits, `-`, `_`, `.` (shell- and TOML-friendly)."""
    text = raw.strip() or default
    if not ALIAS_RE.fullmatch(text):
        raise InvalidAnswer("Use letters, digits, '-', '_' and '.', starting with a letter or digit.")
    return text


def derive_alias(model: str) -> str:
    """A default alias from a model name: its last path segment with other characters as `-`.

    `kimi-for-coding` stays as is, `deepseek-ai/DeepSeek-V3` gives `DeepSeek-V3`, Ollama's
    `qwen2.5-coder:7b` gives `qwen2.5-coder-7b`.
    """
    last = model.strip().rstrip("/").rsplit("/", 1)[-1]
    alias = re.sub(r"[^A-Za-z0-9._-]+", "-", last)
    alias = re.sub(r"-{2,}", "-", alias).strip("-._")
    return alias or "default"


def parse_yes_no(raw: str, default: bool) -> bool:
    text = raw.strip().lower()
    if not text:
        return default
    if text in ("y", "yes"):
        return True
    if text in ("n", "no"):
        return False
    raise InvalidAnswer("Type y or n.")


# --------------------------------------------------------------------------- checking the key


def models_url(provider_type: str, base_url: str) -> str:
    """Where the model list lives; for Anthropic the same `/v1` rule as the provider's URL, for
    Gemini the same API version (`/v1beta` appended to Kimi's documented base URL)."""
    if provider_type == "anthropic" and not base_url.endswith("/v1"):
        return f"{base_url}/v1/models"
    if provider_type == "gemini":
        from ..llm.gemini import api_root

        return f"{api_root(base_url)}/models?pageSize=1000"
    return f"{base_url}/models"


def probe_headers(provider_type: str, api_key: str) -> dict[str, str]:
    """The auth headers the provider itself would send, so the check means what a turn will see."""
    from ..util.user_agent import user_agent

    headers = {"User-Agent": user_agent()}
    if provider_type == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            headers["x-api-key"] = api_key
    elif provider_type == "gemini":
        if api_key:
            headers["x-goog-api-key"] = api_key
    elif api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def probe_provider(kind: ProviderKind, base_url: str, api_key: str, *, timeout: float = PROBE_TIMEOUT) -> ProbeResult:
    """One `GET .../models`: checks the URL and key and, as a bonus, lists the models."""
    import httpx

    try:
        response = httpx.get(models_url(kind.type, base_url), headers=probe_headers(kind.type, api_key), timeout=timeout)
    except httpx.TimeoutException:
        return ProbeResult("unverified", f"no answer within {timeout:g} s")
    except Exception as exc:  # any failure only means "not verified"
        return ProbeResult("unverified", redact(describe_error(exc), api_key))
    status = response.status_code
    if status in (401, 403):
        return ProbeResult("rejected", f"HTTP {status}")  # the body may echo part of the key: not shown
    if status == 400 and kind.type == "gemini" and "API_KEY_INVALID" in response.text:
        return ProbeResult("rejected", "HTTP 400, API key not valid")  # Gemini's answer to a wrong key
    if not 200 <= status < 300:
        needs_v1 = status == 404 and kind.type != "gemini" and not base_url.endswith("/v1")
        hint = "; does the URL need /v1?" if needs_v1 else ""
        return ProbeResult("unverified", f"HTTP {status} from {models_url(kind.type, base_url)}{hint}")
    try:
        models = parse_model_list(response.json())
    except ValueError:
        models = ()
    return ProbeResult("ok", models=models)


def describe_error(exc: BaseException) -> str:
    import httpx

    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect: {text}"
    return text


def redact(text: str, secret: str) -> str:
    """Belt and braces: whatever a library put in an error text, the key does not get out."""
    return replace(text, [secret], mark="***", min_chars=1)


def parse_model_list(data: Any) -> tuple[ModelInfo, ...]:
    """`{"data": [{"id": ...}, ...]}` (OpenAI, Moonshot, Anthropic, vLLM, Ollama), or Gemini's
    `{"models": [{"name": "models/...", "inputTokenLimit": ...}]}` (only the models that can chat),
    deduplicated."""
    if not isinstance(data, Mapping):
        return ()
    items = data.get("data")
    gemini = not isinstance(items, list) and isinstance(data.get("models"), list)
    if gemini:
        items = data["models"]
    if not isinstance(items, list):
        return ()
    seen: dict[str, ModelInfo] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        model_id = item.get("id")
        if gemini:
            methods = item.get("supportedGenerationMethods")
            if isinstance(methods, list) and "generateContent" not in methods:
                continue  # embedding and other models that cannot chat
            name = item.get("name")
            model_id = name.removeprefix("models/") if isinstance(name, str) else None
        if isinstance(model_id, str) and model_id.strip() and model_id not in seen:
            seen[model_id] = ModelInfo(model_id, _listed_context(item))
    return tuple(seen.values())


def _listed_context(item: Mapping[str, Any]) -> int | None:
    for key in ("context_length", "max_model_len", "context_window", "max_context_length", "inputTokenLimit"):
        value = item.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


# --------------------------------------------------------------------------- editing the config


def edit_config_text(text: str | None, answers: Answers) -> str:
    """The config text with the answers' provider and model added or updated and made default.

    `text` None means there is no file yet: we start from the commented default config. Existing
    `[providers.<alias>]` / `[models.<alias>]` tables are updated in place, so keys login does not
    own (`custom_headers`, `display_name`, ...) and comments survive. `capabilities` describe a
    model: they are kept while the model name stays the same and dropped when it changes.
    """
    import tomlkit

    doc = tomlkit.parse(DEFAULT_CONFIG_TEXT if text is None else text)
    alias = answers.alias
    providers = table_in(doc, "providers")
    upsert(providers, alias, {"type": answers.kind.type, "base_url": answers.base_url, "api_key": answers.api_key})
    models = table_in(doc, "models")
    old = models.get(alias)
    same_model = isinstance(old, Mapping) and str(old.get("model", "")) == answers.model
    caps = [str(c) for c in old.get("capabilities", [])] if same_model and isinstance(old, Mapping) else []
    caps += [c for c in answers.kind.capabilities if c not in caps]
    entry: dict[str, Any] = {
        "provider": alias,
        "model": answers.model,
        "max_context_size": answers.max_context_size,
    }
    if caps:
        entry["capabilities"] = caps
    table = upsert(models, alias, entry)
    if not caps and "capabilities" in table:
        del table["capabilities"]
    doc["default_model"] = alias
    return tomlkit.dumps(doc).rstrip("\n") + "\n"


def save_config(path: Path, answers: Answers) -> Path:
    """Re-read the file (it may have changed during the dialog), edit, check, write atomically."""
    from tomlkit.exceptions import TOMLKitError

    from ..util.fs import atomic_write_text

    text = read_existing_config(path)
    try:
        new_text = edit_config_text(text, answers)
    except (TOMLKitError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot edit {path} ({' '.join(str(exc).split())}); edit it by hand") from None
    check_config_text(new_text, answers.alias, path)
    target = path.resolve() if path.is_symlink() else path  # a dotfiles symlink stays a symlink
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write_text(target, new_text, mode=0o600)
    return target


# --------------------------------------------------------------------------- the dialog


def _line_reader(stdin: TextIO, out: TextIO, *, secret: bool) -> Callable[[str], str]:
    """A TTY gets `input()` / `getpass`; a pipe gets one line per answer, never echoed back."""
    if stdin.isatty():
        if secret:
            return getpass.getpass
        if stdin is sys.stdin and out is sys.stdout:
            return input

    def read(prompt: str) -> str:
        out.write(prompt)
        out.flush()
        line = stdin.readline()
        if not line:
            raise EOFError
        if not stdin.isatty():
            out.write("\n")  # a piped answer is not shown, so end the prompt's line ourselves
        return line.rstrip("\r\n")

    return read


def _ask_key(console: Console, kind: ProviderKind, base_url: str, probe: Probe) -> tuple[str, ProbeResult]:
    """Ask for the key and check it right away, so a rejected key is re-typed while in mind."""
    hint = "hidden; Enter for none" if kind.key_optional else "hidden"
    while True:
        key = console.ask(f"API key ({hint}): ", lambda s: parse_api_key(s, optional=kind.key_optional), secret=True)
        console.say(f"Checking {models_url(kind.type, base_url)} ...")
        result = probe(kind, base_url, key)
        if result.outcome == "rejected":
            what = "API key" if key else "request without a key"
            console.warn(f"The server rejected the {what} ({result.reason}).")
            if console.ask("Re-enter the key? [Y/n] (n saves it anyway): ", lambda s: parse_yes_no(s, True)):
                continue
        elif result.outcome == "unverified":
            console.warn(f"warning: could not verify ({result.reason}); saving anyway")
        else:
            console.say("OK: the server accepted the " + ("key." if key else "request."))
        return key, result


def _ask_model(console: Console, kind: ProviderKind, listed: Sequence[ModelInfo]) -> str:
    default = kind.model or (listed[0].id if listed else "")
    if listed:
        console.say("Models the server offers:")
        for number, info in enumerate(listed[:MAX_LISTED_MODELS], 1):
            mark = "  (default)" if info.id == default else ""
            console.say(f"  {number:2}. {info.id}{mark}")
        if len(listed) > MAX_LISTED_MODELS:
            console.say(f"  ... and {len(listed) - MAX_LISTED_MODELS} more (type any name)")
    what = "Model (number or name)" if listed else "Model name"
    prompt = f"{what} [{default}]: " if default else f"{what}: "
    return console.ask(prompt, lambda s: parse_model_answer(s, default, listed))


def ask_kind(console: Console) -> ProviderKind:
    console.say("Choose a provider:")
    for number, kind in enumerate(MENU, 1):
        console.say(f"  {number}. {kind.label}")
    return console.ask("Provider [1]: ", parse_kind_choice)


def run_dialog(console: Console, probe: Probe = probe_provider, kind: ProviderKind | None = None) -> Answers:
    """Questions 1-7 for an API-key provider; raises EOFError / KeyboardInterrupt when the user leaves."""
    if kind is None:
        kind = ask_kind(console)
    if kind.account:
        raise ValueError("the Kimi account is signed in with sign_in_account, not the key dialog")
    base_url = console.ask(f"Base URL [{kind.base_url}]: ", lambda s: parse_base_url(s, kind.base_url))
    api_key, result = _ask_key(console, kind, base_url, probe)
    model = _ask_model(console, kind, result.models)
    listed_context = next((m.context for m in result.models if m.id == model and m.context), None)
    context_default = listed_context or kind.max_context_size
    max_context = console.ask(
        f"Max context size in tokens [{context_default}]: ", lambda s: parse_context_size(s, context_default)
    )
    alias_default = derive_alias(model)
    alias = console.ask(f"Name for this model in the config [{alias_default}]: ", lambda s: parse_alias(s, alias_default))
    return Answers(kind, base_url, api_key, model, max_context, alias)


def run_login(
    *,
    input_fn: Callable[[str], str] | None = None,
    secret_fn: Callable[[str], str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
    config_path: Path | None = None,
    probe: Probe = probe_provider,
    sign_in: SignIn | None = None,
) -> int:
    """`kimi login`; returns the exit code (0 saved, 1 EOF, write or sign-in failure, 2 bad config, 130 ^C)."""
    out = out or sys.stdout
    err = err or sys.stderr
    stdin = stdin or sys.stdin
    path = config_path or default_config_path()
    console = Console(
        input_fn or _line_reader(stdin, out, secret=False),
        secret_fn or _line_reader(stdin, out, secret=True),
        out,
        err,
    )
    try:
        read_existing_config(path)  # fail before the user types a key we could not save
        console.say(f"Set up a model for kimi; the answers are saved in {path}.")
        kind = ask_kind(console)
        if kind.account:
            return sign_in_account(console, path, sign_in)
        answers = run_dialog(console, probe, kind)
        written = save_config(path, answers)
    except ConfigError as exc:
        console.warn(f"kimi: error: {exc}")
        return EXIT_CONFIG
    except OSError as exc:
        console.warn(f"kimi: error: cannot write {path}: {exc.strerror or exc}")
        return EXIT_FAILED
    except (KeyboardInterrupt, EOFError) as exc:
        console.say()
        console.warn("Login cancelled.")
        return EXIT_INTERRUPTED if isinstance(exc, KeyboardInterrupt) else EXIT_FAILED
    say_saved(console, written, answers)
    return EXIT_OK


def say_saved(console: Console, written: Path, answers: Answers) -> None:
    """The last words of a login that saved an API-key provider (the dialog's and the script's)."""
    console.say(f"Saved {written}: model {answers.alias!r} ({answers.model} at {answers.base_url}) is the default.")
    console.say(NEXT_STEP)
