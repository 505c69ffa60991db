"""The live tracks writer: the run's tracks JSONL, one line per input frame.

The format (schema, decimals, the reader) is `realtime.export.jsonl`; this sink
only writes it, flushed after every frame, so a crashed run loses at most the
frame in flight.
"""

from __future__ import annotations

import json
import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from realtime import __version__
from realtime.errors import OutputWriteError, ReaderClosed, UserError
from realtime.export.jsonl import METRE_DECIMALS, PX_DECIMALS, SCHEMA_VERSION, SCORE_DECIMALS
from realtime.frames import BONE_DECIMALS, CAMERA_DECIMALS, FLOOR_UP_DECIMALS, HEIGHT_DECIMALS, Bones, Camera, Frame, Person

log = logging.getLogger(__name__)

_BOX = (PX_DECIMALS,) * 4 + (SCORE_DECIMALS,)
_KPT = (PX_DECIMALS, PX_DECIMALS, SCORE_DECIMALS)
_XYZ = (METRE_DECIMALS,) * 3
_QUAT = (SCORE_DECIMALS + 1,) * 4
_BONE_XYZ = (BONE_DECIMALS["offsets"],) * 3
_BONE_QUAT = (BONE_DECIMALS["rotations"],) * 4
_CAMERA_XYZ = (CAMERA_DECIMALS["position"],) * 3
_CAMERA_QUAT = (CAMERA_DECIMALS["rotation"],) * 4
_CAMERA_K = (CAMERA_DECIMALS["intrinsics"],) * 4
_HEIGHT = (HEIGHT_DECIMALS,) * 2
_FLOOR_UP = (FLOOR_UP_DECIMALS,) * 3


@lru_cache(maxsize=16)
def _template(count: int, decimals: tuple[int, ...]) -> str:
    row = "[" + ",".join(f"%.{n}f" for n in decimals) + "]"
    return "[" + ",".join([row] * count) + "]"


def _rows_json(values: Optional[np.ndarray], decimals: tuple[int, ...], count: int) -> str:
    """(count, D) array -> JSON text `[[a,b,..],...]` with fixed decimals, null where not finite.

    One %-format over a cached template: about 3x faster than json.dumps of lists,
    which matters because this runs for every person of every frame.
    """
    if values is None:
        return "[" + ",".join(["[" + ",".join(["null"] * len(decimals)) + "]"] * count) + "]"
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    text = _template(count, decimals) % tuple(flat.tolist())
    if not np.isfinite(flat).all():  # %-format writes nan / inf / -inf, JSON wants null
        text = text.replace("-inf", "null").replace("inf", "null").replace("nan", "null")
    return text


def _person_json(person: Person, num_keypoints: int) -> str:
    """One person's record as JSON text (schema v1)."""
    points = person.best_keypoints
    if points is not None and len(points) != num_keypoints:
        raise ValueError(f"person has {len(points)} keypoints but the tracks header names {num_keypoints}")
    kpts = None
    if points is not None:
        scores = person.keypoint_scores
        scores = np.full(num_keypoints, np.nan) if scores is None else np.asarray(scores, dtype=np.float64)
        kpts = np.concatenate([np.asarray(points, dtype=np.float64), scores[:, None]], axis=1)
    box = np.append(np.asarray(person.box, dtype=np.float64), person.box_score)
    track_id = "null" if person.track_id is None else str(int(person.track_id))
    box_text = _rows_json(box, _BOX, 1)[1:-1]  # a single row: drop the outer list
    text = (
        f'{{"id":{track_id},"box":{box_text},'
        f'"kpts":{_rows_json(kpts, _KPT, num_keypoints)},"smoothed":{"true" if person.smoothed else "false"}'
    )
    if person.predicted is not None:
        text += f',"predicted":[{",".join("1" if p else "0" for p in np.asarray(person.predicted).tolist())}]'
    if person.keypoints3d is not None:
        text += f',"kpts3d":{_rows_json(person.keypoints3d, _XYZ, num_keypoints)}'
    if person.face is not None:
        text += f',"face":{_face_json(person.face)}'
    if person.lips_open is not None:
        text += f',"lips":{person.lips_open:.{SCORE_DECIMALS}f}'
    if person.head_rotation is not None:
        text += f',"head":{_rows_json(person.head_rotation, _QUAT, 1)[1:-1]}'
    if person.contacts is not None:
        text += f',"contacts":[{",".join("1" if c else "0" for c in np.asarray(person.contacts).tolist())}]'
    if person.bones is not None:
        text += f',"bones":{_bones_json(person.bones)}'
    if person.height is not None:
        text += f',"height":{_rows_json(np.asarray(person.height, np.float64), _HEIGHT, 1)[1:-1]}'
    return text + "}"


def _camera_json(camera: Camera) -> str:
    """{"position":[x,y,z],"rotation":[x,y,z,w],"intrinsics":[fx,fy,cx,cy]|null,"status":"...","world":0|1,"grounded":0|1
    [,"pointmap_scale":s]} at `CAMERA_DECIMALS`, which `Camera` already holds (so they read back the same)."""
    intrinsics = "null" if camera.intrinsics is None else _rows_json(camera.intrinsics, _CAMERA_K, 1)[1:-1]
    scale = "" if camera.pointmap_scale is None else f',"pointmap_scale":{float(camera.pointmap_scale)!r}'
    return (f'{{"position":{_rows_json(camera.position, _CAMERA_XYZ, 1)[1:-1]},'
            f'"rotation":{_rows_json(camera.rotation, _CAMERA_QUAT, 1)[1:-1]},"intrinsics":{intrinsics},'
            f'"status":"{camera.status}","world":{int(camera.world)},"grounded":{int(camera.grounded)}{scale}}}')


def _flags(values) -> str:
    return "[" + ",".join("1" if v else "0" for v in np.asarray(values).tolist()) + "]"


def _bones_json(bones: Bones) -> str:
    """{"root":[x,y,z],"root_held":0|1,"rot":[[x,y,z,w]...],"held":[0|1...],"offsets":[[x,y,z]...]}, the header's
    "bone_names" order; the numbers at `BONE_DECIMALS`, which `Bones` already holds (so they read back the same)."""
    count = len(bones.names)
    return (f'{{"root":{_rows_json(bones.root_position, _BONE_XYZ, 1)[1:-1]},"root_held":{int(bones.root_held)},'
            f'"rot":{_rows_json(bones.rotations, _BONE_QUAT, count)},"held":{_flags(bones.held)},'
            f'"offsets":{_rows_json(bones.offsets, _BONE_XYZ, count)}}}')


def _face_json(weights: np.ndarray) -> str:
    """{"eyeBlinkLeft":0.123,...}: ARKit name -> weight (realtime.expressions.ARKIT_NAMES order)."""
    from realtime.expressions import ARKIT_NAMES

    values = np.nan_to_num(np.asarray(weights, dtype=np.float64), nan=0.0)
    return "{" + ",".join(f'"{name}":{value:.{SCORE_DECIMALS}f}' for name, value in zip(ARKIT_NAMES, values)) + "}"


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
        self.num_keypoints = len(keypoint_names)
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
        header = {
            "type": "header",
            "version": SCHEMA_VERSION,
            "keypoint_names": list(keypoint_names),
            "image_size": [int(image_wh[0]), int(image_wh[1])],  # the file key stays image_size
            "fps": float(fps),
            "source": str(source),
            "model": dict(model),
            "software": {"name": "sapiens-realtime", "version": __version__, **(software or {})},
        }
        if stills is not None:
            header["stills"] = True  # unrelated photos: no identities across rows, no smoothing
        if tracked:
            header["tracked"] = True
        if bone_names:
            header["bone_names"] = list(bone_names)  # the order of every person's "bones"
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
                               f"{self.frames_written} frames; free disk space or choose another --tracks") from None

    def write(self, frame: Frame) -> None:
        """Append one frame line (also when `frame.people` is empty)."""
        if self._file.closed:
            raise ValueError("TrackWriter.write called after close() or a write error")
        people = ",".join(_person_json(p, self.num_keypoints) for p in frame.people)
        timestamp = json.dumps(round(float(frame.timestamp), 6)) if np.isfinite(frame.timestamp) else "null"
        still = ""
        if self.stills is not None:
            still = f',"file":{json.dumps(self.stills(frame.index))},"image_size":[{frame.image.shape[1]},{frame.image.shape[0]}]'
        camera = "" if frame.camera is None else f',"camera":{_camera_json(frame.camera)}'
        # at `FLOOR_UP_DECIMALS`, which the ground stage's `Frame.floor_up` already holds (so it reads back the same)
        floor_up = "" if frame.floor_up is None else f',"floor_up":{_rows_json(frame.floor_up, _FLOOR_UP, 1)[1:-1]}'
        self._write_text(f'{{"type":"frame","frame":{int(frame.index)},"t":{timestamp}{still}{camera}{floor_up},'
                         f'"people":[{people}]}}')
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

