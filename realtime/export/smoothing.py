"""Offline (zero-phase) smoothing of whole tracks files, using `trackers.offline.smooth_track`.

`smooth_tracks` smooths the arrays of a `Tracks`; `smooth_tracks_file` rewrites a
tracks JSONL with smoothed keypoints (2D and 3D), keeping every frame, person and
unknown field, and marking every person it touched as smoothed. Scores stay the
measured ones; a point the smoother fills in where none was measured keeps a null
score. A recording with bones gets them solved again from its smoothed 3D keypoints
by the motion stage's solver (`realtime.stages.motion.MotionStage`, no live filter),
so `sapiens-rt stream` of the smoothed file sends smoothed bones. The header says
the method (`realtime.record.with_smoothing`). A pipe is read once.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from realtime.errors import UserError
from realtime.export.jsonl import TrackRecords, frame_records, is_pipe, read_header, read_tracks
from realtime.export.staging import check_file_name, check_output, staged
from realtime.export.tracks import Tracks
from realtime.outputs import check_outputs, check_writable
from realtime.record import FIELDS, frame_from_record, has_field, header_dims, people_of, person_id, set_field, with_smoothing

log = logging.getLogger(__name__)

METHODS = ("rts", "savgol", "butterworth")
# smooth_track(t (T,), keypoints (T, K, D), scores (T, K) | None, method) -> (T, K, D)
Smoother = Callable[..., np.ndarray]


def _default_smoother() -> Smoother:
    from trackers.offline import smooth_track

    return smooth_track


def smooth_tracks(tracks: Tracks, method: str = "rts", *, smoother: Optional[Smoother] = None) -> Tracks:
    """Every person's 2D (and 3D) keypoints smoothed over time with `method`."""
    if method not in METHODS:
        raise UserError(f"unknown smoothing method '{method}'; use one of {', '.join(METHODS)}.")
    smoother = smoother or _default_smoother()
    people = {}
    for track_id, person in tracks.people.items():
        keypoints = smoother(tracks.times, person.keypoints, person.scores, method=method)
        points3d = (None if person.keypoints3d is None
                    else smoother(tracks.times, person.keypoints3d, person.scores, method=method))
        people[track_id] = person.replace(keypoints=np.asarray(keypoints, dtype=np.float64), keypoints3d=points3d,
                                          smoothed=person.present.copy())
    return tracks.replace(people=people)


def default_smoothed(tracks_path: str | Path) -> Path:
    """Beside the input, as `export` writes: `run.jsonl` -> `run_smooth.jsonl`."""
    tracks_path = Path(tracks_path)
    return tracks_path.with_name(f"{tracks_path.stem}_smooth{tracks_path.suffix or '.jsonl'}")


def smooth_tracks_file(
    tracks_path: str | Path, out_path: Optional[str | Path] = None, method: str = "rts", *, smoother: Optional[Smoother] = None
) -> Path:
    """Write a smoothed copy of a tracks JSONL to `out_path` (None: `default_smoothed`, beside the
    input); returns the file written. The output may not be the input (realtime.outputs).

    A cut-off last line of the input (crashed run) is dropped from the output.
    """
    records = TrackRecords(tracks_path)  # a pipe: read once, then read again from its copy
    tracks_path = records.path
    if out_path is None and is_pipe(tracks_path):
        raise UserError(f"{tracks_path} is not a file (a pipe?), so there is no folder beside it for the smoothed copy; "
                        "name one with -o SMOOTHED.jsonl.")
    check_file_name(out_path, "-o", "take_smooth.jsonl")
    out_path = default_smoothed(tracks_path) if out_path is None else Path(out_path)
    check_outputs({"-o": out_path}, [tracks_path])
    check_output(out_path)
    check_writable(out_path)
    try:
        tracks = read_tracks(records)
        smoothed = smooth_tracks(tracks, method, smoother=smoother)
        bones = _bones_again(records, tracks.header, smoothed)
        header = with_smoothing(read_header(iter(records), tracks_path), method)
        rows = _write(records, header, smoothed, bones, out_path)
    finally:
        records.close()
    log.info("wrote %s: %d frames, %d persons smoothed with %s%s", out_path, rows, len(smoothed.people), method,
             "; their bones solved again from the smoothed 3D keypoints" if bones else "")
    return out_path


def _bones_again(records: TrackRecords, header: dict, smoothed: Tracks) -> Optional[dict]:
    """(row, track id) -> the bones the motion stage solves from the smoothed 3D keypoints, for every person
    the recording has bones for; None when it has none. The stage runs over the whole recording in order,
    with the recorded contacts and camera (the world frame where the run had it), and no live filter: the
    keypoints are smoothed already."""
    from realtime.stages.motion import MotionStage, recorded_fingers

    if header.get("bone_names") is None:
        return None
    fingers = recorded_fingers(header["bone_names"])
    if fingers is None:
        raise UserError(f"{records.path} header's bone_names are not the 21 bones (51 with fingers) sapiens-rt solves, so "
                        "its bones cannot be solved again from the smoothed keypoints; pass a tracks .jsonl written by "
                        "sapiens-rt.")
    stage = MotionStage(header["keypoint_names"], fingers=fingers, smooth="none")
    dims = header_dims(header)
    image = np.zeros((1, 1, 3), np.uint8)
    out: dict = {}
    for row, (_, record) in enumerate(frame_records(records, header)):
        frame = frame_from_record(record, image)
        people = []
        for person, written in zip(frame.people, record.people):
            track = smoothed.people.get(person.track_id)
            if track is not None and written.kpts3d is not None and track.keypoints3d is not None:
                # as the file will hold them (rounded), so solving the written file again gives these very bones
                again = np.array(FIELDS.kpts3d.jsonable(track.keypoints3d[row], dims), dtype=np.float64)
                person = person.replace(keypoints3d=again.astype(np.float32))
            people.append(person)
        solved = stage.process(frame.replace(people=tuple(people)))
        for person, written in zip(solved.people, record.people):
            if written.bones is not None and person.track_id is not None:
                out[row, person.track_id] = person.bones
    stage.close()
    return out or None


def _write(records: TrackRecords, header: dict, smoothed: Tracks, bones: Optional[dict], out_path: Path) -> int:
    """Write the smoothed file (staged: nothing half-written); returns its frames."""
    dims = header_dims(header)
    rows = []

    def write(target: Path) -> None:
        row = 0
        stream = iter(records)
        next(stream)  # the header: written anew
        with open(target, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(json.dumps(header, separators=(",", ":"), allow_nan=False) + "\n")
            for _, record in stream:
                if isinstance(record, dict) and record.get("type") == "frame":
                    for person in people_of(record):
                        track_id = person_id(person)
                        if track_id is None:  # a tentative detection, or a person of a still: not part of any track
                            continue
                        _replace_points(person, smoothed.people[track_id], row, dims)
                        if bones is not None and (row, track_id) in bones:
                            set_field(person, FIELDS.bones, bones[row, track_id], dims)
                    row += 1
                handle.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
        rows.append(row)

    staged(out_path, write)  # written next to the target and renamed: nothing half-written
    return rows[0]


def _replace_points(person: dict, track, row: int, dims) -> None:
    """Put the smoothed points of frame `row` into a person object (scores stay as measured)."""
    scores = track.scores[row]
    set_field(person, FIELDS.kpts, np.concatenate([track.keypoints[row], scores[:, None]], axis=1), dims)
    if has_field(person, FIELDS.kpts3d) and track.keypoints3d is not None:
        set_field(person, FIELDS.kpts3d, track.keypoints3d[row], dims)
    set_field(person, FIELDS.smoothed, True, dims)
