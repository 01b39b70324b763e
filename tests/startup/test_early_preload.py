"""The start-up preload (kimi_acp/startup/early.py): it runs in its own thread, hands back its result or
error, and stops at its next import while the main thread computes an early answer."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from kimi_acp.startup import early
from kimi_acp.util import meta_path


@pytest.fixture()
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """40 fresh modules on sys.path; importing one records when it ran."""
    ran: list[float] = []
    names = [f"kimi_preload_probe_{n}" for n in range(40)]
    for name in names:
        (tmp_path / f"{name}.py").write_text("import time, builtins\nbuiltins._kimi_probe_ran.append(time.monotonic())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("builtins._kimi_probe_ran", ran, raising=False)
    yield names, ran
    for name in names:
        sys.modules.pop(name, None)


def test_result_and_error_reach_the_main_thread():
    assert early.Preloader(lambda: 42).start().result() == 42
    failing = early.Preloader(lambda: 1 / 0).start()
    with pytest.raises(ZeroDivisionError):
        failing.result()
    assert failing.failed()


def test_a_paused_preload_stops_at_its_next_import(modules):
    names, ran = modules
    first_done = threading.Event()

    def load() -> int:
        __import__(names[0])
        first_done.set()
        time.sleep(0.05)  # the main thread pauses us meanwhile
        for name in names[1:]:
            __import__(name)
        return len(names)

    gates_before = sum(isinstance(f, early._ImportGate) for f in sys.meta_path)
    preloader = early.Preloader(load, pausable=True).start()
    assert first_done.wait(10)
    with preloader.paused():
        time.sleep(0.4)
        during = len(ran)
    resumed = time.monotonic()
    assert preloader.result() == len(names)
    # paused: one import per PAUSE_LIMIT_S at most (0.4 s: ~8 of 39), never the whole lot
    assert during - 1 <= 0.4 / early.PAUSE_LIMIT_S + 2
    assert ran[-1] - resumed < 1.0  # resumed: the rest without waiting
    assert sum(isinstance(f, early._ImportGate) for f in sys.meta_path) == gates_before  # the gate left


def test_the_main_thread_is_never_held(modules):
    names, ran = modules
    release = threading.Event()
    preloader = early.Preloader(lambda: release.wait(10), pausable=True).start()
    try:
        with preloader.paused():
            started = time.monotonic()
            for name in names:
                __import__(name)  # the main thread itself imports while the preload is paused
            took = time.monotonic() - started
    finally:
        release.set()
        preloader.result()
    assert len(ran) == len(names)
    assert took < early.PAUSE_LIMIT_S * 5  # not one wait per import


def test_only_a_pausable_preload_puts_a_gate_on_the_import_path():
    release = threading.Event()
    preloader = early.Preloader(lambda: release.wait(10)).start()
    try:
        assert not any(isinstance(f, early._ImportGate) for f in sys.meta_path)
        with pytest.raises(RuntimeError), preloader.paused():
            pass
    finally:
        release.set()
        preloader.result()


def test_finders_join_and_leave_by_replacing_the_list():
    """An import walking the old list meanwhile (another thread) sees it unchanged."""
    finder = object()
    walking = sys.meta_path
    meta_path.join_meta_path(finder)
    try:
        assert sys.meta_path[0] is finder and finder not in walking
        joined = sys.meta_path
        meta_path.leave_meta_path(finder)
        assert finder not in sys.meta_path and joined[0] is finder
    finally:
        meta_path.leave_meta_path(finder)
    assert sys.meta_path == walking


def test_no_collection_while_preloading_and_what_it_loaded_is_frozen_after():
    import gc

    class Node:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the cyclic collector could free it

    seen: list[bool] = []
    kept: list[Node] = []

    def load() -> int:
        seen.append(gc.isenabled())
        kept.extend(Node() for _ in range(1000))
        return gc.get_freeze_count()

    assert gc.isenabled()
    frozen_before = early.Preloader(load).start().result()
    assert seen == [False]  # off while the preload ran
    assert gc.isenabled() and gc.get_freeze_count() >= frozen_before + 1000  # on again, the preload frozen
    failing = early.Preloader(lambda: 1 / 0).start()
    with pytest.raises(ZeroDivisionError):
        failing.result()
    assert gc.isenabled()  # also after a failed preload
    gc.disable()
    try:
        early.Preloader(lambda: None).start().result()
        assert not gc.isenabled()  # a collector the host turned off stays off
    finally:
        gc.enable()
