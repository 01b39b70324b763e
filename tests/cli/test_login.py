"""The pure parts of `kimi login`: answer validation, alias derivation, config editing, probing."""

from __future__ import annotations

import io
import socket
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.cli.login import (
    ACCOUNT,
    KINDS,
    Answers,
    InvalidAnswer,
    ModelInfo,
    ProbeResult,
    ProviderKind,
    check_config_text,
    derive_alias,
    edit_config_text,
    models_url,
    parse_alias,
    parse_api_key,
    parse_base_url,
    parse_context_size,
    parse_kind_choice,
    parse_model_answer,
    parse_model_list,
    parse_yes_no,
    probe_headers,
    probe_provider,
    run_login,
)
from kimi_acp.config import ConfigError, load_config, resolve_model
from tests.fakes.openai_server import FakeLLMServer

KIMI_CODE, MOONSHOT, OPENAI, ANTHROPIC, OPENAI_RESPONSES, GEMINI = KINDS
KEY = "sk-unit-secret-91b2"


def answers(kind: ProviderKind = OPENAI, *, alias: str = "local", model: str = "m", key: str = KEY) -> Answers:
    return Answers(kind, "http://127.0.0.1:9/v1", key, model, 4096, alias)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("model", "alias"),
    [
        ("kimi-for-coding", "kimi-for-coding"),
        ("gpt-4o", "gpt-4o"),
        ("deepseek-ai/DeepSeek-V3", "DeepSeek-V3"),
        ("qwen2.5-coder:7b", "qwen2.5-coder-7b"),
        ("models/gemma 3 (27B)", "gemma-3-27B"),
        ("::", "default"),
    ],
)
def test_derive_alias(model: str, alias: str) -> None:
    assert derive_alias(model) == alias
    assert parse_alias("", derive_alias(model)) == alias  # a derived alias is always acceptable


def test_parse_alias() -> None:
    assert parse_alias("  my_model.v2-x ", "d") == "my_model.v2-x"
    assert parse_alias("", "dflt") == "dflt"
    for bad in ("a b", "a/b", "-lead", ".x", "ключ", 'a"b'):
        with pytest.raises(InvalidAnswer):
            parse_alias(bad, "d")


def test_parse_kind_choice() -> None:
    assert parse_kind_choice("") is ACCOUNT  # the Kimi account (device flow) is the default
    assert parse_kind_choice("2") is KIMI_CODE
    assert parse_kind_choice(" 4 ") is OPENAI
    assert parse_kind_choice("5") is ANTHROPIC
    assert parse_kind_choice("6") is OPENAI_RESPONSES
    assert parse_kind_choice("7") is GEMINI
    for bad in ("0", "8", "x", "-1", "1.0"):
        with pytest.raises(InvalidAnswer):
            parse_kind_choice(bad)


def test_kind_defaults() -> None:
    assert (KIMI_CODE.type, KIMI_CODE.base_url, KIMI_CODE.model, KIMI_CODE.max_context_size) == (
        "kimi", "https://api.kimi.com/coding/v1", "kimi-for-coding", 262144,
    )
    assert KIMI_CODE.capabilities == ("thinking",)
    assert (MOONSHOT.type, MOONSHOT.base_url, MOONSHOT.model) == ("kimi", "https://api.moonshot.ai/v1", "kimi-k2-0905-preview")
    assert (OPENAI.type, OPENAI.model, OPENAI.max_context_size, OPENAI.key_optional) == ("openai_legacy", "", 128000, True)
    assert (ANTHROPIC.type, ANTHROPIC.base_url, ANTHROPIC.max_context_size) == ("anthropic", "https://api.anthropic.com", 200000)
    assert not any(k.key_optional for k in (KIMI_CODE, MOONSHOT, ANTHROPIC, OPENAI_RESPONSES, GEMINI))
    assert (OPENAI_RESPONSES.type, OPENAI_RESPONSES.base_url) == ("openai_responses", "https://api.openai.com/v1")
    assert (GEMINI.type, GEMINI.base_url) == ("gemini", "https://generativelanguage.googleapis.com")  # as Kimi's docs
    assert OPENAI_RESPONSES.capabilities == GEMINI.capabilities == ("thinking", "image_in")


def test_parse_base_url() -> None:
    assert parse_base_url("", "https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert parse_base_url(" http://localhost:11434/v1/ ", "x") == "http://localhost:11434/v1"
    for bad in ("localhost:8000/v1", "ftp://h/v1", "http://", "http://a b/v1"):
        with pytest.raises(InvalidAnswer):
            parse_base_url(bad, "https://d")


def test_parse_api_key() -> None:
    assert parse_api_key("  sk-abc \n", optional=False) == "sk-abc"
    assert parse_api_key("", optional=True) == ""
    with pytest.raises(InvalidAnswer):
        parse_api_key("  ", optional=False)
    for bad in ("sk abc", "sk-ä", "sk-\x07"):
        with pytest.raises(InvalidAnswer) as info:
            parse_api_key(bad, optional=True)
        assert bad.strip() not in str(info.value)  # never echo the key back


def test_parse_model_answer() -> None:
    listed = [ModelInfo(f"m{i}") for i in range(1, 26)]
    assert parse_model_answer("", "dflt", listed) == "dflt"
    assert parse_model_answer(" 3 ", "", listed) == "m3"
    assert parse_model_answer("20", "", listed) == "m20"
    assert parse_model_answer("m25", "", listed) == "m25"  # beyond the 20 shown, by name
    assert parse_model_answer("qwen2.5:7b", "", []) == "qwen2.5:7b"
    assert parse_model_answer("7", "", []) == "7"  # no list: digits are a name
    for bad, default in (("", ""), ("21", ""), ("0", ""), ("a b", "")):
        with pytest.raises(InvalidAnswer):
            parse_model_answer(bad, default, listed)


def test_parse_context_size() -> None:
    assert parse_context_size("", 128000) == 128000
    assert parse_context_size(" 4096 ", 1) == 4096
    assert parse_context_size("262_144", 1) == 262144
    assert parse_context_size("128,000", 1) == 128000
    for bad in ("0", "-5", "1.5", "lots", "12k", "١٢"):
        with pytest.raises(InvalidAnswer):
            parse_context_size(bad, 1)


def test_parse_yes_no() -> None:
    assert parse_yes_no("", True) is True
    assert parse_yes_no(" N ", True) is False
    assert parse_yes_no("yes", False) is True
    with pytest.raises(InvalidAnswer):
        parse_yes_no("maybe", True)


def test_answers_repr_hides_the_key() -> None:
    assert KEY not in repr(answers())


# --------------------------------------------------------------------------- config editing


def test_edit_new_file_starts_from_the_commented_default() -> None:
    text = edit_config_text(None, answers(KIMI_CODE, alias="kimi-for-coding", model="kimi-for-coding"))

    assert "Run `kimi login`" in text
    data = tomllib.loads(text)
    assert data["default_model"] == "kimi-for-coding"
    assert data["providers"]["kimi-for-coding"] == {"type": "kimi", "base_url": "http://127.0.0.1:9/v1", "api_key": KEY}
    assert data["models"]["kimi-for-coding"]["capabilities"] == ["thinking"]
    assert "\n\n[models]" in text  # new tables are separated from the next header
    resolved = resolve_model(load_config(config_text=text).config)
    assert resolved is not None and resolved.usable


def test_edit_keeps_comments_unknown_keys_and_other_entries() -> None:
    original = (
        "# top comment\n"
        "theme = 'dark' # inline comment\n"
        "[providers.other]\ntype = 'kimi'\nbase_url = 'https://o/v1'\n\n"
        "[models.other]\nprovider = 'other'\nmodel = 'om'\nmax_context_size = 10\n\n"
        "[loop_control]\nmax_steps_per_turn = 7\n"
    )
    text = edit_config_text(original, answers())

    assert text.startswith("# top comment\ntheme = 'dark' # inline comment\n")
    assert "[providers.other]\ntype = 'kimi'\nbase_url = 'https://o/v1'\n" in text
    data = tomllib.loads(text)
    assert data["theme"] == "dark"
    assert data["loop_control"] == {"max_steps_per_turn": 7}
    assert data["models"]["other"] == {"provider": "other", "model": "om", "max_context_size": 10}
    assert data["default_model"] == "local"
    assert data["models"]["local"] == {"provider": "local", "model": "m", "max_context_size": 4096}
    # default_model is a top-level key, not swallowed by the last table
    assert "default_model" not in data["loop_control"]


def test_edit_updates_existing_alias_in_place() -> None:
    original = (
        "[providers.local]\n"
        "# the team proxy\n"
        "type = 'kimi'\nbase_url = 'https://old/v1'\napi_key = 'sk-old'\n"
        "custom_headers = { X-Team = 'blue' }\n\n"
        "[models.local]\nprovider = 'local'\nmodel = 'm'\nmax_context_size = 1\n"
        "capabilities = ['image_in']\ndisplay_name = 'Local'\n"
    )
    text = edit_config_text(original, answers())

    assert "# the team proxy" in text
    data = tomllib.loads(text)
    assert data["providers"]["local"] == {
        "type": "openai_legacy", "base_url": "http://127.0.0.1:9/v1", "api_key": KEY, "custom_headers": {"X-Team": "blue"},
    }
    model = data["models"]["local"]
    assert model["display_name"] == "Local" and model["max_context_size"] == 4096
    assert model["capabilities"] == ["image_in"]  # same model: its capabilities still hold


def test_edit_capabilities_follow_the_model() -> None:
    original = "[providers.a]\ntype='kimi'\n[models.a]\nprovider='a'\nmodel='old'\nmax_context_size=1\ncapabilities=['image_in']\n"
    changed = tomllib.loads(edit_config_text(original, answers(alias="a", model="new")))
    assert "capabilities" not in changed["models"]["a"]
    kimi = tomllib.loads(edit_config_text(original, answers(KIMI_CODE, alias="a", model="old")))
    assert kimi["models"]["a"]["capabilities"] == ["image_in", "thinking"]


def test_edit_inline_tables_and_dotted_alias() -> None:
    original = "providers = { other = { type = 'kimi' } }\nmodels = {}\n"
    text = edit_config_text(original, answers(alias="qwen2.5"))
    data = tomllib.loads(text)
    assert data["providers"]["other"] == {"type": "kimi"}
    assert data["providers"]["qwen2.5"]["api_key"] == KEY
    assert data["models"]["qwen2.5"]["provider"] == "qwen2.5"
    assert data["default_model"] == "qwen2.5"


def test_check_config_text_refuses_unusable_results(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    check_config_text(edit_config_text(None, answers()), "local", path)
    with pytest.raises(ConfigError, match="would not be usable"):
        check_config_text(edit_config_text(None, answers(model="")), "local", path)
    with pytest.raises(ConfigError, match="not writing"):
        check_config_text("default_model = 'nope'\n", "nope", path)


# --------------------------------------------------------------------------- probing


def test_models_url_and_headers() -> None:
    assert models_url("openai_legacy", "http://h/v1") == "http://h/v1/models"
    assert models_url("anthropic", "https://api.anthropic.com") == "https://api.anthropic.com/v1/models"
    assert models_url("anthropic", "https://proxy/v1") == "https://proxy/v1/models"
    assert probe_headers("kimi", "k")["Authorization"] == "Bearer k"
    assert "Authorization" not in probe_headers("openai_legacy", "")
    anthropic = probe_headers("anthropic", "k")
    assert anthropic["x-api-key"] == "k" and anthropic["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in anthropic
    assert models_url("openai_responses", "https://api.openai.com/v1") == "https://api.openai.com/v1/models"
    assert probe_headers("openai_responses", "k")["Authorization"] == "Bearer k"
    assert models_url("gemini", GEMINI.base_url) == "https://generativelanguage.googleapis.com/v1beta/models?pageSize=1000"
    gemini = probe_headers("gemini", "k")
    assert gemini["x-goog-api-key"] == "k" and "Authorization" not in gemini


def test_parse_model_list() -> None:
    data = {"data": [{"id": "a"}, {"id": "a"}, {"id": "b", "context_length": 8192}, {"nope": 1}, "x", {"id": ""}]}
    assert parse_model_list(data) == (ModelInfo("a"), ModelInfo("b", 8192))
    assert parse_model_list({"models": []}) == ()
    assert parse_model_list([1, 2]) == ()


def test_parse_gemini_model_list() -> None:
    from tests.fakes.gemini_server import model_entry  # (google-genai's own reading of each entry)

    gemini = {
        "models": [
            model_entry("gemini-2.5-pro", input_limit=1_048_576),
            model_entry("text-embedding-004", methods=("embedContent",)),  # cannot chat: not offered
            {"name": "models/gemini-2.5-flash"},
        ]
    }
    assert parse_model_list(gemini) == (ModelInfo("gemini-2.5-pro", 1_048_576), ModelInfo("gemini-2.5-flash"))


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(models=["x", "y"], api_keys={KEY}) as srv:
        yield srv


def test_probe_outcomes(server: FakeLLMServer) -> None:
    ok = probe_provider(OPENAI, server.base_url, KEY)
    assert ok == ProbeResult("ok", models=(ModelInfo("x"), ModelInfo("y")))
    rejected = probe_provider(OPENAI, server.base_url, "sk-wrong")
    assert rejected.outcome == "rejected" and rejected.reason == "HTTP 401"
    with FakeLLMServer() as bare:  # no model list: 404, as when the URL lacks /v1
        missing = probe_provider(OPENAI, bare.url, KEY)
        assert missing.outcome == "unverified" and "HTTP 404" in missing.reason and "need /v1" in missing.reason
        assert "need /v1" not in probe_provider(OPENAI, bare.base_url, KEY).reason


def test_probe_gemini() -> None:
    from tests.fakes.gemini_server import FakeGeminiServer

    with FakeGeminiServer(models=["gemini-2.5-pro", "gemini-2.5-flash"], api_keys={KEY}) as gemini:
        ok = probe_provider(GEMINI, gemini.url, KEY)
        assert ok.outcome == "ok" and [m.id for m in ok.models] == ["gemini-2.5-pro", "gemini-2.5-flash"]
        assert ok.models[0].context == 1_048_576
        assert gemini.requests[0].headers["x-goog-api-key"] == KEY
        rejected = probe_provider(GEMINI, gemini.url, "AIza-wrong")  # Gemini answers a bad key with a 400
        assert rejected.outcome == "rejected" and "not valid" in rejected.reason


def test_probe_unreachable_never_mentions_the_key() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = probe_provider(OPENAI, f"http://127.0.0.1:{port}/v1", KEY, timeout=2)
    assert result.outcome == "unverified" and result.reason
    assert KEY not in result.reason


# --------------------------------------------------------------------------- run_login with fakes


def scripted(*replies: str | BaseException):
    """An input function answering from a list; exceptions are raised (EOF, ^C)."""
    queue = list(replies)
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        reply = queue.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    ask.prompts = prompts  # type: ignore[attr-defined]
    return ask


def offline_probe(kind: ProviderKind, base_url: str, api_key: str) -> ProbeResult:
    return ProbeResult("unverified", "offline")


def test_run_login_writes_config(tmp_path: Path) -> None:
    path = tmp_path / "share" / "config.toml"
    out, err = io.StringIO(), io.StringIO()
    code = run_login(
        input_fn=scripted("3", "", "", "", ""), secret_fn=scripted(KEY),
        out=out, err=err, config_path=path, probe=offline_probe,
    )
    assert code == 0, err.getvalue()
    data = tomllib.loads(path.read_text())
    assert data["default_model"] == "kimi-k2-0905-preview"
    assert data["providers"]["kimi-k2-0905-preview"]["base_url"] == "https://api.moonshot.ai/v1"
    assert "could not verify (offline); saving anyway" in err.getvalue()
    assert KEY not in out.getvalue() + err.getvalue()


@pytest.mark.parametrize(("exc", "code"), [(KeyboardInterrupt(), 130), (EOFError(), 1)])
def test_run_login_cancelled(tmp_path: Path, exc: BaseException, code: int) -> None:
    path = tmp_path / "config.toml"
    err = io.StringIO()
    result = run_login(
        input_fn=scripted("4", "http://h/v1", "m", exc), secret_fn=scripted(""),
        out=io.StringIO(), err=err, config_path=path, probe=offline_probe,
    )
    assert result == code
    assert "Login cancelled." in err.getvalue()
    assert not path.exists()


def test_run_login_broken_config_fails_before_any_question(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("default_model = 'ghost'\n")
    ask = scripted()
    err = io.StringIO()
    assert run_login(input_fn=ask, secret_fn=ask, out=io.StringIO(), err=err, config_path=path) == 2
    assert ask.prompts == []  # type: ignore[attr-defined]
    assert err.getvalue().startswith(f"kimi: error: invalid config in {path}")
    assert err.getvalue().count("\n") == 1


async def test_login_gemini_end_to_end(tmp_path: Path) -> None:
    """Choice 7 with the real probe: the key is checked, the listed models and their window are
    offered, and the saved model answers a prompt through the same fake."""
    from kimi_acp.llm import create_provider
    from kimi_acp.llm.types import Message
    from tests.fakes.gemini_server import FakeGeminiServer, text_stream

    path = tmp_path / "config.toml"
    with FakeGeminiServer(models=["gemini-2.5-pro", "gemini-2.5-flash"], api_keys={KEY}) as gemini:
        out, err = io.StringIO(), io.StringIO()
        code = run_login(
            input_fn=scripted("7", gemini.url, "2", "", ""), secret_fn=scripted(KEY),
            out=out, err=err, config_path=path,
        )
        assert code == 0, err.getvalue()
        assert "1. gemini-2.5-pro" in out.getvalue() and "OK: the server accepted the key." in out.getvalue()
        data = tomllib.loads(path.read_text())
        assert data["default_model"] == "gemini-2.5-flash"
        assert data["providers"]["gemini-2.5-flash"] == {"type": "gemini", "base_url": gemini.url, "api_key": KEY}
        model = data["models"]["gemini-2.5-flash"]
        assert model["max_context_size"] == 1_048_576 and model["capabilities"] == ["thinking", "image_in"]
        resolved = resolve_model(load_config(path).config)
        assert resolved is not None
        provider = create_provider(resolved)
        gemini.enqueue(text_stream("hello"))
        assert [p.text async for p in provider.stream("", [], [Message(role="user", content="hi")])] == ["hello"]  # type: ignore[union-attr]
        await provider.aclose()
        assert gemini.problems == []


def test_login_openai_responses(tmp_path: Path, server: FakeLLMServer) -> None:
    path = tmp_path / "config.toml"
    out, err = io.StringIO(), io.StringIO()
    code = run_login(
        input_fn=scripted("6", server.base_url, "1", "", ""), secret_fn=scripted(KEY),
        out=out, err=err, config_path=path,
    )
    assert code == 0, err.getvalue()
    data = tomllib.loads(path.read_text())
    assert data["providers"]["x"]["type"] == "openai_responses"
    assert data["models"]["x"]["max_context_size"] == 400000
