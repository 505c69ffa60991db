"""The tracks JSONL file: its schema and the reader every exporter uses (the live
writer is `realtime.sinks.tracks.TrackWriter`).

Schema version 2, one JSON object per line:

    {"type": "header", "version": 2, "keypoint_names": [...K], "image_size": [W, H],
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
                   "offsets": [[x, y, z] x B]}  (the solved skeleton, rig axes, "bone_names" order)}]}

Pixels of the original image (x right, y down); `kpts3d` in metres in the
camera frame (x right, y down, z forward); `bones` in rig axes (metres, Y up, the character
facing +Z, +X its left): local quaternions relative to the T-pose, each bone's rest offset from
its parent, the root's position, and held marks for bones whose points were not seen (they
kept their last rotation). Version 1 files (no lips, no bones) read as before; a value that
is not known is `null`.
Every input frame gets a line, also frames with nobody. The file is append-only
and flushed after every frame, so a crashed run loses at most the frame in flight.
Readers skip unknown fields and unknown line types, and a cut-off last line.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np

from realtime.errors import UserError
from realtime.export.tracks import PersonTrack, Tracks, Unidentified

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2  # 2: lips, bones and bone_names; version 1 files still read
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
            raise UserError(f"tracks file {self.path} does not exist; pass the tracks .jsonl file a sapiens-rt run wrote.") from None
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
        raise UserError(f"{path} has tracks schema version {version!r}, this sapiens-rt reads up to {SCHEMA_VERSION}; upgrade sapiens-realtime.")
    for key in ("keypoint_names", "image_size", "fps"):
        if key not in header:
            raise UserError(f"{path} header has no '{key}'; pass an intact tracks .jsonl file.")
    names, size, fps = header["keypoint_names"], header["image_size"], header["fps"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise UserError(f"{path} header's keypoint_names is not a list of names; pass a tracks .jsonl written by sapiens-rt.")
    if _image_size(size) is None:
        raise UserError(f"{path} header's image_size is not [width, height] in whole pixels; pass a tracks .jsonl written by sapiens-rt.")
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


def _numbers(value, what: str) -> np.ndarray:
    """JSON numbers (null -> NaN) as float64; strings or booleans where numbers belong are refused."""
    try:
        if np.array(value).dtype.kind in "USb":
            raise ValueError
        return np.array(value, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{what} holds something other than numbers and nulls") from None


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _points(value, num_keypoints: int, path: Path, line: int) -> np.ndarray:
    points = _numbers(value, "a keypoint list")
    if points.shape != (num_keypoints, 3):
        raise UserError(f"{path} line {line} has keypoints of shape {points.shape}, expected ({num_keypoints}, 3); pass an intact tracks file.")
    return points


def _read_frame(record: dict, row: int, num_keypoints: int, seen: dict, unseen: list, path: Path, line: int,
                tracked: bool = False) -> None:
    """Check one frame record's types and add its people to `seen` (track id -> entries), or
    to `unseen` when they have no id in a file that is not tracked (stills)."""
    frame, t, people = record.get("frame", row), record.get("t"), record.get("people") or []
    if not isinstance(frame, int) or isinstance(frame, bool) or not INT64[0] <= frame <= INT64[1]:
        raise ValueError(f"frame is {_short(frame)}, not a whole number within 64 bits")
    if t is not None and (not _is_number(t) or not math.isfinite(t)):
        raise ValueError(f"t is {_short(t)}, not a finite number of seconds")
    if not isinstance(people, list) or not all(isinstance(p, dict) for p in people):
        raise ValueError("people is not a list of objects")
    for person in people:
        track_id = person.get("id")
        if track_id is not None and (not isinstance(track_id, int) or isinstance(track_id, bool)):
            raise ValueError(f"id is {_short(track_id)}, not a whole number or null")
        if track_id is not None and not INT64[0] < track_id <= INT64[1]:
            raise ValueError(f"id {_short(track_id)} is outside the 64-bit range track ids must fit")
    for track_id, person in zip(person_keys(people), people):
        if track_id is None and tracked:  # a tentative detection of a tracked file: nobody's track
            continue
        kpts = _points(person.get("kpts"), num_keypoints, path, line)
        box = np.full(5, np.nan)
        if person.get("box") is not None:
            values = _numbers(person["box"], "box").reshape(-1)[:5]
            box[: len(values)] = values
        points3d = None if person.get("kpts3d") is None else _points(person["kpts3d"], num_keypoints, path, line)
        predicted = None if person.get("predicted") is None else np.array(person["predicted"], dtype=bool)
        if track_id is None:
            unseen.append((row, kpts, box, points3d))
        else:
            face = _face(person.get("face"))
            head = None if person.get("head") is None else _numbers(person["head"], "head").reshape(4)
            contacts = None if person.get("contacts") is None else np.array(person["contacts"], dtype=bool).reshape(2)
            seen.setdefault(track_id, []).append((row, kpts, box, bool(person.get("smoothed", False)), points3d, predicted, face, head,
                                                  contacts))


def _face(value) -> Optional[np.ndarray]:
    """{"eyeBlinkLeft": w, ...} -> (F,) in ARKIT_NAMES order, NaN for names the record lacks; None when absent."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("face is not an object of blendshape weights")
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
    sizes: list[Optional[tuple[int, int]]] = []  # a frame's own image size (stills), where given
    seen: dict[int, list[tuple]] = {}  # track id -> [(row, kpts (K, 3), box, smoothed, kpts3d, predicted, face, head, contacts)]
    unseen: list[tuple] = []  # people without an id in a file that is not tracked: [(row, kpts, box, kpts3d or None)]
    for line, record in stream:
        if not isinstance(record, dict) or record.get("type") != "frame":
            continue
        try:
            _read_frame(record, len(frames), num_keypoints, seen, unseen, path, line, tracked)
        except (ValueError, TypeError, AttributeError) as err:
            raise UserError(f"{path} line {line} does not follow the tracks schema ({err}); "
                            f"pass a tracks .jsonl written by sapiens-rt.") from None
        frames.append(record.get("frame", len(frames)))
        times.append(np.nan if record.get("t") is None else float(record["t"]))
        files.append(record.get("file"))
        sizes.append(_image_size(record.get("image_size")))

    T = len(frames)
    people = {}
    for track_id in sorted(seen):
        keypoints = np.full((T, num_keypoints, 2), np.nan)
        scores = np.full((T, num_keypoints), np.nan)
        boxes = np.full((T, 5), np.nan)
        present = np.zeros(T, dtype=bool)
        smoothed = np.zeros(T, dtype=bool)
        has_3d = any(entry[4] is not None for entry in seen[track_id])
        points3d = np.full((T, num_keypoints, 3), np.nan) if has_3d else None
        predicted = np.zeros((T, num_keypoints), dtype=bool)
        face = head = None
        if any(entry[6] is not None for entry in seen[track_id]):
            from realtime.rig.face import ARKIT_NAMES

            face, head = np.full((T, len(ARKIT_NAMES)), np.nan), np.full((T, 4), np.nan)
        contacts = contacts_known = None
        if any(entry[8] is not None for entry in seen[track_id]):
            contacts, contacts_known = np.zeros((T, 2), dtype=bool), np.zeros(T, dtype=bool)
        for row, kpts, box, was_smoothed, xyz, was_predicted, row_face, row_head, row_contacts in seen[track_id]:
            if row_contacts is not None:
                contacts[row], contacts_known[row] = row_contacts, True
            if row_face is not None:
                face[row] = row_face
            if row_head is not None and head is not None:
                head[row] = row_head
            keypoints[row], scores[row], boxes[row] = kpts[:, :2], kpts[:, 2], box
            present[row], smoothed[row] = True, was_smoothed
            if xyz is not None:
                points3d[row] = xyz
            if was_predicted is not None and was_predicted.shape == (num_keypoints,):
                predicted[row] = was_predicted
        people[track_id] = PersonTrack(track_id, keypoints, scores, boxes, present, smoothed, points3d, predicted, face, head,
                                       contacts, contacts_known)

    return Tracks(
        header=header,
        frames=np.array(frames, dtype=np.int64),
        times=np.array(times, dtype=np.float64),
        people=people,
        truncated=records.truncated,
        unidentified=_unidentified(unseen, num_keypoints),
        files=tuple(str(f) for f in files) if header.get("stills") and all(isinstance(f, str) for f in files) else None,
        frame_sizes=_frame_sizes(sizes, header["image_size"]),
    )


def _unidentified(unseen: list[tuple], num_keypoints: int) -> Optional[Unidentified]:
    """The people without identities, stacked: one entry each."""
    if not unseen:
        return None
    kpts = np.stack([entry[1] for entry in unseen]).reshape(len(unseen), num_keypoints, 3)
    points3d = None
    if any(entry[3] is not None for entry in unseen):
        points3d = np.stack([np.full((num_keypoints, 3), np.nan) if entry[3] is None else entry[3] for entry in unseen])
    return Unidentified(rows=np.array([entry[0] for entry in unseen], dtype=np.int64), keypoints=kpts[..., :2],
                        scores=kpts[..., 2], boxes=np.stack([entry[2] for entry in unseen]), keypoints3d=points3d)


def _frame_sizes(sizes: list[Optional[tuple[int, int]]], default: list) -> Optional[np.ndarray]:
    """(T, 2) per-frame (W, H) when any frame gives its own size (others: the header's), else None."""
    if not any(size is not None for size in sizes):
        return None
    fallback = (int(default[0]), int(default[1]))
    return np.array([size or fallback for size in sizes], dtype=np.int64).reshape(len(sizes), 2)
