"""The ACP SDK imported with deferred model builds (kimi_acp/_compat/acp_sdk_import.py) behaves exactly as
the SDK imported plainly: same defaults, same validation and dumps; and nothing is built eagerly.
Each side runs in a fresh interpreter (the import happens once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.smoke  # also run in CI's smoke jobs (.ci/run)

PROBE = r"""
import json, sys
if sys.argv[1] == "lazy":
    from kimi_acp._compat.acp_schema_index import write_index
    assert write_index() is not None
if sys.argv[1] in ("deferred", "lazy"):
    from kimi_acp._compat.acp_sdk_import import import_sdk
    import_sdk()
else:
    import acp, acp.core
import acp.schema as s
from kimi_acp._compat import acp_lazy_schema as lazy_schema
assert lazy_schema.is_lazy() == (sys.argv[1] == "lazy")
import pydantic
from pydantic import BaseModel, RootModel
out = {"built_at_import": sorted(
    n for n, c in list(vars(s).items())
    if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == "acp.schema" and c.__pydantic_complete__
)}
created_at_import = len(vars(s))
# what a session does first, before anything else touches the module
out["initialize"] = s.InitializeRequest.model_validate({"protocolVersion": 1}).model_dump(mode="json", by_alias=True)
out["caps"] = repr(s.AgentCapabilities())
out["client_caps"] = repr(s.ClientCapabilities())
out["caps_set"] = sorted(s.AgentCapabilities().model_fields_set)
out["response"] = s.AgentResponse.model_validate({"id": 1, "result": {"protocolVersion": 1}}).model_dump(mode="json", by_alias=True)
out["new_session"] = s.NewSessionRequest.model_validate({"cwd": "/x", "mcpServers": [{"name": "a", "command": "c", "args": [], "env": []}]}).model_dump(mode="json", by_alias=True)
out["update"] = repr(s.SessionNotification.model_validate({"sessionId": "x", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T", "content": [{"type": "diff", "path": "/p", "newText": "n"}]}}))
for n in dir(s):
    getattr(s, n)  # every name, created on access when lazy (and the generics they register)
models = [(n, getattr(s, n)) for n in dir(s)]
sys.stderr.write(f"{sys.argv[1]}: {created_at_import} names at import, {len(vars(s))} now\n")
# every model-valued default, as an instance would hold it
for n, c in models:
    if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == "acp.schema":
        for k, f in c.model_fields.items():
            d = f.default
            if isinstance(d, BaseModel):
                out[f"{n}.{k}"] = [repr(d), sorted(d.model_fields_set), d.model_dump(mode="json", by_alias=True)]
        out[f"{n}.custom_init"] = c.__pydantic_custom_init__
try:
    s.InitializeRequest.model_validate({"protocolVersion": -1})
    out["invalid"] = "accepted"
except pydantic.ValidationError as exc:
    out["invalid"] = [e["type"] for e in exc.errors()]
from acp.agent import connection

out["adapter"] = connection._CREATE_ELICITATION_RESPONSE_ADAPTER.validate_python({"action": "cancel"}).model_dump(mode="json", by_alias=True)
# every model's fields and JSON Schema once built (descriptions aside: the deferred import does
# not parse attribute docstrings, which only feed descriptions)
def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node
for n, c in models:
    if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == "acp.schema":
        out[f"{n}.schema"] = strip(c.model_json_schema(by_alias=True))
        out[f"{n}.fields"] = {k: [repr(f.annotation), f.alias, f.is_required(), repr(f.default), repr(f.metadata)]
                              for k, f in c.model_fields.items()}
# and pydantic itself is left as it was found
from pydantic._internal import _typing_extra
out["restored"] = [pydantic.ConfigDict.__name__, pydantic.TypeAdapter.__module__, "defer_build" in RootModel.model_config,
                   BaseModel.__init__.__qualname__, _typing_extra.try_eval_type.__module__]
print(json.dumps(out, sort_keys=True))
"""


def probe(mode: str, cache: Path | None = None) -> dict:
    env = {**os.environ, "KIMI_CACHE_DIR": str(cache or "/nonexistent-kimi-cache")}
    env.pop("KIMI_PLAIN_STARTUP", None)  # the tricks themselves are under test (also in CI's plain smoke job)
    done = subprocess.run([sys.executable, "-W", "error", "-c", PROBE, mode], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_deferred_import_builds_nothing_and_changes_nothing():
    deferred, plain = probe("deferred"), probe("plain")
    assert deferred.pop("built_at_import") == []
    assert len(plain.pop("built_at_import")) > 5  # the SDK alone builds a dozen models at import
    assert deferred == plain
    assert deferred["restored"] == ["ConfigDict", "pydantic.type_adapter", False, "BaseModel.__init__", "pydantic._internal._typing_extra"]
    assert sum(k.endswith(".schema") for k in deferred) > 250  # every model compared


def test_the_lazy_schema_module_changes_nothing_either(tmp_path: Path):
    """acp.schema created model by model from the cached index (_compat/acp_lazy_schema.py) behaves as the
    SDK imported plainly, whether a model is reached by validation, as a default or by name."""
    lazy, plain = probe("lazy", tmp_path), probe("plain")
    assert lazy.pop("built_at_import") == []
    plain.pop("built_at_import")
    assert lazy == plain
    assert list(tmp_path.glob("acp-schema-*.index"))
