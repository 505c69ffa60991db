"""The tracks JSONL file: its schema and the reader every exporter uses (the live
writer is `realtime.sinks.tracks.TrackWriter`).

Schema version 5, one JSON object per line:

    {"type": "header", "version": 5, "keypoint_names": [...K], "image_size": [W, H],
     "fps": float, "source": str, "model": {...}, "software": {...},
     "bone_names": [...B]  (when the run solved bones: pose + depth)}
    {"type": "frame", "frame": int, "t": seconds, "people": [
        {"id": int | null, "box": [x1, y1, x2, y2, score], "kpts": [[x, y, score] x K],
         "smoothed": bool, "kpts3d": [[X, Y, Z] x K]  (only when 3D was computed),
         "face": {"eyeBlinkLeft": w, ...}  (ARKit blendshape weights in [0, 1], when the face was read),
         "lips": w  (the inner lips apart in [0, 1], with "face"),
         "head": [x, y, z, w]  (head rotation quaternion relative to the neutral head, rig axes, with "face"),
         "contacts": [left, right]  (1 where the foot is on the floor, once the floor is known),
         "bones": {"root": [x, y, z], "root_held": 0|1, "rot": [[x, y, z, w] x B], "held": [0|1 x B],
                   "offsets": [[x, y, z] x B]}  (the solved skeleton, rig axes, "bone_names" order),
         "height": [metres, confidence]  (stature, once measured)}],
     "camera": {"position": [x, y, z], "rotation": [x, y, z, w], "intrinsics": [fx, fy, cx, cy] | null,
                "status": "waiting"|"static"|"tracking"|"lost", "world": 0|1, "grounded": 0|1,
                "pointmap_scale": s  (on frames with a pointmap of their own, from the egomotion)}
                (world_from_camera, when the world stage ran: pose + depth),
     "floor_up": [x, y, z]  (the floor's up in this frame's camera, from the pointmap's background,
                 when the ground stage measured it)}

Pixels of the original image (x right, y down); `kpts3d` in metres in the
camera frame (x right, y down, z forward); `bones` in rig axes (metres, Y up, the character
facing +Z, +X its left): local quaternions relative to the T-pose, each bone's rest offset from
its parent, the root's position, and held marks for bones whose points were not seen (they
kept their last rotation); on frames whose "camera" says "world": 1 the bones' root is in the
world frame (y up, floor at 0). `camera` is the camera's pose in the world (metres, y up, origin
on the floor) and its intrinsics in pixels, and `pointmap_scale` that frame's pointmap's metric scale against
the camera path's metres, measured on the background (1.02: its points 2 % too far; the ground stage took it out
of a moving camera's people); `floor_up` a unit vector in camera axes. Version 1 files (no lips, no bones),
version 2 files (no floor_up) and version 3 files (no pointmap_scale) read as before; a value that is not known
is `null`.
Every input frame gets a line, also frames with nobody. The file is append-only
and flushed after every frame, so a crashed run loses at most the frame in flight.
Readers skip unknown fields and unknown line types, and a cut-off last line.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np

from realtime.errors import UserError
from realtime.export.tracks import CameraTrack, PersonTrack, Tracks, Unidentified
from realtime.frames import CAMERA_STATUS

log = logging.getLogger(__name__)

# 2: lips, bones and bone_names, camera and height; 3: floor_up (Frame.floor_up); 4: the camera's pointmap_scale
# (Camera.pointmap_scale); 5: "camera" is only ever the world stage's pose (the egomotion stage's odometry pose is
# Frame.odometry, never written). Versions 1-4 still read.
SCHEMA_VERSION = 5
# Decimals written: pixels, scores, metres. 0.01 px and 0.1 mm are far below the models' error.
PX_DECIMALS, SCORE_DECIMALS, METRE_DECIMALS = 2, 3, 4
INT64 = (-(2 ** 63), 2 ** 63 - 1)  # track ids and frame numbers must fit the int64 arrays of NPZ and C3D
MAX_SIDE = 2 ** 31 - 1  # an image side in pixels
FPS_RANGE = (1e-3, 1e6)  # frames per second a header may give (C3D stores it as a float32)
MAX_FLOAT = 1.7976931348623157e308  # the largest float64: a bigger JSON integer is not a number we can hold


def rounded_rows(values: Optional[np.ndarray], decimals: Sequence[int], count: int) -> list:
    """(count, D) array -> nested lists rounded per column, None where not finite (or all None).

    For rewriting records (offline); the live writer uses the faster `_rows_json`.
    """
    if values is None:
        return [[None] * len(decimals) for _ in range(count)]
    values = np.asarray(values, dtype=np.float64).reshape(count, len(decimals))
    rounded = np.stack([np.round(values[:, d], n) for d, n in enumerate(decimals)], axis=1)
    rows = rounded.tolist()
    bad = ~np.isfinite(values)
    if bad.any():
        for k, d in zip(*np.nonzero(bad)):
            rows[k][d] = None
    return rows


class TrackRecords:
    """Streams `(line number, record)` from a tracks file without loading it whole.

    A last line that does not parse (a run killed mid-write) is skipped and sets
    `truncated`; an unparsable line anywhere else raises `UserError`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.truncated = False

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        bad_line, parsed = None, 0
        try:
            with open(self.path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    if bad_line is not None:
                        break
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        bad_line = number
                        continue
                    parsed += 1
                    yield number, record
                else:
                    if bad_line is not None and parsed > 0:
                        log.warning("%s: last line %d is cut off (interrupted run); it is skipped", self.path, bad_line)
                        self.truncated = True
                        return
        except FileNotFoundError:
            raise UserError(f"tracks file {self.path} does not exist; pass the tracks .jsonl file a sapiens-rt run "
                            "wrote.") from None
        except UnicodeDecodeError:
            raise UserError(f"{self.path} is not a text file; pass a tracks .jsonl file.") from None
        if bad_line is not None:
            raise UserError(f"{self.path} line {bad_line} is not valid JSON; pass an intact tracks .jsonl file.")


def read_header(records: Iterator[tuple[int, dict]], path: Path) -> dict:
    """The header record (the first one), validated; raises UserError otherwise."""
    first = next(records, None)
    header = first[1] if first is not None else None
    if not isinstance(header, dict) or header.get("type") != "header":
        raise UserError(f"{path} does not start with a tracks header line; pass a tracks .jsonl written by sapiens-rt.")
    version = header.get("version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise UserError(f"{path} has tracks schema version {version!r}, this sapiens-rt reads up to {SCHEMA_VERSION}; upgrade "
                        "sapiens-realtime.")
    for key in ("keypoint_names", "image_size", "fps"):
        if key not in header:
            raise UserError(f"{path} header has no '{key}'; pass an intact tracks .jsonl file.")
    names, size, fps = header["keypoint_names"], header["image_size"], header["fps"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise UserError(f"{path} header's keypoint_names is not a list of names; pass a tracks .jsonl written by sapiens-rt.")
    if _image_size(size) is None:
        raise UserError(f"{path} header's image_size is not [width, height] in whole pixels; pass a tracks .jsonl written by "
                        "sapiens-rt.")
    if not _is_number(fps) or not FPS_RANGE[0] <= fps <= FPS_RANGE[1]:
        raise UserError(f"{path} header's fps is not a frame rate from {FPS_RANGE[0]:g} to {FPS_RANGE[1]:g}; "
                        f"pass a tracks .jsonl written by sapiens-rt.")
    return header


def _image_size(value) -> Optional[tuple[int, int]]:
    """[W, H] with whole, non-negative sides that fit an int32, else None."""
    if not isinstance(value, list) or len(value) != 2 or not all(_is_number(v) for v in value):
        return None
    if not all(math.isfinite(v) and v == int(v) and 0 <= v <= MAX_SIDE for v in value):
        return None
    return int(value[0]), int(value[1])


def _is_number(value) -> bool:
    """A JSON number that fits a float64 (an integer of 400 digits does not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, float) or abs(value) <= MAX_FLOAT


def person_keys(people: list[dict]) -> list[Optional[int]]:
    """Track id of each person of a frame record; None for persons written without one
    (tentative detections of a tracked file, or people of unrelated stills): no track."""
    return [None if person.get("id") is None else int(person["id"]) for person in people]


# -- the schema check: every reader (export, smooth, stream, the Python API) goes through it

@dataclass(frozen=True)
class PersonRecord:
    """One person of a frame line, checked and as arrays (NaN where the file says null).

    contacts: (2,) float64, 1 (foot on the floor), 0 (off it) or NaN (not known), per foot."""

    id: Optional[int]
    kpts: np.ndarray  # (K, 3) x, y, score
    box: np.ndarray  # (5,) x1, y1, x2, y2, score
    smoothed: bool
    kpts3d: Optional[np.ndarray] = None  # (K, 3) metres
    predicted: Optional[np.ndarray] = None  # (K,) bool
    face: Optional[np.ndarray] = None  # (F,) in ARKIT_NAMES order
    head: Optional[np.ndarray] = None  # (4,)
    contacts: Optional[np.ndarray] = None  # (2,)
    lips: Optional[float] = None  # [0, 1]
    bones: Optional[dict] = None  # "root" (3,), "root_held" bool, "rot" (B, 4), "held" (B,) bool, "offsets" (B, 3)
    height: Optional[np.ndarray] = None  # (2,) stature metres, confidence


@dataclass(frozen=True)
class CameraRecord:
    """A frame's "camera": position (3,), rotation (4,) x, y, z, w, intrinsics (4,) or None, status,
    world (people in the world frame), grounded (the world frame fixed by the floor), pointmap_scale (the
    frame's pointmap's scale against the camera path's metres) or None."""

    position: np.ndarray
    rotation: np.ndarray
    intrinsics: Optional[np.ndarray]
    status: str
    world: bool
    grounded: bool
    pointmap_scale: Optional[float] = None


@dataclass(frozen=True)
class FrameRecord:
    frame: int
    t: float  # NaN when the line gives none
    people: tuple[PersonRecord, ...]
    file: Optional[str] = None
    image_size: Optional[tuple[int, int]] = None
    camera: Optional[CameraRecord] = None
    floor_up: Optional[np.ndarray] = None  # (3,) the floor's up in the frame's camera


def schema_error(path: Path, line: int, err: Exception) -> UserError:
    """The one sentence for a line that breaks the schema, with its number."""
    return UserError(f"{path} line {line} does not follow the tracks schema ({err}); pass a tracks .jsonl written by sapiens-rt.")


def check_frame(record: dict, num_keypoints: int, row: int = 0, num_bones: Optional[int] = None) -> FrameRecord:
    """Check every field of one frame line (type and shape) and return it as arrays.

    Raises ValueError naming the field and what is wrong with it (callers add the path
    and line number, see `schema_error`). Refused: text where numbers belong ("12.5"),
    booleans as numbers, ids that are not whole numbers, lists of the wrong length.
    Fields the schema does not name are accepted and ignored (newer writers add some).
    num_bones: the header's `bone_names` count; `bones` are refused without it.
    """
    frame, t, people = record.get("frame", row), record.get("t"), record.get("people")
    if not _is_int(frame) or not INT64[0] <= frame <= INT64[1]:
        raise ValueError(f"frame is {_short(frame)}, not a whole number within 64 bits")
    if t is not None and (not _is_number(t) or not math.isfinite(t)):
        raise ValueError(f"t is {_short(t)}, not a finite number of seconds")
    if people is None:
        people = []
    if not isinstance(people, list) or not all(isinstance(p, dict) for p in people):
        raise ValueError("people is not a list of objects")
    file, size = record.get("file"), record.get("image_size")
    if file is not None and not isinstance(file, str):
        raise ValueError(f"file is {_short(file)}, not a file name")
    if size is not None and _image_size(size) is None:
        raise ValueError(f"image_size is {_short(size)}, not [width, height] in whole pixels")
    checked = tuple(_check_person(person, num_keypoints, n, num_bones) for n, person in enumerate(people))
    camera = None if record.get("camera") is None else _check_camera(record["camera"])
    floor_up = None if record.get("floor_up") is None else _numbers(record["floor_up"], "floor_up", (3,))
    if floor_up is not None and (not np.isfinite(floor_up).all() or abs(np.linalg.norm(floor_up) - 1) > 1e-3):
        raise ValueError(f"floor_up is {_short(record['floor_up'])}, not a unit vector")
    return FrameRecord(int(frame), float("nan") if t is None else float(t), checked, file,
                       _image_size(size) if size is not None else None, camera, floor_up)


def _check_camera(value) -> CameraRecord:
    if not isinstance(value, dict):
        raise ValueError(f"camera is {_short(value)}, not an object of position, rotation, intrinsics, status, world, grounded")
    status = value.get("status")
    if status not in CAMERA_STATUS:
        raise ValueError(f"camera's status is {_short(status)}, not one of {', '.join(CAMERA_STATUS)}")
    flags = {}
    for name in ("world", "grounded"):
        flag = value.get(name, 0)
        if flag not in (0, 1) or isinstance(flag, float):
            raise ValueError(f"camera's {name} is {_short(flag)}, not 1 or 0")
        flags[name] = bool(flag)
    rotation = _numbers(value.get("rotation"), "camera's rotation", (4,))
    if not np.isfinite(rotation).all() or np.linalg.norm(rotation) < 0.5:
        raise ValueError(f"camera's rotation is {_short(value.get('rotation'))}, not a unit quaternion")
    intrinsics = None if value.get("intrinsics") is None else _numbers(value["intrinsics"], "camera's intrinsics", (4,))
    scale = value.get("pointmap_scale")
    if scale is not None and not (_is_number(scale) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"camera's pointmap_scale is {_short(scale)}, not a positive number")
    return CameraRecord(_numbers(value.get("position"), "camera's position", (3,)), rotation, intrinsics, status, flags["world"],
                        flags["grounded"], None if scale is None else float(scale))


def _check_person(person: dict, num_keypoints: int, n: int, num_bones: Optional[int] = None) -> PersonRecord:
    def field(name: str) -> str:
        return f"person {n + 1}'s {name}"

    track_id = person.get("id")
    if track_id is not None and not _is_int(track_id):
        raise ValueError(f"{field('id')} is {_short(track_id)}, not a whole number or null")
    if track_id is not None and not INT64[0] < track_id <= INT64[1]:
        raise ValueError(f"{field('id')} {_short(track_id)} is outside the 64-bit range track ids must fit")
    if "kpts" not in person:
        raise ValueError(f"{field('kpts')} is missing")
    kpts = _numbers(person["kpts"], field("kpts"), (num_keypoints, 3))
    box = np.full(5, np.nan)
    if person.get("box") is not None:
        value = person["box"]
        if not isinstance(value, list) or len(value) not in (4, 5):
            raise ValueError(f"{field('box')} is {_short(value)}, not [x1, y1, x2, y2, score]")
        box[: len(value)] = _numbers(value, field("box"), (len(value),))
    smoothed = person.get("smoothed", False)
    if smoothed is not None and not isinstance(smoothed, bool):
        raise ValueError(f"{field('smoothed')} is {_short(smoothed)}, not true or false")
    points3d = None if person.get("kpts3d") is None else _numbers(person["kpts3d"], field("kpts3d"), (num_keypoints, 3))
    predicted = None if person.get("predicted") is None else _flags(person["predicted"], field("predicted"), num_keypoints)
    head = None if person.get("head") is None else _numbers(person["head"], field("head"), (4,))
    contacts = None
    if person.get("contacts") is not None:
        value = person["contacts"]
        if not isinstance(value, list) or len(value) != 2 or not all(v is None or v in (0, 1) for v in value) \
                or any(isinstance(v, float) for v in value):
            raise ValueError(f"{field('contacts')} is {_short(value)}, not [left, right] of 1, 0 or null")
        contacts = np.array([np.nan if v is None else float(v) for v in value])  # null: that foot is not known
    lips = person.get("lips")
    if lips is not None and (not _is_number(lips) or not 0 <= lips <= 1):
        raise ValueError(f"{field('lips')} is {_short(lips)}, not a weight from 0 to 1")
    bones = None if person.get("bones") is None else _check_bones(person["bones"], field("bones"), num_bones)
    height = None if person.get("height") is None else _numbers(person["height"], field("height"), (2,))
    return PersonRecord(track_id, kpts, box, bool(smoothed), points3d, predicted, _face(person.get("face"), field("face")), head,
                        contacts, None if lips is None else float(lips), bones, height)


def _check_bones(value, what: str, count: Optional[int]) -> dict:
    """A person's "bones" (the header's `bone_names` order) as arrays."""
    if count is None:
        raise ValueError(f"{what} are given but the header has no bone_names")
    if not isinstance(value, dict):
        raise ValueError(f"{what} is {_short(value)}, not an object of root, root_held, rot, held and offsets")
    held = _flags(value.get("held"), f"{what}' held", count)
    root_held = value.get("root_held")
    if root_held not in (0, 1) or isinstance(root_held, float):
        raise ValueError(f"{what}' root_held is {_short(root_held)}, not 1 or 0")
    return {"root": _numbers(value.get("root"), f"{what}' root", (3,)), "root_held": bool(root_held),
            "rot": _numbers(value.get("rot"), f"{what}' rot", (count, 4)), "held": held,
            "offsets": _numbers(value.get("offsets"), f"{what}' offsets", (count, 3))}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _numbers(value, what: str, shape: tuple[int, ...]) -> np.ndarray:
    """JSON numbers (null -> NaN) of exactly `shape` as float64; text, booleans, nested lists of
    the wrong length and numbers beyond float64 are refused with what was found."""
    expected = " x ".join(str(n) for n in shape)
    try:
        array = np.array(value)
    except (ValueError, TypeError):  # ragged
        raise ValueError(f"{what} is not a list of {expected} numbers") from None
    if array.shape != shape:
        found = f"shape {' x '.join(str(n) for n in array.shape) or 'a single value'}"
        raise ValueError(f"{what} has {found}, expected {expected} numbers or nulls")
    if array.dtype.kind in "fiu":
        return array.astype(np.float64)
    if array.dtype.kind == "O":
        bad = next((v for v in array.flat if v is not None and not _is_number(v)), None)
        if bad is None:
            return np.array([np.nan if v is None else float(v) for v in array.flat], dtype=np.float64).reshape(shape)
    else:
        bad = next(iter(array.flat))
    raise ValueError(f"{what} holds {_short(bad.item() if isinstance(bad, np.generic) else bad)}, not a number or null")


def _flags(value, what: str, count: int) -> np.ndarray:
    if not isinstance(value, list) or len(value) != count or not all(isinstance(v, bool) or v in (0, 1) for v in value) \
            or any(isinstance(v, float) for v in value):
        raise ValueError(f"{what} is not a list of {count} flags (1 or 0)")
    return np.array(value, dtype=bool)


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _read_frame(record: dict, row: int, num_keypoints: int, seen: dict, unseen: list, tracked: bool = False,
                num_bones: Optional[int] = None) -> FrameRecord:
    """Check one frame record and add its people to `seen` (track id -> records), or to
    `unseen` when they have no id in a file that is not tracked (stills)."""
    checked = check_frame(record, num_keypoints, row, num_bones)
    for person in checked.people:
        if person.id is None:
            if not tracked:  # in a tracked file: a tentative detection, nobody's track
                unseen.append((row, person))
        else:
            seen.setdefault(person.id, []).append((row, person))
    return checked


def _face(value, what: str = "face") -> Optional[np.ndarray]:
    """{"eyeBlinkLeft": w, ...} -> (F,) in ARKIT_NAMES order, NaN for names the record lacks; None when absent."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not an object of blendshape weights")
    bad = next((k for k, v in value.items() if v is not None and not _is_number(v)), None)
    if bad is not None:
        raise ValueError(f"{what} {bad} is {_short(value[bad])}, not a number or null")
    from realtime.rig.face import ARKIT_NAMES

    return np.array([np.nan if value.get(name) is None else float(value[name]) for name in ARKIT_NAMES])


def read_tracks(path: str | Path) -> Tracks:
    """Read a tracks JSONL into per-person arrays aligned on the file's frames.

    Tolerates a cut-off last line (crashed run; `Tracks.truncated` is set),
    unknown fields and unknown line types. Raises `UserError` for anything else.
    """
    path = Path(path)
    records = TrackRecords(path)
    stream = iter(records)
    header = read_header(stream, path)
    num_keypoints = len(header["keypoint_names"])
    frames, times, files = [], [], []
    tracked = bool(header.get("tracked", False))
    num_bones = len(header["bone_names"]) if isinstance(header.get("bone_names"), list) else None
    sizes: list[Optional[tuple[int, int]]] = []  # a frame's own image size (stills), where given
    cameras: list[Optional[CameraRecord]] = []
    floor_ups: list[Optional[np.ndarray]] = []
    seen: dict[int, list[tuple[int, PersonRecord]]] = {}  # track id -> [(row, its record)]
    unseen: list[tuple[int, PersonRecord]] = []  # people without an id in a file that is not tracked
    for line, record in stream:
        if not isinstance(record, dict) or record.get("type") != "frame":
            continue
        try:
            checked = _read_frame(record, len(frames), num_keypoints, seen, unseen, tracked, num_bones)
        except ValueError as err:
            raise schema_error(path, line, err) from None
        frames.append(checked.frame)
        times.append(checked.t)
        files.append(checked.file)
        sizes.append(checked.image_size)
        cameras.append(checked.camera)
        floor_ups.append(checked.floor_up)

    T = len(frames)
    people = {}
    for track_id in sorted(seen):
        entries = seen[track_id]
        keypoints = np.full((T, num_keypoints, 2), np.nan)
        scores = np.full((T, num_keypoints), np.nan)
        boxes = np.full((T, 5), np.nan)
        present = np.zeros(T, dtype=bool)
        smoothed = np.zeros(T, dtype=bool)
        points3d = np.full((T, num_keypoints, 3), np.nan) if any(p.kpts3d is not None for _, p in entries) else None
        predicted = np.zeros((T, num_keypoints), dtype=bool)
        face = head = None
        if any(p.face is not None for _, p in entries):
            from realtime.rig.face import ARKIT_NAMES

            face, head = np.full((T, len(ARKIT_NAMES)), np.nan), np.full((T, 4), np.nan)
        height = np.full((T, 2), np.nan) if any(p.height is not None for _, p in entries) else None
        contacts = contacts_known = None
        if any(p.contacts is not None for _, p in entries):
            contacts, contacts_known = np.zeros((T, 2), dtype=bool), np.zeros((T, 2), dtype=bool)
        for row, person in entries:
            if person.contacts is not None:  # per foot: a null foot stays unknown
                contacts_known[row] = np.isfinite(person.contacts)
                contacts[row] = person.contacts == 1
            if person.face is not None:
                face[row] = person.face
            if person.head is not None and head is not None:
                head[row] = person.head
            keypoints[row], scores[row], boxes[row] = person.kpts[:, :2], person.kpts[:, 2], person.box
            present[row], smoothed[row] = True, person.smoothed
            if person.kpts3d is not None:
                points3d[row] = person.kpts3d
            if person.predicted is not None:
                predicted[row] = person.predicted
            if person.height is not None:
                height[row] = person.height
        people[track_id] = PersonTrack(track_id, keypoints, scores, boxes, present, smoothed, points3d, predicted, face, head,
                                       contacts, contacts_known, height)

    return Tracks(
        header=header,
        frames=np.array(frames, dtype=np.int64),
        times=np.array(times, dtype=np.float64),
        people=people,
        truncated=records.truncated,
        unidentified=_unidentified(unseen, num_keypoints),
        files=tuple(str(f) for f in files) if header.get("stills") and all(isinstance(f, str) for f in files) else None,
        frame_sizes=_frame_sizes(sizes, header["image_size"]),
        camera=_camera_track(cameras),
        floor_up=_floor_up(floor_ups),
    )


def _floor_up(values: list[Optional[np.ndarray]]) -> Optional[np.ndarray]:
    """(T, 3) the frames' floor_up (NaN on frames without one), or None when no frame has one."""
    if not any(v is not None for v in values):
        return None
    return np.array([np.full(3, np.nan) if v is None else v for v in values], dtype=np.float64).reshape(len(values), 3)


def _camera_track(cameras: list[Optional[CameraRecord]]) -> Optional[CameraTrack]:
    """The frames' cameras as arrays (NaN / 'none' on frames without one), or None when no frame has one."""
    if not any(c is not None for c in cameras):
        return None
    T = len(cameras)
    position, rotation, intrinsics = np.full((T, 3), np.nan), np.full((T, 4), np.nan), np.full((T, 4), np.nan)
    world, grounded, scale = np.zeros(T, bool), np.zeros(T, bool), np.full(T, np.nan)
    status = []
    for row, camera in enumerate(cameras):
        status.append("none" if camera is None else camera.status)
        if camera is None:
            continue
        position[row], rotation[row] = camera.position, camera.rotation
        if camera.intrinsics is not None:
            intrinsics[row] = camera.intrinsics
        world[row], grounded[row] = camera.world, camera.grounded
        if camera.pointmap_scale is not None:
            scale[row] = camera.pointmap_scale
    return CameraTrack(position, rotation, intrinsics, tuple(status), world, grounded, scale)


def _unidentified(unseen: list[tuple[int, PersonRecord]], num_keypoints: int) -> Optional[Unidentified]:
    """The people without identities, stacked: one entry each."""
    if not unseen:
        return None
    kpts = np.stack([p.kpts for _, p in unseen]).reshape(len(unseen), num_keypoints, 3)
    points3d = None
    if any(p.kpts3d is not None for _, p in unseen):
        points3d = np.stack([np.full((num_keypoints, 3), np.nan) if p.kpts3d is None else p.kpts3d for _, p in unseen])
    return Unidentified(rows=np.array([row for row, _ in unseen], dtype=np.int64), keypoints=kpts[..., :2],
                        scores=kpts[..., 2], boxes=np.stack([p.box for _, p in unseen]), keypoints3d=points3d)


def _frame_sizes(sizes: list[Optional[tuple[int, int]]], default: list) -> Optional[np.ndarray]:
    """(T, 2) per-frame (W, H) when any frame gives its own size (others: the header's), else None."""
    if not any(size is not None for size in sizes):
        return None
    fallback = (int(default[0]), int(default[1]))
    return np.array([size or fallback for size in sizes], dtype=np.int64).reshape(len(sizes), 2)
