"""config.toml: loading (file, --config-file, --config), validation errors, env overrides, models."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from kimi_acp.config import (
    DEFAULT_CONFIG_TEXT,
    Config,
    ConfigError,
    ModelConfig,
    default_config_path,
    derive_capabilities,
    load_config,
    resolve_model,
    share_dir,
)

SECRET = "sk-test-SECRET-0123456789abcdef"

GOOD_TOML = f"""\
default_model = "k2"
default_thinking = true
some_future_option = "kept"

[providers.moonshot]
type = "kimi"
base_url = "https://api.moonshot.example/v1"
api_key = "{SECRET}"
custom_headers = {{ "X-Team" = "a" }}
oauth = {{ storage = "file", key = "oauth/kimi" }}

[providers.local]
type = "openai_legacy"
base_url = "http://127.0.0.1:8080/v1"

[models.k2]
provider = "moonshot"
model = "kimi-k2-0905-preview"
max_context_size = 262144
capabilities = ["image_in"]
display_name = "Kimi K2"

[models.qwen]
provider = "local"
model = "qwen3-coder"
max_context_size = 32768

[loop_control]
max_steps_per_run = 42
max_retries_per_step = 5

[[hooks]]
event = "PreToolUse"
command = "true"
matcher = "Shell"

[services.moonshot_search]
base_url = "https://search.example"
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def assert_good(config: Config) -> None:
    assert config.default_model == "k2" and config.default_thinking is True
    assert set(config.providers) == {"moonshot", "local"}
    moonshot = config.providers["moonshot"]
    assert moonshot.type == "kimi" and moonshot.base_url == "https://api.moonshot.example/v1"
    assert isinstance(moonshot.api_key, SecretStr) and moonshot.api_key.get_secret_value() == SECRET
    assert moonshot.custom_headers == {"X-Team": "a"}
    assert config.providers["local"].api_key.get_secret_value() == ""
    k2 = config.models["k2"]
    assert (k2.provider, k2.model, k2.max_context_size, k2.capabilities, k2.display_name) == (
        "moonshot", "kimi-k2-0905-preview", 262144, ["image_in"], "Kimi K2",
    )
    assert config.loop_control.max_steps_per_turn == 42  # via the max_steps_per_run alias
    assert config.loop_control.max_retries_per_step == 5
    assert config.loop_control.reserved_context_size == 50_000  # defaults for the rest
    assert config.loop_control.compaction_trigger_ratio == 0.85
    assert [(h.event, h.command, h.matcher, h.timeout) for h in config.hooks] == [("PreToolUse", "true", "Shell", 30)]


def test_load_toml_file(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", GOOD_TOML)
    loaded = load_config(config_file=path)
    assert loaded.path == path and loaded.from_default_location is False
    assert_good(loaded.config)


def test_load_json_file_by_suffix(tmp_path: Path) -> None:
    import tomllib

    data = tomllib.loads(GOOD_TOML)
    path = write(tmp_path / "config.JSON", json.dumps(data))
    assert_good(load_config(config_file=path).config)


def test_config_text_json_and_toml() -> None:
    import tomllib

    as_json = load_config(config_text="  " + json.dumps(tomllib.loads(GOOD_TOML)))
    assert as_json.path is None and as_json.from_default_location is False
    assert_good(as_json.config)
    assert_good(load_config(config_text=GOOD_TOML).config)


def test_config_text_wins_over_config_file(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", GOOD_TOML)
    loaded = load_config(config_file=path, config_text='default_thinking = false')
    assert loaded.path is None and loaded.config.models == {}


def test_unknown_keys_are_kept_and_not_an_error(tmp_path: Path) -> None:
    config = load_config(config_file=write(tmp_path / "c.toml", GOOD_TOML)).config
    assert config.model_extra == {"some_future_option": "kept"}
    assert config.services.moonshot_search is not None
    assert config.services.moonshot_search.base_url == "https://search.example"
    assert config.providers["moonshot"].model_extra == {}
    assert config.providers["moonshot"].oauth is not None
    assert (config.providers["moonshot"].oauth.storage, config.providers["moonshot"].oauth.key) == ("file", "oauth/kimi")


def test_missing_default_file_is_created_from_the_template_and_loads() -> None:
    path = default_config_path()
    assert path == share_dir() / "config.toml" == Path(os.environ["KIMI_SHARE_DIR"]) / "config.toml"
    assert not path.exists()
    loaded = load_config()
    assert loaded.path == path and loaded.from_default_location is True
    assert path.read_text(encoding="utf-8") == DEFAULT_CONFIG_TEXT
    assert loaded.config.models == {} and loaded.config.default_model == ""
    again = load_config()  # the created file itself parses and validates
    assert again.config.models == {} and again.config.loop_control.max_steps_per_turn == 1000
    assert path.read_text(encoding="utf-8") == DEFAULT_CONFIG_TEXT  # and is not rewritten


def test_existing_default_file_is_used(tmp_path: Path) -> None:
    write(default_config_path(), GOOD_TOML)
    assert_good(load_config().config)


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config_file=tmp_path / "nope.toml")
    assert str(tmp_path / "nope.toml") in str(info.value)
    assert not (tmp_path / "nope.toml").exists()


BAD_CASES = {
    "bad_toml": ("default_model = \n[models\n", "invalid TOML", None),
    "wrong_type": (
        '[providers.p]\ntype = "kimi"\n[models.x]\nprovider = "p"\nmodel = "m"\nmax_context_size = "big"\n',
        "at models.x.max_context_size",
        "models.x.max_context_size",
    ),
    "negative_size": (
        '[providers.p]\ntype = "kimi"\n[models.x]\nprovider = "p"\nmodel = "m"\nmax_context_size = 0\n',
        "at models.x.max_context_size",
        "greater than 0",
    ),
    "default_model_unknown": ('default_model = "ghost"\n', "default_model 'ghost'", "[models]"),
    "provider_unknown": (
        '[models.x]\nprovider = "nowhere"\nmodel = "m"\nmax_context_size = 10\n',
        "models.x.provider 'nowhere'",
        "[providers]",
    ),
    "provider_missing": ('[providers.p]\ntype = "kimi"\n[models.x]\nmodel = "m"\nmax_context_size = 10\n',
                         "at models.x.provider", "Field required"),
    "hook_event": ('[[hooks]]\nevent = "BeforeEverything"\ncommand = "true"\n', "at hooks.0.event", "PreToolUse"),
    "hook_timeout": ('[[hooks]]\nevent = "Stop"\ncommand = "true"\ntimeout = 601\n', "at hooks.0.timeout", "600"),
    "ratio": ("[loop_control]\ncompaction_trigger_ratio = 1.5\n", "at loop_control.compaction_trigger_ratio", "0.99"),
    "steps": ("[loop_control]\nmax_steps_per_turn = 0\n", "at loop_control.max_steps_per_turn", "1"),
    "reserved": ("[loop_control]\nreserved_context_size = 10\n", "at loop_control.reserved_context_size", "1000"),
    "capability": (
        '[providers.p]\ntype = "kimi"\n[models.x]\nprovider = "p"\nmodel = "m"\nmax_context_size = 1\n'
        'capabilities = ["telepathy"]\n',
        "at models.x.capabilities.0",
        "image_in",
    ),
    "price_negative": (
        '[providers.p]\ntype = "kimi"\n[models.x]\nprovider = "p"\nmodel = "m"\nmax_context_size = 1\n'
        "price = { input = -1, output = 2 }\n",
        "at models.x.price.input",
        "greater than or equal to 0",
    ),
    "price_without_output": (
        '[providers.p]\ntype = "kimi"\n[models.x]\nprovider = "p"\nmodel = "m"\nmax_context_size = 1\n'
        "price = { input = 1 }\n",
        "at models.x.price.output",
        "Field required",
    ),
    "provider_type_missing": ("[providers.p]\nbase_url = 'x'\n", "at providers.p.type", "Field required"),
    "provider_type_unknown": (
        '[providers.foo]\ntype = "openai"\nbase_url = "https://api.openai.com/v1"\n',
        "at providers.foo.type: unknown provider type 'openai'",
        "(expected one of kimi, openai_legacy, openai_responses, anthropic, gemini, vertexai)",
    ),
    "base_url_without_scheme": (
        '[providers.foo]\ntype = "kimi"\nbase_url = "api.moonshot.cn/v1"\n',
        "at providers.foo.base_url: 'api.moonshot.cn/v1' has no scheme",
        "https://api.moonshot.cn/v1",
    ),
    "base_url_host_port_only": (
        '[providers.ollama]\ntype = "openai_legacy"\nbase_url = "localhost:11434/v1"\n',
        "at providers.ollama.base_url: 'localhost:11434/v1' has no scheme",
        None,
    ),
    "base_url_other_scheme": (
        '[providers.foo]\ntype = "kimi"\nbase_url = "ftp://files.example/v1"\n',
        "at providers.foo.base_url",
        "must start with http:// or https://",
    ),
    "base_url_without_host": ('[providers.foo]\ntype = "kimi"\nbase_url = "https://"\n', "at providers.foo.base_url", "no host"),
    "newline_in_key": (
        '[providers.p]\ntype = "kimi"\n[models."a\\nb"]\nprovider = "p"\nmodel = "m"\nmax_context_size = "x"\n',
        "at models.a\\nb.max_context_size",
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
@pytest.mark.parametrize("where", ["default", "explicit"])
def test_bad_config_is_a_one_line_error_naming_file_and_key_and_the_file_is_untouched(
    tmp_path: Path, case: str, where: str
) -> None:
    text, expected, also = BAD_CASES[case]
    path = default_config_path() if where == "default" else tmp_path / "my config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    with pytest.raises(ConfigError) as info:
        load_config(config_file=None if where == "default" else path)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert str(path) in message
    assert expected in message
    if also:
        assert also in message
    assert "Traceback" not in message and "pydantic" not in message.lower()
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == []  # no temp files


def test_bad_json_file_and_non_table_top_level(tmp_path: Path) -> None:
    bad = write(tmp_path / "c.json", '{"default_model": ')
    with pytest.raises(ConfigError, match=r"invalid JSON in config file .*c\.json"):
        load_config(config_file=bad)
    array = write(tmp_path / "a.json", "[1, 2]")
    with pytest.raises(ConfigError, match="top level"):
        load_config(config_file=array)


def test_undecodable_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b"\xff\xfe default_model = 1")
    with pytest.raises(ConfigError) as info:
        load_config(config_file=path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"default_model": ', "invalid --config text"),
        ("default_model = ", "invalid --config text"),
        ('{"default_model": 5}', "invalid config in --config at default_model"),
        ('{"loop_control": {"max_retries_per_step": 0}}', "invalid config in --config at loop_control.max_retries_per_step"),
    ],
)
def test_bad_config_text(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config_text=text)
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


def test_secret_never_shows_in_repr_str_or_json(tmp_path: Path) -> None:
    config = load_config(config_file=write(tmp_path / "c.toml", GOOD_TOML)).config
    for text in (repr(config), str(config), config.model_dump_json(), repr(config.providers["moonshot"])):
        assert SECRET not in text
    resolved = resolve_model(config, "k2")
    assert resolved is not None
    assert SECRET not in repr(resolved)
    assert resolved.provider.api_key.get_secret_value() == SECRET


# --------------------------------------------------------------------------- model selection


def config_with(provider_type: str, model: str = "m", base_url: str = "https://x/v1", **model_extra: object) -> Config:
    return Config.model_validate(
        {
            "default_model": "main",
            "providers": {"p": {"type": provider_type, "base_url": base_url, "api_key": "file-key"}},
            "models": {"main": {"provider": "p", "model": model, "max_context_size": 1000, **model_extra}},
        }
    )


def test_resolve_model_default_and_alias() -> None:
    config = config_with("kimi")
    resolved = resolve_model(config)
    assert resolved is not None
    assert (resolved.alias, resolved.provider_name, resolved.model.model) == ("main", "p", "m")
    assert resolve_model(config, "main") == resolved
    assert resolve_model(Config()) is None  # nothing configured: no model, not an error


def test_resolve_model_unknown_alias() -> None:
    with pytest.raises(ConfigError, match="model 'other' is not defined in \\[models\\]"):
        resolve_model(config_with("kimi"), "other")


@pytest.mark.parametrize(
    ("provider_type", "base_url", "model", "usable"),
    [
        ("kimi", "https://x", "m", True),
        ("kimi", "", "m", False),
        ("openai_legacy", "https://x", "", False),
        ("anthropic", "https://x", "claude", True),
        ("_echo", "", "", True),
        ("_scripted_echo", "", "", True),
    ],
)
def test_resolved_model_usable(provider_type: str, base_url: str, model: str, usable: bool) -> None:
    resolved = resolve_model(config_with(provider_type, model=model, base_url=base_url))
    assert resolved is not None and resolved.usable is usable


def test_kimi_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_BASE_URL", "https://env.example/v1")
    monkeypatch.setenv("KIMI_API_KEY", "env-key")
    monkeypatch.setenv("KIMI_MODEL_NAME", "kimi-env-model")
    monkeypatch.setenv("KIMI_MODEL_MAX_CONTEXT_SIZE", "4096")
    monkeypatch.setenv("KIMI_MODEL_CAPABILITIES", " Image_In , THINKING,bogus,")
    config = config_with("kimi", capabilities=["video_in"])
    resolved = resolve_model(config)
    assert resolved is not None
    assert resolved.provider.base_url == "https://env.example/v1"
    assert isinstance(resolved.provider.api_key, SecretStr)
    assert resolved.provider.api_key.get_secret_value() == "env-key"
    assert resolved.model.model == "kimi-env-model"
    assert resolved.model.max_context_size == 4096
    assert resolved.model.capabilities == ["image_in", "thinking"]  # replaced, case-insensitive, unknown dropped
    assert resolved.capabilities == {"image_in", "thinking"}
    # the loaded config itself is not modified
    assert config.providers["p"].base_url == "https://x/v1"
    assert config.providers["p"].api_key.get_secret_value() == "file-key"
    assert config.models["main"].model == "m" and config.models["main"].max_context_size == 1000


@pytest.mark.parametrize("value", ["abc", "-5", "0", "1.5", "²", ""])
def test_invalid_max_context_size_override_is_ignored(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("KIMI_MODEL_MAX_CONTEXT_SIZE", value)
    resolved = resolve_model(config_with("kimi"))
    assert resolved is not None and resolved.model.max_context_size == 1000


def test_kimi_env_does_not_touch_other_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_BASE_URL", "https://kimi-env")
    monkeypatch.setenv("KIMI_API_KEY", "kimi-env-key")
    monkeypatch.setenv("KIMI_MODEL_NAME", "kimi-env-model")
    for provider_type in ("openai_legacy", "anthropic", "_echo"):
        resolved = resolve_model(config_with(provider_type))
        assert resolved is not None
        assert resolved.provider.base_url == "https://x/v1"
        assert resolved.provider.api_key.get_secret_value() == "file-key"
        assert resolved.model.model == "m"


def test_openai_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-env-key")
    monkeypatch.setenv("KIMI_MODEL_NAME", "ignored-for-openai")
    resolved = resolve_model(config_with("openai_legacy"))
    assert resolved is not None
    assert resolved.provider.base_url == "http://localhost:11434/v1"
    assert resolved.provider.api_key.get_secret_value() == "openai-env-key"
    assert resolved.model.model == "m"
    for provider_type in ("kimi", "anthropic"):
        other = resolve_model(config_with(provider_type))
        assert other is not None and other.provider.base_url == "https://x/v1"
        assert other.provider.api_key.get_secret_value() == "file-key"


def test_empty_env_values_do_not_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_BASE_URL", "")
    monkeypatch.setenv("KIMI_API_KEY", "")
    resolved = resolve_model(config_with("kimi"))
    assert resolved is not None
    assert resolved.provider.base_url == "https://x/v1" and resolved.provider.api_key.get_secret_value() == "file-key"


@pytest.mark.parametrize(
    ("name", "configured", "expected"),
    [
        ("kimi-k2", [], set()),
        ("kimi-k2", ["image_in"], {"image_in"}),
        ("kimi-k2-thinking-turbo", [], {"thinking", "always_thinking"}),
        ("deepseek-reasoner", ["image_in"], {"image_in", "thinking", "always_thinking"}),
        ("Some-THINKING-Model", [], {"thinking", "always_thinking"}),
        ("kimi-for-coding", [], {"thinking", "image_in", "video_in"}),
        ("kimi-code", ["always_thinking"], {"thinking", "image_in", "video_in", "always_thinking"}),
    ],
)
def test_derive_capabilities(name: str, configured: list[str], expected: set[str]) -> None:
    model = ModelConfig(provider="p", model=name, max_context_size=1, capabilities=configured)  # type: ignore[arg-type]
    assert derive_capabilities(model) == expected


def test_resolved_thinking_flags() -> None:
    resolved = resolve_model(config_with("kimi", model="kimi-k2-thinking"))
    assert resolved is not None and resolved.always_thinking and resolved.supports_thinking
    plain = resolve_model(config_with("kimi", model="kimi-k2"))
    assert plain is not None and not plain.always_thinking and not plain.supports_thinking


# --------------------------------------------------------------------------- provider types and base URLs


def test_unknown_provider_type_never_suggests_the_test_types() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config_text='[providers.foo]\ntype = "openai"\n')
    message = str(info.value)
    assert message == (
        "invalid config in --config at providers.foo.type: "
        "unknown provider type 'openai' (expected one of kimi, openai_legacy, openai_responses, anthropic, gemini, vertexai)"
    )
    assert "_echo" not in message


@pytest.mark.parametrize("ptype", ["_echo", "_scripted_echo"])
def test_test_provider_types_stay_valid_with_an_empty_base_url(ptype: str) -> None:
    config = load_config(config_text=f'[providers.t]\ntype = "{ptype}"\nbase_url = ""\n').config
    assert config.providers["t"].type == ptype


@pytest.mark.parametrize("ptype", ["openai_responses", "gemini", "google_genai", "vertexai", "_chaos"])
def test_kimi_code_cli_types_load(ptype: str) -> None:
    """Every type Kimi Code CLI documents loads (and works: tests/llm); `_chaos` loads, and fails only when used."""
    config = load_config(config_text=f'[providers.k]\ntype = "{ptype}"\nbase_url = "https://x.example/v1"\n').config
    assert config.providers["k"].type == ptype


@pytest.mark.parametrize(
    "base_url", ["", "https://api.moonshot.cn/v1", "http://localhost:11434/v1", "HTTPS://Example.com", "http://[::1]:8000/v1"]
)
def test_good_and_empty_base_urls_load(base_url: str) -> None:
    config = load_config(config_text=json.dumps({"providers": {"p": {"type": "kimi", "base_url": base_url}}})).config
    assert config.providers["p"].base_url == base_url


def test_empty_base_url_filled_from_the_environment_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    resolved = resolve_model(config_with("openai_legacy", base_url=""))
    assert resolved is not None and resolved.usable and resolved.provider.base_url == "http://127.0.0.1:9/v1"


def test_audio_in_is_a_capability() -> None:
    config = load_config(
        config_text='[providers.p]\ntype = "_echo"\n[models.m]\nprovider = "p"\nmodel = "e"\n'
        'max_context_size = 10\ncapabilities = ["audio_in"]\n'
    ).config
    resolved = resolve_model(config, "m")
    assert resolved is not None and "audio_in" in resolved.capabilities


def test_audio_in_from_kimi_model_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_MODEL_CAPABILITIES", "audio_in, image_in, telepathy")
    resolved = resolve_model(config_with("kimi"))
    assert resolved is not None and resolved.capabilities == {"audio_in", "image_in"}


def test_users_are_only_offered_the_public_provider_types() -> None:
    from kimi_acp.cli.login import KINDS
    from kimi_acp.llm import PUBLIC_PROVIDER_TYPES, TEST_PROVIDER_TYPES

    # Vertex AI is set up by hand (project, location and a credentials file: docs/configuration.md).
    assert {kind.type for kind in KINDS} == set(PUBLIC_PROVIDER_TYPES) - {"vertexai"}
    assert not set(PUBLIC_PROVIDER_TYPES) & set(TEST_PROVIDER_TYPES)
