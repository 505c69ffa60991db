"""The write stage: every finished frame to every sink (tracks, video, viewer, progress)."""

from __future__ import annotations

import threading
from typing import Optional

from realtime.frames import Frame


class WriteStage:
    """Hands every frame to every sink (`realtime.sinks`: tracks, video, viewer, progress,
    and any added with `LiveOutputOptions(sinks=...)`), in order. Closing it closes every sink,
    whatever ended the run."""

    name = "write"

    def __init__(self, sinks=()):
        self.sinks = list(sinks)  # realtime.sinks.Sink objects
        self.recorder: Optional[object] = None  # a sink started from the viewer's record key
        self._lock = threading.Lock()

    def process(self, frame: Frame) -> Frame:
        for sink in self.sinks:
            sink.write(frame)
        with self._lock:
            if self.recorder is not None:
                self.recorder.write(frame)
        return frame

    def set_recorder(self, recorder) -> None:
        """Start (a sink) or stop (None) an extra recording; the old one is finalized."""
        with self._lock:
            old, self.recorder = self.recorder, recorder
        if old is not None:
            old.close()

    def close(self) -> None:
        errors = []
        for sink in [*self.sinks, self.recorder]:
            if sink is not None:
                try:
                    sink.close()
                except Exception as err:  # close the others anyway, then report
                    errors.append(err)
        if errors:
            raise errors[0]
