"""The live tracks writer: the run's tracks JSONL, one line per input frame.

The record (its fields, decimals, null rules) is declared in `realtime.record`, whose
text this sink writes (the reader is `realtime.export.jsonl`), flushed after every
frame, so a crashed run loses at most the frame in flight.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Callable, Optional, Sequence

from realtime import __version__
from realtime.errors import OutputWriteError, ReaderClosed, UserError
from realtime.frames import Frame
from realtime.record import Dims, frame_text, new_header

log = logging.getLogger(__name__)


class TrackWriter:
    """Writes the tracks JSONL live, one line per input frame, flushed per frame.

    Usage: `with TrackWriter(path, keypoint_names=names, image_wh=(W, H), fps=30.0,
    source="video.mp4", model={"pose": "sapiens2_0.4b"}) as w: w.write(frame)`.
    Keypoints written are `Person.best_keypoints` (smoothed when the smooth stage ran).
    tracked=True says in the header that ids come from a tracker, so a person written
    without one is a tentative detection (not yet confirmed as a person) and readers
    leave it out of the per-person tracks.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        keypoint_names: Sequence[str],
        image_wh: tuple[int, int],
        fps: float,
        source: str,
        model: dict,
        software: Optional[dict] = None,
        stills: Optional[Callable[[int], str]] = None,
        tracked: bool = False,
        bone_names: Optional[Sequence[str]] = None,
    ) -> None:
        self.path = Path(path)
        self.stills = stills  # stills mode: frame index -> its file name, written with the frame's image size
        self.dims = Dims(len(keypoint_names), None if not bone_names else tuple(bone_names))
        self.frames_written = 0
        self._good_size = 0  # bytes up to the end of the last complete line
        try:
            if str(path) == "-":  # standard output: JSON lines to a consumer (logs and the summary go to stderr)
                self._file = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "w", encoding="utf-8", newline="\n")
            self._seekable = self._file.seekable()  # a pipe or FIFO is not: no cutting back after a failed write
        except OSError as err:
            raise UserError(f"cannot write tracks to {self.path} ({err.strerror}); choose a writable output folder.") from err
        header = new_header(keypoint_names=keypoint_names, image_wh=image_wh, fps=fps, source=source, model=model,
                            software={"name": "sapiens-realtime", "version": __version__, **(software or {})},
                            stills=stills is not None, tracked=tracked, bone_names=bone_names)
        self._write_text(json.dumps(header, separators=(",", ":"), allow_nan=False))

    def _write_text(self, line: str) -> None:
        # One write + flush per line: after a kill the file ends at a line boundary
        # or inside the single line in flight, which readers skip.
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except OSError as err:
            self._fail(err)
        if self._seekable:
            self._good_size = self._file.tell()

    def _fail(self, err: OSError) -> None:
        """A write error (disk full): cut the file back to its last complete line and say so.
        A reader that closed the pipe (`| head`) is the normal end it chose (`ReaderClosed`)."""
        try:
            self._file.close()  # may try the failed write again; the cut below undoes it
        except OSError:
            pass
        try:
            if self._seekable and self.path.is_file() and self.path.stat().st_size > self._good_size:
                os.truncate(self.path, self._good_size)
        except OSError:
            pass
        if isinstance(err, BrokenPipeError):
            raise ReaderClosed(f"the reader of {self.path} closed it") from None
        raise OutputWriteError(f"cannot write the tracks file {self.path} ({err.strerror or err}); it keeps its first "
                               f"{self.frames_written} frames; free disk space or choose another --tracks.") from None

    def write(self, frame: Frame) -> None:
        """Append one frame line (also when `frame.people` is empty)."""
        if self._file.closed:
            raise ValueError("TrackWriter.write called after close() or a write error")
        for person in frame.people:
            points = person.best_keypoints
            if points is not None and len(points) != self.dims.keypoints:
                raise ValueError(f"person has {len(points)} keypoints but the tracks header names {self.dims.keypoints}")
        self._write_text(frame_text(frame, self.dims, file=None if self.stills is None else self.stills(frame.index)))
        self.frames_written += 1

    def close(self) -> None:
        if not self._file.closed:
            try:
                self._file.close()
            except OSError as err:
                self._fail(err)

    def __enter__(self) -> "TrackWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

