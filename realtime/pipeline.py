"""Threads, the source gate, and shutdown.

One thread reads the source, one thread runs each stage, frames travel
through queues in order. The only place that drops frames is the gate at the
entrance (MediaPipe's flow limiter): at most `max_in_flight` frames are inside
the stages at once; while the stages are busy a live source keeps only its
newest frame (older ones are dropped and counted), a file source waits
(nothing is dropped). So latency stays bounded on live input and file runs
are lossless.

The avatar first (`release_after`, live sources): the stage that feeds the live senders
frees the frame's gate slot as soon as it is done, so what comes after it (drawing, video
encoding, the tracks file, the viewer) never holds a new frame back from the senders. Those
later stages take frames from a short queue that keeps the newest (`BEHIND_LIMIT`); when they
fall behind, the oldest waiting frame is skipped for them and counted (`behind_skipped`). Their
threads also run at a lower CPU priority (Linux: `BEHIND_NICE`), and so do the threads they start
(the video encoder's): on a machine with few cores, drawing and encoding then take the CPU the
model and the senders leave over, instead of slowing the model of the next frame.

Shutdown: the end of the source sends the one end marker, `END`, through
every stage; a stop request (Ctrl+C, window closed, an error in any stage)
makes every thread leave after its current frame (a thread waiting for its
next frame is handed `END` too, and the stop flag says not to pass it on).
Either way all threads are joined, then every stage and the source are
closed, before `run()` returns.

A stage that holds frames (`holds_frames`: the ground stage's fixed lag) lets them go from `push`, and
`flush` gives the rest at the end. The frames it holds do not count against `max_in_flight` (a lag of
many frames never stalls the gate). On a stop that is not an error (Ctrl+C, SIGTERM, a closed
window) that stage and every stage after it finish what they were given: the held frames are flushed
and go through the later stages to the outputs, in order, before `END`; the stages before it stop as
above. A second stop request, an error or a reader that closed the output stop them at once.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence

from realtime.errors import ReaderClosed, Terminated
from realtime.frames import Frame
from realtime.metrics import Metrics
from realtime.mode import RunMode, mode_of
from realtime.sources import Source

log = logging.getLogger(__name__)


class _EndOfStream:
    """No more frames for this stage: the source ended, or the run stops."""

    def __repr__(self) -> str:
        return "END"


END = _EndOfStream()  # the one end-of-stream marker on the gate and every queue
POLL = 0.1  # seconds a blocked thread waits before it looks at the stop flag again
BEHIND_LIMIT = 4  # frames waiting after the live senders before the oldest is skipped (live sources)
BEHIND_NICE = 10  # added to the nice value of the threads after the live senders (live sources, Linux)
PR_SET_NAME = 15  # prctl option (linux/prctl.h)


class Stage(Protocol):
    """A pipeline stage: a plain object; the pipeline owns the thread. A stage that holds frames (a fixed lag:
    the ground stage's `lag`) has `push(frame) -> list[Frame]` (the frames it lets go, oldest first) and
    `flush() -> list[Frame]` (every frame still held) instead of a one-in, one-out `process` (`holds_frames`)."""

    name: str

    def process(self, frame: Frame) -> Frame:
        ...

    def close(self) -> None:
        ...


def holds_frames(stage) -> bool:
    """The stage may hold frames (it has `push` and `flush`)."""
    return callable(getattr(stage, "push", None)) and callable(getattr(stage, "flush", None))


def _through_one(stage, frames: list[Frame]) -> list[Frame]:
    """`frames` through one stage: the frames that leave it, in order."""
    if holds_frames(stage):
        return [out for frame in frames for out in stage.push(frame)]
    return [stage.process(frame) for frame in frames]


def through(stages: Sequence, frame: Frame) -> list[Frame]:
    """One frame through `stages` on the calling thread: the frames that leave the last one (the frame itself, or,
    behind a stage that holds frames, none or the frames that stage let go), in order."""
    frames = [frame]
    for stage in stages:
        frames = _through_one(stage, frames)
    return frames


def flush_through(stages: Sequence) -> list[Frame]:
    """The frames `stages` still hold (the end of a source), each through the stages after its own, in order."""
    frames: list[Frame] = []
    for stage in stages:
        frames = _through_one(stage, frames)
        if holds_frames(stage):
            frames += stage.flush()
    return frames


@dataclass
class RunResult:
    reason: str  # "end of source", "max frames", "source ended early", "interrupted", "terminated", "window closed",
    # "reader closed" (a pipe's reader stopped reading: a normal end), "error"
    message: str  # one line saying why the run ended
    exit_code: int
    frames_in: int
    frames_out: int
    dropped: int


class StageError(Exception):
    def __init__(self, stage: str, frame_index: Optional[int], error: BaseException):
        where = f" on frame {frame_index}" if frame_index is not None else ""
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        super().__init__(f"stage '{stage}' failed{where}: {type(error).__name__}: {text}")
        self.stage, self.frame_index, self.error = stage, frame_index, error


class Gate:
    """The entrance: lets at most `max_in_flight` frames into the stages.

    `offer` (source thread) parks a frame; with `drop_stale` a newer frame
    replaces a parked one (counted as dropped), otherwise `offer` waits.
    `take` (first stage) waits for a parked frame and a free slot.
    `done` (last stage) frees a slot.
    """

    def __init__(self, max_in_flight: int, drop_stale: bool, stop: threading.Event, metrics: Metrics):
        self.max_in_flight = max_in_flight
        self.drop_stale = drop_stale
        self._stop = stop
        self._metrics = metrics
        self._cond = threading.Condition()
        self._parked = None
        self._in_flight = 0
        self._dropped_since_take = 0

    def offer(self, item) -> bool:
        """Park a frame (or the end marker). False when the run is stopping."""
        with self._cond:
            if self.drop_stale and item is not END:
                if self._parked is not None and self._parked is not END:
                    self._dropped_since_take += 1
                    self._metrics.frame_dropped()
            else:
                while self._parked is not None:
                    if self._stop.is_set():
                        return False
                    self._cond.wait(POLL)
            self._parked = item
            self._cond.notify_all()
            return not self._stop.is_set()

    def take(self):
        """The next frame to process, or END (the source ended, or the run stops)."""
        with self._cond:
            while self._parked is None or (self._parked is not END and self._in_flight >= self.max_in_flight):
                if self._stop.is_set():
                    return END
                self._cond.wait(POLL)
            item, self._parked = self._parked, None
            if item is not END:
                self._in_flight += 1
                if self._dropped_since_take:
                    item = item.replace(dropped_before=self._dropped_since_take)
                    self._dropped_since_take = 0
            self._cond.notify_all()
            return item

    def done(self, count: int = 1) -> None:
        """`count` frames left the stages (or are held by a stage that holds frames)."""
        with self._cond:
            self._in_flight -= count
            self._cond.notify_all()

    def readmit(self, count: int) -> None:
        """`count` frames a stage held are back in the stages (they were let in before: no wait)."""
        with self._cond:
            self._in_flight += count


class Pipeline:
    """Run `source` through `stages` on threads.

    max_in_flight: frames inside the stages at once (default: one per stage,
                   so every stage can be busy; lower it for lower latency).
    mode:          the run mode (realtime.mode); LIVE drops stale frames at the
                   gate. Default: LIVE or FILE as the source says.
    """

    def __init__(self, source: Source, stages: Sequence[Stage], *, metrics: Optional[Metrics] = None,
                 max_in_flight: Optional[int] = None, max_frames: Optional[int] = None, mode: Optional[RunMode] = None,
                 release_after: Optional[str] = None):
        if not stages:
            raise ValueError("a pipeline needs at least one stage")
        self.source = source
        self.stages = list(stages)
        self.metrics = metrics or Metrics()
        self.max_in_flight = max_in_flight or len(self.stages)
        self.max_frames = max_frames
        self.mode = mode
        names = [stage.name for stage in self.stages]
        if release_after is not None and release_after not in names:
            raise ValueError(f"release_after names no stage: {release_after!r} is not one of {names}")
        self.release_after = release_after  # on live sources, the gate slot is freed after this stage
        self.behind_skipped = 0  # frames the stages after `release_after` skipped (live sources)
        self.stop_event = threading.Event()
        self.abort = threading.Event()  # leave at once: an error, a closed reader, a second stop (no draining)
        holders = [i for i, stage in enumerate(self.stages) if holds_frames(stage)]
        self._drain_from = holders[0] if holders else None  # on a user's stop, this stage and those after it drain
        self.finished = threading.Event()  # the end of the source went through every stage
        self._stop_reason: Optional[str] = None
        self._error: Optional[StageError] = None
        self._max_frames_reached = False
        self._lock = threading.Lock()

    def stop(self, reason: str = "interrupted") -> None:
        """Ask every thread to finish its current frame and leave (thread-safe); behind a stage that holds frames,
        the stages from it on first finish what they hold (see the module's docstring). A second request, an
        error or a closed reader: leave at once."""
        with self._lock:
            again = self._stop_reason is not None
            if self._stop_reason is None:
                self._stop_reason = reason
        if again or reason in ("error", "reader closed"):
            self.abort.set()
        self.stop_event.set()

    def _fail(self, error: StageError) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
        log.error("%s", error)
        self.stop("error")

    def run(self, main_loop: Optional[Callable[[threading.Event], None]] = None) -> RunResult:
        """Run to the end of the source or until stopped. `main_loop(stop)` runs on the
        calling thread meanwhile (e.g. a viewer's event loop); it may call `stop()`."""
        info = self.source.info
        mode = self.mode or mode_of(info)
        gate = Gate(self.max_in_flight, drop_stale=mode.drops_stale, stop=self.stop_event, metrics=self.metrics)
        release = len(self.stages) - 1  # the stage after which a frame leaves the gate's count
        if self.release_after is not None and mode.drops_stale:
            release = [stage.name for stage in self.stages].index(self.release_after)
        queues = [_NewestQueue(BEHIND_LIMIT, self._skipped_behind) if i == release else queue.Queue()
                  for i in range(len(self.stages) - 1)]
        finished = self.finished
        threads = [threading.Thread(target=self._capture, args=(gate,), name="capture", daemon=True)]
        for i, stage in enumerate(self.stages):
            drains = self._drain_from is not None and i >= self._drain_from
            # a stage after the first that holds frames waits for its END on a stop: frames are still coming
            waits = self.abort if drains and i > self._drain_from else self.stop_event
            inbox = gate.take if i == 0 else _getter(queues[i - 1], waits)
            outbox = queues[i].put if i < len(queues) else None
            behind = release < i  # after the live senders: drawing, encoding, writing
            threads.append(threading.Thread(target=self._work, args=(stage, inbox, outbox, gate, finished, i == release, behind,
                                                                     drains, i < release),
                                            name=f"stage-{stage.name}", daemon=True))
        for t in threads:
            t.start()
        try:
            if main_loop is not None:
                main_loop(self.stop_event)
            while not finished.wait(POLL):
                if not any(t.is_alive() for t in threads[1:]):
                    break
        except KeyboardInterrupt as err:
            self.stop("terminated" if isinstance(err, Terminated) else "interrupted")
            self.abort.set()  # raised here: the run ends now
        finally:
            if not finished.is_set():
                self.stop_event.set()
                self.source.cancel()  # a capture thread waiting for data returns now
            for t in threads:
                _join(t)
            self._close_all()
            self.metrics.stop_clock()
        return self._result()

    # -- threads

    def _capture(self, gate: Gate) -> None:
        _name_os_thread("capture")
        index = -1
        try:
            for index, item in enumerate(self.source.frames()):
                if self.stop_event.is_set():
                    return
                self.metrics.frame_read()
                if isinstance(item, Frame):  # a source of whole frames (a tracks file: people and all)
                    frame = item.replace(read_at=time.perf_counter())
                else:
                    timestamp, image = item
                    frame = Frame(index=index, timestamp=timestamp, image=image, read_at=time.perf_counter())
                if not gate.offer(frame):
                    return
                if self.max_frames is not None and index + 1 >= self.max_frames:
                    self._max_frames_reached = True  # stop reading: the source may well have more
                    break
        except Exception as err:  # a broken source ends the run like a broken stage
            self._fail(StageError("capture", index + 1, err))
            return
        gate.offer(END)

    def _skipped_behind(self) -> None:
        with self._lock:
            self.behind_skipped += 1

    def _work(self, stage: Stage, inbox: Callable, outbox: Optional[Callable], gate: Gate, finished: threading.Event,
              releases: bool, behind: bool = False, drains: bool = False, counted: bool = True) -> None:
        """One stage's thread. `releases`: frames leave the gate's count after this stage; `drains`: on a user's stop
        this stage finishes what it is given (it holds frames, or comes after one that does); `counted`: its frames
        are inside the gate's count (before the release)."""
        _name_os_thread(threading.current_thread().name)
        if behind:
            _lower_priority(BEHIND_NICE)
        holding = holds_frames(stage)

        def leaving() -> bool:
            return self.stop_event.is_set() and (not drains or self.abort.is_set())

        while True:
            item = inbox()
            if item is END:
                if leaving():  # stopping: every thread leaves on its own
                    return
                if holding and not self._emit(stage, stage.flush, None, outbox, gate, releases, counted):
                    return
                if outbox is not None:
                    outbox(END)
                else:
                    finished.set()
                    self.stop_event.set()  # releases a main loop (viewer) waiting on it
                return
            if leaving():
                return
            if holding:
                if not self._emit(stage, functools.partial(stage.push, item), item, outbox, gate, releases, counted):
                    return
                continue
            start = time.perf_counter()
            try:
                item = stage.process(item)
            except ReaderClosed:  # `| head`: the end the reader chose
                self.stop("reader closed")
                return
            except Exception as err:
                self._fail(StageError(stage.name, item.index, err))
                return
            seconds = time.perf_counter() - start
            self.metrics.stage_time(stage.name, seconds)
            item = item.with_stage_time(stage.name, seconds)
            if outbox is not None:
                outbox(item)
            else:
                self.metrics.frame_done(item.read_at)
            if releases:
                gate.done()

    def _emit(self, stage: Stage, call: Callable, taken: Optional[Frame], outbox: Optional[Callable], gate: Gate,
              releases: bool, counted: bool) -> bool:
        """A holding stage's `push(taken)` or `flush()` (taken None), its frames passed on; False when it failed."""
        start = time.perf_counter()
        try:
            frames = call()
        except ReaderClosed:
            self.stop("reader closed")
            return False
        except Exception as err:
            self._fail(StageError(stage.name, None if taken is None else taken.index, err))
            return False
        seconds = time.perf_counter() - start
        self.metrics.stage_time(stage.name, seconds)
        change = len(frames) - (taken is not None)  # frames it let go less the one it took
        if releases:  # the frame it took leaves the gate's count now, held or not
            if taken is not None:
                gate.done()
        elif counted:  # held frames leave the gate's count, and come back into it when let go
            if change < 0:
                gate.done(-change)
            elif change > 0:
                gate.readmit(change)
        for frame in frames:
            frame = frame.with_stage_time(stage.name, seconds)
            if outbox is not None:
                outbox(frame)
            else:
                self.metrics.frame_done(frame.read_at)
        return True

    def _close_all(self) -> None:
        for stage in self.stages:
            try:
                stage.close()
            except ReaderClosed:  # nothing more can reach a reader that has gone
                pass
            except Exception as err:
                self._fail(StageError(stage.name, None, err))
        try:
            self.source.close()
        except Exception as err:
            log.warning("closing the source failed: %s", err)

    def _result(self) -> RunResult:
        m = self.metrics
        counts = dict(frames_in=m.frames_in, frames_out=m.frames_out, dropped=m.dropped)
        if self._error is not None:
            return RunResult("error", f"stopped: {self._error}", 1, **counts)
        if self._stop_reason in ("interrupted", "terminated"):  # Ctrl+C / SIGTERM
            code = 130 if self._stop_reason == "interrupted" else 143
            return RunResult(self._stop_reason, f"stopped: {self._stop_reason}; outputs hold every frame processed so far", code,
                             **counts)
        if self._stop_reason == "reader closed":
            return RunResult("reader closed", "finished: the program reading the output closed it; every frame until then "
                             "was written", 0, **counts)
        if self._stop_reason == "window closed":
            return RunResult("window closed", "stopped: viewer window closed", 0, **counts)
        if self._max_frames_reached:
            return RunResult("max frames", f"finished: --max-frames {self.max_frames} reached", 0, **counts)
        if self.source.ended_early:
            return RunResult("source ended early", f"stopped early: {self.source.ended_early}", 3, **counts)
        return RunResult("end of source", "finished: end of source", 0, **counts)


class _NewestQueue(queue.Queue):
    """A queue of at most `limit` frames: putting one more skips the oldest waiting frame (never
    the end marker), and calls `on_skip`."""

    def __init__(self, limit: int, on_skip: Callable[[], None]):
        super().__init__()
        self.limit = limit
        self.on_skip = on_skip

    def put(self, item, block=True, timeout=None) -> None:
        with self.mutex:
            if item is not END and len(self.queue) >= self.limit and self.queue[0] is not END:
                self.queue.popleft()
                self.on_skip()
        super().put(item, block, timeout)


def _getter(q: queue.Queue, stop: threading.Event) -> Callable:
    def get():
        while True:
            try:
                return q.get(timeout=POLL)
            except queue.Empty:
                if stop.is_set():
                    return END
    return get


def _name_os_thread(name: str) -> None:
    """Give the calling thread its name in the OS too (Linux), so `top -H`, profilers and
    bench/latency.py see `stage-render` rather than `python`; threads it starts (an encoder's) inherit it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError) as err:  # no prctl: the thread keeps the process's name
        log.debug("could not name thread %s: %s", name, err)


def _lower_priority(nice: int) -> None:
    """Raise the calling thread's nice value by `nice` (Linux: a thread is a task of its own, and
    threads it starts inherit the value). Elsewhere the call would renice the whole process: nothing."""
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError as err:  # a sandbox may refuse it: the run goes on at the usual priority
        log.debug("could not lower the priority of %s: %s", threading.current_thread().name, err)


def _join(thread: threading.Thread) -> None:
    """Join a thread; a stage stuck inside a long call gets a reminder every few seconds."""
    waited = 0.0
    while thread.is_alive():
        thread.join(timeout=5.0)
        waited += 5.0
        if thread.is_alive():
            log.warning("waiting for thread %s to finish its current frame (%.0f s)", thread.name, waited)
