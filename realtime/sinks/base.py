"""Where finished frames go: the `Sink` interface, the built-in sinks, and the
latest-wins adapter for slow or remote ones.

A sink is any object with `write(frame)` and `close()`; the write stage calls
every sink with every frame, in order. Built in: the tracks file
(`realtime.sinks.tracks.TrackWriter` is a sink as it is), the overlay video
(`VideoSink`), the live viewer (`ViewerSink`) and the progress bar
(`ProgressSink`). Add your own with `RunOptions(live_outputs=LiveOutputOptions(sinks=[...]))`.

Frame loss: file sources never lose a frame, so there the write stage calls each
sink directly and waits (a slow sink slows the run; a failing one stops it with
its message). Live sources must never stall: `run` wraps extra sinks in
`LatestWins`, which hands frames to its own thread, keeps only the newest one
while the sink is busy (counted in `dropped`), and cuts off a sink that raised
(logged once, counted in `errors`) instead of stopping the run.
"""

from __future__ import annotations

import logging
import threading
from typing import Optional, Protocol, runtime_checkable

from realtime.frames import Frame

log = logging.getLogger(__name__)


@runtime_checkable
class Sink(Protocol):
    def write(self, frame: Frame) -> None:
        """Take one finished frame (people, dense maps, `overlay` when rendered)."""

    def close(self) -> None:
        """Finish (flush, close files or connections); called once, whatever ended the run."""


class VideoSink:
    """The rendered picture (`frame.overlay`) into a `realtime.sinks.video.VideoWriter`."""

    def __init__(self, writer) -> None:
        self.writer = writer

    def write(self, frame: Frame) -> None:
        if frame.overlay is not None:
            self.writer.write(frame.overlay, frame.timestamp)

    def close(self) -> None:
        self.writer.close()


class ViewerSink:
    """The rendered picture and the current metrics to the live viewer (`submit` never blocks)."""

    def __init__(self, viewer, metrics=None) -> None:
        self.viewer = viewer  # viz.viewer.Viewer
        self.metrics = metrics  # realtime.metrics.Metrics, for the plots

    def write(self, frame: Frame) -> None:
        if frame.overlay is not None:
            self.viewer.submit(frame.overlay, self.metrics.snapshot() if self.metrics else {})

    def close(self) -> None:
        pass  # the window belongs to the main thread; the run closes it


class ProgressSink:
    """One step of a progress bar (tqdm) per frame."""

    def __init__(self, bar) -> None:
        self.bar = bar

    def write(self, frame: Frame) -> None:
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


class LatestWins:
    """Wrap a sink so `write` never blocks: frames go to a thread of its own, and
    while the sink is busy only the newest waiting frame is kept (the older one is
    dropped and counted). A sink that raises is logged once and fed no more frames;
    the run goes on. `close` hands over the last waiting frame, then closes the sink
    (waiting at most `close_timeout` seconds for a sink that hangs)."""

    def __init__(self, sink: Sink, *, name: Optional[str] = None, close_timeout: float = 5.0) -> None:
        self.sink = sink
        self.name = name or type(sink).__name__
        self.close_timeout = close_timeout
        self.dropped = 0
        self.written = 0
        self.errors: list[BaseException] = []
        self._cond = threading.Condition()
        self._pending: Optional[Frame] = None
        self._closing = False
        self._thread = threading.Thread(target=self._loop, name=f"sink-{self.name}", daemon=True)
        self._thread.start()

    def write(self, frame: Frame) -> None:
        with self._cond:
            if self.errors or self._closing:
                return
            if self._pending is not None:
                self.dropped += 1
            self._pending = frame
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closing:
                    self._cond.wait()
                frame, self._pending = self._pending, None
                if frame is None:  # closing, nothing left
                    break
            try:
                self.sink.write(frame)
                self.written += 1
            except Exception as err:  # a broken sink must not stop the run: cut it off
                log.warning("output %s failed on frame %d and gets no more frames: %s", self.name, frame.index, err)
                with self._cond:
                    self.errors.append(err)
                    self._pending = None
                break
        try:
            self.sink.close()
        except Exception as err:
            log.warning("output %s failed to close: %s", self.name, err)
            self.errors.append(err)

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(self.close_timeout)
        if self._thread.is_alive():
            log.warning("output %s did not finish within %.0f s; leaving it behind", self.name, self.close_timeout)
