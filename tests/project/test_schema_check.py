"""The ACP schema check of the test client cannot pass vacuously.

A missing schema, a message that does not validate, and an error raised while validating each
fail the test: the SDK calls observers inside `try/except Exception` and only logs, so none of
them may depend on an exception reaching the test. The committed schema copy must match its
recorded source and the npm package that `tests/node/package-lock.json` pins.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.connection import StreamDirection, StreamEvent
from referencing.exceptions import Unresolvable

from tests.support import acp_client
from tests.support.acp_client import EditorClient, Recorder, Schemas, load_schemas, spawn_acp
from tests.support.acp_fixtures import acp_env, write_config

TESTS = Path(__file__).resolve().parents[1]
COPY = TESTS / "acp_schema"
NODE_DIR = TESTS / "node"
SDK = "@agentclientprotocol/sdk"

BAD_UPDATE = {"sessionId": "s1", "update": {"sessionUpdate": "no_such_kind"}}
GOOD_UPDATE = {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}

# A stand-in agent: answers `initialize` (valid), sending the notification in argv[1] first.
FAKE_AGENT = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": json.loads(sys.argv[1])}), flush=True)
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1}}), flush=True)
"""


def incoming(method: str, params: Any) -> StreamEvent:
    return StreamEvent(StreamDirection.INCOMING, {"jsonrpc": "2.0", "method": method, "params": params})


async def run_fake_agent(recorder: Recorder, notification: dict[str, Any]) -> None:
    """One `initialize` against FAKE_AGENT through the real SDK connection and its observer plumbing."""
    client = EditorClient(recorder)
    async with acp.spawn_agent_process(
        client, sys.executable, "-c", FAKE_AGENT, json.dumps(notification), observers=[recorder.observe]
    ) as (conn, _process):
        await conn.initialize(protocol_version=1)
    assert len(recorder.incoming) == 2  # the notification and the result were both observed


# --------------------------------------------------------------------------- a missing schema


def test_an_empty_schema_dir_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="ACP schema not found"):
        Schemas(tmp_path)
    with pytest.raises(FileNotFoundError, match="ACP schema not found"):
        Recorder(schemas=load_schemas(tmp_path))


def test_one_missing_file_raises(tmp_path: Path) -> None:
    (tmp_path / "schema.unstable.json").write_bytes((COPY / "v1" / "schema.unstable.json").read_bytes())
    with pytest.raises(FileNotFoundError, match=r"schema\.json"):
        Schemas(tmp_path)


async def test_spawn_acp_fails_before_starting_without_the_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acp_client, "SCHEMA_DIR", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="ACP schema not found"):
        Recorder()
    with pytest.raises(FileNotFoundError, match="ACP schema not found"):
        async with spawn_acp(acp_env(tmp_path)):
            pytest.fail("the agent must not start without a schema")


def test_a_definition_missing_from_the_schema_is_an_error() -> None:
    with pytest.raises(KeyError, match="NoSuchResponse"):
        load_schemas().validate("NoSuchResponse", {})


# --------------------------------------------------------------------------- invalid messages


def test_an_invalid_message_is_a_violation_and_fails_check() -> None:
    recorder = Recorder()
    recorder.observe(incoming("session/update", GOOD_UPDATE))
    recorder.check()  # a valid message passes
    recorder.observe(incoming("session/update", BAD_UPDATE))
    assert recorder.validated == 2
    assert recorder.violations and "no_such_kind" in recorder.violations[0]
    with pytest.raises(AssertionError, match="ACP schema check failed"):
        recorder.check()


def test_an_update_only_the_unstable_schema_has_is_checked_against_it_alone() -> None:
    """`plan_update` is no variant of the stable schema's SessionUpdate: a valid one passes, a
    malformed one (no planId) is still a violation of the unstable schema."""
    good = {"sessionId": "s", "update": {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "# P"}}}
    bad = {"sessionId": "s", "update": {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "content": "# P"}}}
    assert load_schemas().validate("SessionNotification", good) == []
    (problem,) = load_schemas().validate("SessionNotification", bad)
    assert problem.startswith("schema.unstable.json:")
    # a stable kind is still checked against both
    assert load_schemas().validate("SessionNotification", {"sessionId": "s", "update": {"sessionUpdate": "plan"}})


def test_unknown_methods_and_results_without_a_definition_are_violations() -> None:
    recorder = Recorder()
    recorder.observe(incoming("made/up", {}))
    recorder.observe(StreamEvent(StreamDirection.OUTGOING, {"jsonrpc": "2.0", "id": 7, "method": "_ext/thing", "params": {}}))
    recorder.observe(StreamEvent(StreamDirection.INCOMING, {"jsonrpc": "2.0", "id": 7, "result": {}}))
    recorder.observe(StreamEvent(StreamDirection.INCOMING, {"jsonrpc": "2.0", "id": 8, "result": {}}))  # never asked
    problems = "\n".join(recorder.problems())
    assert "unexpected method from agent: made/up" in problems
    assert "no schema definition for the result of _ext/thing" in problems
    assert "response to a request never sent" in problems


def test_a_response_seen_before_its_request_is_still_validated() -> None:
    recorder = Recorder()
    recorder.observe(StreamEvent(StreamDirection.INCOMING, {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "one"}}))
    recorder.observe(StreamEvent(StreamDirection.OUTGOING, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}))
    assert recorder.validated == 1
    assert recorder.violations and "InitializeResponse" in recorder.violations[0]


async def test_an_invalid_message_through_the_sdk_fails_check() -> None:
    recorder = Recorder()
    await run_fake_agent(recorder, BAD_UPDATE)
    with pytest.raises(AssertionError, match="no_such_kind"):
        recorder.check()


async def test_a_valid_exchange_through_the_sdk_passes() -> None:
    recorder = Recorder()
    await run_fake_agent(recorder, GOOD_UPDATE)
    recorder.check()
    assert recorder.validated == 2


# --------------------------------------------------------------------------- errors while validating


def broken_schemas(directory: Path) -> Schemas:
    """Schemas whose every definition points at a `$ref` that does not resolve."""
    defs = {name: {"$ref": "#/$defs/Missing"} for name in ("InitializeResponse", "SessionNotification")}
    for name in ("schema.unstable.json", "schema.json"):
        (directory / name).write_text(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs}))
    return Schemas(directory)


def test_an_error_while_validating_is_recorded_and_fails_check(tmp_path: Path) -> None:
    recorder = Recorder(schemas=broken_schemas(tmp_path))
    with pytest.raises(Unresolvable):  # the `$ref` that does not resolve
        recorder.observe(incoming("session/update", GOOD_UPDATE))
    assert recorder.errors and not recorder.violations
    with pytest.raises(AssertionError, match="error while validating"):
        recorder.check()


async def test_an_error_inside_the_sdks_observer_call_is_not_swallowed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder(schemas=broken_schemas(tmp_path))
    await run_fake_agent(recorder, GOOD_UPDATE)  # the SDK catches and logs what the observer raises...
    assert "Stream observer failed" in caplog.text
    assert len(recorder.errors) == 2  # ...but the recorder kept it
    with pytest.raises(AssertionError, match="error while validating"):
        recorder.check()


# --------------------------------------------------------------------------- it really validates


async def test_a_real_kimi_acp_session_is_validated(tmp_path: Path, work_dir: Path) -> None:
    share = tmp_path / "share"
    share.mkdir()
    write_config(share, ["text: hello"])
    async with spawn_acp(acp_env(share)) as agent:
        await agent.initialize()
        session = await agent.new_session(work_dir)
        await agent.prompt(session.session_id, "hi")
        recorder = agent.recorder
    assert recorder.schemas.directory == COPY / "v1"
    assert recorder.updates(session.session_id)
    # initialize, session/new and session/prompt results plus every session/update
    assert recorder.validated == 3 + len(recorder.updates())
    assert recorder.validated == len(recorder.incoming) and not recorder.problems()


# --------------------------------------------------------------------------- the committed copy


def source() -> dict[str, Any]:
    return json.loads((COPY / "source.json").read_text())


def test_the_copy_matches_its_recorded_hashes() -> None:
    files = source()["files"]
    assert sorted(files) == ["v1/schema.json", "v1/schema.unstable.json"]
    for name, entry in files.items():
        assert hashlib.sha256((COPY / name).read_bytes()).hexdigest() == entry["sha256"], name
    assert (COPY / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_the_copy_is_of_the_npm_version_the_lockfile_pins() -> None:
    pinned = json.loads((NODE_DIR / "package-lock.json").read_text())["packages"][f"node_modules/{SDK}"]
    recorded = source()
    assert recorded["package"] == SDK
    assert (recorded["version"], recorded["integrity"]) == (pinned["version"], pinned["integrity"]), (
        "tests/node pins another SDK: refresh tests/acp_schema (see its README)"
    )


def test_the_copy_equals_the_installed_npm_package(unavailable: Any) -> None:
    package = NODE_DIR / "node_modules" / SDK
    if not (package / "package.json").exists():
        unavailable(f"{package} is not installed (npm install --prefix tests/node)")
    assert json.loads((package / "package.json").read_text())["version"] == source()["version"]
    for name, entry in source()["files"].items():
        assert (package / entry["from"]).read_bytes() == (COPY / name).read_bytes(), (
            f"{name} differs from {SDK}'s {entry['from']}: refresh tests/acp_schema (see its README)"
        )
