"""`sapiens-rt stream`: send a recorded tracks file to live receivers (VMC, raw OSC, VRChat) at its
original timing: record once, perform into Blender / Unity later, or test a receiver
set-up without a camera.

The file is a source (`TracksSource`: its frame records as `Frame`s, people and all) for
the same pipeline and the same live stage as `sapiens-rt run` (`realtime.stages.live`), which
sends frame i at start + (t_i - t_0) / speed on a monotonic clock. A recording that holds
bones (`Person.bones`) is sent as it is, byte for byte what the run sent; one with 3D
keypoints but no bones (older files) goes through the motion stage first, with no live filter:
the file holds what the run's filter already gave. With `loop` the file starts over one
frame period after its last frame.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np

from realtime.errors import UserError
from realtime.export.jsonl import FrameRecord, PersonRecord, TrackRecords, check_frame, read_header, schema_error
from realtime.frames import Bones, Camera, Frame, Person
from realtime.mode import RunMode
from realtime.pipeline import Pipeline
from realtime.sinks.vrchat import missing_bones
from realtime.sources import Source, SourceInfo
from realtime.stages.live import LiveStage, live_senders
from realtime.stages.motion import MotionStage

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


def read_frames(path: Path, num_keypoints: int, bone_names: Optional[tuple[str, ...]] = None) -> Iterator[Frame]:
    """The file's frame records as `Frame`s (one pass; a cut-off last line is skipped). Every line
    goes through the tracks schema check (`realtime.export.jsonl.check_frame`); a line that
    breaks it is one `UserError` with its line number."""
    records = iter(TrackRecords(path))
    next(records)  # the header, checked by the caller
    for line, record in records:
        if not isinstance(record, dict) or record.get("type") != "frame":
            continue
        try:
            checked = check_frame(record, num_keypoints, num_bones=None if bone_names is None else len(bone_names))
        except ValueError as err:
            raise schema_error(path, line, err) from None
        yield _frame(checked, bone_names)


def _frame(record: FrameRecord, bone_names: Optional[tuple[str, ...]]) -> Frame:
    camera = record.camera
    if camera is not None:
        camera = Camera(camera.position, camera.rotation, camera.intrinsics, camera.status, camera.world, camera.grounded,
                        camera.pointmap_scale)
    return Frame(index=record.frame, timestamp=record.t, image=_IMAGE, camera=camera, floor_up=record.floor_up,
                 people=tuple(_person(p, bone_names) for p in record.people))


def _person(p: PersonRecord, bone_names: Optional[tuple[str, ...]]) -> Person:
    """A recorded person as the stages left it: what the live senders encode."""
    contacts = None if p.contacts is None or np.isnan(p.contacts).any() else p.contacts.astype(bool)
    bones = None
    if p.bones is not None:
        bones = Bones(bone_names, p.bones["offsets"], p.bones["root"], p.bones["rot"], p.bones["held"], p.bones["root_held"])
    return Person(box=p.box[:4].astype(np.float32), box_score=float(np.nan_to_num(p.box[4], nan=1.0)), track_id=p.id,
                  keypoints=p.kpts[:, :2].astype(np.float32), keypoint_scores=p.kpts[:, 2].astype(np.float32),
                  keypoints3d=None if p.kpts3d is None else p.kpts3d.astype(np.float32),
                  face=None if p.face is None else np.nan_to_num(p.face).astype(np.float32), lips_open=p.lips,
                  head_rotation=None if p.head is None else p.head.astype(np.float32), contacts=contacts, bones=bones,
                  height=None if p.height is None else (float(p.height[0]), float(p.height[1])))


class TracksSource(Source):
    """A tracks file's frames, people and all, for the pipeline: the source of `sapiens-rt stream`.

    `frames()` yields `Frame`s (not pictures); with `loop`, `laps` passes (None: until stopped),
    each lap's timestamps continuing one frame period after the last lap's end."""

    def __init__(self, path: Path, header: dict, *, loop: bool = False, laps: Optional[int] = None):
        self.path, self.header = path, header
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
            for frame in read_frames(self.path, len(self.names), self.bone_names):
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
    path = Path(options.tracks)
    if path.is_dir():
        raise UserError(f"{path} is a folder; pass the tracks .jsonl file a sapiens-rt run wrote.")
    header = read_header(iter(TrackRecords(path)), path)
    names = header["keypoint_names"]
    bone_names = tuple(header["bone_names"]) if header.get("bone_names") else None
    first = next(read_frames(path, len(names), bone_names), None)
    if first is None:
        raise UserError(f"{path} holds no frames; record some with sapiens-rt run ... --tracks FILE.")
    has_3d = _any_3d(path, len(names), bone_names)  # one pass over every line: a line that breaks the schema stops here
    vrchat_asked = any(v is not None for v in (options.vrchat, options.vrchat_trackers, options.vrchat_height,
                                                options.vrchat_person))  # live_senders says what they go with
    if not options.vmc and not options.osc and not vrchat_asked and not options.sinks:
        raise UserError("stream needs somewhere to send: add --vmc HOST:PORT, --osc HOST:PORT and/or --vrchat [HOST:PORT].")
    if options.vmc and not options.vmc_face_only and not has_3d:
        raise UserError(f"{path} has no 3D keypoints (recorded without the depth task), so --vmc has no bones to send; "
                        f"add --vmc-face-only, or record with --tasks pose,depth.")
    if options.vrchat is not None and not has_3d:
        raise UserError(f"{path} has no 3D keypoints (recorded without the depth task), so --vrchat has no trackers to "
                        f"send; record with --tasks pose,depth.")
    if options.vrchat is not None and bone_names and missing_bones(bone_names):
        raise UserError(f"{path}'s bone_names lack {', '.join(missing_bones(bone_names)[:3])}, which --vrchat's trackers "
                        f"hang from; stream a tracks file as sapiens-rt run wrote it.")
    tasks = ("pose", "pointmap") if has_3d else ("pose",)
    senders = live_senders(vmc=options.vmc, vmc_person=options.vmc_person, vmc_fingers=options.vmc_fingers,
                           vmc_bundle=options.vmc_bundle, vmc_face_only=options.vmc_face_only,
                           face_calibrate=options.face_calibrate, osc=options.osc, tasks=tasks, vrchat=options.vrchat,
                           vrchat_trackers=options.vrchat_trackers, vrchat_height=options.vrchat_height,
                           vrchat_person=options.vrchat_person) + list(options.sinks)
    stages: list = []
    wants_bones = (options.vmc and not options.vmc_face_only) or options.vrchat is not None
    if has_3d and wants_bones and not _has_bones(path, len(names), bone_names):
        stages.append(MotionStage(names, fingers=options.vmc_fingers, smooth="none"))  # an older recording: solve here
    source = TracksSource(path, header, loop=options.loop, laps=max_laps)
    live = LiveStage(senders, pace=True, speed=options.speed, **({"now": clock.now} if clock else {}))
    live.period = source.period
    pipeline = Pipeline(source, [*stages, live], mode=RunMode.FILE)
    live.wait = clock.sleep if clock else pipeline.stop_event.wait
    source.open()
    result = pipeline.run()
    lines = [f"streamed {live.frames} frames of {path} ({source.laps} pass{'es' if source.laps != 1 else ''})"]
    lines += live.summary_lines()
    return StreamSummary(live.frames, source.laps, lines, result.exit_code, result.message if result.exit_code else None)


def _any_3d(path: Path, num_keypoints: int, bone_names) -> bool:
    """Whether any person has 3D keypoints; reads (and so checks) every line of the file."""
    found = False
    for frame in read_frames(path, num_keypoints, bone_names):
        found = found or any(p.keypoints3d is not None for p in frame.people)
    return found


def _has_bones(path: Path, num_keypoints: int, bone_names) -> bool:
    return bone_names is not None and any(p.bones is not None for f in read_frames(path, num_keypoints, bone_names)
                                          for p in f.people)
