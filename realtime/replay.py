"""`sapiens-rt stream`: send a recorded tracks file to live receivers (VMC, raw OSC) at its
original timing: record once, perform into Blender / Unity later, or test a receiver
set-up without a camera.

Frame i goes out at start + (t_i - t_0) / speed on a monotonic clock; with `loop` the
file starts over one frame period after its last frame. A live sender's work for a frame
(solving the bones, reading the face, encoding the datagrams: `datagrams`) is done before
the frame is due, so only the sending (`send`) happens at its time. The sinks are the run's own
(`realtime.sinks.osc.motion_sinks`) fed with frames rebuilt from the file (boxes,
keypoints, scores, 3D keypoints, track ids), with no live filter: the file holds what
the run's filter already gave.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Protocol, Sequence

import numpy as np

from realtime.errors import UserError
from realtime.export.jsonl import FrameRecord, TrackRecords, check_frame, read_header, schema_error
from realtime.frames import Frame, Person

log = logging.getLogger(__name__)

_IMAGE = np.zeros((1, 1, 3), np.uint8)  # replayed frames carry no picture
SPEED_RANGE = (1e-3, 1e3)  # --speed: slower than 1/1000 or faster than 1000x is no replay


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic clock."""

    def sleep(self, seconds: float) -> None:
        """Wait this long (never called with a negative time)."""


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class StreamOptions:
    tracks: str
    vmc: Sequence[str] = ()
    osc: Optional[str] = None
    vmc_person: Optional[str] = None
    vmc_fingers: bool = False
    vmc_bundle: str = "split"
    vmc_face_only: bool = False
    face_calibrate: float = 2.0
    speed: float = 1.0
    loop: bool = False
    sinks: list = field(default_factory=list)  # extra sinks (tests, the Python API)


@dataclass
class StreamSummary:
    frames: int
    laps: int
    lines: list[str]


def read_frames(path: Path, num_keypoints: int) -> Iterator[Frame]:
    """The file's frame records as `Frame`s (one pass; a cut-off last line is skipped). Every line
    goes through the tracks schema check (`realtime.export.jsonl.check_frame`); a line that
    breaks it is one `UserError` with its line number."""
    records = iter(TrackRecords(path))
    next(records)  # the header, checked by the caller
    for line, record in records:
        if not isinstance(record, dict) or record.get("type") != "frame":
            continue
        try:
            checked = check_frame(record, num_keypoints)
        except ValueError as err:
            raise schema_error(path, line, err) from None
        yield _frame(checked)


def _frame(record: FrameRecord) -> Frame:
    people = tuple(Person(box=p.box[:4].astype(np.float32), box_score=float(np.nan_to_num(p.box[4], nan=1.0)), track_id=p.id,
                          keypoints=p.kpts[:, :2].astype(np.float32), keypoint_scores=p.kpts[:, 2].astype(np.float32),
                          keypoints3d=None if p.kpts3d is None else p.kpts3d.astype(np.float32))
                   for p in record.people)
    return Frame(index=record.frame, timestamp=record.t, image=_IMAGE, people=people)


def stream(options: StreamOptions, clock: Optional[Clock] = None, max_laps: Optional[int] = None) -> StreamSummary:
    """Send the tracks file's frames to the receivers at their recorded times (Ctrl+C stops it).

    max_laps: with `loop`, stop after this many passes (None: until interrupted).
    """
    from realtime.sinks.osc import motion_sinks

    clock = clock or MonotonicClock()
    if not SPEED_RANGE[0] <= options.speed <= SPEED_RANGE[1]:  # also keeps every wait a finite number a sleep takes
        raise UserError(f"--speed {options.speed:g} is outside {SPEED_RANGE[0]:g} to {SPEED_RANGE[1]:g}; "
                        f"1 is the recorded pace, 0.5 half speed, 2 twice as fast.")
    path = Path(options.tracks)
    if path.is_dir():
        raise UserError(f"{path} is a folder; pass the tracks .jsonl file a sapiens-rt run wrote.")
    header = read_header(iter(TrackRecords(path)), path)
    names = header["keypoint_names"]
    first = next(read_frames(path, len(names)), None)
    if first is None:
        raise UserError(f"{path} holds no frames; record some with sapiens-rt run ... --tracks FILE.")
    has_3d = _any_3d(path, len(names))  # one pass over every line: a line that breaks the schema stops here, before anything is sent
    if not options.vmc and not options.osc and not options.sinks:
        raise UserError("stream needs somewhere to send: add --vmc HOST:PORT and/or --osc HOST:PORT.")
    if options.vmc and not options.vmc_face_only and not has_3d:
        raise UserError(f"{path} has no 3D keypoints (recorded without the depth task), so --vmc has no bones to send; "
                        f"add --vmc-face-only, or record with --tasks pose,depth.")
    tasks = ("pose", "pointmap") if has_3d else ("pose",)
    sinks = motion_sinks(vmc=options.vmc, vmc_person=options.vmc_person, vmc_fingers=options.vmc_fingers,
                         vmc_bundle=options.vmc_bundle, vmc_face_only=options.vmc_face_only, face_calibrate=options.face_calibrate,
                         osc=options.osc, tasks=tasks, smooth="none") + list(options.sinks)
    period = 1.0 / float(header["fps"]) if header["fps"] else 1.0 / 30.0
    sent, laps = 0, 0
    try:
        start: Optional[float] = None
        offset = 0.0  # recorded seconds before this lap
        origin: Optional[float] = None
        while True:
            last = None
            for frame in read_frames(path, len(names)):
                t = frame.timestamp if np.isfinite(frame.timestamp) else (last + period if last is not None else 0.0)
                if origin is None:
                    origin = t
                ready = [_prepare(sink, frame) for sink in sinks]  # the solving and encoding, before the frame is due
                if start is None:
                    start = clock.now()
                due = start + (offset + t - origin) / options.speed
                wait = due - clock.now()
                if wait > 0:
                    clock.sleep(wait)
                for sink, prepared in zip(sinks, ready):
                    if prepared is None:
                        sink.write(frame)
                    else:
                        sink.send(prepared)
                sent += 1
                last = t
            laps += 1
            if last is None or not options.loop or (max_laps is not None and laps >= max_laps):
                break
            offset += last - origin + period  # the next lap starts one frame after this one ended
            origin = None
    finally:
        for sink in sinks:
            sink.close()
    lines = [f"streamed {sent} frames of {path} ({laps} pass{'es' if laps != 1 else ''})"]
    for sink in sinks:
        lines += sink.summary_lines() if hasattr(sink, "summary_lines") else []
    return StreamSummary(sent, laps, lines)


def _any_3d(path: Path, num_keypoints: int) -> bool:
    """Whether any person has 3D keypoints; reads (and so checks) every line of the file."""
    found = False
    for frame in read_frames(path, num_keypoints):
        found = found or any(p.keypoints3d is not None for p in frame.people)
    return found


def _prepare(sink, frame: Frame):
    """What a live sender (VMC, OSC) will send for `frame` (None: a sink that only has `write`)."""
    return sink.datagrams(frame) if hasattr(sink, "datagrams") and hasattr(sink, "send") else None
