"""The ACP SDK imported with deferred model builds (kimi_acp/acp/sdk_import.py) behaves exactly as
the SDK imported plainly: same defaults, same validation and dumps; and nothing is built eagerly.
Each side runs in a fresh interpreter (the import happens once per process)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import json, sys
if sys.argv[1] == "deferred":
    from kimi_acp.acp.sdk_import import import_sdk
    import_sdk()
else:
    import acp, acp.core
import acp.schema as s
import pydantic
from pydantic import BaseModel, RootModel
out = {"built_at_import": sorted(
    n for n, c in vars(s).items()
    if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == "acp.schema" and c.__pydantic_complete__
)}
# every model-valued default, as an instance would hold it
for n, c in sorted(vars(s).items()):
    if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == "acp.schema":
        for k, f in c.model_fields.items():
            d = f.default
            if isinstance(d, BaseModel):
                out[f"{n}.{k}"] = [type(d).__name__, sorted(d.model_fields_set), d.model_dump(mode="json", by_alias=True)]
        out[f"{n}.custom_init"] = c.__pydantic_custom_init__
out["initialize"] = s.InitializeRequest.model_validate({"protocolVersion": 1}).model_dump(mode="json", by_alias=True)
out["caps"] = s.AgentCapabilities().model_dump(mode="json", by_alias=True)
out["caps_set"] = sorted(s.AgentCapabilities().model_fields_set)
out["response"] = s.AgentResponse.model_validate({"id": 1, "result": {"protocolVersion": 1}}).model_dump(mode="json", by_alias=True)
out["new_session"] = s.NewSessionRequest.model_validate({"cwd": "/x", "mcpServers": [{"name": "a", "command": "c", "args": [], "env": []}]}).model_dump(mode="json", by_alias=True)
try:
    s.InitializeRequest.model_validate({"protocolVersion": -1})
    out["invalid"] = "accepted"
except pydantic.ValidationError as exc:
    out["invalid"] = [e["type"] for e in exc.errors()]
from acp.agent import connection
out["adapter"] = connection._CREATE_ELICITATION_RESPONSE_ADAPTER.validate_python({"action": "cancel"}).model_dump(mode="json", by_alias=True)
# and pydantic itself is left as it was found
out["restored"] = [pydantic.ConfigDict.__name__, pydantic.TypeAdapter.__module__, "defer_build" in RootModel.model_config,
                   BaseModel.__init__.__qualname__]
print(json.dumps(out, sort_keys=True))
"""


def probe(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-W", "error", "-c", PROBE, mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_deferred_import_builds_nothing_and_changes_nothing():
    deferred, plain = probe("deferred"), probe("plain")
    assert deferred.pop("built_at_import") == []
    assert len(plain.pop("built_at_import")) > 5  # the SDK alone builds a dozen models at import
    assert deferred == plain
    assert deferred["restored"] == ["ConfigDict", "pydantic.type_adapter", False, "BaseModel.__init__"]
