"""Subagent instances of a session: `<session dir>/subagents/<agent_id>/meta.json`, Kimi's format.

The record says what type the instance is, which model it was launched with and whether it is
running, so `resume` can continue it (in this process or after a restart) and refuse to run one
instance twice at once. The instance's context.jsonl and wire.jsonl sit beside meta.json.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..util.fs import atomic_write_text, make_dirs_below

log = logging.getLogger(__name__)

Status = Literal["idle", "running_foreground", "running_background", "completed", "failed", "killed"]


@dataclass(frozen=True)
class LaunchSpec:
    agent_id: str
    subagent_type: str
    model_override: str | None
    effective_model: str | None
    created_at: float
    work_dir: str | None = None


@dataclass(frozen=True)
class InstanceRecord:
    agent_id: str
    subagent_type: str
    status: Status
    description: str
    created_at: float
    updated_at: float
    launch_spec: LaunchSpec
    last_task_id: str | None = None


def new_agent_id() -> str:
    return f"a{uuid.uuid4().hex[:8]}"


class SubagentStore:
    def __init__(self, session_dir: Path) -> None:
        self.root = session_dir / "subagents"

    def meta_path(self, agent_id: str) -> Path:
        return self.root / agent_id / "meta.json"

    def create(self, agent_id: str, *, subagent_type: str, description: str, model: str | None,
               work_dir: str) -> InstanceRecord:
        now = time.time()
        launch = LaunchSpec(agent_id, subagent_type, model, model, now, work_dir)
        record = InstanceRecord(agent_id, subagent_type, "idle", description, now, now, launch)
        self.write(record)
        return record

    def get(self, agent_id: str) -> InstanceRecord | None:
        if not agent_id or "/" in agent_id or agent_id in (".", ".."):
            return None
        try:
            data = json.loads(self.meta_path(agent_id).read_text(encoding="utf-8"))
            return _record(data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("subagent %s: unreadable meta.json (%s)", agent_id, exc)
            return None

    def update(self, record: InstanceRecord, **changes: Any) -> InstanceRecord:
        record = replace(record, updated_at=time.time(), **changes)
        self.write(record)
        return record

    def write(self, record: InstanceRecord) -> None:
        path = self.meta_path(record.agent_id)
        make_dirs_below(self.root.parent, path.parent)  # never re-creates a deleted session
        atomic_write_text(path, json.dumps(asdict(record), ensure_ascii=False, indent=2), make_parents=False)


def _record(data: dict[str, Any]) -> InstanceRecord:
    launch = data["launch_spec"]
    spec = LaunchSpec(
        str(launch["agent_id"]), str(launch["subagent_type"]), launch.get("model_override"),
        launch.get("effective_model"), float(launch.get("created_at") or 0), launch.get("work_dir"),
    )
    status = data.get("status", "idle")
    if status not in ("idle", "running_foreground", "running_background", "completed", "failed", "killed"):
        raise ValueError(f"unknown status {status!r}")
    return InstanceRecord(
        str(data["agent_id"]), str(data["subagent_type"]), status, str(data.get("description", "")),
        float(data.get("created_at") or 0), float(data.get("updated_at") or 0), spec, data.get("last_task_id"),
    )
