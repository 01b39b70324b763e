"""Kimi's `config.toml`: models, loading (file, `--config-file`, `--config`), env overrides.

The format is Kimi Code CLI's, so an existing `~/.kimi/config.toml` works unchanged. Unknown keys
are kept and ignored. A file that does not validate raises `ConfigError` with one line naming the
file and the key; nothing is ever rewritten on error.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from .errors import ConfigError as ConfigError  # re-exported: front ends catch it from here
from .util import secrets
from .util.fs import open_private, private_share_dir
from .util.share_dir import share_dir

if TYPE_CHECKING:
    from .wire.types import TokenUsage

# The provider types `llm.create_provider` can build. Only the public ones are ever named to users
# (menus, hints, "expected one of"); the test types (scripted models in Kimi's echo DSL) are valid in
# a config but never suggested.
PUBLIC_PROVIDER_TYPES = ("kimi", "openai_legacy", "openai_responses", "anthropic", "gemini", "vertexai")
# Other names Kimi Code CLI accepts for a public type: `google_genai` is `gemini`.
ALIAS_PROVIDER_TYPES = ("google_genai",)
TEST_PROVIDER_TYPES = ("_echo", "_scripted_echo")
PROVIDER_TYPES = PUBLIC_PROVIDER_TYPES + ALIAS_PROVIDER_TYPES + TEST_PROVIDER_TYPES
ECHO_PROVIDER_TYPES = TEST_PROVIDER_TYPES
# Kimi Code CLI's other types: a shared config.toml may hold them, so they load; a prompt to such a
# model fails with a provider error. Any other type is a typo and fails at load.
KIMI_ONLY_PROVIDER_TYPES = ("_chaos",)
# Kimi's four, plus audio_in: without it in the list no config could let audio parts through.
CAPABILITIES = ("image_in", "video_in", "audio_in", "thinking", "always_thinking")
Capability = Literal["image_in", "video_in", "audio_in", "thinking", "always_thinking"]


def default_config_path() -> Path:
    return share_dir() / "config.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class OAuthRef(_Section):
    """Where a Kimi account's tokens live: Kimi's `oauth = {storage, key}` (e.g. key "oauth/kimi-code")."""

    storage: Literal["file", "keyring"] = "file"
    key: str = Field(min_length=1)


class ProviderConfig(_Section):
    type: str
    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    env: dict[str, str] = {}
    custom_headers: dict[str, str] = {}
    reasoning_key: str | None = None
    oauth: OAuthRef | None = None

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        """A typo (`openai`) must fail at load, not at the first prompt; Kimi's other types load."""
        if value not in PROVIDER_TYPES and value not in KIMI_ONLY_PROVIDER_TYPES:
            expected = ", ".join(PUBLIC_PROVIDER_TYPES)  # the test types are never suggested
            raise ValueError(f"unknown provider type {value!r} (expected one of {expected})")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        """Empty stays allowed (test types, env-provided URLs); anything else must be http(s)."""
        problem = base_url_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be a provider's base URL, or None when it is an http(s) URL with a host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return f"{url!r} is not a URL"
    if parts.scheme.lower() not in ("http", "https"):
        if "://" not in url:
            return f"{url!r} has no scheme (write 'https://{url}', or http:// for a local server)"
        return f"{url!r} must start with http:// or https://"
    if not parts.netloc:
        return f"{url!r} has no host"
    return None


class ServiceConfig(_Section):
    """One of Kimi's `[services.*]` endpoints (web search, page fetch): same keys as Kimi Code CLI."""

    base_url: str
    api_key: SecretStr = SecretStr("")
    custom_headers: dict[str, str] = {}
    oauth: OAuthRef | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        problem = base_url_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class Services(_Section):
    moonshot_search: ServiceConfig | None = None
    moonshot_fetch: ServiceConfig | None = None


class ModelPrice(_Section):
    """What the model's tokens cost, per million tokens, so an IDE can show a session's cost (ACP
    `usage_update.cost`) where the provider reports none. Cached input defaults to `input`."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    currency: str = Field(default="USD", min_length=1)  # ISO 4217 ("USD", "CNY"), or a unit such as "credits"

    def cost(self, usage: TokenUsage) -> float:
        """The price of one request's tokens."""
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        total = (
            usage.input_other * self.input
            + usage.input_cache_read * cache_read
            + usage.input_cache_creation * cache_write
            + usage.output * self.output
        )
        return total / 1_000_000


class ModelConfig(_Section):
    provider: str
    model: str
    max_context_size: int = Field(gt=0)
    capabilities: list[Capability] = []
    display_name: str | None = None
    price: ModelPrice | None = None  # not Kimi Code CLI's: it keeps the key as an unknown one


class LoopControl(_Section):
    max_steps_per_turn: int = Field(
        default=1000, ge=1, validation_alias=AliasChoices("max_steps_per_turn", "max_steps_per_run")
    )
    max_retries_per_step: int = Field(default=3, ge=1)
    max_ralph_iterations: int = Field(default=0, ge=-1)
    reserved_context_size: int = Field(default=50_000, ge=1000)
    compaction_trigger_ratio: float = Field(default=0.85, ge=0.5, le=0.99)


class SessionSettings(_Section):
    """`[session]` (ours, not Kimi's): how sessions look in the IDE's history."""

    # After a session's first turn, one small request to its model asks for a short title (ACP).
    generate_titles: bool = True


HOOK_EVENTS = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "StopFailure",
    "SessionStart", "SessionEnd", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
    "Notification",
)


class HookConfig(_Section):
    event: Literal[
        "PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "StopFailure",
        "SessionStart", "SessionEnd", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
        "Notification",
    ]
    command: str
    matcher: str = ""
    timeout: int = Field(default=30, ge=1, le=600)


RULE_SYNTAX = r"^[A-Za-z_][\w.:*-]*(\(.+\))?$"  # Tool or Tool(spec): permissions/rules.py reads the spec


class PermissionRules(_Section):
    """`[permissions]`: what the user allows, asks about or denies once for every session
    (permissions/rules.py, docs/security.md). Read from the user's config only, never from a
    project directory."""

    allow: list[str] = []
    ask: list[str] = []
    deny: list[str] = []
    # Environment variables that child processes (commands, tasks, plugins) keep although they
    # hold the agent's credentials (they are stripped by default).
    pass_env: list[str] = []
    # Every Shell command asks, read-only ones too (by default a command that provably only reads
    # the workspace runs unasked: permissions/read_only.py). A session's own choice (the IDE's mode
    # picker, the web page) and `--always-ask` come first.
    always_ask: bool = False

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rule_syntax(cls, rules: list[str]) -> list[str]:
        import re

        for rule in rules:
            if not re.match(RULE_SYNTAX, rule.strip()):
                raise ValueError(f"{rule!r} is not a rule: write Tool or Tool(pattern), e.g. Shell(git status:*)")
        return [rule.strip() for rule in rules]


SANDBOX_MODES = ("off", "workspace-write", "read-only")


class SandboxSettings(_Section):
    """`[sandbox]` (ours): where Shell commands run (kimi_acp/sandbox, docs/security.md). `off`: as
    before, every command asks; `workspace-write`: commands run unasked in an OS sandbox that may
    write only the workspace and a private temp dir; `read-only`: only the temp dir. A session's own
    choice (the IDE's picker, `/sandbox`) and `--sandbox` come first."""

    mode: Literal["off", "workspace-write", "read-only"] = "off"
    allow_network: bool = False  # the sandbox keeps the network (else: none, not even the host's loopback)


class UndoSettings(_Section):
    """`[undo]` (ours, not Kimi's): what each turn records so `/undo` can take it back
    (core/undo.py, docs/configuration.md). `keep_turns = 0` records nothing (and /undo has nothing
    to take back)."""

    keep_turns: int = Field(default=20, ge=0, le=1000)  # the last N turns of a session can be undone
    max_file_bytes: int = Field(default=5 * 1024 * 1024, ge=0)  # bigger files are left out of Shell snapshots
    max_files: int = Field(default=20_000, ge=0)  # a workspace directory with more files is not snapshotted


class Config(_Section):
    default_model: str = ""
    default_thinking: bool = False
    default_yolo: bool = False
    default_plan_mode: bool = False
    providers: dict[str, ProviderConfig] = {}
    models: dict[str, ModelConfig] = {}
    loop_control: LoopControl = Field(default_factory=LoopControl)
    hooks: list[HookConfig] = []
    services: Services = Field(default_factory=Services)
    # Skills (kimi_acp/skills/provider.py), Kimi's keys: more skill directories, and whether every existing
    # brand directory (.kimi, .claude, .codex) is read or only the first.
    extra_skill_dirs: list[str] = []
    merge_all_available_skills: bool = True
    # The agent file of every root session (kimi_acp/agent_file.py, kimi_acp/root_core.py); `kimi --wire --agent-file` overrides it.
    # Not a Kimi Code CLI key (it has only the flag); `~` is expanded, relative paths are from config.toml.
    agent_file: str | None = None
    permissions: PermissionRules = Field(default_factory=PermissionRules)
    session: SessionSettings = Field(default_factory=SessionSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    undo: UndoSettings = Field(default_factory=UndoSettings)

    @model_validator(mode="after")
    def _check_references(self) -> Config:
        if self.default_model and self.default_model not in self.models:
            raise ValueError(f"default_model {self.default_model!r} is not a key of [models]")
        for alias, model in self.models.items():
            if model.provider not in self.providers:
                raise ValueError(f"models.{alias}.provider {model.provider!r} is not a key of [providers]")
        return self


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    path: Path | None  # None when it came from `--config TEXT`
    from_default_location: bool

    def __post_init__(self) -> None:
        """Every config a session runs on passes here: its credentials join the process's secrets."""
        register_secrets(self.config)


def register_secrets(config: Config) -> None:
    """Redact from every tool result and log line (util/secrets.py) what `config` and the
    environment hold: the providers' and services' api_key, the custom_headers and env values
    whose name says they are credentials (`secrets.SECRET_NAME`), and the providers' key variables."""
    for entry in [*config.providers.values(), config.services.moonshot_search, config.services.moonshot_fetch]:
        if entry is not None:
            secrets.register([entry.api_key.get_secret_value()])
            secrets.register_named(entry.custom_headers.items())
            secrets.register_named(getattr(entry, "env", {}).items())
    secrets.register_environment()


DEFAULT_CONFIG_TEXT = """\
# Kimi config (shared with Kimi Code CLI). Docs: docs/configuration.md
# Run `kimi login` to add a provider and a model interactively.

default_model = ""
default_thinking = false
default_yolo = false

[providers]
# [providers.moonshot]
# type = "kimi"
# base_url = "https://api.moonshot.ai/v1"
# api_key = "sk-..."

[models]
# [models.kimi-k2]
# provider = "moonshot"
# model = "kimi-k2-0905-preview"
# max_context_size = 262144

[loop_control]
max_steps_per_turn = 1000
max_retries_per_step = 3
"""


def load_config(config_file: str | Path | None = None, config_text: str | None = None) -> LoadedConfig:
    """Load `--config TEXT`, else `--config-file F`, else the default file (created if missing)."""
    if config_text is not None:
        data = _parse_text(config_text)
        return LoadedConfig(with_env_model(_validate(data, "--config")), None, False)
    if config_file is not None:
        path = Path(config_file).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return LoadedConfig(with_env_model(_validate(_read_file(path), str(path))), path, False)
    path = default_config_path()
    if not path.exists():
        _create_default(path)
        return LoadedConfig(with_env_model(Config()), path, True)
    return LoadedConfig(with_env_model(_validate(_read_file(path), str(path))), path, True)


ENV_MODEL_ALIAS = "kimi-env"
ENV_DEFAULT_BASE_URL = "https://api.moonshot.ai/v1"
ENV_DEFAULT_MODEL = "kimi-k2-0905-preview"
ENV_DEFAULT_CONTEXT = 262144


def with_env_model(config: Config) -> Config:
    """With no default model but `KIMI_API_KEY` set, a Kimi model from the environment.

    This is what makes `KIMI_API_KEY` a way to sign in (the ACP login method says so): an IDE that
    only passes the key (plus optionally `KIMI_BASE_URL` / `KIMI_MODEL_NAME`) gets a usable agent
    with no config file.
    """
    if config.default_model or not os.environ.get("KIMI_API_KEY"):
        return config
    provider = ProviderConfig(type="kimi", base_url=ENV_DEFAULT_BASE_URL)  # env overrides fill in the rest
    model = ModelConfig(provider=ENV_MODEL_ALIAS, model=ENV_DEFAULT_MODEL, max_context_size=ENV_DEFAULT_CONTEXT)
    return config.model_copy(
        update={
            "default_model": ENV_MODEL_ALIAS,
            "providers": {**config.providers, ENV_MODEL_ALIAS: provider},
            "models": {**config.models, ENV_MODEL_ALIAS: model},
        }
    )


def _create_default(path: Path) -> None:
    """The commented default config.toml, 0600 (it is where an API key goes), in a 0700 share dir."""
    try:
        private_share_dir()
        with open_private(path, "x", encoding="utf-8") as f:
            f.write(DEFAULT_CONFIG_TEXT)
    except OSError:
        pass  # a read-only home still gets a working (empty) config


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = json.loads(raw) if path.suffix.lower() == ".json" else tomllib.loads(raw)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise ConfigError(f"invalid {kind} in config file {path}: {_one_line(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table/object at the top level")
    return data


def _parse_text(text: str) -> dict[str, Any]:
    stripped = text.strip()
    try:
        data = json.loads(stripped) if stripped.startswith("{") else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"invalid --config text (JSON or TOML expected): {_one_line(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError("--config must be a JSON object or a TOML document")
    return data


def _validate(data: dict[str, Any], source: str) -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err.get("loc", ()))
        key = key.replace("\r", "\\r").replace("\n", "\\n")  # a quoted TOML key may hold a newline
        msg = err.get("msg", "invalid value")
        msg = msg.removeprefix("Value error, ")
        where = f" at {key}" if key else ""
        raise ConfigError(f"invalid config in {source}{where}: {msg}") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


# --------------------------------------------------------------------------- model selection


@dataclass(frozen=True)
class ResolvedModel:
    """A model alias with its provider, env overrides applied, and derived capabilities."""

    alias: str
    model: ModelConfig
    provider_name: str
    provider: ProviderConfig
    capabilities: frozenset[str]

    @property
    def usable(self) -> bool:
        """Enough to call: echo providers need nothing, others a base URL and a model name."""
        if self.provider.type in ECHO_PROVIDER_TYPES:
            return True
        return bool(self.provider.base_url and self.model.model)

    @property
    def always_thinking(self) -> bool:
        return "always_thinking" in self.capabilities

    @property
    def supports_thinking(self) -> bool:
        return "thinking" in self.capabilities

    def thinks(self, wanted: bool | None) -> bool:
        """Whether a request to this model thinks (Kimi's rule, the only place it is written): an
        always-thinking model always does; another does when thinking is `wanted` and it can."""
        return self.always_thinking or (bool(wanted) and self.supports_thinking)


def derive_capabilities(model: ModelConfig) -> frozenset[str]:
    caps = set(model.capabilities)
    name = model.model.lower()
    if "thinking" in name or "reason" in name:
        caps |= {"thinking", "always_thinking"}
    if name in ("kimi-for-coding", "kimi-code"):
        caps |= {"thinking", "image_in", "video_in"}
    return frozenset(caps)


def resolve_model(config: Config, alias: str | None = None) -> ResolvedModel | None:
    """The model to use (`alias`, else `default_model`), or None when none is configured."""
    alias = alias or config.default_model
    if not alias:
        return None
    if alias not in config.models:
        raise ConfigError(f"model {alias!r} is not defined in [models]")
    model = config.models[alias]
    provider = config.providers[model.provider]
    provider, model = apply_env_overrides(provider, model)
    return ResolvedModel(alias, model, model.provider, provider, derive_capabilities(model))


def apply_env_overrides(provider: ProviderConfig, model: ModelConfig) -> tuple[ProviderConfig, ModelConfig]:
    """Kimi's env overrides: `KIMI_*` for kimi providers, `OPENAI_*` for openai ones."""
    env = os.environ
    p_update: dict[str, Any] = {}
    m_update: dict[str, Any] = {}
    if provider.type == "kimi":
        if env.get("KIMI_BASE_URL"):
            p_update["base_url"] = env["KIMI_BASE_URL"]
        if env.get("KIMI_API_KEY"):
            p_update["api_key"] = SecretStr(env["KIMI_API_KEY"])
        if env.get("KIMI_MODEL_NAME"):
            m_update["model"] = env["KIMI_MODEL_NAME"]
        raw_size = env.get("KIMI_MODEL_MAX_CONTEXT_SIZE", "").strip()
        if raw_size.isdecimal() and int(raw_size) > 0:  # like the file: a positive integer, else ignored
            m_update["max_context_size"] = int(raw_size)
        if env.get("KIMI_MODEL_CAPABILITIES"):
            caps = [c.strip().lower() for c in env["KIMI_MODEL_CAPABILITIES"].split(",") if c.strip()]
            m_update["capabilities"] = [c for c in caps if c in CAPABILITIES]
    elif provider.type.startswith("openai"):
        if env.get("OPENAI_BASE_URL"):
            p_update["base_url"] = env["OPENAI_BASE_URL"]
        if env.get("OPENAI_API_KEY"):
            p_update["api_key"] = SecretStr(env["OPENAI_API_KEY"])
    if p_update:
        provider = provider.model_copy(update=p_update)
    if m_update:
        model = model.model_copy(update=m_update)
    return provider, model


def model_sampling_overrides() -> dict[str, Any]:
    """`KIMI_MODEL_TEMPERATURE`, `_TOP_P`, `_MAX_COMPLETION_TOKENS` (alias `_MAX_TOKENS`)."""
    env = os.environ
    out: dict[str, Any] = {}
    for key, name in (("KIMI_MODEL_TEMPERATURE", "temperature"), ("KIMI_MODEL_TOP_P", "top_p")):
        try:
            if env.get(key):
                out[name] = float(env[key])
        except ValueError:
            pass
    raw = env.get("KIMI_MODEL_MAX_COMPLETION_TOKENS") or env.get("KIMI_MODEL_MAX_TOKENS")
    if raw:
        try:
            out["max_completion_tokens"] = int(raw)
        except ValueError:
            pass
    return out
