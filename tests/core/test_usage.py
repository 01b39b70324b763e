"""core/usage.py: the session's usage meter and a request's cost (the config's `price`, or the
provider's own figure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.config import ModelPrice, load_config, resolve_model
from kimi_acp.core.usage import UsageMeter, UsageReading, request_cost
from kimi_acp.llm.types import ChatStream
from kimi_acp.wire.types import TokenUsage


def reply(usage: TokenUsage | None, cost: float | None = None) -> ChatStream:
    stream = ChatStream()
    stream.usage, stream.cost = usage, cost
    return stream


def model(tmp_path: Path, price: str) -> object:
    path = tmp_path / "config.toml"
    path.write_text(
        'default_model = "m"\n[providers.p]\ntype = "_echo"\n'
        f'[models.m]\nprovider = "p"\nmodel = "x"\nmax_context_size = 1000\n{price}'
    )
    return resolve_model(load_config(path).config)


def test_a_price_prices_each_kind_of_token_and_cached_input_defaults_to_input() -> None:
    usage = TokenUsage(input_other=1_000_000, input_cache_read=2_000_000, input_cache_creation=1_000_000, output=500_000)
    assert ModelPrice(input=2, output=8).cost(usage) == 2 + 4 + 2 + 4
    assert ModelPrice(input=2, output=8, cache_read=0.5, cache_write=2.5).cost(usage) == 2 + 1 + 2.5 + 4


def test_the_providers_figure_wins_and_nothing_known_is_no_cost(tmp_path: Path) -> None:
    priced = model(tmp_path, "price = { input = 1.0, output = 3.0, currency = \"CNY\" }\n")
    usage = TokenUsage(input_other=1000, output=1000)
    assert request_cost(usage, None, priced) == (pytest.approx(0.004), "CNY")
    assert request_cost(usage, 0.5, priced) == (0.5, "USD")
    assert request_cost(usage, None, model(tmp_path, "")) is None
    assert request_cost(None, None, priced) is None  # no usage reported: no guess


def test_the_meter_counts_readings_and_keeps_one_cost_per_currency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    session = sessions.create(tmp_path)
    meter = UsageMeter(session)
    start = meter.reading()
    meter.record(reply(TokenUsage(input_other=10, output=5, input_cache_read=3)), None)
    meter.record(reply(None), None)  # a provider that reported nothing: not counted, not guessed
    assert meter.reading() - start == UsageReading(input_other=10, input_cache_read=3, output=5, requests=1)
    assert (meter.reading() - start).total == 18
    assert meter.session_cost() is None
    free = model(tmp_path, "price = { input = 0, output = 0 }\n")
    meter.record(reply(TokenUsage(input_other=10)), free)
    assert meter.session_cost() == (0.0, "USD")  # a free model's cost is known: nothing
    meter.record(reply(TokenUsage(input_other=10), cost=0.25), None)
    assert meter.session_cost() == (0.25, "USD")
    meter.save()
    assert sessions.find(tmp_path, session.id).state.cost == {"USD": 0.25}
    meter.record(reply(TokenUsage(input_other=1_000_000)), model(tmp_path, "price = { input = 1, output = 1, currency = \"EUR\" }\n"))
    assert meter.session_cost() is None  # dollars and euros do not add up
    assert session.state.cost == {"USD": 0.25, "EUR": 1.0}
