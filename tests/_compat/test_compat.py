"""kimi_acp/_compat: every use of another project's private internals is gated on the versions it
was checked against, falls back to the plain way when the private name is gone or anything fails,
says so in one log line, and is switched off by `KIMI_PLAIN_STARTUP`.

The private names are hidden for real in a fresh interpreter (tests/support/private_names.py), then
start-up runs as it does in `kimi acp`; tests/e2e/test_startup_fallback.py does it to the servers.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kimi_acp import _compat
from kimi_acp._compat import Checked, applies, installed_version, parse_version, switched_off
from tests.support.private_names import hiding_env

pytestmark = pytest.mark.smoke  # also run in CI's smoke jobs (.ci/run)

ROOT = Path(__file__).resolve().parents[2]

def run_python(code: str, tmp_path: Path, *, remove: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter with the private names in `remove` ("module:attr;...") gone."""
    full_env = {
        **os.environ,
        **hiding_env(tmp_path, remove),
        "KIMI_SHARE_DIR": str(tmp_path / "share"),
        **(env or {}),
    }
    if _compat.PLAIN_ENV not in (env or {}):
        full_env.pop(_compat.PLAIN_ENV, None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env=full_env)


# ------------------------------------------------------------------------------------ the gate


def test_the_switch_turns_all_or_named_tricks_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_compat.PLAIN_ENV, raising=False)
    assert not switched_off("acp-lazy-schema")
    for value in ("1", "all", "true"):
        monkeypatch.setenv(_compat.PLAIN_ENV, value)
        assert switched_off("acp-lazy-schema") and switched_off("asyncio-without-ssl")
    monkeypatch.setenv(_compat.PLAIN_ENV, "acp-lazy-schema, pydantic-annotation-memo")
    assert switched_off("acp-lazy-schema") and switched_off("pydantic-annotation-memo")
    assert not switched_off("asyncio-without-ssl")
    monkeypatch.setenv(_compat.PLAIN_ENV, "0")
    assert not switched_off("acp-lazy-schema")


def test_a_trick_applies_only_to_the_checked_releases_and_says_why_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_compat.PLAIN_ENV, raising=False)
    monkeypatch.setattr(_compat, "_said", set())
    monkeypatch.setattr(_compat, "_notes", [])
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    checked = Checked("pydantic", (2, 11), (2, 14))
    assert applies("t", (checked, (2, 11, 0))) and applies("t", (checked, (2, 14, 9)))
    assert not applies("newer", (checked, (2, 15, 0)))
    assert not applies("newer", (checked, (2, 15, 0)))
    assert not applies("older", (checked, (2, 10, 3)))
    assert not applies("unknown", (checked, None))
    notes = _compat.take_notes()
    assert notes == [
        "compat: newer not used (pydantic is 2.15.0, checked against pydantic 2.11–2.14); the plain way instead",
        "compat: older not used (pydantic is 2.10.3, checked against pydantic 2.11–2.14); the plain way instead",
        "compat: unknown not used (pydantic is an unknown version, checked against pydantic 2.11–2.14); the plain way instead",
    ]


def test_versions_are_read_without_importing_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fakepkg").mkdir()
    (tmp_path / "fakepkg" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (tmp_path / "fake_pkg-3.4.5rc1.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed_version("Fake-Pkg", "fakepkg") == (3, 4, 5)
    assert installed_version("other", "fakepkg") is None
    assert parse_version("2.14.4") == (2, 14, 4) and parse_version("0.12") == (0, 12) and parse_version("x") is None
    import pydantic

    assert installed_version("pydantic", "pydantic") == parse_version(pydantic.VERSION)


# ------------------------------------------------------------------------ each trick, gone


def test_asyncio_falls_back_to_the_plain_import_when_the_trick_fails(tmp_path: Path) -> None:
    """A CPython whose asyncio cannot go without ssl: the trick raises half-way, the plain import
    follows, and asyncio has its ssl (TLS works) with no finder left behind."""
    done = run_python(
        """
        import sys
        from kimi_acp._compat import asyncio_without_ssl as compat

        def broken():
            import asyncio.base_events  # imported half-way, then:
            raise ImportError("asyncio needs ssl now")

        compat.import_asyncio_without_ssl = broken
        import kimi_acp._compat as c
        asyncio = compat.import_asyncio()
        import asyncio.sslproto, ssl
        assert asyncio.base_events.ssl is ssl and asyncio.sslproto.ssl is ssl
        assert not any(type(f).__name__ == "_SslFinder" for f in sys.meta_path)
        print(c.take_notes())
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "asyncio-without-ssl failed (ImportError: asyncio needs ssl now)" in done.stdout


def test_asyncio_on_an_unchecked_python_is_imported_plainly(tmp_path: Path) -> None:
    done = run_python(
        """
        import sys
        import kimi_acp._compat as c
        c.PYTHON = c.Checked("Python", (3, 0), (3, 1))
        from kimi_acp._compat import asyncio_without_ssl as compat
        compat.PYTHON = c.PYTHON
        compat.import_asyncio()
        print("ssl" in sys.modules, c.take_notes())
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True") and "asyncio-without-ssl not used (Python is" in done.stdout


SDK_PROBE = """
import json, sys
from kimi_acp._compat import take_notes
from kimi_acp._compat.acp_sdk_import import import_sdk
import_sdk()
import acp.schema as s
init = s.InitializeRequest.model_validate({"protocolVersion": 1}).model_dump(mode="json", by_alias=True)
caps = s.AgentCapabilities().model_dump(mode="json", by_alias=True)
print(json.dumps({"init": init, "caps": caps, "notes": take_notes()}))
"""


def test_a_pydantic_without_type_has_config_imports_the_sdk_plainly(tmp_path: Path) -> None:
    reference = run_python(SDK_PROBE, tmp_path, env={_compat.PLAIN_ENV: "1"})
    assert reference.returncode == 0, reference.stderr
    done = run_python(SDK_PROBE, tmp_path, remove="pydantic.type_adapter:_type_has_config")
    assert done.returncode == 0, done.stderr
    out, plain = json.loads(done.stdout), json.loads(reference.stdout)
    assert (out["init"], out["caps"]) == (plain["init"], plain["caps"])
    assert any("acp-sdk-import failed (ImportError" in note for note in out["notes"]), out["notes"]


def test_a_pydantic_without_try_eval_type_evaluates_as_it_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic._internal import _typing_extra

    from kimi_acp._compat import pydantic_annotation_memo as memo

    monkeypatch.delenv(_compat.PLAIN_ENV, raising=False)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(_compat, "_notes", [])
    original = _typing_extra.try_eval_type
    with memo.remembered_annotations():
        assert getattr(_typing_extra.try_eval_type, "__kimi_remembering__", False)
    assert _typing_extra.try_eval_type is original
    monkeypatch.delattr(_typing_extra, "try_eval_type")
    with memo.remembered_annotations():
        assert not hasattr(_typing_extra, "try_eval_type")
    assert _compat.take_notes() == [
        "compat: pydantic-annotation-memo failed (AttributeError: module 'pydantic._internal._typing_extra' "
        "has no attribute 'try_eval_type'); the plain way instead"
    ]


def test_every_trick_is_off_with_the_switch(tmp_path: Path) -> None:
    done = run_python(
        SDK_PROBE.replace("import_sdk()", "from kimi_acp.startup.preload import prepare_imports; prepare_imports(); import_sdk()"),
        tmp_path,
        env={_compat.PLAIN_ENV: "1"},
    )
    assert done.returncode == 0, done.stderr
    notes = json.loads(done.stdout)["notes"]
    for trick in ("generated-code-cache", "asyncio-without-ssl", "pydantic-plugin-loader", "acp-defer-build", "acp-deferred-defaults", "pydantic-annotation-memo"):
        assert f"compat: {trick} not used (KIMI_PLAIN_STARTUP is set)" in "\n".join(notes), notes


def test_an_mcp_sdk_without_the_private_hooks_gives_its_own_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client.auth import OAuthClientProvider

    from kimi_acp._compat.mcp_oauth import hooked_provider_class

    monkeypatch.delenv(_compat.PLAIN_ENV, raising=False)
    hooked = hooked_provider_class()
    assert hooked is not OAuthClientProvider and issubclass(hooked, OAuthClientProvider)
    monkeypatch.delattr(OAuthClientProvider, "_handle_refresh_response")
    assert hooked_provider_class() is OAuthClientProvider
    monkeypatch.setenv(_compat.PLAIN_ENV, "mcp-oauth-hooks")
    assert hooked_provider_class() is OAuthClientProvider


def test_the_lazy_schema_needs_a_checked_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    from kimi_acp._compat import acp_sdk_import

    monkeypatch.delenv(_compat.PLAIN_ENV, raising=False)
    assert acp_sdk_import.lazy_schema_applies()
    monkeypatch.setattr(acp_sdk_import, "installed_version", lambda *a: (0, 13, 0))
    assert not acp_sdk_import.lazy_schema_applies()


def test_the_plugin_loader_stand_in_needs_a_checked_pydantic(tmp_path: Path) -> None:
    done = run_python(
        """
        import sys
        from kimi_acp._compat import pydantic_plugin_loader as loader
        loader.installed_version = lambda *a: (2, 99, 0)
        print(loader.install(), loader.LOADER in sys.modules)
        import pydantic
        class M(pydantic.BaseModel):
            x: int
        print(M(x=1).x)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "1"]


async def test_pipes_of_a_killed_command_are_closed_only_where_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from kimi_acp._compat.asyncio_process import close_pipes

    async def spawn() -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import time; time.sleep(30)", stdout=asyncio.subprocess.PIPE
        )

    monkeypatch.delenv(_compat.PLAIN_ENV, raising=False)
    proc = await spawn()
    close_pipes(proc)
    assert proc._transport.is_closing()  # the private name this module relies on, checked here
    proc.kill()
    await proc.wait()

    monkeypatch.setenv(_compat.PLAIN_ENV, "asyncio-close-transport")
    proc = await spawn()
    close_pipes(proc)
    assert not proc._transport.is_closing()
    proc.kill()
    await proc.wait()


def test_private_names_of_other_projects_are_used_only_in_compat() -> None:
    """Outside kimi_acp/_compat: no import of another project's private module or name, and no
    `getattr(x, "_name")` / `setattr` reaching for one."""
    import ast

    package = ROOT / "kimi_acp"
    found = []
    for path in package.rglob("*.py"):
        if "_compat" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if any(part.startswith("_") and not part.startswith("__") for part in node.module.split(".")) or private:
                    found.append(f"{where}: from {node.module} import {', '.join(a.name for a in node.names)}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if any(p.startswith("_") and not p.startswith("__") for p in alias.name.split(".")):
                        found.append(f"{where}: import {alias.name}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "hasattr"):
                if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                    name = node.args[1].value
                    if name.startswith("_") and not name.startswith("__") and not name.startswith("_kimi"):
                        found.append(f"{where}: {node.func.id}(..., {name!r})")
    assert found == []
