"""Symbolic links in a plugin being installed (plugins/links.py): copied as links when they stay
inside the plugin; one that points outside (a user's `~/.ssh/id_rsa`) refuses the whole install,
from a directory, a zip (links stored in `external_attr`) and a git checkout alike."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kimi_acp.plugins import plugins_dir
from kimi_acp.plugins.install import install
from kimi_acp.plugins.spec import PluginError

HOST = {"api_key": "sk-unit-plugin-77", "base_url": "https://api.example/v1"}


def plugin_dir(root: Path, name: str = "linky") -> Path:
    directory = root / name
    (directory / "lib").mkdir(parents=True)
    (directory / "lib" / "real.txt").write_text("inside")
    spec = {"name": name, "version": "0.1.0", "tools": [
        {"name": f"{name}_tool", "description": "A tool", "command": [sys.executable, "-c", "print('ok')"]},
    ]}
    (directory / "plugin.json").write_text(json.dumps(spec))
    return directory


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".ssh" / "id_rsa"
    path.parent.mkdir(parents=True)
    path.write_text("-----BEGIN OPENSSH PRIVATE KEY----- not-for-plugins")
    return path


def test_a_link_inside_the_plugin_is_copied_as_a_link(tmp_path: Path) -> None:
    source = plugin_dir(tmp_path / "src")
    (source / "alias.txt").symlink_to("lib/real.txt")
    (source / "lib" / "up.txt").symlink_to("../plugin.json")
    (source / "shortcut").symlink_to("lib", target_is_directory=True)

    spec = install(str(source), HOST)

    installed = spec.directory
    assert os.readlink(installed / "alias.txt") == "lib/real.txt"
    assert os.readlink(installed / "lib" / "up.txt") == "../plugin.json"
    assert os.readlink(installed / "shortcut") == "lib"
    assert (installed / "alias.txt").read_text() == "inside"


@pytest.mark.parametrize("how", ["absolute", "dotdot", "via-inside-link"])
def test_a_link_outside_the_plugin_refuses_the_install(tmp_path: Path, secret: Path, how: str) -> None:
    source = plugin_dir(tmp_path / "src")
    if how == "absolute":
        (source / "key").symlink_to(secret)
    elif how == "dotdot":
        (source / "lib" / "key").symlink_to(os.path.relpath(secret, source / "lib"))
    else:  # an inside-looking link whose way out goes through another link
        (source / "lib" / "deep").mkdir()
        (source / "hop").symlink_to(os.path.relpath(secret.parent, source))
        (source / "lib" / "deep" / "key").symlink_to("../../hop/id_rsa")

    with pytest.raises(PluginError, match=r"refusing to install: .*key|hop is a symbolic link to .*outside the plugin directory"):
        install(str(source), HOST)
    assert not plugins_dir().exists() or list(plugins_dir().iterdir()) == []


def test_the_cli_refuses_with_one_line_and_installs_nothing(tmp_path: Path, secret: Path) -> None:
    source = plugin_dir(tmp_path / "src")
    (source / "id_rsa").symlink_to(secret)
    done = subprocess.run([sys.executable, "-m", "kimi_acp", "plugin", "install", str(source)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("kimi: error:")]
    assert errors == [f"kimi: error: refusing to install: id_rsa is a symbolic link to {secret}, outside the plugin directory"]
    assert "Traceback" not in done.stderr
    assert "not-for-plugins" not in done.stdout + done.stderr
    assert not plugins_dir().exists() or list(plugins_dir().iterdir()) == []


def zip_with_link(path: Path, source: Path, link: str, target: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for file in source.rglob("*"):
            zf.write(file, f"linky-main/{file.relative_to(source)}")
        info = zipfile.ZipInfo(f"linky-main/{link}")
        info.create_system = 3  # Unix: external_attr carries the mode
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, target)
    return path


def test_a_zip_symlink_entry_inside_becomes_a_link(tmp_path: Path) -> None:
    archive = zip_with_link(tmp_path / "in.zip", plugin_dir(tmp_path / "src"), "alias.txt", "lib/real.txt")
    spec = install(str(archive), HOST)
    assert os.readlink(spec.directory / "alias.txt") == "lib/real.txt"
    assert (spec.directory / "alias.txt").read_text() == "inside"


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside", "lib/../../x"])
def test_a_zip_symlink_entry_pointing_outside_refuses_the_install(tmp_path: Path, target: str) -> None:
    archive = zip_with_link(tmp_path / "out.zip", plugin_dir(tmp_path / "src"), "key", target)
    # Outside the archive: refused while unpacking; inside it but outside the plugin's folder: right after.
    with pytest.raises(PluginError, match=f"refusing to install: (linky-main/)?key is a symbolic link to {target}"):
        install(str(archive), HOST)
    assert not plugins_dir().exists() or list(plugins_dir().iterdir()) == []


@pytest.mark.requires_tool("git")
def test_a_git_checkout_with_an_outside_link_is_refused(tmp_path: Path, secret: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(plugin_dir(tmp_path / "src"), work)
    (work / "key").symlink_to(secret)
    git = ["git", "-c", "user.email=t@e", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "plugin"], check=True)
    repo = tmp_path / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(repo)], check=True)

    with pytest.raises(PluginError, match=f"refusing to install: key is a symbolic link to {secret}"):
        install(f"file://{repo}", HOST)
    assert not plugins_dir().exists() or list(plugins_dir().iterdir()) == []
