"""The tracks JSONL file: written live by the pipeline, read by every exporter.

Schema version 1, one JSON object per line:

    {"type": "header", "version": 1, "keypoint_names": [...K], "image_size": [W, H],
     "fps": float, "source": str, "model": {...}, "software": {...}}
    {"type": "frame", "frame": int, "t": seconds, "people": [
        {"id": int | null, "box": [x1, y1, x2, y2, score], "kpts": [[x, y, score] x K],
         "smoothed": bool, "kpts3d": [[X, Y, Z] x K]  (only when 3D was computed)}]}

Pixels of the original image (x right, y down); `kpts3d` in metres in the
camera frame (x right, y down, z forward); a value that is not known is `null`.
Every input frame gets a line, also frames with nobody. The file is append-only
and flushed after every frame, so a crashed run loses at most the frame in flight.
Readers skip unknown fields and unknown line types, and a cut-off last line.
"""

from __future__ import annotations

import json
import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from realtime import __version__
from realtime.errors import OutputWriteError, UserError
from realtime.export.tracks import PersonTrack, Tracks
from realtime.frames import Frame, Person

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
# Decimals written: pixels, scores, metres. 0.01 px and 0.1 mm are far below the models' error.
PX_DECIMALS, SCORE_DECIMALS, METRE_DECIMALS = 2, 3, 4
_BOX = (PX_DECIMALS,) * 4 + (SCORE_DECIMALS,)
_KPT = (PX_DECIMALS, PX_DECIMALS, SCORE_DECIMALS)
_XYZ = (METRE_DECIMALS,) * 3


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
    return text + "}"


class TrackWriter:
    """Writes the tracks JSONL live, one line per input frame, flushed per frame.

    Usage: `with TrackWriter(path, keypoint_names=names, image_size=(W, H), fps=30.0,
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
        image_size: tuple[int, int],
        fps: float,
        source: str,
        model: dict,
        software: Optional[dict] = None,
        stills: Optional[Callable[[int], str]] = None,
        tracked: bool = False,
    ) -> None:
        self.path = Path(path)
        self.stills = stills  # stills mode: frame index -> its file name, written with the frame's image size
        self.num_keypoints = len(keypoint_names)
        self.frames_written = 0
        self._good_size = 0  # bytes up to the end of the last complete line
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "w", encoding="utf-8", newline="\n")
        except OSError as err:
            raise UserError(f"cannot write tracks to {self.path} ({err.strerror}); choose a writable output folder.") from err
        header = {
            "type": "header",
            "version": SCHEMA_VERSION,
            "keypoint_names": list(keypoint_names),
            "image_size": [int(image_size[0]), int(image_size[1])],
            "fps": float(fps),
            "source": str(source),
            "model": dict(model),
            "software": {"name": "sapiens-realtime", "version": __version__, **(software or {})},
        }
        if stills is not None:
            header["stills"] = True  # unrelated photos: no identities across rows, no smoothing
        if tracked:
            header["tracked"] = True
        self._write_text(json.dumps(header, separators=(",", ":"), allow_nan=False))

    def _write_text(self, line: str) -> None:
        # One write + flush per line: after a kill the file ends at a line boundary
        # or inside the single line in flight, which readers skip.
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except OSError as err:
            self._fail(err)
        self._good_size = self._file.tell()

    def _fail(self, err: OSError) -> None:
        """A write error (disk full): cut the file back to its last complete line and say so."""
        try:
            self._file.close()  # may try the failed write again; the cut below undoes it
        except OSError:
            pass
        try:
            if self.path.is_file() and self.path.stat().st_size > self._good_size:
                os.truncate(self.path, self._good_size)
        except OSError:
            pass
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
        self._write_text(f'{{"type":"frame","frame":{int(frame.index)},"t":{timestamp}{still},"people":[{people}]}}')
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
    if not isinstance(size, list) or len(size) != 2 or not all(_is_number(v) for v in size):
        raise UserError(f"{path} header's image_size is not [width, height]; pass a tracks .jsonl written by sapiens-rt.")
    if not _is_number(fps):
        raise UserError(f"{path} header's fps is not a number; pass a tracks .jsonl written by sapiens-rt.")
    return header


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def person_keys(people: list[dict], tracked: bool = False) -> list[Optional[int]]:
    """Track id of each person of a frame record. Persons without one: None in a tracked
    file (tentative detections, left out of per-person tracks), else -1, -2, ... by order."""
    keys, anonymous = [], 0
    for person in people:
        if person.get("id") is None and tracked:
            keys.append(None)
        elif person.get("id") is None:
            anonymous += 1
            keys.append(-anonymous)
        else:
            keys.append(int(person["id"]))
    return keys


def _numbers(value, what: str) -> np.ndarray:
    """JSON numbers (null -> NaN) as float64; strings or booleans where numbers belong are refused."""
    try:
        if np.array(value).dtype.kind in "USb":
            raise ValueError
        return np.array(value, dtype=np.float64)
    except (ValueError, TypeError):
        raise ValueError(f"{what} holds something other than numbers and nulls") from None


def _points(value, num_keypoints: int, path: Path, line: int) -> np.ndarray:
    points = _numbers(value, "a keypoint list")
    if points.shape != (num_keypoints, 3):
        raise UserError(f"{path} line {line} has keypoints of shape {points.shape}, expected ({num_keypoints}, 3); pass an intact tracks file.")
    return points


def _read_frame(record: dict, row: int, num_keypoints: int, seen: dict, path: Path, line: int, tracked: bool = False) -> None:
    """Check one frame record's types and add its people to `seen` (track id -> entries)."""
    frame, t, people = record.get("frame", row), record.get("t"), record.get("people") or []
    if not isinstance(frame, int) or isinstance(frame, bool):
        raise ValueError(f"frame is {frame!r}, not a whole number")
    if t is not None and not _is_number(t):
        raise ValueError(f"t is {t!r}, not a number of seconds")
    if not isinstance(people, list) or not all(isinstance(p, dict) for p in people):
        raise ValueError("people is not a list of objects")
    for person in people:
        track_id = person.get("id")
        if track_id is not None and (not isinstance(track_id, int) or isinstance(track_id, bool)):
            raise ValueError(f"id is {track_id!r}, not a whole number or null")
    for track_id, person in zip(person_keys(people, tracked), people):
        if track_id is None:  # a tentative detection of a tracked file: nobody's track
            continue
        kpts = _points(person.get("kpts"), num_keypoints, path, line)
        box = np.full(5, np.nan)
        if person.get("box") is not None:
            values = _numbers(person["box"], "box").reshape(-1)[:5]
            box[: len(values)] = values
        points3d = None if person.get("kpts3d") is None else _points(person["kpts3d"], num_keypoints, path, line)
        predicted = None if person.get("predicted") is None else np.array(person["predicted"], dtype=bool)
        seen.setdefault(track_id, []).append((row, kpts, box, bool(person.get("smoothed", False)), points3d, predicted))


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
    frames, times = [], []
    tracked = bool(header.get("tracked", False))
    seen: dict[int, list[tuple]] = {}  # track id -> [(row, kpts (K, 3), box, smoothed, kpts3d or None, predicted or None)]
    for line, record in stream:
        if not isinstance(record, dict) or record.get("type") != "frame":
            continue
        try:
            _read_frame(record, len(frames), num_keypoints, seen, path, line, tracked)
        except (ValueError, TypeError, AttributeError) as err:
            raise UserError(f"{path} line {line} does not follow the tracks schema ({err}); "
                            f"pass a tracks .jsonl written by sapiens-rt.") from None
        frames.append(record.get("frame", len(frames)))
        times.append(np.nan if record.get("t") is None else float(record["t"]))
    if any(track_id < -1 for track_id in seen):
        log.warning("%s: several persons without a track id in one frame; they are keyed -1, -2, ... by order, not identity", path)

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
        for row, kpts, box, was_smoothed, xyz, was_predicted in seen[track_id]:
            keypoints[row], scores[row], boxes[row] = kpts[:, :2], kpts[:, 2], box
            present[row], smoothed[row] = True, was_smoothed
            if xyz is not None:
                points3d[row] = xyz
            if was_predicted is not None and was_predicted.shape == (num_keypoints,):
                predicted[row] = was_predicted
        people[track_id] = PersonTrack(track_id, keypoints, scores, boxes, present, smoothed, points3d, predicted)

    return Tracks(
        header=header,
        frames=np.array(frames, dtype=np.int64),
        times=np.array(times, dtype=np.float64),
        people=people,
        truncated=records.truncated,
    )
