"""pydantic's plugin discovery through kimi_acp/_compat/pydantic_plugin_loader.py: no plugins found without
importlib.metadata, and a real plugin still found (handed over to pydantic's own loader)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

from kimi_acp._compat.pydantic_plugin_loader import _may_have_plugins


def _dist(root: Path, name: str, entry_points: str | None) -> Path:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)
    return info


def test_distributions_without_a_pydantic_group_have_no_plugins(tmp_path):
    _dist(tmp_path, "plain", None)
    _dist(tmp_path, "scripts", "[console_scripts]\nplain = plain:main\n\n[pydantic.other]\nx = y:z\n")
    (tmp_path / "old.egg-info").write_text("Metadata-Version: 1.0\n")  # an .egg-info file, not a dir
    assert not _may_have_plugins([str(tmp_path), str(tmp_path / "missing"), "some.finder.__path_hook__"])


def test_a_pydantic_group_however_spaced_may_have_plugins(tmp_path):
    for index, header in enumerate(("[pydantic]", "  [ pydantic ]  ")):
        root = tmp_path / str(index)
        _dist(root, "plugin", f"[console_scripts]\na = b:c\n{header}\nmine = plugin:thing\n")
        assert _may_have_plugins([str(root)])


def test_paths_read_only_by_importlib_metadata_hand_over(tmp_path):
    archive = tmp_path / "packages.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("x.py", "")
    eggs = tmp_path / "eggs"
    (eggs / "thing-1.0-py3.11.egg").mkdir(parents=True)
    assert _may_have_plugins([str(archive)])
    assert _may_have_plugins([str(eggs)])
    assert _may_have_plugins([str(tmp_path / "direct-1.0.egg")])


NO_PLUGINS = """
import sys
from kimi_acp._compat import pydantic_plugin_loader as pydantic_plugins
assert pydantic_plugins.install()
from pydantic import BaseModel
class Model(BaseModel):
    x: int
assert Model.model_validate({"x": "3"}).x == 3
loader = sys.modules[pydantic_plugins.LOADER]
print(getattr(loader, "__kimi_stand_in__", False), "importlib.metadata" in sys.modules, list(loader.get_plugins()))
"""


def test_without_plugins_pydantic_works_and_importlib_metadata_stays_unloaded():
    done = subprocess.run([sys.executable, "-c", NO_PLUGINS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "[]"]


PLUGIN = '''
seen = []

class _Plugin:
    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):
        seen.append(schema_type_path.name)
        return None, None, None

plugin = _Plugin()
'''

WITH_PLUGIN = """
import sys
from kimi_acp._compat import pydantic_plugin_loader as pydantic_plugins
assert pydantic_plugins.install()
from pydantic import BaseModel
class Model(BaseModel):
    x: int
Model.model_validate({"x": 1})
import fakeplugin
loader = sys.modules[pydantic_plugins.LOADER]
print(getattr(loader, "__kimi_stand_in__", False), "Model" in fakeplugin.seen)
"""


def test_an_installed_plugin_is_found_by_pydantics_own_loader(tmp_path):
    (tmp_path / "fakeplugin.py").write_text(textwrap.dedent(PLUGIN))
    _dist(tmp_path, "fakeplugin", "[pydantic]\nfake = fakeplugin:plugin\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", WITH_PLUGIN], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]  # pydantic's loader took over and used the plugin


def test_the_distributions_are_scanned_once(monkeypatch):
    from kimi_acp._compat import pydantic_plugin_loader as pydantic_plugins

    scans: list[int] = []
    monkeypatch.setattr(pydantic_plugins, "_none_found", None)
    monkeypatch.setattr(pydantic_plugins, "_may_have_plugins", lambda path: scans.append(1) or False)
    for _ in range(5):
        assert tuple(pydantic_plugins.get_plugins()) == ()
    assert scans == [1]


OTHER_NAME = """
import sys
from kimi_acp._compat import pydantic_plugin_loader as pydantic_plugins
assert pydantic_plugins.install()
from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP  # what a newer pydantic might import too
print(PYDANTIC_ENTRY_POINT_GROUP, getattr(sys.modules[pydantic_plugins.LOADER], "__kimi_stand_in__", False))
"""


def test_any_other_name_comes_from_pydantics_loader():
    done = subprocess.run([sys.executable, "-c", OTHER_NAME], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pydantic", "False"]
