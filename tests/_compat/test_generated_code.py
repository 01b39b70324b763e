"""_compat/generated_code.py: dataclass methods and string annotations compiled at an earlier start
are taken from the cache, and run exactly what compiling them would (the same code objects).

Each step runs in a fresh interpreter, as the servers' starts do: the first compiles and writes the
cache, the next reads it and compiles nothing, and each compares what it made with the plain way
(the builtins, in the same process)."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kimi_acp import _compat

pytestmark = pytest.mark.smoke  # also run in CI's smoke jobs (.ci/run)

PROBE = """
import dataclasses, json, sys, typing
from kimi_acp._compat import generated_code as g, take_notes

SOURCE = '''
import dataclasses, typing
from dataclasses import InitVar, KW_ONLY, dataclass, field

@dataclass(frozen=True, order=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()

@dataclass(slots=True, kw_only=True)
class Box:
    items: list[int] = field(default_factory=list)
    label: str = "box"
    seen: int = field(default=0, init=False, repr=False, compare=False)

@dataclass(eq=True, unsafe_hash=True)
class Scaled:
    base: int
    factor: InitVar[int] = 2
    value: int = field(init=False)
    _: KW_ONLY
    note: str | None = None

    def __post_init__(self, factor):
        self.value = self.base * factor
'''


def classes():
    namespace = {}
    exec(compile(SOURCE, "<probe>", "exec"), namespace)
    return namespace["Point"], namespace["Box"], namespace["Scaled"]


def behaviour(Point, Box, Scaled):
    p = Point(1, 2, ("a",))
    try:
        p.x = 5
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    b = Box(items=[1])
    s = Scaled(3, 4, note="n")
    return [repr(p), p < Point(1, 3), p == Point(1, 2, ("a",)), hash(p) == hash(Point(1, 2, ("a",))), frozen,
            repr(b), b == Box(items=[1]), repr(s), s.value, hash(s) == hash(Scaled(3, 4, note="n"))]


def codes(*types):
    return [getattr(t, name).__code__ for t in types for name in ("__init__", "__repr__", "__eq__")
            if hasattr(getattr(t, name, None), "__code__")]


ANNOTATIONS = ["int | None", "dict[str, list[int]]", "typing.Optional['Point']", "*tuple[int, int]"]
installed = g.install()
cached = classes()
refs = [typing.ForwardRef(a) for a in ANNOTATIONS]
try:
    typing.ForwardRef("not an expression (")
    bad = "accepted"
except SyntaxError as exc:
    bad = str(exc)
cache = g._cache
state = {"installed": installed, "compiled": len(cache.compiled) if cache else None,
         "from_file": cache.hits if cache else 0}
saved = g.save()
g.uninstall()
plain = classes()
same_code = [a == b for a, b in zip(codes(*cached), codes(*plain))] + [
    r.__forward_code__ == compile(r.__forward_arg__ if not r.__forward_arg__.startswith("*") else f"({r.__forward_arg__},)[0]",
                                  "<string>", "eval") for r in refs]
print(json.dumps({**state, "saved": str(saved) if saved else None, "same_code": same_code,
                  "same_behaviour": behaviour(*cached) == behaviour(*plain), "bad": bad,
                  "builtins_back": "exec" not in vars(dataclasses) and "compile" not in vars(typing),
                  "notes": take_notes()}))
"""


def probe(cache_dir: Path, **env: str) -> dict:
    full_env = {**os.environ, "KIMI_CACHE_DIR": str(cache_dir), "KIMI_SHARE_DIR": str(cache_dir.parent / "share"), **env}
    if _compat.PLAIN_ENV not in env:
        full_env.pop(_compat.PLAIN_ENV, None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE)], capture_output=True, text=True, timeout=120, env=full_env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_second_start_compiles_nothing_and_makes_the_same_code(tmp_path: Path):
    cache_dir = tmp_path / "cache"
    first = probe(cache_dir)
    assert first["installed"] and first["compiled"] > 0 and first["saved"]
    assert all(first["same_code"]) and first["same_behaviour"] and first["builtins_back"]
    saved = Path(first["saved"])
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert first["bad"].startswith("Forward reference must be an expression")  # a SyntaxError, as without the cache

    second = probe(cache_dir)
    assert second["installed"] and second["compiled"] == 0 and second["from_file"] > 0
    assert second["saved"] is None  # nothing new: the file is not written again
    assert all(second["same_code"]) and second["same_behaviour"]


def test_a_torn_or_foreign_file_is_compiled_past_and_written_again(tmp_path: Path):
    cache_dir = tmp_path / "cache"
    path = Path(probe(cache_dir)["saved"])
    for junk in (path.read_bytes()[:100], b"not marshal", b"\xe9" + b"\0" * 50):
        path.write_bytes(junk)
        done = probe(cache_dir)
        assert done["compiled"] > 0 and done["saved"] == str(path)
        assert all(done["same_code"]) and done["same_behaviour"]


def test_switched_off_or_on_an_unchecked_python_it_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    done = probe(tmp_path / "cache", **{_compat.PLAIN_ENV: "generated-code-cache"})
    assert not done["installed"] and done["saved"] is None and done["same_behaviour"]
    assert "compat: generated-code-cache not used (KIMI_PLAIN_STARTUP is set); the plain way instead" in done["notes"]
    assert not (tmp_path / "cache").exists()

    from kimi_acp._compat import generated_code

    monkeypatch.delenv(_compat.PLAIN_ENV, raising=False)
    monkeypatch.setattr(_compat, "_notes", [])
    monkeypatch.setattr(_compat, "_said", set())
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(generated_code, "PYTHON", _compat.Checked("Python", (3, 0), (3, 1)))
    assert generated_code._cache is None and not generated_code.install()
    assert generated_code._cache is None
    assert any("generated-code-cache not used (Python is" in note for note in _compat.take_notes())


def test_the_servers_start_with_it_and_keep_what_they_compiled(tmp_path: Path):
    """`kimi acp`'s preload installs it; the warm-up writes the file and puts the builtins back."""
    code = """
    import dataclasses, sys, typing
    from kimi_acp.startup.preload import prepare_imports
    from kimi_acp._compat import generated_code as g
    prepare_imports()
    print(g._cache is not None, dataclasses.exec is g._dataclasses_exec, typing.compile is g._typing_compile)
    import kimi_acp.frontends.acp.server  # what the preload imports
    g.finish()
    print(g._cache is None, "exec" in vars(dataclasses), "compile" in vars(typing), g.cache_file().exists())
    """
    env = {**os.environ, "KIMI_CACHE_DIR": str(tmp_path / "cache"), "KIMI_SHARE_DIR": str(tmp_path / "share")}
    env.pop(_compat.PLAIN_ENV, None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True", "False", "False", "True"]
