"""Shell, its background tasks and the write tools in a session with a sandbox (issue #24): what
runs unasked inside it, what still asks, the note a refused command gets, cancel through bwrap,
and a client terminal that runs the sandbox's launcher."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pydantic
import pytest

from kimi_acp import sessions
from kimi_acp.config import SandboxSettings
from kimi_acp.frontends.acp.kaos import AcpKaos, ClientCapabilities
from kimi_acp.kaos.tasks import TaskTable
from kimi_acp.permissions.protected import protected_reason
from kimi_acp.sandbox import detect
from kimi_acp.sandbox.session import SessionSandbox
from kimi_acp.tools.base import ToolContext, ToolRejectedError
from kimi_acp.tools.shell import Shell
from kimi_acp.tools.write import WriteFile
from tests.support.processes import live_pids, sleep_marker, wait_until

if TYPE_CHECKING:
    from .conftest import FakeApprover

pytestmark = pytest.mark.requires_tool("bwrap")


@pytest.fixture(autouse=True)
def _fresh_detection() -> Iterator[None]:
    detect.forget()
    yield
    detect.forget()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the workspace and outside /tmp (the sandbox's /tmp is its own)."""
    path = Path("/var/tmp") / f"kimi-sandbox-test-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def sandbox(work_dir: Path) -> AsyncIterator[SessionSandbox]:
    box = SessionSandbox(sessions.create(work_dir), SandboxSettings(mode="workspace-write"))
    yield box
    await box.aclose()


@pytest.fixture
async def sctx(ctx: ToolContext, sandbox: SessionSandbox, tmp_path: Path) -> AsyncIterator[ToolContext]:
    (tmp_path / "session").mkdir()
    table = TaskTable(tmp_path / "session" / "tasks")
    yield replace(ctx, sandbox=sandbox, tasks=table)
    await table.aclose()


async def run(tool: Any, ctx: ToolContext, **arguments: Any) -> Any:
    return await tool.run(tool.params.model_validate(arguments), ctx)


async def test_a_command_inside_runs_unasked_and_lands(
    sctx: ToolContext, approver: FakeApprover, work_dir: Path
) -> None:
    result = await run(Shell(), sctx, command="touch inside && echo $TMPDIR")
    assert not result.is_error and result.output == "/tmp\n"
    assert (work_dir / "inside").exists() and approver.requests == []


async def test_a_credentials_file_the_sandbox_leaves_readable_still_asks(
    sctx: ToolContext, approver: FakeApprover, work_dir: Path
) -> None:
    (work_dir / ".env").write_text("API_KEY=1\n")
    result = await run(Shell(), sctx, command="cat .env")
    (asked,) = approver.requests  # a project's .env is readable inside: the card warns, as ReadFile's
    assert "`.env`, which holds credentials" in (asked.warning or "") and asked.sandbox is not None
    assert result.output == "API_KEY=1\n"  # the fake approver approved it
    approver.requests.clear()
    await run(Shell(), sctx, command="cp /bin/true .git/hooks/pre-commit || true")  # read-only inside: no question
    assert approver.requests == []


async def test_under_landlock_a_command_naming_a_git_hook_still_asks(
    ctx: ToolContext, approver: FakeApprover, work_dir: Path, monkeypatch: pytest.MonkeyPatch,
    unavailable: Callable[[str], NoReturn],
) -> None:
    from kimi_acp.sandbox.landlock import landlock_abi

    if landlock_abi() < 4:
        unavailable(f"the kernel's Landlock ABI is {landlock_abi()} (4 or later is used for the sandbox)")
    monkeypatch.setenv(detect.ENV_VAR, "landlock")  # Landlock hides nothing and locks no hook
    detect.forget()
    (work_dir / ".git" / "hooks").mkdir(parents=True)
    box = SessionSandbox(sessions.create(work_dir), SandboxSettings(mode="workspace-write"))
    try:
        lctx = replace(ctx, sandbox=box)
        result = await run(Shell(), lctx, command="touch inside")
        assert not result.is_error, result.message
        assert approver.requests == [] and (work_dir / "inside").exists()
        await run(Shell(), lctx, command="cp /bin/true .git/hooks/pre-commit")
        (asked,) = approver.requests
        assert "a git hook" in (asked.warning or "") and "landlock" in (asked.sandbox or "").lower()
    finally:
        await box.aclose()


@pytest.mark.parametrize(
    ("command", "named"),
    [("echo ../.gx > .git/commondir", ".git/commondir"), ("mv .git .git-orig", ".git"),
     ("printf x > .git/config.worktree", ".git/config.worktree")],
)  # fmt: skip
async def test_under_landlock_a_command_naming_git_metadata_asks(
    ctx: ToolContext, approver: FakeApprover, work_dir: Path, monkeypatch: pytest.MonkeyPatch,
    unavailable: Callable[[str], NoReturn], command: str, named: str,
) -> None:
    """Landlock cannot keep `.git` read-only inside a writable dir, so a command naming it asks
    (issue #30); approved, it runs in the sandbox."""
    from kimi_acp.sandbox.landlock import landlock_abi

    if landlock_abi() < 4:
        unavailable(f"the kernel's Landlock ABI is {landlock_abi()} (4 or later is used for the sandbox)")
    monkeypatch.setenv(detect.ENV_VAR, "landlock")
    detect.forget()
    (work_dir / ".git").mkdir()
    box = SessionSandbox(sessions.create(work_dir), SandboxSettings(mode="workspace-write"))
    try:
        approver.reject = True
        with pytest.raises(ToolRejectedError):
            await run(Shell(), replace(ctx, sandbox=box), command=command)
        (asked,) = approver.requests
        assert asked.warning == f"The command names `{named}`: {protected_reason(work_dir / named)}."
        assert "git's metadata" in asked.warning or "config" in asked.warning
        assert not (work_dir / ".git" / "commondir").exists() and (work_dir / ".git").is_dir()
    finally:
        await box.aclose()


async def test_a_refused_write_fails_with_the_sandbox_named(
    sctx: ToolContext, approver: FakeApprover, outside: Path
) -> None:
    result = await run(Shell(), sctx, command=f"touch {outside}/x")
    assert result.is_error and "Read-only file system" in result.output and not (outside / "x").exists()
    assert result.message.startswith(
        "Command failed with exit code: 1. Note: this command ran in the workspace-write sandbox (bubblewrap)"
    )
    assert "`outside_sandbox: true`" in result.message and approver.requests == []


async def test_running_outside_asks_with_the_reason(
    sctx: ToolContext, approver: FakeApprover, outside: Path
) -> None:
    with pytest.raises(pydantic.ValidationError, match="reason is required"):
        Shell.params.model_validate({"command": "true", "outside_sandbox": True})
    result = await run(
        Shell(), sctx, command=f"touch {outside}/x", outside_sandbox=True, reason="it writes the build cache"
    )
    assert not result.is_error and (outside / "x").exists()
    (asked,) = approver.requests
    assert asked.description == f"Run command `touch {outside}/x` outside the sandbox"
    assert asked.sandbox.startswith("Runs OUTSIDE the sandbox (workspace-write (bubblewrap, no network))")  # type: ignore[union-attr]
    assert asked.sandbox.endswith("The model's reason: it writes the build cache")  # type: ignore[union-attr]


async def test_a_rejected_rerun_runs_nothing(
    sctx: ToolContext, approver: FakeApprover, outside: Path
) -> None:
    approver.reject = True
    with pytest.raises(Exception, match="rejected"):
        await run(Shell(), sctx, command=f"touch {outside}/x", outside_sandbox=True, reason="needs it")
    assert not (outside / "x").exists()


async def test_background_tasks_run_in_the_sandbox(
    sctx: ToolContext, approver: FakeApprover, outside: Path, work_dir: Path
) -> None:
    started = await run(Shell(), sctx, command=f"touch bg-inside; touch {outside}/bg", run_in_background=True,
                        description="writes")  # fmt: skip
    assert "ran in the workspace-write sandbox" in started.output and approver.requests == []
    assert sctx.tasks is not None
    (task,) = sctx.tasks.list(active_only=False)
    await sctx.tasks.wait(task.id, 10)
    assert task.sandbox == "bubblewrap" and task.status == "failed"
    assert (work_dir / "bg-inside").exists() and not (outside / "bg").exists()
    assert "ran in the bubblewrap sandbox" in (sctx.tasks.take_finished_note() or "")


def sleeps(marker: str) -> list[int]:
    """The `sleep` processes with the marker (not bwrap or the shell, whose command lines hold it too)."""
    found = []
    for pid in live_pids(marker):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0"):
                found.append(pid)
        except OSError:
            pass
    return found


async def test_cancel_kills_the_whole_sandboxed_tree(sctx: ToolContext) -> None:
    marker = sleep_marker()
    task = asyncio.create_task(run(Shell(), sctx, command=f"sleep {marker} & sleep {marker} & wait"))
    assert await wait_until(lambda: len(sleeps(marker)) == 2, timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_until(lambda: not live_pids(marker), timeout=5), live_pids(marker)


async def test_a_timeout_kills_the_whole_sandboxed_tree(sctx: ToolContext) -> None:
    marker = sleep_marker()
    result = await run(Shell(), sctx, command=f"sleep {marker} & sleep {marker}; wait", timeout=1)
    assert result.message.startswith("Command killed by timeout (1s)")
    assert await wait_until(lambda: not live_pids(marker), timeout=5), live_pids(marker)


async def test_edits_inside_the_workspace_run_unasked(
    sctx: ToolContext, approver: FakeApprover, work_dir: Path, outside: Path
) -> None:
    (work_dir / ".git" / "hooks").mkdir(parents=True)
    await run(WriteFile(), sctx, path="a.txt", content="a\n")
    assert (work_dir / "a.txt").read_text() == "a\n" and approver.requests == []
    await run(WriteFile(), sctx, path=".git/hooks/pre-commit", content="#!/bin/sh\n")  # protected: asks
    await run(WriteFile(), sctx, path=str(outside / "b.txt"), content="b\n")  # outside: asks
    assert [r.action for r in approver.requests] == ["edit file", "edit file outside of working directory"]
    assert approver.requests[0].warning is not None


async def test_read_only_asks_for_edits_and_writes_only_its_temp_dir(sctx: ToolContext, sandbox: SessionSandbox,
                                                                     approver: FakeApprover, work_dir: Path) -> None:  # fmt: skip
    sandbox.set_mode("read-only")
    result = await run(Shell(), sctx, command="touch $TMPDIR/t && echo temp; touch inside")
    assert result.is_error and result.output.startswith("temp\n") and "Read-only file system" in result.output
    assert not (work_dir / "inside").exists() and approver.requests == []
    await run(WriteFile(), sctx, path="a.txt", content="a\n")
    assert [r.action for r in approver.requests] == ["edit file"]


async def test_without_a_sandbox_here_commands_ask_and_say_so(sctx: ToolContext, approver: FakeApprover,
                                                               monkeypatch: pytest.MonkeyPatch, work_dir: Path) -> None:  # fmt: skip
    monkeypatch.setenv(detect.ENV_VAR, "none")
    result = await run(Shell(), sctx, command="touch inside")
    assert not result.is_error and (work_dir / "inside").exists()
    (asked,) = approver.requests
    assert asked.sandbox == ("Runs unconfined: the session asks for the workspace-write sandbox, but "
                             "KIMI_SANDBOX_BACKENDS allows none.")  # fmt: skip
    await run(WriteFile(), sctx, path="a.txt", content="a\n")
    assert len(approver.requests) == 2  # edits ask too


class _Terminals:
    """A client that records `terminal/create` and says the command exited at once."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def create_terminal(self, **kwargs: Any) -> Any:
        self.created.append(kwargs)
        return type("Created", (), {"terminal_id": "t1"})()

    async def wait_for_terminal_exit(self, **kwargs: Any) -> Any:
        return type("Exit", (), {"exit_code": 0, "signal": None})()

    async def terminal_output(self, **kwargs: Any) -> Any:
        return type("Output", (), {"output": "", "truncated": False, "exit_status": None})()

    async def release_terminal(self, **kwargs: Any) -> None:
        return None


async def test_a_client_terminal_runs_the_sandbox_launcher(sctx: ToolContext, work_dir: Path) -> None:
    client = _Terminals()
    kaos = AcpKaos(client, "s1", ClientCapabilities(terminal=True))
    await run(Shell(), replace(sctx, kaos=kaos), command="make test")
    (created,) = client.created
    assert created["command"].endswith("bwrap") and "--unshare-net" in created["args"]
    assert created["args"][-4] == "--" and created["args"][-2:] == ["-c", "make test"]
    assert created["cwd"] == str(work_dir)
