"""`sapiens-rt stream`: send a recorded tracks file to live receivers (VMC, raw OSC, VRChat) at its
original timing: record once, perform into Blender / Unity later, or test a receiver
set-up without a camera.

The file is a source (`TracksSource`: its frame records as `Frame`s, people and all,
`realtime.record.frame_from_record`) for the same pipeline and the same live stage as
`sapiens-rt run` (`realtime.stages.live`), which sends frame i at start + (t_i - t_0) / speed on
a monotonic clock. A recording that holds bones (`Person.bones`) is sent as it is, byte for byte
what the run sent; with `--vmc-fingers` and bones without fingers, the finger bones are solved
from the 3D keypoints and join the recorded ones (`realtime.stages.motion.FingerBones`); one with
3D keypoints but no bones (older files) goes through the motion stage first, with no live filter.
With `loop` the file starts over one frame period after its last frame.

Nothing is sent before the whole file (a pipe too: read once) and the options are checked: every
line against the record's schema (a NaN, a null bone rotation, a 1e300 root are refused by line
and field), the header's bone names, and a `--vmc-person` or `--vrchat-person` id the file must hold.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np

from realtime.errors import UserError
from realtime.export.jsonl import TrackRecords, frame_records, read_header
from realtime.frames import Frame
from realtime.mode import RunMode
from realtime.options import CLI
from realtime.pipeline import Pipeline
from realtime.record import frame_from_record
from realtime.sinks.osc import parse_vmc_person
from realtime.sinks.vrchat import missing_bones, parse_person
from realtime.sources import Source, SourceInfo
from realtime.stages.live import LiveStage, live_senders
from realtime.stages.motion import FingerBones, MotionStage, recorded_bone_names, recorded_fingers

log = logging.getLogger(__name__)

_IMAGE = np.zeros((1, 1, 3), np.uint8)  # replayed frames carry no picture
SPEED_RANGE = (1e-3, 1e3)  # --speed: slower than 1/1000 or faster than 1000x is no replay


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
    vrchat: Optional[str] = None  # HOST:PORT (`realtime.sinks.vrchat`); its options as `live_senders` takes them
    vrchat_trackers: Optional[str] = None
    vrchat_height: Optional[float] = None
    vrchat_person: Optional[str] = None


@dataclass
class StreamSummary:
    frames: int
    laps: int
    lines: list[str]
    exit_code: int = 0
    stopped: Optional[str] = None  # why it stopped before the end (Ctrl+C, an error), for stderr


def read_frames(path: Path | TrackRecords, num_keypoints: Optional[int] = None,
                bone_names: Optional[tuple[str, ...]] = None) -> Iterator[Frame]:
    """The file's frame records as `Frame`s (one pass; a cut-off last line is skipped). Every line goes
    through the tracks schema check (`realtime.record.check_frame`); a line that breaks it is one
    `UserError` with its line number. (`num_keypoints` and `bone_names` are the header's.)"""
    records = path if isinstance(path, TrackRecords) else TrackRecords(path)
    header = read_header(iter(records), records.path)
    for _, checked in frame_records(records, header):
        yield frame_from_record(checked, _IMAGE)


@dataclass
class _Contents:
    """What one pass over a recording found (every line checked on the way)."""

    frames: int = 0
    has_3d: bool = False
    has_bones: bool = False
    ids: set = field(default_factory=set)


def _contents(records: TrackRecords, header: dict) -> _Contents:
    found = _Contents()
    for _, frame in frame_records(records, header):
        found.frames += 1
        for person in frame.people:
            found.has_3d = found.has_3d or person.kpts3d is not None
            found.has_bones = found.has_bones or person.bones is not None
            if person.id is not None:
                found.ids.add(person.id)
    return found


def check_bone_names(header: dict, path: Path) -> Optional[bool]:
    """Whether the recording's bones have fingers (None: no bones); its bone names must be the motion
    stage's 21 (51 with fingers), which receivers know, or it is refused before anything is sent."""
    if header.get("bone_names") is None:
        return None
    fingers = recorded_fingers(header["bone_names"])
    if fingers is None:
        known = {name for table in (False, True) for name in recorded_bone_names(table)}
        odd = [name for name in header["bone_names"] if name not in known]
        what = f" ({', '.join(odd[:3])} {'is' if len(odd) == 1 else 'are'} none of them)" if odd else ""
        raise UserError(f"{path} header's bone_names are not the 21 bones (51 with fingers) sapiens-rt solves{what}, so its "
                        f"bones cannot be sent; pass a tracks .jsonl written by sapiens-rt.")
    return fingers


class TracksSource(Source):
    """A tracks file's frames, people and all, for the pipeline: the source of `sapiens-rt stream`.

    `frames()` yields `Frame`s (not pictures); with `loop`, `laps` passes (None: until stopped),
    each lap's timestamps continuing one frame period after the last lap's end."""

    def __init__(self, path: Path | TrackRecords, header: dict, *, loop: bool = False, laps: Optional[int] = None):
        self.records = path if isinstance(path, TrackRecords) else TrackRecords(path)
        self.path, self.header = self.records.path, header
        self.loop, self.max_laps = loop, laps
        self.names = header["keypoint_names"]
        self.bone_names = tuple(header["bone_names"]) if header.get("bone_names") else None
        self.period = 1.0 / float(header["fps"]) if header.get("fps") else 1.0 / 30.0
        self.laps = 0
        self._cancel = False

    def open(self) -> SourceInfo:
        width, height = self.header["image_size"]
        self.info = SourceInfo(name=self.path.stem, uri=str(self.path), live=False, width=int(width), height=int(height),
                               fps=1.0 / self.period, frame_count=None)
        return self.info

    def frames(self) -> Iterator[Frame]:
        offset = 0.0
        while not self._cancel:
            first = last = None
            for frame in read_frames(self.records):
                t = frame.timestamp if np.isfinite(frame.timestamp) else (last + self.period if last is not None else 0.0)
                first = t if first is None else first
                last = t
                yield frame.replace(timestamp=offset + t)  # the recorded index; the time runs on over laps
                if self._cancel:
                    return
            self.laps += 1
            if last is None or not self.loop or (self.max_laps is not None and self.laps >= self.max_laps):
                return
            offset += last - first + self.period  # the next lap starts one frame after this one ended

    def cancel(self) -> None:
        self._cancel = True

    def input_files(self) -> list[str]:
        return [str(self.path)]


def stream(options: StreamOptions, clock=None, max_laps: Optional[int] = None) -> StreamSummary:
    """Send the tracks file's frames to the receivers at their recorded times (Ctrl+C stops it).

    max_laps: with `loop`, stop after this many passes (None: until interrupted). clock: an
    object with `now()` (monotonic seconds) and `sleep(seconds)` for the pacing; tests pass a
    simulated one (default: the monotonic clock, a sleep that ends when the run stops).
    """
    if not SPEED_RANGE[0] <= options.speed <= SPEED_RANGE[1]:  # also keeps every wait a finite number a sleep takes
        raise UserError(f"--speed {options.speed:g} is outside {SPEED_RANGE[0]:g} to {SPEED_RANGE[1]:g}; "
                        f"1 is the recorded pace, 0.5 half speed, 2 twice as fast.")
    records = TrackRecords(options.tracks)  # a pipe: read once, then read again from its copy
    try:
        return _stream(options, records, clock, max_laps)
    finally:
        records.close()


def _stream(options: StreamOptions, records: TrackRecords, clock, max_laps: Optional[int]) -> StreamSummary:
    path = records.path
    header = read_header(iter(records), path)
    names = header["keypoint_names"]
    bone_names = header.get("bone_names")
    if options.vrchat is not None and bone_names and missing_bones(bone_names):
        raise UserError(f"{path}'s bone_names lack {', '.join(missing_bones(bone_names)[:3])}, which --vrchat's trackers "
                        f"hang from; stream a tracks file as sapiens-rt run wrote it.")
    fingers = check_bone_names(header, path)
    found = _contents(records, header)  # one pass over every line: a line that breaks the schema stops here
    if not found.frames:
        raise UserError(f"{path} holds no frames; record some with sapiens-rt run ... --tracks FILE.")
    vrchat_asked = any(v is not None for v in (options.vrchat, options.vrchat_trackers, options.vrchat_height,
                                                options.vrchat_person))  # live_senders says what they go with
    if not options.vmc and not options.osc and not vrchat_asked and not options.sinks:
        raise UserError("stream needs somewhere to send: add --vmc HOST:PORT, --osc HOST:PORT and/or --vrchat [HOST:PORT].")
    if options.vmc and not options.vmc_face_only and not found.has_3d:
        raise UserError(f"{path} has no 3D keypoints (recorded without the depth task), so --vmc has no bones to send; "
                        f"add --vmc-face-only, or record with --tasks pose,depth.")
    if options.vrchat is not None and not found.has_3d:
        raise UserError(f"{path} has no 3D keypoints (recorded without the depth task), so --vrchat has no trackers to "
                        f"send; record with --tasks pose,depth.")
    held = f"its ids: {', '.join(str(i) for i in sorted(found.ids))}" if found.ids else "it has no tracked people"
    person = parse_vmc_person(options.vmc_person) if options.vmc else None
    if isinstance(person, int) and person not in found.ids:
        raise UserError(f"--vmc-person {person} is not in {path} ({held}); pass one of its ids, all, or leave --vmc-person "
                        "out to follow the largest person.")
    person = parse_person(options.vrchat_person) if options.vrchat is not None else None
    if person is not None and person not in found.ids:
        raise UserError(f"--vrchat-person {person} is not in {path} ({held}); pass one of its ids, or leave --vrchat-person "
                        "out to follow the largest person.")
    tasks = ("pose", "pointmap") if found.has_3d else ("pose",)
    senders = live_senders(vmc=options.vmc, vmc_person=options.vmc_person, vmc_fingers=options.vmc_fingers,
                           vmc_bundle=options.vmc_bundle, vmc_face_only=options.vmc_face_only,
                           face_calibrate=options.face_calibrate, osc=options.osc, tasks=tasks, vrchat=options.vrchat,
                           vrchat_trackers=options.vrchat_trackers, vrchat_height=options.vrchat_height,
                           vrchat_person=options.vrchat_person, caller=CLI) + list(options.sinks)
    stages: list = []
    wants_bones = (options.vmc and not options.vmc_face_only) or options.vrchat is not None
    if found.has_3d and wants_bones and not found.has_bones:  # an older recording: solve here
        stages.append(MotionStage(names, fingers=options.vmc_fingers, smooth="none"))
    elif found.has_3d and options.vmc and not options.vmc_face_only and options.vmc_fingers and fingers is False:
        stages.append(FingerBones(names))  # recorded without fingers: those alone solved here
        log.info("%s has no finger bones: --vmc-fingers solves them from its 3D keypoints", path)
    source = TracksSource(records, header, loop=options.loop, laps=max_laps)
    live = LiveStage(senders, pace=True, speed=options.speed, **({"now": clock.now} if clock else {}))
    live.period = source.period
    pipeline = Pipeline(source, [*stages, live], mode=RunMode.FILE)
    live.wait = clock.sleep if clock else pipeline.stop_event.wait
    source.open()
    result = pipeline.run()
    lines = [f"streamed {live.frames} frames of {path} ({source.laps} pass{'es' if source.laps != 1 else ''})"]
    lines += live.summary_lines()
    return StreamSummary(live.frames, source.laps, lines, result.exit_code, result.message if result.exit_code else None)
