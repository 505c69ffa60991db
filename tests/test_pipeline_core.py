"""The threaded core: lossless file runs, latest-wins live runs, errors and stops."""

import os
import sys
import threading
import time

import numpy as np
import pytest

from realtime.metrics import Metrics
from realtime.pipeline import BEHIND_NICE, Pipeline
from realtime.sources import Source, SourceInfo


class ListSource(Source):
    """n synthetic frames; `period` > 0 makes it a camera delivering at that pace."""

    def __init__(self, n, *, live=False, period=0.0):
        self.n, self.live, self.period = n, live, period

    def open(self):
        self.info = SourceInfo(name="synthetic", uri="synthetic", live=self.live, width=8, height=6,
                               fps=1 / self.period if self.period else 30.0, frame_count=self.n)
        return self.info

    def frames(self):
        start = time.perf_counter()
        for i in range(self.n):
            if self.period:
                time.sleep(max(0.0, start + i * self.period - time.perf_counter()))
            yield i * (self.period or 1 / 30), np.full((6, 8, 3), i % 256, np.uint8)


class Record:
    name = "record"

    def __init__(self, delay=0.0, fail_at=None):
        self.delay, self.fail_at, self.seen, self.closed = delay, fail_at, [], False

    def process(self, frame):
        if frame.index == self.fail_at:
            raise RuntimeError("boom")
        time.sleep(self.delay)
        self.seen.append(frame)
        return frame

    def close(self):
        self.closed = True


class Slow(Record):
    name = "slow"


def _run(source, stages, **kw):
    source.open()
    before = threading.active_count()
    result = Pipeline(source, stages, **kw).run()
    assert threading.active_count() == before  # no thread outlives run()
    return result


def test_file_source_is_lossless_and_ordered():
    slow, sink = Slow(delay=0.01), Record()
    result = _run(ListSource(40), [slow, sink])
    assert result.reason == "end of source" and result.exit_code == 0
    assert [f.index for f in sink.seen] == list(range(40))
    assert result.dropped == 0 and result.frames_out == 40 and sink.closed and slow.closed


def test_live_source_drops_stale_frames_and_keeps_latency_bounded():
    period, work = 0.005, 0.03  # camera at 200 fps, stage at ~33 fps
    slow, sink = Slow(delay=work), Record()
    metrics = Metrics()
    result = _run(ListSource(120, live=True, period=period), [slow, sink], metrics=metrics, max_in_flight=1)
    assert result.dropped > 50
    assert result.frames_in == result.frames_out + result.dropped
    idx = [f.index for f in sink.seen]
    assert idx == sorted(idx)
    assert sum(f.dropped_before for f in sink.seen) <= result.dropped
    # bounded latency: with one frame in flight, a frame waits at most ~ one stage time before it starts
    snap = metrics.snapshot()
    assert snap["latency_p95_ms"] < 1000 * (work * 2 + 0.2)


def test_stage_error_stops_in_order_with_a_clear_message():
    bad, sink = Record(fail_at=7), Record()
    bad.name = "infer"
    result = _run(ListSource(50), [bad, sink])
    assert result.reason == "error" and result.exit_code == 1
    assert "stage 'infer' failed on frame 7: RuntimeError: boom" in result.message
    assert [f.index for f in sink.seen] == list(range(len(sink.seen)))
    assert sink.closed and bad.closed


def test_stop_request_ends_the_run_promptly():
    source = ListSource(10_000)
    source.open()
    sink = Slow(delay=0.002)
    pipe = Pipeline(source, [sink])
    timer = threading.Timer(0.2, pipe.stop)
    timer.start()
    t0 = time.perf_counter()
    result = pipe.run()
    assert time.perf_counter() - t0 < 3
    assert result.reason == "interrupted" and result.exit_code == 130 and 0 < result.frames_out < 10_000
    assert sink.closed


class HandshakeSource(ListSource):
    """A live camera that delivers frame i+1 only once the live stage has sent frame i (or
    `patience` seconds passed): every frame a free pipeline can take reaches the senders."""

    def __init__(self, n, sent: threading.Event, patience: float, at_end=None):
        super().__init__(n, live=True, period=1 / 30)
        self.sent, self.patience, self.at_end = sent, patience, at_end

    def frames(self):
        for i in range(self.n):
            if i:
                self.sent.wait(self.patience)
                self.sent.clear()
            yield i / 30, np.full((6, 8, 3), i % 256, np.uint8)
        if self.at_end is not None:  # the camera has given its last frame
            self.at_end()


class Sender(Record):
    name = "live"

    def __init__(self, sent: threading.Event):
        super().__init__()
        self.sent = sent

    def process(self, frame):
        frame = super().process(frame)
        self.sent.set()
        return frame


class Stuck(Record):
    """Drawing and writing that hang until the senders have had every frame."""

    name = "render"

    def __init__(self, until: threading.Event):
        super().__init__()
        self.until = until

    def process(self, frame):
        self.until.wait(30)
        return super().process(frame)


def _avatar_run(release_after, n=12, patience=0.3):
    sent, done = threading.Event(), threading.Event()
    sender, stuck, write = Sender(sent), Stuck(done), Record()

    class Last(Record):
        def process(self, frame):
            if frame.index == n - 1:
                done.set()
            return frame

    gate_watch = Last()
    gate_watch.name = "watch"
    # Without the release the last frame never passes the gate watch; the stuck stages are let go
    # once the camera has given every frame (what reached the senders and what the gate dropped is
    # decided by then) instead of after their 30 s.
    source = HandshakeSource(n, sent, patience, at_end=done.set if release_after is None else None)
    result = _run(source, [Record(), sender, gate_watch, stuck, write], max_in_flight=2, release_after=release_after)
    done.set()
    return result, sender, write


def test_the_live_senders_never_wait_for_drawing_or_writing():
    """With the gate slot freed after the live stage, a render/write stage that hangs delays no
    frame for the senders and drops none at the gate: all 12 frames are sent, and the stuck
    stages skip the oldest waiting frames (counted) instead of holding the camera back."""
    result, sender, write = _avatar_run("watch")
    assert [f.index for f in sender.seen] == list(range(12))
    assert result.dropped == 0
    # the stuck stages saw the newest frames; the others were skipped and counted
    assert write.seen and write.seen[-1].index == 11


def test_without_the_release_a_stuck_render_holds_the_senders_back():
    """The contrast: when frames count until the last stage, two stuck frames fill the gate and
    the camera's later frames are dropped before the senders see them."""
    result, sender, _ = _avatar_run(None)
    assert len(sender.seen) < 12 and result.dropped > 0


class Where(Record):
    """Notes the OS name and nice value of the thread that runs it (Linux /proc)."""

    def process(self, frame):
        if not self.seen:
            tid = threading.get_native_id()
            self.comm = open(f"/proc/self/task/{tid}/comm").read().strip()
            self.nice = os.getpriority(os.PRIO_PROCESS, tid)
        return super().process(frame)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="OS thread names and per-thread nice are Linux's")
def test_stage_threads_carry_their_names_and_the_ones_behind_the_senders_a_lower_priority():
    """`top -H` and bench/latency.py tell the stages apart by their OS thread names; on a live source
    the threads after the senders (drawing, writing, the encoder threads they start) yield the CPU."""
    live, render = Where(), Where()
    live.name, render.name = "live", "render"
    base = os.getpriority(os.PRIO_PROCESS, 0)
    _run(ListSource(3, live=True, period=0.01), [live, render], release_after="live")
    assert (live.comm, render.comm) == ("stage-live", "stage-render")
    assert live.nice == base and render.nice == min(19, base + BEHIND_NICE)


class Hold:
    """A stage that holds frames (as the ground stage's `--motion-lag`): each leaves once `lag` later ones came."""

    name = "hold"

    def __init__(self, lag=3, delay=0.0):
        self.lag, self.delay, self.held, self.taken, self.closed = lag, delay, [], [], False

    def push(self, frame):
        time.sleep(self.delay)
        self.taken.append(frame.index)
        self.held.append(frame)
        out, self.held = self.held[:-self.lag], self.held[-self.lag:]
        return out

    def flush(self):
        out, self.held = self.held, []
        return out

    def close(self):
        self.closed = True


@pytest.mark.parametrize("max_in_flight", [1, 4])
def test_a_stage_that_holds_frames_lets_every_one_go_in_order(max_in_flight):
    """Held frames leave the gate's count (a lag longer than max_in_flight never stalls the run); the end of the
    source lets the held ones go, through the stages after, before the end."""
    first, hold, sink = Record(), Hold(lag=5), Record()
    result = _run(ListSource(40), [first, hold, sink], max_in_flight=max_in_flight)
    assert result.reason == "end of source" and result.exit_code == 0
    assert [f.index for f in sink.seen] == list(range(40)) and result.frames_out == 40
    assert hold.closed and sink.closed


def test_a_users_stop_lets_the_held_frames_go_to_the_outputs():
    """Ctrl+C (a stop that is not an error): the frames the holding stage took still reach the outputs, in order."""
    source = ListSource(10_000)
    source.open()
    hold, sink = Hold(lag=4, delay=0.002), Record()
    pipe = Pipeline(source, [Record(), hold, sink])
    threading.Timer(0.2, pipe.stop).start()
    result = pipe.run()
    assert result.reason == "interrupted" and result.exit_code == 130
    assert 4 < len(sink.seen) < 10_000
    assert [f.index for f in sink.seen] == hold.taken == list(range(len(hold.taken)))  # none taken is lost


def test_an_error_after_a_holding_stage_stops_at_once():
    hold, bad = Hold(lag=3), Record(fail_at=10)
    result = _run(ListSource(200), [hold, bad])
    assert result.reason == "error" and "failed on frame 10" in result.message
    assert [f.index for f in bad.seen] == list(range(10))
