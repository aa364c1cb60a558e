"""The checkpoint profiler's view over time: records named by the module's qualified name, the
memory timeline (matching the byte counters exactly), a Chrome / Perfetto trace checked against
the Trace Event Format, a matplotlib plot, and bounded memory however long it tracks."""

from __future__ import annotations

import json
import numbers

import pytest

import remat
import remat.nn as nn


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.Tanh()

    def forward(self, x: remat.Tensor) -> remat.Tensor:
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self, width: int = 32, depth: int = 4) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.tail = nn.Sequential(nn.Linear(width, width), Block(width))
        self.head = nn.Linear(width, 1)

    def forward(self, x: remat.Tensor) -> remat.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.head(self.tail(x))


def _checkpointed_net() -> Net:
    remat.manual_seed(0)
    net = Net()
    for b in net.blocks:
        b.activation_checkpointing = True
    net.tail[1].activation_checkpointing = True
    return net


def _profiled_step(net: Net, x: remat.Tensor | None = None) -> remat.CheckpointProfiler:
    x = remat.randn(16, 32) if x is None else x
    with remat.CheckpointProfiler() as prof:
        net(x).sum().backward()
    return prof


def test_module_records_are_named_by_qualified_name():
    prof = _profiled_step(_checkpointed_net())
    names = [r["name"] for r in prof.records()]
    assert names == ["blocks.0", "blocks.1", "blocks.2", "blocks.3", "tail.1"]
    assert all(r["kind"] == "segment" for r in prof.records())


def test_a_module_called_on_its_own_is_named_by_its_class():
    blk = Block(8)
    blk.activation_checkpointing = True
    with remat.CheckpointProfiler() as prof:
        blk(remat.randn(2, 8)).sum().backward()
    assert [r["name"] for r in prof.records()] == ["Block"]


def test_the_same_module_under_two_parents_gets_each_name():
    shared = Block(8)
    shared.activation_checkpointing = True
    a, b = nn.Sequential(shared), nn.Sequential(nn.Identity(), shared)
    with remat.CheckpointProfiler() as prof:
        (a(remat.randn(2, 8)) + b(remat.randn(2, 8))).sum().backward()
    assert sorted(r["name"] for r in prof.records()) == ["0", "1"]


def test_memory_timeline_follows_the_byte_counters():
    net, x = _checkpointed_net(), remat.randn(16, 32)
    start = remat.memory_allocated()
    prof = _profiled_step(net, x)
    rows = prof.memory_timeline()
    times = [t for t, _, _ in rows]
    assert times == sorted(times) and times[0] == 0.0
    assert rows[0] == (0.0, start, "memory")
    memory = [b for _, b, ev in rows if ev == "memory"]
    # Exactly the counters: the highest sample is the profiler's peak, the last is what is
    # live now (the graph is gone; the gradients stay).
    assert max(memory) == prof.peak_bytes()
    assert memory[-1] == remat.memory_allocated()
    events = [ev for _, _, ev in rows if ev != "memory"]
    made = [e for e in events if e.startswith("checkpoint:")]
    assert made == [f"checkpoint:{n}" for n in
                    ["blocks.0", "blocks.1", "blocks.2", "blocks.3", "tail.1"]]
    recomputed = [e.split(":", 1)[1] for e in events if e.startswith("recompute:")]
    # Backward runs the segments in reverse.
    assert recomputed == ["tail.1", "blocks.3", "blocks.2", "blocks.1", "blocks.0"]
    assert events.count("backward") == events.count("backward_end") == 1
    b0, b1 = events.index("backward"), events.index("backward_end")
    assert all(b0 < i < b1 for i, e in enumerate(events) if e.startswith("recompute"))


def test_reset_starts_a_new_timeline():
    prof = _profiled_step(_checkpointed_net())
    assert len(prof.memory_timeline()) > 10
    remat.CheckpointProfiler.reset()  # not tracking: the timeline is gone
    assert remat.CheckpointProfiler.memory_timeline() == []
    with remat.CheckpointProfiler() as prof:  # tracking: a fresh one, from this moment
        live = remat.memory_allocated()
        assert prof.memory_timeline() == [(0.0, live, "memory")]


def _check_trace_event(ev: dict) -> None:
    """One event of the Trace Event Format (the JSON object form Perfetto reads)."""
    assert isinstance(ev["name"], str) and ev["name"]
    assert ev["ph"] in {"M", "C", "X", "i"}
    assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
    if ev["ph"] == "M":
        assert ev["name"] in {"process_name", "thread_name"}
        assert isinstance(ev["args"]["name"], str)
        return
    assert isinstance(ev["ts"], numbers.Real) and ev["ts"] >= 0
    if ev["ph"] == "X":
        assert isinstance(ev["dur"], numbers.Real) and ev["dur"] >= 0
    if ev["ph"] == "C":
        assert ev["args"] and all(isinstance(v, numbers.Real) for v in ev["args"].values())
    if ev["ph"] == "i":
        assert ev["s"] in {"g", "p", "t"}


def test_chrome_trace_follows_the_trace_event_format(tmp_path):
    prof = _profiled_step(_checkpointed_net())
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    doc = json.loads(path.read_text())
    assert set(doc) == {"traceEvents", "displayTimeUnit"}
    assert doc["displayTimeUnit"] in {"ms", "ns"}
    events = doc["traceEvents"]
    for ev in events:
        _check_trace_event(ev)
    counters = [ev["args"]["bytes"] for ev in events if ev["ph"] == "C"]
    assert max(counters) == prof.peak_bytes()
    (backward,) = [ev for ev in events if ev["ph"] == "X" and ev["name"] == "backward"]
    recomputes = [ev for ev in events if ev["ph"] == "X" and ev.get("cat") == "recompute"]
    assert sorted(ev["name"] for ev in recomputes) == sorted(
        f"recompute {n}" for n in ["blocks.0", "blocks.1", "blocks.2", "blocks.3", "tail.1"])
    end = backward["ts"] + backward["dur"]
    for ev in recomputes:  # each recompute lies within the backward pass (µs, 3 decimals)
        assert backward["ts"] - 1e-3 <= ev["ts"] and ev["ts"] + ev["dur"] <= end + 1e-3
    assert sum(ev["ph"] == "i" for ev in events) == 5


def test_chrome_trace_escapes_names(tmp_path):
    w = remat.randn(4, 4, requires_grad=True)
    with remat.CheckpointProfiler() as prof:
        remat.checkpoint_segment(lambda t: (t @ w).tanh(), remat.randn(2, 4),
                                 name='odd "name"\\\n').sum().backward()
    prof.export_chrome_trace(tmp_path / "t.json")
    names = [ev["name"] for ev in json.loads((tmp_path / "t.json").read_text())["traceEvents"]]
    assert 'recompute odd "name"\\\n' in names


def test_plot_draws_memory_over_time(tmp_path):
    pytest.importorskip("matplotlib")
    prof = _profiled_step(_checkpointed_net())
    prof.plot(tmp_path / "memory.png")
    assert (tmp_path / "memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    prof.plot(tmp_path / "memory.svg")
    assert b"<svg" in (tmp_path / "memory.svg").read_bytes()[:2000]


def test_timeline_stays_bounded_however_long_it_tracks():
    with remat.CheckpointProfiler() as prof:
        peak_at = None
        for i in range(50_000):  # 100,000 allocations and frees
            t = remat.zeros(64 if i != 25_000 else 1 << 16)
            if i == 25_000:
                peak_at = remat.memory_allocated()
            del t
        rows = prof.memory_timeline()
    assert len(rows) <= 1 << 16
    # Merging keeps the higher of neighbouring samples, so the spike survives.
    assert max(b for _, b, _ in rows) == peak_at == prof.peak_bytes()
