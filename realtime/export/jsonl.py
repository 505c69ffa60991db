"""The tracks JSONL file: the reader every exporter, `smooth` and `stream` use, with its check.

Its fields are declared once in `realtime.record` (docs/tracks-format.md holds the table made
from them); the live writer is `realtime.sinks.tracks.TrackWriter`. One JSON object per line: a
header, then one line per input frame, in order, also for frames with nobody. The file is
append-only and flushed after every frame, so a crashed run loses at most the frame in flight.
Readers skip unknown fields and unknown line types, and a cut-off last line; every other line
that breaks the schema (a NaN anywhere, a null where its field forbids one, a wrong type or
shape) is one `UserError` naming the file, the line and the field.

A file that is no regular file (`-` or /dev/stdin, a pipe, a FIFO) is read once, into an unnamed
temporary file, so a reader may go over it again (the whole file is checked before a replay
sends anything).
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

from realtime.errors import UserError
from realtime.export.tracks import CameraTrack, PersonTrack, Tracks, Unidentified
from realtime.record import (
    HEADER,
    SCHEMA_VERSION,
    Dims,
    FrameRecord,
    OlderThanFile,
    PersonRecord,
    check_header,
    header_dims,
    parse_line,
    person_track_arrays,
    refuse_non_finite,
)
from realtime.record import check_frame as _check_frame

log = logging.getLogger(__name__)

__all__ = ["SCHEMA_VERSION", "FrameRecord", "PersonRecord", "TrackRecords", "check_frame", "is_pipe", "read_header",
           "read_tracks", "schema_error"]
_REQUIRED = tuple(f.key for f in HEADER if not f.null.whole and f.key != "version")


def _is_stdin(path: Path) -> bool:
    return str(path) == "-"


def is_pipe(path: str | Path) -> bool:
    """`-` (standard input), a path under /dev (/dev/stdin is a file when the shell redirects one: < take.jsonl), or a
    path that is there but is neither a file nor a folder (a pipe, a FIFO, a device)."""
    path = Path(path)
    return _is_stdin(path) or path.as_posix().startswith("/dev/") or (path.exists() and not path.is_file()
                                                                      and not path.is_dir())


class TrackRecords:
    """Streams `(line number, record)` from a tracks file without loading it whole.

    A last line that does not parse (a run killed mid-write) is skipped and sets
    `truncated`; an unparsable line anywhere else raises `UserError`, and so does a NaN or
    Infinity in a line of a type the schema does not check (`check_frame` checks frames).
    A pipe is read once into a temporary file (see the module's docstring); iterate again
    at will.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.truncated = False
        self._spool = None

    def _open(self):
        if self._spool is not None:
            self._spool.seek(0)
            return _Unclosed(self._spool)
        if not _is_stdin(self.path) and (self.path.is_file() or not self.path.exists()):
            return open(self.path, encoding="utf-8")
        if self.path.is_dir():
            raise UserError(f"{self.path} is a folder; pass the tracks .jsonl file a sapiens-rt run wrote.")
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", newline="")  # unnamed: gone when closed
        source = sys.stdin if _is_stdin(self.path) else open(self.path, encoding="utf-8")
        try:
            shutil.copyfileobj(source, self._spool)
        finally:
            if source is not sys.stdin:
                source.close()
        self._spool.seek(0)
        return _Unclosed(self._spool)

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        bad_line, parsed = None, 0
        try:
            with self._open() as handle:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    if bad_line is not None:
                        break
                    try:
                        record = parse_line(line)
                    except ValueError:  # json.JSONDecodeError, and a number json cannot hold
                        bad_line = number
                        continue
                    parsed += 1
                    if not isinstance(record, dict) or record.get("type") not in ("header", "frame"):
                        try:
                            refuse_non_finite(record, "the line")
                        except ValueError as err:
                            raise schema_error(self.path, number, err) from None
                    yield number, record
                else:
                    if bad_line is not None and parsed > 0:
                        log.warning("%s: last line %d is cut off (interrupted run); it is skipped", self.path, bad_line)
                        self.truncated = True
                        return
        except FileNotFoundError:
            raise UserError(f"tracks file {self.path} does not exist; pass the tracks .jsonl file a sapiens-rt run "
                            "wrote.") from None
        except IsADirectoryError:
            raise UserError(f"{self.path} is a folder; pass the tracks .jsonl file a sapiens-rt run wrote.") from None
        except UnicodeDecodeError:
            raise UserError(f"{self.path} is not a text file; pass a tracks .jsonl file.") from None
        if bad_line is not None:
            raise UserError(f"{self.path} line {bad_line} is not valid JSON; pass an intact tracks .jsonl file.")

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


class _Unclosed:
    """A spool as a context manager that leaves it open (it is read again)."""

    def __init__(self, handle):
        self.handle = handle

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc) -> None:
        pass


def read_header(records: Iterator[tuple[int, dict]], path: Path) -> dict:
    """The header record (the first one), checked (`realtime.record.check_header`); raises UserError otherwise."""
    first = next(records, None)
    header = first[1] if first is not None else None
    if not isinstance(header, dict) or header.get("type") != "header":
        raise UserError(f"{path} does not start with a tracks header line; pass a tracks .jsonl written by sapiens-rt.")
    missing = next((key for key in _REQUIRED if key not in header), None)
    try:
        check_header(header)
    except OlderThanFile:
        version = header.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:  # a newer writer's
            raise UserError(f"{path} has tracks schema version {version!r}, this sapiens-rt reads up to "
                            f"{SCHEMA_VERSION}; upgrade sapiens-realtime.") from None
        raise UserError(f"{path} header's version is {repr(version)[:40]}, not a tracks schema version from 1 to "
                        f"{SCHEMA_VERSION}; pass a tracks .jsonl written by sapiens-rt.") from None
    except ValueError as err:
        if missing is not None:
            raise UserError(f"{path} header has no '{missing}'; pass an intact tracks .jsonl file.") from None
        raise UserError(f"{path} {err}; pass a tracks .jsonl written by sapiens-rt.") from None
    return header


def schema_error(path: Path, line: int, err: Exception) -> UserError:
    """The one sentence for a line that breaks the schema, with its number."""
    return UserError(f"{path} line {line} does not follow the tracks schema ({err}); pass a tracks .jsonl written by sapiens-rt.")


def check_frame(record: dict, dims: Dims | int, row: int = 0) -> FrameRecord:
    """`realtime.record.check_frame`; `dims` may be just the number of keypoints (a file without bones)."""
    return _check_frame(record, Dims(dims) if isinstance(dims, int) else dims, row)


def frame_records(records: TrackRecords, header: dict) -> Iterator[tuple[int, FrameRecord]]:
    """(line number, checked frame) of every frame line after the header; one UserError for a line that
    breaks the schema."""
    dims, row = header_dims(header), 0
    stream = iter(records)
    next(stream)  # the header, checked by the caller
    for line, record in stream:
        if not isinstance(record, dict) or record.get("type") != "frame":
            continue
        try:
            yield line, _check_frame(record, dims, row)
        except ValueError as err:
            raise schema_error(records.path, line, err) from None
        row += 1


def read_tracks(path: str | Path | TrackRecords) -> Tracks:
    """Read a tracks JSONL (or the `TrackRecords` of one) into per-person arrays aligned on the file's frames.

    Tolerates a cut-off last line (crashed run; `Tracks.truncated` is set),
    unknown fields and unknown line types. Raises `UserError` for anything else.
    """
    records = path if isinstance(path, TrackRecords) else TrackRecords(path)
    try:
        header = read_header(iter(records), records.path)
        frames = [checked for _, checked in frame_records(records, header)]
    finally:
        if records is not path:
            records.close()
    dims, tracked, T = header_dims(header), bool(header.get("tracked", False)), len(frames)
    seen: dict[int, list[tuple[int, PersonRecord]]] = {}  # track id -> [(row, its record)]
    unseen: list[tuple[int, PersonRecord]] = []  # people without an id in a file that is not tracked (stills)
    for row, frame in enumerate(frames):
        for person in frame.people:
            if person.id is not None:
                seen.setdefault(person.id, []).append((row, person))
            elif not tracked:  # in a tracked file: a tentative detection, nobody's track
                unseen.append((row, person))
    people = {track_id: _person_track(track_id, seen[track_id], T, dims) for track_id in sorted(seen)}
    return Tracks(
        header=header,
        frames=np.array([f.frame for f in frames], dtype=np.int64),
        times=np.array([f.t for f in frames], dtype=np.float64),
        people=people,
        truncated=records.truncated,
        unidentified=_unidentified(unseen, dims.keypoints),
        files=tuple(f.file for f in frames) if header.get("stills") and all(isinstance(f.file, str) for f in frames) else None,
        frame_sizes=_frame_sizes([f.image_size for f in frames], header["image_size"]),
        camera=_camera_track([f.camera for f in frames]),
        floor_up=_floor_up([f.floor_up for f in frames]),
    )


def _person_track(track_id: int, entries: list[tuple[int, PersonRecord]], frames: int, dims: Dims) -> PersonTrack:
    """One identity's rows as `PersonTrack` arrays, each filled from its declared field (`realtime.record.PERSON`)."""
    present = np.zeros(frames, dtype=bool)
    present[[row for row, _ in entries]] = True
    return PersonTrack(id=track_id, present=present, **person_track_arrays(entries, frames, dims))


def _floor_up(values: list[Optional[np.ndarray]]) -> Optional[np.ndarray]:
    """(T, 3) the frames' floor_up (NaN on frames without one), or None when no frame has one."""
    if not any(v is not None for v in values):
        return None
    return np.array([np.full(3, np.nan) if v is None else v for v in values], dtype=np.float64).reshape(len(values), 3)


def _camera_track(cameras: list) -> Optional[CameraTrack]:
    """The frames' cameras (`realtime.frames.Camera`) as arrays (NaN / 'none' on frames without one), or None when no
    frame has one."""
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
