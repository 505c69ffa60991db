"""The tracks record, declared once: every field of the tracks JSONL (docs/tracks-format.md).

Each header, frame and person field is one declaration below (`HEADER`, `FRAME`, `PERSON`): its
JSON key, type and shape, unit, decimals, null rule, the schema version it arrived in and what it
means. From these follow the live writer's text (`frame_text`, used by `realtime.sinks.tracks`),
the reader's check (`check_header`, `check_frame`, used by `realtime.export.jsonl`), a record as a
`Frame` again (`frame_from_record`: `sapiens-rt stream` and `smooth`), `PersonTrack`'s arrays
(`TRACK_ARRAYS`: `realtime.export.tracks`) and the field table of the docs (`field_table`).
Adding a field is one declaration here, plus a line of `HISTORY` (files of older versions simply
lack it: they still read). The kinds of field (numbers of a shape, flags, names, ...) and how each
is checked and written are `realtime.json_fields`.

Null rules (`Null`): a field may be null or left out as a whole only where its rule says so (not
computed), and a single number in it may be null only where it says so (that value not known).
Nothing non-finite is read or written: a JSON NaN or Infinity token, or a number beyond float32
(what receivers and exports hold), is refused naming its field, and so is a null where the field
forbids one. The writer leaves out a field it cannot write finite, and says so once.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, make_dataclass
from dataclasses import field as dataclass_field
from functools import lru_cache
from types import SimpleNamespace
from typing import Any, Callable, Optional, Sequence

import numpy as np

from realtime.expressions import ARKIT_NAMES
from realtime.frames import (
    BONE_DECIMALS,
    CAMERA_DECIMALS,
    CAMERA_STATUS,
    FLOOR_UP_DECIMALS,
    HEIGHT_DECIMALS,
    Bones,
    Camera,
    Frame,
    Person,
)
from realtime.json_fields import (  # noqa: F401 (Null, NonFinite, is_number: re-exported with the record)
    FLOAT32_MAX,
    NULL_TEXT,
    B,
    Dims,
    Field,
    Flag,
    Flags,
    Free,
    Group,
    K,
    Names,
    NonFinite,
    Null,
    Numbers,
    Size,
    Text,
    Weights,
    Whole,
    is_number,
    parse_line,
    refuse_non_finite,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5
HISTORY = {
    1: "header, frames and people: ids, boxes, keypoints, smoothed, predicted, 3D keypoints, face, head, contacts",
    2: "lips, bones (and the header's bone_names), the frame's camera, height",
    3: "the frame's floor_up",
    4: "the camera's pointmap_scale",
    5: "`camera` only ever the world stage's pose (the egomotion stage's odometry is not written); the null rules "
       "enforced: bones and camera poses never null, nothing non-finite or beyond float32 (files of every version are "
       "read under them)",
}
# Decimals written: pixels, scores, metres. 0.01 px and 0.1 mm are far below the models' error.
PX_DECIMALS, SCORE_DECIMALS, METRE_DECIMALS = 2, 3, 4
FACE_DECIMALS, HEAD_DECIMALS, TIME_DECIMALS = 3, 4, 6  # weights, the head's quaternion, seconds
FPS_RANGE = (1e-3, 1e6)  # frames per second a header may give (C3D stores it as a float32)


# -- the declarations --------------------------------------------------------------------------------

_QUATERNION = "quaternion x, y, z, w"

BONES = Group(
    "bones", since=2, expect="an object of root, root_held, rot, held and offsets", meaning=(
        "the skeleton the motion stage solved (runs with pose and depth) in the header's `bone_names` order, rig axes "
        "(metres, Y up, the character facing +Z, +X its left). `sapiens-rt stream` sends these as they are (the same bytes "
        "as the run); a file without them is solved again when streamed, and `sapiens-rt smooth` solves them again from "
        "its smoothed `kpts3d`"),
    parts=(
        Numbers("root", "the hips' position (the root's translation); in the world frame (y up, floor at 0) on frames whose "
                "`camera` says `\"world\": 1`", null=Null.NEVER, unit="m", shape=(3,), decimals=BONE_DECIMALS["root_position"]),
        Flag("root_held", "1 where the root kept its last position (the hips were not seen)", null=Null.NEVER),
        Numbers("rot", "each bone's local rotation relative to the T-pose, " + _QUATERNION, null=Null.NEVER, shape=(B, 4),
                decimals=BONE_DECIMALS["rotations"], quaternion=True),
        Flags("held", "1 where a bone kept its last rotation because its points were not seen", null=Null.NEVER, count=B),
        Numbers("offsets", "each bone's rest offset from its parent (the skeleton estimated so far; the root's: its height "
                "above the floor at rest)", null=Null.NEVER, unit="m", shape=(B, 3), decimals=BONE_DECIMALS["offsets"]),
    ),
    build=lambda v, dims: Bones(dims.bones, v["offsets"], v["root"], v["rot"], v["held"], v["root_held"]),
    parts_of=lambda b: (b.root_position, b.root_held, b.rotations, b.held, b.offsets),
    dims_of=lambda b, dims: Dims(dims.keypoints, tuple(b.names)),  # written: as many rows as the bones have
)

CAMERA = Group(
    "camera", since=2, expect="an object of position, rotation, intrinsics, status, world, grounded", meaning=(
        "the camera in the world, per frame (the world stage: runs with pose and depth); the world is y up (the floor's "
        "normal), origin on the floor under the first tracked person's start, z along the floor towards the first camera, "
        "the rig axes of `bones`; camera axes x right, y down, z forward"),
    parts=(
        Numbers("position", "the camera's centre in the world (world_from_camera's translation)", null=Null.NEVER, unit="m",
                shape=(3,), decimals=CAMERA_DECIMALS["position"]),
        Numbers("rotation", "world_from_camera's rotation, " + _QUATERNION, null=Null.NEVER, shape=(4,),
                decimals=CAMERA_DECIMALS["rotation"], quaternion=True),
        Numbers("intrinsics", "fx, fy, cx, cy in pixels of the original image, estimated from the pointmaps; null before "
                "the first (exports refuse a lens they cannot use)", null=Null.ANY, unit="px", shape=(4,),
                decimals=CAMERA_DECIMALS["intrinsics"]),
        Text("status", "`waiting` (no pointmap yet), `static` (held still: no drift), `tracking`, `lost` (the last pose held "
             "until the next pointmap)", null=Null.NEVER, choices=CAMERA_STATUS),
        Flag("world", "1 where this frame's `bones` root and `contacts` are in the world (the camera was seen to move with "
             "`--camera auto`, or `--camera moving`, once the floor is known), 0 where they are camera-relative", default=False),
        Flag("grounded", "0 while the world frame is provisional (the floor not fitted yet)", default=False),
        Numbers("pointmap_scale", "on frames with a pointmap of their own and egomotion (not `--camera static`): that "
                "pointmap's metric scale against the camera path's metres, measured on the background (1.02: its points 2 % "
                "too far); the ground stage divided a moving camera's people's 3D by it", since=4, omit=True,
                expect="a positive number", decimals=CAMERA_DECIMALS["pointmap_scale"], low=0, positive=True, shortest=True),
    ),
    build=lambda v, dims: Camera(v["position"], v["rotation"], v["intrinsics"], v["status"], v["world"], v["grounded"],
                                 v["pointmap_scale"]),
    parts_of=lambda c: (c.position, c.rotation, c.intrinsics, c.status, c.world, c.grounded, c.pointmap_scale),
)


@dataclass(frozen=True)
class TrackArray:
    """One array of `PersonTrack` (T rows: the file's frames), filled from a person field's checked values.

    `row`: the shape of one row (symbols K, B); `dtype` float64 (NaN where not known or absent) or bool
    (False there); `take(value)`: the row from the field's checked value (None: the value itself);
    `always`: there even when no frame has the field (else None then)."""

    name: str
    doc: str
    row: tuple = ()
    dtype: Any = np.float64
    take: Optional[Callable] = None
    always: bool = False

    def row_of(self, value):
        return value if self.take is None else self.take(value)

    def empty(self, frames: int, dims: Dims) -> np.ndarray:
        shape = (frames, *dims.shape(self.row))
        return np.zeros(shape, bool) if self.dtype is bool else np.full(shape, np.nan)


@dataclass(frozen=True)
class PersonField:
    """A person field and how it maps to `Person` (the live data) and to `PersonTrack` (a whole file's arrays):
    `get(person)` the value written (None: not written, unless `empty` gives the text of none), `put(value)`
    the `Person` attributes a read value gives, `track` its `PersonTrack` arrays (None: one array named after
    the key, as `default_track` makes it)."""

    field: Field
    get: Callable[[Person], Any]
    put: Callable[[Any], dict]
    empty: Optional[Callable[[Dims], str]] = None
    track: Optional[tuple[TrackArray, ...]] = None

    @property
    def arrays(self) -> tuple[TrackArray, ...]:
        return default_track(self.field) if self.track is None else self.track


def default_track(field: Field) -> tuple[TrackArray, ...]:
    """A field's `PersonTrack` array when it names none: one named after its key, a row per frame (None when
    no frame of the person has the field)."""
    where = f"where not known or absent, or None when no frame carried `{field.key}`."
    if isinstance(field, Numbers):
        rows = ", ".join(str(n) for n in ("T", *field.shape)) + ("," if not field.shape else "")
        unit = f" {field.unit}" if field.unit else ""
        return (TrackArray(field.key, f"({rows}) float64{unit}, NaN {where}", field.shape),)
    if isinstance(field, Weights):
        return (TrackArray(field.key, f"(T, {len(field.names)}) float64, NaN {where}", (len(field.names),)),)
    if isinstance(field, Flags):
        return (TrackArray(field.key, f"(T, {field.count}) bool, False {where}", (field.count,), bool, take=lambda v: v == 1),)
    if isinstance(field, Flag):
        return (TrackArray(field.key, f"(T,) bool, False {where}", (), bool),)
    return ()


def _kpts(person: Person) -> Optional[np.ndarray]:
    points = person.best_keypoints
    if points is None:
        return None
    scores = person.keypoint_scores
    scores = np.full(len(points), np.nan) if scores is None else np.asarray(scores, dtype=np.float64)
    return np.concatenate([np.asarray(points, dtype=np.float64), scores[:, None]], axis=1)


@lru_cache(maxsize=8)
def _null_rows(rows: int, columns: int) -> str:
    return "[" + ",".join(["[" + ",".join(["null"] * columns) + "]"] * rows) + "]"


def _f32(value) -> np.ndarray:
    return np.asarray(value).astype(np.float32)


PERSON = (
    PersonField(Whole("id", "track id, stable across frames; null when the person has none (a tentative detection in a "
                      "`tracked` file, or no tracker ran: stills)", outside="is outside the 64-bit range track ids must fit"),
                get=lambda p: p.track_id, put=lambda v: {"track_id": v}, empty=lambda dims: "null",
                track=()),  # PersonTrack.id
    PersonField(Numbers("box", "x1, y1, x2, y2 in pixels and the detector score (1 for boxes not from the detector); 4 "
                        "numbers read as a box without a score", null=Null.ANY, unit="px", shape=(5,), short=4,
                        expect="[x1, y1, x2, y2, score]", decimals=(PX_DECIMALS,) * 4 + (SCORE_DECIMALS,)),
                get=lambda p: np.append(np.asarray(p.box, dtype=np.float64), p.box_score),
                put=lambda v: {"box": _f32(v[:4]), "box_score": float(np.nan_to_num(v[4], nan=1.0))},
                track=(TrackArray("boxes", "(T, 5) float64 x1, y1, x2, y2, box score; NaN where absent.", (5,), always=True),)),
    PersonField(Numbers("kpts", "`[x, y, score]` per keypoint (the header's `keypoint_names` order): pixels of the original "
                        "image (x right, y down) and the raw model confidence (a heatmap maximum, may exceed 1); `x, y` null "
                        "where the heatmap has no peak at all (score <= 0)", null=Null.NUMBERS, unit="px", shape=(K, 3),
                        decimals=(PX_DECIMALS, PX_DECIMALS, SCORE_DECIMALS)),
                get=_kpts, put=lambda v: {"keypoints": _f32(v[:, :2]), "keypoint_scores": _f32(v[:, 2])},
                empty=lambda dims: _null_rows(dims.keypoints, 3),
                track=(TrackArray("keypoints", "(T, K, 2) float64 pixels, NaN where unknown or absent.", (K, 2),
                                  take=lambda v: v[:, :2], always=True),
                       TrackArray("scores", "(T, K) float64 keypoint confidences, NaN where unknown or absent.", (K,),
                                  take=lambda v: v[:, 2], always=True))),
    PersonField(Flag("smoothed", "`true` when `kpts` are temporally smoothed (the live filter or `sapiens-rt smooth`)",
                     boolean=True, default=False),
                get=lambda p: p.smoothed, put=lambda v: {"smoothed": v},
                track=(TrackArray("smoothed", "(T,) bool, True where the written keypoints were temporally smoothed.",
                                  dtype=bool, always=True),)),
    PersonField(Flags("predicted", "per keypoint, 1 where the live filter predicted or held the point instead of measuring it "
                      "(its score was below `min_score`); present when the live filter ran", count=K),
                get=lambda p: p.predicted, put=lambda v: {"predicted": v},
                track=(TrackArray("predicted", "(T, K) bool, True where the live filter predicted or held a keypoint instead "
                                  "of measuring it (the file's `predicted`); False elsewhere.", (K,), bool, always=True),)),
    PersonField(Numbers("kpts3d", "`[X, Y, Z]` per keypoint, camera frame (x right, y down, z forward); present only when the "
                        "pointmap task ran: for a tracked person on every frame from their first depth frame (lifted between "
                        "depth frames, the pointmap's per-frame scale stabilised), otherwise on the depth frames",
                        null=Null.ANY, unit="m", shape=(K, 3), decimals=METRE_DECIMALS),
                get=lambda p: p.keypoints3d, put=lambda v: {"keypoints3d": _f32(v)},
                track=(TrackArray("keypoints3d", "(T, K, 3) float64 metres (camera frame), NaN where unknown, or None when "
                                  "no frame of this person carried `kpts3d`.", (K, 3)),)),
    PersonField(Weights("face", "ARKit blendshape weights from 0 to 1 by name (`{\"jawOpen\": 0.4, ...}`), read from the 238 "
                        "face keypoints against the person's neutral face (learned over its first `--face-calibrate` "
                        "seconds); present for tracked people whose eyes and nose are seen; a name left out, or null, is not "
                        "known (sent as 0)", names=ARKIT_NAMES, decimals=FACE_DECIMALS),
                get=lambda p: p.face, put=lambda v: {"face": np.nan_to_num(v).astype(np.float32)},
                track=(TrackArray("face", "(T, F) float64 ARKit blendshape weights (`realtime.expressions.ARKIT_NAMES` "
                                  "order), NaN where not read, or None when no frame carried `face`.", (len(ARKIT_NAMES),)),)),
    PersonField(Numbers("lips", "the inner lips apart, from 0 to 1 (no ARKit name of its own; it feeds the VRM vowels); "
                        "with `face`", since=2, decimals=FACE_DECIMALS, low=0, high=1, expect="a weight from 0 to 1"),
                get=lambda p: p.lips_open, put=lambda v: {"lips_open": v}),
    PersonField(Numbers("head", "the head's rotation relative to the neutral head, " + _QUATERNION + ", rig axes (Y up, "
                        "facing +Z, +X the person's left); with `face`", shape=(4,), decimals=HEAD_DECIMALS, quaternion=True),
                get=lambda p: p.head_rotation, put=lambda v: {"head_rotation": _f32(v)},
                track=(TrackArray("head_rotation", "(T, 4) float64 head quaternions x, y, z, w (rig axes, relative to the "
                                  "neutral head), NaN where not read, or None when no frame carried `head`.", (4,)),)),
    PersonField(Flags("contacts", "`[left, right]`: 1 where the foot is on the floor (height above the fitted floor and "
                      "speed, with hysteresis), null where that foot is not known; present when the depth task ran, from "
                      "the moment the floor is known", null=Null.ANY, count=2, expect="[left, right] of 1, 0 or null"),
                get=lambda p: p.contacts, put=lambda v: {"contacts": None if np.isnan(v).any() else v.astype(bool)},
                track=(TrackArray("contacts", "(T, 2) bool, left / right foot on the floor (False where not known), or "
                                  "None when no frame carried `contacts`.", (2,), bool, take=lambda v: v == 1),
                       TrackArray("contacts_known", "(T, 2) bool, True for each foot whose record gave 1 or 0 (a null foot "
                                  "is unknown, never \"off\"), or None with `contacts`.", (2,), bool, take=np.isfinite))),
    PersonField(BONES, get=lambda p: p.bones, put=lambda v: {"bones": v}, track=()),  # exports solve their own
    PersonField(Numbers("height", "`[metres, confidence]`: the person's standing height (stature) measured so far in the "
                        "world frame, confidence from 0 to 1; present once measured (runs with pose and depth)", since=2,
                        unit="m, 1", shape=(2,), decimals=HEIGHT_DECIMALS, low=0, high=(FLOAT32_MAX, 1)),
                get=lambda p: None if p.height is None else np.asarray(p.height, np.float64),
                put=lambda v: {"height": (float(v[0]), float(v[1]))},
                track=(TrackArray("height", "(T, 2) float64 stature metres and confidence, NaN where not measured, or "
                                  "None.", (2,)),)),
)

FRAME = (
    Whole("frame", "0-based index of the frame in the source (frames a live source dropped keep their numbers, so gaps "
                   "show); the line's row when absent", expect="a whole number within 64 bits"),
    Numbers("t", "seconds since the start of the source (container timestamps, or the capture clock for cameras); null "
                 "when not known (a replay takes one frame period)", unit="s", decimals=TIME_DECIMALS,
            expect="a finite number of seconds"),
    Text("file", "stills only (`--stills`, or an image folder of mixed sizes; the header says `\"stills\": true`): the "
                 "image's file name (`name.gif#3` for the 4th frame of an animation)", expect="a file name"),
    Size("image_size", "stills only: the image's own `[W, H]`; `kpts` are in that image's pixels, `id` is null (no "
                       "tracking)", unit="px"),
    CAMERA,
    Numbers("floor_up", "the floor's up (its unit normal) in this frame's camera (x right, y down, z forward), measured from "
                        "the pointmap's background (the ground stage); absent while not measured. The world's up is taken "
                        "from it when the world is fixed", since=3, shape=(3,), decimals=FLOOR_UP_DECIMALS, unit_vector=True,
            expect="a unit vector"),
)
PEOPLE = "people"  # a frame line's list of person records

HEADER = (
    Whole("version", "the schema version of the file (`HISTORY` below); a reader refuses a newer one", null=Null.NEVER,
          low=1, high=SCHEMA_VERSION),
    Names("keypoint_names", "the K keypoint names, in the order of every `kpts` and `kpts3d` list (the 308 of "
          "`realtime/data/keypoints308.json`)", null=Null.NEVER),
    Size("image_size", "`[W, H]` of the original image", null=Null.NEVER, unit="px"),
    Numbers("fps", "frame rate of the source", null=Null.NEVER, unit="Hz", decimals=6, low=FPS_RANGE[0], high=FPS_RANGE[1],
            expect=f"a frame rate from {FPS_RANGE[0]:g} to {FPS_RANGE[1]:g}"),
    Text("source", "the source the run read (file, camera, stream)"),
    Free("model", "the model of each task"),
    Free("software", "name and version of the writer"),
    Flag("stills", "`true` for unrelated photos: no identities across rows, no smoothing", boolean=True, default=False),
    Flag("tracked", "`true` when ids come from the tracker (every `sapiens-rt run`); then a person with `\"id\": null` is a "
                    "tentative detection, not yet confirmed as a person, and readers leave it out of per-person tracks",
         boolean=True, default=False),
    Names("bone_names", "the order of every person's `bones` (VRM 1.0 humanoid names, parents first: 21 bones, 51 with "
                        "`--vmc-fingers`); present when the run solved bones (pose and depth)", since=2),
    Free("smoothing", "`{\"method\": ...}`: the file was written by `sapiens-rt smooth`"),
)
TRACK_ARRAYS = tuple(array for item in PERSON for array in item.arrays)  # PersonTrack's arrays, in order
FIELDS = SimpleNamespace(**{p.field.key: p.field for p in PERSON})  # the person fields by key: FIELDS.kpts3d
_HEADER_KEYS = frozenset(f.key for f in HEADER) | {"type", "version"}
_PERSON_KEYS = frozenset(p.field.key for p in PERSON)
_FRAME_KEYS = frozenset(f.key for f in FRAME) | {"type", PEOPLE}

# What the reader gives: the checked records as arrays (NaN where the file says null), a field per key.
PersonRecord = make_dataclass("PersonRecord", [(p.field.key, Any, None) for p in PERSON], frozen=True)
PersonRecord.__doc__ = "One person of a frame line, checked: a field per JSON key (`realtime.record.PERSON`)."
FrameRecord = make_dataclass("FrameRecord", [(f.key, Any, None) for f in FRAME] + [(PEOPLE, tuple, ())], frozen=True)
FrameRecord.__doc__ = "One frame line, checked (`realtime.record.FRAME`): `t` NaN when null, `people` PersonRecords."
PersonRecord.__module__ = FrameRecord.__module__ = __name__


# -- reading -----------------------------------------------------------------------------------------


class OlderThanFile(ValueError):
    """The file's schema version is newer than this reader's (or no version at all)."""


def check_header(header) -> dict:
    """The header line, checked field by field (its version first: a newer file is refused as such);
    raises ValueError naming the field (OlderThanFile for the version)."""
    if not isinstance(header, dict) or header.get("type") != "header":
        raise ValueError("it does not start with a tracks header line")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= SCHEMA_VERSION:
        raise OlderThanFile(f"tracks schema version {version!r}")
    dims = Dims(0)
    for item in HEADER:
        item.read(header, "header", dims)
    for key, value in header.items():
        if key not in _HEADER_KEYS:
            refuse_non_finite(value, f"header's {key}")
    return header


def header_dims(header: dict) -> Dims:
    """The sizes a checked header gives its records."""
    bones = header.get("bone_names")
    return Dims(len(header["keypoint_names"]), None if bones is None else tuple(bones))


def check_frame(record: dict, dims: Dims, row: int = 0) -> FrameRecord:
    """Check every field of one frame line and return it as arrays.

    Raises ValueError naming the field and what is wrong (callers add the path and the line number).
    Refused: text where numbers belong ("12.5"), booleans as numbers, ids that are not whole numbers,
    lists of the wrong length, NaN / Infinity and numbers beyond float32, null where the field forbids
    it. Fields the schema does not name are accepted and ignored (newer writers add some), unless they
    hold a non-finite number. `row`: the frame number when the line gives none.
    """
    values = {f.key: f.read(record, "", dims) for f in FRAME}
    values["frame"] = row if values["frame"] is None else values["frame"]
    values["t"] = math.nan if values["t"] is None else values["t"]
    people = record.get(PEOPLE) or []
    if not isinstance(people, list) or not all(isinstance(p, dict) for p in people):
        raise ValueError("people is not a list of objects")
    for key, value in record.items():
        if key not in _FRAME_KEYS:
            refuse_non_finite(value, key)
    return FrameRecord(**values, people=tuple(check_person(p, dims, n) for n, p in enumerate(people)))


def check_person(person: dict, dims: Dims, n: int = 0) -> PersonRecord:
    """The n-th (0-based) person object of a frame line, checked."""
    what = f"person {n + 1}"
    values = {p.field.key: p.field.read(person, what, dims) for p in PERSON}
    for key, value in person.items():
        if key not in _PERSON_KEYS:
            refuse_non_finite(value, f"{what}'s {key}")
    return PersonRecord(**values)


def person_from_record(record: PersonRecord) -> Person:
    """A recorded person as the stages left it: what the live senders encode."""
    values: dict = {}
    for item in PERSON:
        value = getattr(record, item.field.key)
        if value is not None:
            values.update(item.put(value))
    if values.pop("smoothed", False):  # the recorded points are the smoothed ones (the raw ones were not kept)
        values["keypoints_smoothed"] = values["keypoints"]
    return Person(**values)


def frame_from_record(record: FrameRecord, image: np.ndarray) -> Frame:
    """A recorded frame as the stages left it, with `image` (a replay carries no picture)."""
    return Frame(index=record.frame, timestamp=record.t, image=image, camera=record.camera, floor_up=record.floor_up,
                 people=tuple(person_from_record(p) for p in record.people))


# -- writing -----------------------------------------------------------------------------------------

_said: set = set()  # the fields the writer has said it left out


def _left_out(key: str) -> None:
    if key not in _said:
        _said.add(key)
        log.warning("a %s held a number that is not finite (or beyond float32), so it is left out of the tracks file; "
                    "said once", key)


_PERSON_WRITERS = tuple((p.get, p.field.text, f'"{p.field.key}":', p.empty, p.field.key) for p in PERSON)


def person_text(person: Person, dims: Dims) -> str:
    """One person's record as JSON text."""
    parts = []
    for get, text_of, head, empty, key in _PERSON_WRITERS:
        value = get(person)
        text = None if value is None else text_of(value, dims)
        if text is None:
            if value is not None:
                _left_out(key)
            if empty is None:
                continue
            text = empty(dims)
        parts.append(head + text)
    return "{" + ",".join(parts) + "}"


def frame_text(frame: Frame, dims: Dims, *, file: Optional[str] = None) -> str:
    """One frame line as JSON text; `file`: a still's image name (its own size is written with it)."""
    values = (int(frame.index), float(frame.timestamp), file, None if file is None else (frame.width, frame.height),
              frame.camera, frame.floor_up)
    parts = ['"type":"frame"']
    for item, value in zip(FRAME, values):
        text = None if value is None else _time_text(value) if item.key == "t" else item.text(value, dims)
        if text is None:
            if value is not None:
                _left_out(item.key)
            continue
        parts.append(f'"{item.key}":{text}')
    people = ",".join(person_text(p, dims) for p in frame.people)
    return "{" + ",".join(parts) + f',"{PEOPLE}":[{people}]}}'


def _time_text(t: float) -> Optional[str]:
    return json.dumps(round(t, TIME_DECIMALS)) if math.isfinite(t) and abs(t) <= FLOAT32_MAX else "null"


def new_header(*, keypoint_names: Sequence[str], image_wh: tuple[int, int], fps: float, source: str, model: dict,
               software: dict, stills: bool = False, tracked: bool = False,
               bone_names: Optional[Sequence[str]] = None) -> dict:
    """The header line of a new file (what `check_header` reads)."""
    out = {"type": "header", "version": SCHEMA_VERSION, "keypoint_names": list(keypoint_names),
           "image_size": [int(image_wh[0]), int(image_wh[1])], "fps": float(fps), "source": str(source),
           "model": dict(model), "software": dict(software)}
    if stills:
        out["stills"] = True
    if tracked:
        out["tracked"] = True
    if bone_names:
        out["bone_names"] = list(bone_names)
    return out


def with_smoothing(header: dict, method: str) -> dict:
    """The header of a file `sapiens-rt smooth` wrote."""
    return {**header, "smoothing": {"method": method}}


# -- rewriting a record in place (sapiens-rt smooth keeps every field it does not change) -------------


def people_of(record: dict) -> list:
    """A frame line's person objects."""
    return record.get(PEOPLE) or []


def person_id(person: dict) -> Optional[int]:
    """A checked person object's track id (None: no track)."""
    return PERSON[0].field.read(person, "", Dims(0))


def set_field(person: dict, field: Field, value, dims: Dims) -> None:
    """Write `value` into a person object as `field` writes it (None: take the field out)."""
    person.pop(field.key, None)
    written = None if value is None else field.jsonable(value, dims)
    if written is not None:
        person[field.key] = written
    elif value is not None:
        _left_out(field.key)


def has_field(person: dict, field: Field) -> bool:
    return person.get(field.key) is not None


def person_track_fields() -> list:
    """`PersonTrack`'s fields for `dataclasses.make_dataclass` (keyword-only): the track id, `present` ((T,) bool:
    the rows the person was written in) and an array per `TRACK_ARRAYS` entry, None by default where not `always`."""
    fields: list = [("id", int), ("present", np.ndarray)]
    for spec in TRACK_ARRAYS:
        optional = (spec.name, Optional[np.ndarray], dataclass_field(default=None))
        fields.append((spec.name, np.ndarray) if spec.always else optional)
    return fields


def person_track_arrays(entries: list, frames: int, dims: Dims) -> dict:
    """One identity's `PersonTrack` arrays from its (row, PersonRecord) entries, each array filled from its field."""
    arrays: dict = {}
    for item in PERSON:
        rows = [(row, getattr(person, item.field.key)) for row, person in entries]
        rows = [(row, value) for row, value in rows if value is not None]
        for spec in item.arrays:
            if not rows and not spec.always:
                arrays[spec.name] = None
                continue
            array = spec.empty(frames, dims)
            for row, value in rows:
                array[row] = spec.row_of(value)
            arrays[spec.name] = array
    return arrays


# -- the docs' field table ---------------------------------------------------------------------------


def _table_rows(fields, where: str, since: int = 1) -> list[str]:
    rows = []
    for item in fields:
        arrived = max(since, item.since)  # a part arrived with its group at the earliest
        rows.append(f"| `{item.key}` | {where} | {item.type_text} | {item.unit} | {item.decimals_text} | "
                    f"{NULL_TEXT[item.null]} | {arrived} | {item.meaning} |")
        if isinstance(item, Group):
            rows += _table_rows(item.parts, f"{where}'s `{item.key}`", arrived)
    return rows


def field_table() -> str:
    """The markdown table of every field, as docs/tracks-format.md holds it (tests/test_record.py compares)."""
    lines = ["| field | in | type | unit | decimals | may be null | since | meaning |",
             "|---|---|---|---|---|---|---|---|"]
    lines += _table_rows(HEADER, "header")
    lines += _table_rows(FRAME, "frame")
    lines += _table_rows([p.field for p in PERSON], "person")
    return "\n".join(lines)


def history_text() -> str:
    """The schema's versions, as docs/tracks-format.md lists them."""
    return "\n".join(f"- version {v}: {text}" for v, text in sorted(HISTORY.items()))
