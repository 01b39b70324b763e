"""Plugins (kimi_acp/plugins/): plugin.json, the install sources, inject, remove, and attaching
their tools to a session (names taken by built-ins skipped, broken plugins left out)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from kimi_acp import sessions
from kimi_acp.config import load_config
from kimi_acp.core.agent_core import AgentCore
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.plugins import attach, plugins_dir
from kimi_acp.plugins.install import inject_config, install, remove
from kimi_acp.plugins.spec import PluginError, installed_plugins, parse_plugin_json

HOST = {"api_key": "sk-unit-plugin-77", "base_url": "https://api.example/v1"}


def plugin_dir(root: Path, name: str = "demo", **extra: object) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    spec = {"name": name, "version": "0.1.0", "tools": [
        {"name": f"{name}_tool", "description": "A tool", "command": [sys.executable, "-c", "print('ok')"]},
    ], **extra}
    (directory / "plugin.json").write_text(json.dumps(spec))
    return directory


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"version": "1"}, "`name` is required"),
        ({"name": "x"}, "`version` is required"),
        ({"name": "x", "version": "1", "inject": {"a": "api_key"}}, "`inject` requires `config_file`"),
        ({"name": "x", "version": "1", "tools": [{"name": "t", "description": "d", "command": []}]}, "non-empty list"),
        ({"name": "x", "version": "1", "tools": [{"description": "d", "command": ["a"]}]}, "tools[0]: `name` is required"),
        ({"name": "x", "version": "1", "tools": "nope"}, "`tools` must be a list"),
    ],
)
def test_bad_plugin_json_is_refused_with_the_reason(tmp_path: Path, document: dict, problem: str) -> None:
    path = tmp_path / "plugin.json"
    path.write_text(json.dumps(document))
    with pytest.raises(PluginError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_plugin_json(path)


def test_install_from_a_directory_a_zip_and_a_git_repository(tmp_path: Path) -> None:
    source = plugin_dir(tmp_path / "src")
    spec = install(str(source), HOST)
    assert (spec.name, spec.runtime) == ("demo", {"host": "kimi-acp", "host_version": spec.runtime["host_version"]})
    assert [p.name for p in installed_plugins()] == ["demo"]
    assert (plugins_dir().stat().st_mode & 0o777) == 0o700  # private like the share dir: specs hold host values

    archive = tmp_path / "demo.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in source.rglob("*"):
            zf.write(path, f"demo-main/{path.relative_to(source)}")  # one level down, like GitHub's
    plugin_json = source / "plugin.json"
    plugin_json.write_text(plugin_json.read_text().replace("0.1.0", "0.2.0"))
    assert install(str(archive), HOST).version == "0.1.0"  # the archive's copy

    repo = tmp_path / "repo.git"
    work = tmp_path / "work"
    shutil.copytree(source, work / "demo")
    git = ["git", "-c", "user.email=t@e", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "plugin"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(repo)], check=True)
    with pytest.raises(PluginError, match="its plugins: demo"):
        install(f"file://{repo}", HOST)
    assert install(f"file://{repo}/demo", HOST).version == "0.2.0"
    assert not [p for p in plugins_dir().iterdir() if p.name.startswith(".")]  # no staging left behind


def test_a_zip_url_is_downloaded(tmp_path: Path) -> None:
    source = plugin_dir(tmp_path / "src", "fetched")
    served = tmp_path / "www"
    served.mkdir()
    with zipfile.ZipFile(served / "fetched.zip", "w") as zf:
        for path in source.rglob("*"):
            zf.write(path, path.relative_to(source))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(served), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        said: list[str] = []
        spec = install(f"http://127.0.0.1:{server.server_address[1]}/fetched.zip", HOST, say=said.append)
        assert spec.name == "fetched" and said[0].startswith("Downloading http://127.0.0.1:")
        with pytest.raises(PluginError, match="download failed: HTTPStatusError"):
            install(f"http://127.0.0.1:{server.server_address[1]}/missing.zip", HOST)
    finally:
        server.shutdown()


def test_unsafe_or_unusable_sources_are_refused(tmp_path: Path) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.txt", "x")
        zf.writestr("plugin.json", json.dumps({"name": "evil", "version": "1"}))
    with pytest.raises(PluginError, match="unsafe path"):
        install(str(evil), HOST)
    bad = plugin_dir(tmp_path / "src", "dots")
    (bad / "plugin.json").write_text(json.dumps({"name": "../escape", "version": "1"}))
    with pytest.raises(PluginError, match="invalid plugin name"):
        install(str(bad), HOST)
    with pytest.raises(PluginError, match="is not a plugin directory"):
        install(str(tmp_path / "nowhere"), HOST)
    with pytest.raises(PluginError, match="is not installed"):
        remove("ghost")


def test_inject_writes_dotted_paths_privately_and_only_when_changed(tmp_path: Path) -> None:
    source = plugin_dir(tmp_path / "src", "keyed", config_file="conf.json",
                        inject={"llm.key": "api_key", "url": "base_url"})
    (source / "conf.json").write_text(json.dumps({"llm": {"model": "m"}}))
    spec = install(str(source), HOST)
    conf = spec.directory / "conf.json"
    assert json.loads(conf.read_text()) == {"llm": {"model": "m", "key": HOST["api_key"]}, "url": HOST["base_url"]}
    assert conf.stat().st_mode & 0o777 == 0o600
    assert not inject_config(spec, HOST)  # nothing changed: not rewritten
    assert inject_config(spec, {**HOST, "api_key": "sk-refreshed"})
    with pytest.raises(PluginError, match="needs `api_key`"):
        inject_config(spec, {"base_url": "x"})


def test_a_session_gets_the_plugins_tools_except_taken_names_and_broken_plugins(tmp_path: Path) -> None:
    install(str(plugin_dir(tmp_path / "src", "good")), HOST)
    clash = plugin_dir(tmp_path / "src", "clash")
    document = json.loads((clash / "plugin.json").read_text())
    document["tools"].append({"name": "Shell", "description": "shadow", "command": ["true"]})
    (clash / "plugin.json").write_text(json.dumps(document))
    install(str(clash), HOST)
    broken = plugins_dir() / "broken"
    broken.mkdir()
    (broken / "plugin.json").write_text("{not json")
    work = tmp_path / "project"
    work.mkdir()
    core = AgentCore.open(session=sessions.create(work), loaded_config=load_config(config_text="{}"), kaos=LocalKaos())
    assert attach(core) == 2  # good_tool, clash_tool; not Shell
    names = [spec.name for spec in core.toolset.specs()]
    assert "good_tool" in names and "clash_tool" in names and names.count("Shell") == 1
    assert next(s for s in core.toolset.specs() if s.name == "Shell").description != "shadow"


def test_no_plugins_directory_costs_nothing(tmp_path: Path) -> None:
    """Every session open runs `attach`: without plugins it is one stat, and nothing is imported."""
    script = (
        "import sys; from pathlib import Path\n"
        "from kimi_acp import sessions\n"
        "from kimi_acp.config import load_config\n"
        "from kimi_acp.core.agent_core import AgentCore\n"
        "from kimi_acp.kaos.local import LocalKaos\n"
        "from kimi_acp.plugins import attach\n"
        f"work = Path({str(tmp_path / 'project')!r}); work.mkdir()\n"
        "core = AgentCore.open(session=sessions.create(work), loaded_config=load_config(config_text='{}'), kaos=LocalKaos())\n"
        "print(attach(core), sorted(m for m in sys.modules if m.startswith('kimi_acp.plugins.')))\n"
    )
    share = tmp_path / "share"
    share.mkdir()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KIMI_SHARE_DIR": str(share)})
    assert done.stdout.strip() == "0 ['kimi_acp.plugins.paths']", done.stderr
