"""The five measures, one function each. Every run starts fresh processes in a fresh share dir;
every failure becomes an error on the rows it concerns (never a traceback, never a hang).

1 start       process start → `initialize` response (ACP, Wire); ACP start → first session ready;
              the same with MCP, skills and web tools installed but unused
2 sessions    `session/new` time; RSS after initialize, 1, 20, 100 and 1,000 idle sessions
3 stream      2,000-chunk burst: prompt → response, server CPU (per chunk), text verified in order;
              paced stream (1 chunk / 2 ms): fake-model emit → client receive latency
4 history     reopening a 100-turn session cold: spawn → ACP `session/load` answered (replay
              included), spawn → Wire `replay` of its 565 events finished
5 concurrent  20 sessions prompting at once: total time, chunks lost or misrouted
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import procstat
from .drive import (
    GRACE,
    REQUEST_TIMEOUT,
    Prompted,
    acp_initialize,
    acp_new_session,
    acp_prompt_params,
    acp_text_chunks,
    first_difference,
    ms,
    prompt,
    session_updates,
    spawn,
    wire_events,
    wire_initialize,
)
from .fake_model import PACED_PATTERN, burst_texts, direct_paced, echo_texts
from .fixtures import History, Share, Workspace, build_history, copy_history, make_share, text_script
from .report import Collector
from .rpc import Reply, RpcProcess
from .stats import median, percentile

RUN_TIMEOUT = 180.0  # one run of one measure, all requests included
SETTLE_S = 1.0  # before "after initialize" memory: longer than any delayed warm-up
MIB = procstat.MIB


@dataclass(frozen=True)
class Sizes:
    burst_chunks: int = 2000
    paced_chunks: int = 500
    paced_interval_ms: float = 2.0
    steady_sessions: int = 20
    idle_sessions: tuple[int, int] = (100, 1000)
    history_turns: int = 100  # 13 with a tool call: 565 Wire events, as in issue #13
    history_tool_turns: int = 13
    concurrent_sessions: int = 20
    echo_chunks: int = 50

    def text(self) -> str:
        lo, hi = self.idle_sessions
        return (
            f"burst {self.burst_chunks} chunks, paced {self.paced_chunks} × {self.paced_interval_ms:g} ms, "
            f"idle sessions {lo}/{hi}, "
            f"history {self.history_turns} turns ({self.history_tool_turns} with tools), "
            f"{self.concurrent_sessions} concurrent sessions × {self.echo_chunks} chunks"
        )


FULL = Sizes()
QUICK = Sizes(paced_chunks=200, idle_sessions=(100, 300))


@dataclass
class Impl:
    label: str
    acp_cmd: list[str]
    wire_cmd: list[str]
    env: dict[str, str] = field(default_factory=dict)  # on top of the share's environment
    prepare: Callable[[Path], None] | None = None  # called with each share dir before a spawn
    max_sessions: int | None = None  # open no more than this many idle sessions (a slow session/new)


@dataclass
class Bench:
    impl: Impl
    sizes: Sizes
    runs: int
    workspace: Workspace
    model_port: int
    col: Collector = field(default_factory=Collector)
    progress: Callable[[str], None] = lambda text: None

    async def spawn_acp(self, share: Share, env: dict[str, str] | None = None) -> RpcProcess:
        """`env`: on top of the implementation's own."""
        if self.impl.prepare is not None:
            self.impl.prepare(share.dir)
        return await spawn(self.impl.acp_cmd, share, env={**self.impl.env, **(env or {})})

    async def spawn_wire(self, share: Share, extra: list[str]) -> RpcProcess:
        if self.impl.prepare is not None:
            self.impl.prepare(share.dir)
        return await spawn(self.impl.wire_cmd, share, extra=extra, env=self.impl.env, string_ids=True)


# --------------------------------------------------------------------------- plumbing


def describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        text = str(exc) or "timed out"
        return f"timeout: {text}"
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 400 else text[:400] + "…"


async def guarded(b: Bench, keys: Iterable[str], work: Awaitable[None], timeout: float = RUN_TIMEOUT) -> None:
    """Run one measure run; any failure (or a hang past `timeout`) is recorded on its rows."""
    keys = list(keys)
    try:
        await asyncio.wait_for(work, timeout)
    except TimeoutError as exc:
        b.col.fail(keys, describe(exc) if str(exc) else f"timeout: run did not finish within {timeout:g}s")
    except Exception as exc:  # any failure becomes a reported error
        b.col.fail(keys, describe(exc))


# --------------------------------------------------------------------------- 1 start


async def measure_start(b: Bench) -> None:
    col, m = b.col, "1 start"
    acp_init = col.declare("start.acp.init", m, "ACP start → initialize", "ms", 150)
    acp_ready = col.declare(
        "start.acp.ready", m, "ACP spawn → first session/new answered (initialize, session/new)", "ms", 250
    )
    acp_first = col.declare(
        "start.acp.first", m, "ACP spawn → first session/new, first start after install (no schema index)", "ms"
    )
    wire_init = col.declare("start.wire.init", m, "Wire start → initialize", "ms", 150)
    wire_ready = col.declare(
        "start.wire.ready", m, "Wire start → first prompt answered (initialize, prompt)", "ms"
    )
    feat = "MCP/skills/web installed, unused"
    acp_feat = col.declare("start.acp.features", m, f"ACP spawn → first session/new, {feat}", "ms")
    acp_feat_d = col.declare(
        "start.acp.features_delta", m, "  … minus the same without them (paired, same run)", "ms", digits=1
    )
    wire_feat = col.declare("start.wire.features", m, f"Wire start → first prompt answered, {feat}", "ms")
    wire_feat_d = col.declare(
        "start.wire.features_delta", m, "  … minus the same without them (paired, same run)", "ms", digits=1
    )
    acp_last: dict[bool, float] = {}
    wire_last: dict[bool, float] = {}

    async def acp_first_once() -> None:
        """kimi-acp only: a cache dir without the ACP schema index (kimi_acp/_compat/acp_lazy_schema.py)."""
        share = make_share(b.workspace, "start-acp-first", "scripted")
        empty = b.workspace.new_dir("empty-cache")
        p = await b.spawn_acp(share, env={"KIMI_CACHE_DIR": str(empty)})
        try:
            await acp_initialize(p)
            _, reply = await acp_new_session(p, share.work_dir)
            col.add(acp_first, ms(reply.received - p.started))
        finally:
            await p.close()

    async def acp_once(features: bool = False) -> None:
        share = make_share(b.workspace, "start-acp", "scripted", features=features)
        p = await b.spawn_acp(share)
        try:
            _, reply = await acp_initialize(p)
            if not features:
                col.add(acp_init, ms(reply.received - p.started))
            _, reply = await acp_new_session(p, share.work_dir)
            acp_last[features] = ms(reply.received - p.started)
            col.add(acp_feat if features else acp_ready, acp_last[features])
        finally:
            await p.close()

    async def wire_once(features: bool = False) -> None:
        share = make_share(
            b.workspace, "start-wire", "scripted", scripts=[text_script(["ready"])], features=features
        )
        p = await b.spawn_wire(share, ["--work-dir", str(share.work_dir)])
        try:
            _, reply = await wire_initialize(p)
            if not features:
                col.add(wire_init, ms(reply.received - p.started))
            # the first prompt as soon as initialize is answered, as a client with one ready does
            reply = await p.request("prompt", {"user_input": "hello"}, timeout=REQUEST_TIMEOUT)
            result = reply.unwrap()
            status = result.get("status") if isinstance(result, dict) else None
            if status != "finished":
                raise RuntimeError(f"prompt: status {status!r}, expected 'finished'")
            wire_last[features] = ms(reply.received - p.started)
            col.add(wire_feat if features else wire_ready, wire_last[features])
        finally:
            await p.close()

    for run in range(b.runs):
        b.progress(f"start, run {run + 1}/{b.runs}")
        # plain and with features alternate, in an order that flips every run (paired samples)
        order = (False, True) if run % 2 == 0 else (True, False)
        if b.impl.acp_cmd:
            acp_last.clear()
            for features in order:
                keys = [acp_feat, acp_feat_d] if features else [acp_init, acp_ready]
                await guarded(b, keys, acp_once(features))
            if len(acp_last) == 2:
                col.add(acp_feat_d, acp_last[True] - acp_last[False])
            if "KIMI_CACHE_DIR" in b.impl.env:
                await guarded(b, [acp_first], acp_first_once())
        if b.impl.wire_cmd:
            wire_last.clear()
            for features in order:
                keys = [wire_feat, wire_feat_d] if features else [wire_init, wire_ready]
                await guarded(b, keys, wire_once(features))
            if len(wire_last) == 2:
                col.add(wire_feat_d, wire_last[True] - wire_last[False])
    if not b.impl.acp_cmd:
        col.na([acp_init, acp_ready, acp_feat, acp_feat_d, acp_first], "no ACP command")
    elif "KIMI_CACHE_DIR" not in b.impl.env:
        col.na([acp_first], "no schema index to do without (not kimi-acp, or not primed)")
    if not b.impl.wire_cmd:
        col.na([wire_init, wire_ready, wire_feat, wire_feat_d], "no Wire command")


# --------------------------------------------------------------------------- 2 sessions and memory


async def measure_sessions(b: Bench) -> None:
    col, m, s = b.col, "2 sessions", b.sizes
    lo, hi = s.idle_sessions
    first = col.declare("sessions.first", m, "session/new, first (server idle)", "ms", 20)
    steady = col.declare(
        "sessions.steady", m, f"session/new, steady (median of next {s.steady_sessions - 1})", "ms", 20
    )
    late = col.declare("sessions.at_hi", m, f"session/new with {hi:,} open (median of last 20)", "ms", 20)
    rss_init = col.declare("sessions.rss_init", m, "RSS after initialize (idle)", "MiB", 40)
    rss_1 = col.declare("sessions.rss_1", m, "RSS after 1 session", "MiB")
    rss_20 = col.declare("sessions.rss_20", m, f"RSS after {s.steady_sessions} sessions", "MiB", 45)
    rss_lo = col.declare("sessions.rss_lo", m, f"RSS after {lo:,} sessions", "MiB")
    rss_hi = col.declare("sessions.rss_hi", m, f"RSS after {hi:,} sessions", "MiB")
    per = col.declare(
        "sessions.per", m, f"RSS per idle session ((@{hi:,} − @{lo:,}) / {hi - lo:,})", "MiB", 0.5, digits=3
    )
    keys = [first, steady, late, rss_init, rss_1, rss_20, rss_lo, rss_hi, per]
    if not b.impl.acp_cmd:
        col.na(keys, "no ACP command")
        return

    async def once() -> None:
        share = make_share(b.workspace, "sessions", "scripted")
        p = await b.spawn_acp(share)
        try:
            await acp_initialize(p)
            # past any delayed warm-up (ours starts 0.5 s after start-up): its memory counts too
            await asyncio.sleep(SETTLE_S)
            await procstat.wait_idle(p.pid, quiet=0.2, timeout=15)
            col.add(rss_init, procstat.rss_bytes(p.pid) / MIB)
            _, reply = await acp_new_session(p, share.work_dir)
            col.add(first, ms(reply.elapsed))
            await procstat.wait_idle(p.pid, quiet=0.2, timeout=15)
            col.add(rss_1, procstat.rss_bytes(p.pid) / MIB)
            times = []
            for _ in range(s.steady_sessions - 1):
                _, reply = await acp_new_session(p, share.work_dir)
                times.append(ms(reply.elapsed))
            col.add(steady, median(times))
            await procstat.wait_idle(p.pid, quiet=0.2, timeout=15)
            col.add(rss_20, procstat.rss_bytes(p.pid) / MIB)
            count = s.steady_sessions
            while count < lo:
                await acp_new_session(p, share.work_dir)
                count += 1
            await procstat.wait_idle(p.pid, quiet=0.2, timeout=15)
            at_lo = procstat.rss_bytes(p.pid)
            col.add(rss_lo, at_lo / MIB)
            if capped:
                return
            times = []
            while count < hi:
                _, reply = await acp_new_session(p, share.work_dir)
                times.append(ms(reply.elapsed))
                count += 1
            await procstat.wait_idle(p.pid, quiet=0.2, timeout=15)
            at_hi = procstat.rss_bytes(p.pid)
            col.add(rss_hi, at_hi / MIB)
            col.add(late, median(times[-20:]))
            col.add(per, (at_hi - at_lo) / (hi - lo) / MIB)
        finally:
            await p.close(timeout=10)

    capped = b.impl.max_sessions is not None and b.impl.max_sessions < hi
    if capped:
        col.na([late, rss_hi, per], f"stopped at {lo:,} sessions for this implementation (slow session/new)")
    for run in range(b.runs):
        b.progress(f"sessions, run {run + 1}/{b.runs}")
        await guarded(b, keys, once())


# --------------------------------------------------------------------------- 3 streaming


async def measure_stream(b: Bench) -> None:
    col, m, s = b.col, "3 stream", b.sizes
    n = s.burst_chunks
    expected = "".join(burst_texts(n))
    protocols = [("acp", "ACP", b.impl.acp_cmd), ("wire", "Wire", b.impl.wire_cmd)]
    floor = [
        col.declare(
            "stream.floor.p50",
            m,
            f"no agent: fake model → bench client, paced {s.paced_chunks}: p50",
            "ms",
            digits=2,
        ),
        col.declare(
            "stream.floor.p99",
            m,
            f"no agent: fake model → bench client, paced {s.paced_chunks}: p99",
            "ms",
            digits=2,
        ),
    ]

    async def floor_once() -> None:
        latencies = await direct_paced(b.model_port, s.paced_chunks, s.paced_interval_ms)
        if len(latencies) != s.paced_chunks:
            raise RuntimeError(f"direct paced stream: {len(latencies)} of {s.paced_chunks} chunks")
        col.add(floor[0], percentile(latencies, 50))
        col.add(floor[1], percentile(latencies, 99))

    burst_keys: dict[tuple[str, str], list[str]] = {}
    paced_keys: dict[str, list[str]] = {}
    for proto, name, _ in protocols:
        for model in ("scripted", "loopback"):
            p = f"stream.{proto}.{model}"
            tag = f"{name} [{model}]"
            burst_keys[(proto, model)] = [
                col.declare(f"{p}.first", m, f"{tag} first prompt (1 chunk, cold) → response", "ms"),
                col.declare(f"{p}.burst", m, f"{tag} burst {n:,} chunks: prompt → response", "ms", 60),
                col.declare(f"{p}.cpu", m, f"{tag} burst {n:,} chunks: server CPU", "ms"),
                col.declare(
                    f"{p}.updates", m, f"{tag} burst {n:,} chunks: text updates received", "count", digits=0
                ),
                col.declare(f"{p}.per_chunk", m, f"{tag} server CPU per streamed chunk", "µs", 25),
            ]
        p = f"stream.{proto}.paced"
        tag = f"{name} [loopback] paced {s.paced_chunks} × {s.paced_interval_ms:g} ms"
        paced_keys[proto] = [
            col.declare(f"{p}.p50", m, f"{tag}: emit → receive p50", "ms", digits=2),
            col.declare(f"{p}.p99", m, f"{tag}: emit → receive p99", "ms", 1, digits=2),
            col.declare(f"{p}.max", m, f"{tag}: emit → receive max", "ms", digits=2),
            col.declare(f"{p}.updates", m, f"{tag}: text updates received", "count", digits=0),
        ]

    def check_burst(keys: list[str], got: Prompted) -> None:
        text = "".join(t for _, t in got.chunks)
        intact = text == expected
        if not intact:
            col.fail(
                keys[1:], "burst text not delivered intact and in order: " + first_difference(text, expected)
            )
        if got.late:
            col.fail(keys[1:], f"{got.late} text chunks arrived after the prompt's response")
        col.add(keys[1], ms(got.elapsed))
        col.add(keys[2], ms(got.cpu))
        col.add(keys[3], len(got.chunks))
        col.add(keys[4], got.cpu * 1e6 / n)
        if intact and len(got.chunks) != n:
            col.note(
                keys[3],
                f"{n:,} model chunks arrived as {len(got.chunks):,} updates (coalesced by the server)",
            )

    def check_paced(keys: list[str], got: Prompted) -> None:
        latencies: list[float] = []
        stamps: list[float] = []
        for received, text in got.chunks:
            for match in PACED_PATTERN.finditer(text):
                emitted = float(match.group(1))
                stamps.append(emitted)
                latencies.append(ms(received - emitted))
        if len(stamps) != s.paced_chunks or stamps != sorted(stamps):
            col.fail(
                keys,
                f"paced stream: got {len(stamps)} of {s.paced_chunks} timestamps"
                + ("" if stamps == sorted(stamps) else ", out of order"),
            )
        if got.late:
            col.fail(keys, f"{got.late} text chunks arrived after the prompt's response")
        if not latencies:
            return
        col.add(keys[0], percentile(latencies, 50))
        col.add(keys[1], percentile(latencies, 99))
        col.add(keys[2], max(latencies))
        col.add(keys[3], len(got.chunks))
        if len(stamps) > 1:
            interval = ms(stamps[-1] - stamps[0]) / (len(stamps) - 1)
            col.note(keys[0], f"measured emit interval ≈{interval:.1f} ms (asyncio sleep pacing)")
        if len(got.chunks) != len(stamps):
            col.note(
                keys[3],
                f"{len(stamps)} chunks arrived as {len(got.chunks)} updates (coalesced by the server)",
            )

    async def once(proto: str, cmd: list[str], model: str) -> None:
        keys = burst_keys[(proto, model)]
        if model == "scripted":
            share = make_share(
                b.workspace,
                f"stream-{proto}-{model}",
                "scripted",
                scripts=[text_script(["ready"]), text_script(burst_texts(n))],
            )
            burst_prompt = "Write the benchmark burst."
        else:
            share = make_share(b.workspace, f"stream-{proto}-{model}", "loopback", port=b.model_port)
            burst_prompt = f"bench:burst n={n}"
        if proto == "wire":
            p = await b.spawn_wire(share, ["--work-dir", str(share.work_dir)])
        else:
            p = await b.spawn_acp(share)
        try:
            session_id = None
            if proto == "acp":
                await acp_initialize(p)
                session_id, _ = await acp_new_session(p, share.work_dir)
            else:
                await wire_initialize(p)
            await procstat.wait_idle(p.pid, quiet=0.1, timeout=15)
            warm = await prompt(p, proto, session_id, "hello")
            col.add(keys[0], ms(warm.elapsed))
            await procstat.wait_idle(p.pid, quiet=0.1, timeout=15)
            check_burst(keys, await prompt(p, proto, session_id, burst_prompt))
            if model == "loopback":
                await procstat.wait_idle(p.pid, quiet=0.1, timeout=15)
                text = f"bench:paced n={s.paced_chunks} interval_ms={s.paced_interval_ms:g}"
                try:
                    check_paced(paced_keys[proto], await prompt(p, proto, session_id, text))
                except Exception as exc:  # any failure becomes a reported error
                    col.fail(paced_keys[proto], describe(exc))
        finally:
            await p.close()

    for run in range(b.runs):
        b.progress(f"stream, run {run + 1}/{b.runs}")
        await guarded(b, floor, floor_once())
        for proto, _name, cmd in protocols:
            if not cmd:
                continue
            for model in ("scripted", "loopback"):
                keys = burst_keys[(proto, model)] + (paced_keys[proto] if model == "loopback" else [])
                await guarded(b, keys, once(proto, cmd, model))
    for proto, _name, cmd in protocols:
        if not cmd:
            col.na(
                [k for (pr, _), ks in burst_keys.items() if pr == proto for k in ks] + paced_keys[proto],
                f"no {name} command",
            )


# --------------------------------------------------------------------------- 4 history


async def measure_history(b: Bench) -> None:
    col, m, s = b.col, "4 history", b.sizes
    turns, tools = s.history_turns, s.history_tool_turns
    events_n = turns * 5 + tools * 5  # what the generator writes (checked against its count)
    cold = col.declare(
        "history.acp.cold", m, f"ACP spawn → session/load of {turns} turns answered (cold)", "ms", 300
    )
    load = col.declare(
        "history.acp.load",
        m,
        f"ACP session/load {turns} turns ({tools} with tools), request → response, cold",
        "ms",
    )
    load2 = col.declare("history.acp.load2", m, "ACP session/load, a 2nd copy in the same process", "ms")
    updates = col.declare(
        "history.acp.updates", m, "ACP updates replayed before the load response", "count", digits=0
    )
    wire_cold = col.declare(
        "history.wire.cold", m, f"Wire spawn → replay of {events_n} events finished", "ms", 100
    )
    wire_start = col.declare("history.wire.start", m, f"Wire start → initialize, {turns}-turn session", "ms")
    replay = col.declare(
        "history.wire.replay", m, "Wire replay, request → response (sent right after initialize)", "ms", 25
    )
    replay2 = col.declare("history.wire.replay2", m, "Wire replay again, same process", "ms")
    events = col.declare("history.wire.events", m, "Wire events replayed", "count", digits=0)
    acp_keys, wire_keys = [cold, load, load2, updates], [wire_cold, wire_start, replay, replay2, events]

    def check_acp(kinds: Counter[str]) -> None:
        if kinds["user_message_chunk"] != turns or kinds["tool_call"] != tools:
            col.fail(
                acp_keys,
                f"replay shows {kinds['user_message_chunk']} user messages "
                f"and {kinds['tool_call']} tool calls, "
                f"expected {turns} and {tools} (history generator or replay wrong)",
            )

    async def load_once(p: RpcProcess, session_id: str, cwd: Path) -> tuple[Reply, Counter[str]] | None:
        start = len(p.notifications)
        reply = await p.request(
            "session/load",
            {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []},
            timeout=REQUEST_TIMEOUT,
        )
        if reply.error is not None and reply.error.method_not_found:
            col.na(acp_keys, "session/load not supported (method not found)")
            return None
        reply.unwrap()
        kinds = Counter(
            u.get("sessionUpdate", "?")
            for _, u in session_updates(p.notifications[start : reply.seq], session_id)
        )
        return reply, kinds

    async def acp_once() -> None:
        share = make_share(b.workspace, "history-acp", "scripted")
        history = build_history(share.dir, share.work_dir, turns, tools)
        second = copy_history(share.dir, history)
        p = await b.spawn_acp(share)
        try:
            result, _ = await acp_initialize(p)
            if not (result.get("agentCapabilities") or {}).get("loadSession"):
                col.na(acp_keys, "agent does not advertise loadSession")
                return
            # at once, as an IDE reopening its last thread does: whatever loads in the background
            # after `initialize` is part of what the user waits for
            loaded = await load_once(p, history.session_id, history.work_dir)
            if loaded is None:
                return
            reply, kinds = loaded
            col.note(load, f"the session's wire.jsonl + context.jsonl: {history.bytes / 1e6:.2f} MB")
            check_acp(kinds)
            col.add(cold, ms(reply.received - p.started))
            col.add(load, ms(reply.elapsed))
            col.add(updates, sum(kinds.values()))
            col.note(updates, "by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
            await procstat.wait_idle(p.pid, quiet=0.1, timeout=15)
            loaded = await load_once(p, second.session_id, second.work_dir)
            if loaded is not None:
                col.add(load2, ms(loaded[0].elapsed))
        finally:
            await p.close()

    async def replay_once(p: RpcProcess, history: History) -> Reply | None:
        start = len(p.notifications)
        reply = await p.request("replay", None, timeout=REQUEST_TIMEOUT)
        if reply.error is not None and reply.error.method_not_found:
            col.na(wire_keys, "replay not supported (method not found)")
            return None
        reply.unwrap()
        got = wire_events(p.notifications[start : reply.seq])
        kinds = Counter(e.get("type", "?") for _, e in got)
        if kinds["TurnBegin"] != turns or kinds["ToolCall"] != tools or len(got) != history.wire_records:
            col.fail(
                wire_keys,
                f"replay sent {len(got)} events "
                f"({kinds['TurnBegin']} TurnBegin, {kinds['ToolCall']} ToolCall), "
                f"expected {history.wire_records} ({turns}, {tools})",
            )
        col.add(events, len(got))
        return reply

    async def wire_once() -> None:
        share = make_share(b.workspace, "history-wire", "scripted")
        history = build_history(share.dir, share.work_dir, turns, tools)
        if history.wire_records != events_n:
            col.note(wire_cold, f"the generated session has {history.wire_records} events")
        extra = ["--work-dir", str(history.work_dir), "--session", history.session_id]
        p = await b.spawn_wire(share, extra)
        try:
            _, reply = await wire_initialize(p)
            col.add(wire_start, ms(reply.received - p.started))
            first = await replay_once(p, history)  # at once, as a client showing the thread does
            if first is None:
                return
            col.add(wire_cold, ms(first.received - p.started))
            col.add(replay, ms(first.elapsed))
            await procstat.wait_idle(p.pid, quiet=0.1, timeout=15)
            again = await replay_once(p, history)
            if again is not None:
                col.add(replay2, ms(again.elapsed))
        finally:
            await p.close()

    for run in range(b.runs):
        b.progress(f"history, run {run + 1}/{b.runs}")
        if b.impl.acp_cmd:
            await guarded(b, acp_keys, acp_once())
        if b.impl.wire_cmd:
            await guarded(b, wire_keys, wire_once())
    if not b.impl.acp_cmd:
        col.na(acp_keys, "no ACP command")
    if not b.impl.wire_cmd:
        col.na(wire_keys, "no Wire command")


# --------------------------------------------------------------------------- 5 concurrency

_ECHO_CHUNK = re.compile(r"(\w+)\.(\d{3}) ")


async def measure_concurrent(b: Bench) -> None:
    col, m, s = b.col, "5 concurrent", b.sizes
    n, k = s.concurrent_sessions, s.echo_chunks
    rounds = (("new", "1st prompt of each"), ("used", "2nd prompt of each"))
    totals: dict[str, str] = {}
    each: dict[str, str] = {}
    for r, label in rounds:
        totals[r] = col.declare(
            f"concurrent.{r}.total", m, f"{n} sessions × {k} chunks at once, {label}: total", "ms"
        )
        each[r] = col.declare(
            f"concurrent.{r}.each", m, f"{n} sessions × {k} chunks at once, {label}: median session", "ms"
        )
    lost = col.declare(
        "concurrent.lost", m, "chunks lost, late or out of order (both rounds)", "count", 0, digits=0
    )
    misrouted = col.declare(
        "concurrent.misrouted", m, "chunks misrouted to another session (both rounds)", "count", 0, digits=0
    )
    keys = [*totals.values(), *each.values(), lost, misrouted]
    if not b.impl.acp_cmd:
        col.na(keys, "no ACP command")
        return

    def check(
        p: RpcProcess, start: int, sessions: dict[str, str], replies: list[Reply], allowed: set[str]
    ) -> tuple[int, int, list[str]]:
        """(lost, misrouted, problems) of one round: each session must show exactly its own chunks."""
        owners = set(sessions.values())
        n_lost = n_misrouted = 0
        problems: list[str] = []
        for (sid, token), reply in zip(sessions.items(), replies):
            stop = (reply.unwrap() or {}).get("stopReason")
            if stop != "end_turn":
                problems.append(f"session {token}: stopReason {stop!r}")
            before = acp_text_chunks(p.notifications[start : reply.seq], sid)
            after = acp_text_chunks(p.notifications[reply.seq :], sid)
            own: list[str] = []
            for _, text in before:
                for match in _ECHO_CHUNK.finditer(text):
                    if match.group(1) == token:
                        own.append(match.group(0))
                    else:
                        n_misrouted += 1
                        if match.group(1) in owners:
                            problems.append(
                                f"chunk {match.group(0).strip()} of session {match.group(1)} "
                                f"shown in session {token}"
                            )
            leftover = _ECHO_CHUNK.sub("", "".join(t for _, t in before))
            if leftover.strip():
                problems.append(f"session {token}: unexpected text {leftover[:60]!r}")
            wanted = echo_texts(token, k)
            if own != wanted:
                missing = len(set(wanted) - set(own))
                n_lost += max(missing, 1)
                problems.append(
                    f"session {token}: {len(own)} of {k} own chunks before the response"
                    + ("" if missing else ", out of order")
                )
            if after:
                problems.append(f"session {token}: {len(after)} text updates after the response")
        for _, message in p.notifications[start:]:
            if message.get("method") != "session/update":
                continue
            target = (message.get("params") or {}).get("sessionId")
            if target not in sessions and target not in allowed:
                n_misrouted += 1
                problems.append(f"update for unknown session {target!r}")
        return n_lost, n_misrouted, problems

    async def once(run: int) -> None:
        share = make_share(b.workspace, "concurrent", "loopback", port=b.model_port)
        p = await b.spawn_acp(share)
        try:
            await acp_initialize(p)
            warm_id, _ = await acp_new_session(p, share.work_dir)
            await prompt(p, "acp", warm_id, "hello")  # process-wide imports done, not measured
            ids = [(await acp_new_session(p, share.new_work_dir(f"w{i:02d}")))[0] for i in range(n)]
            n_lost = n_misrouted = 0
            problems: list[str] = []
            for r, _ in rounds:
                sessions = {sid: f"s{i:02d}{r}{run}" for i, sid in enumerate(ids)}
                await procstat.wait_idle(p.pid, quiet=0.1, timeout=15)
                start = len(p.notifications)
                pending = [
                    p.send_request(
                        "session/prompt", acp_prompt_params(sid, f"bench:echo token={token} n={k}")
                    )[1]
                    for sid, token in sessions.items()
                ]
                await p.flush()
                replies: list[Reply] = await asyncio.wait_for(asyncio.gather(*pending), REQUEST_TIMEOUT * 2)
                await asyncio.sleep(GRACE)
                col.add(totals[r], ms(max(x.received for x in replies) - min(x.sent for x in replies)))
                col.add(each[r], median([ms(x.elapsed) for x in replies]))
                a, b_, c = check(p, start, sessions, replies, {warm_id})
                n_lost, n_misrouted, problems = (
                    n_lost + a,
                    n_misrouted + b_,
                    problems + [f"{r}: {x}" for x in c],
                )
            col.add(lost, n_lost)
            col.add(misrouted, n_misrouted)
            if problems:
                more = f"; … {len(problems) - 5} more" if len(problems) > 5 else ""
                col.fail([lost, misrouted], "; ".join(problems[:5]) + more)
        finally:
            await p.close()

    for run in range(b.runs):
        b.progress(f"concurrent, run {run + 1}/{b.runs}")
        await guarded(b, keys, once(run))


MEASURES: dict[str, Callable[[Bench], Awaitable[None]]] = {
    "start": measure_start,
    "sessions": measure_sessions,
    "stream": measure_stream,
    "history": measure_history,
    "concurrent": measure_concurrent,
}
