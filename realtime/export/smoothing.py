"""Offline (zero-phase) smoothing of whole tracks files, using `trackers.offline.smooth_track`.

`smooth_tracks` smooths the arrays of a `Tracks`; `smooth_tracks_file` rewrites a
tracks JSONL with smoothed keypoints, keeping every frame, person and unknown
field, and setting `"smoothed": true` on every person it touched. Scores stay
the measured ones; a point the smoother fills in where none was measured keeps
a `null` score. The header gains `"smoothing": {"method": ...}`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from realtime.errors import UserError
from realtime.export.jsonl import (
    METRE_DECIMALS,
    PX_DECIMALS,
    SCORE_DECIMALS,
    TrackRecords,
    person_keys,
    read_header,
    read_tracks,
    rounded_rows,
)
from realtime.export.staging import check_output, staged
from realtime.export.tracks import PersonTrack, Tracks
from realtime.outputs import check_outputs, check_writable

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
    tracks_path = Path(tracks_path)
    out_path = default_smoothed(tracks_path) if out_path is None else Path(out_path)
    check_outputs({"-o": out_path}, [tracks_path])
    check_output(out_path)
    check_writable(out_path)
    smoothed = smooth_tracks(read_tracks(tracks_path), method, smoother=smoother)
    stream = iter(TrackRecords(tracks_path))
    header = {**read_header(stream, tracks_path), "smoothing": {"method": method}}
    num_keypoints = len(header["keypoint_names"])
    rows = []

    def write(target: Path) -> None:
        row = 0
        with open(target, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(json.dumps(header, separators=(",", ":")) + "\n")
            for _, record in stream:
                if isinstance(record, dict) and record.get("type") == "frame":
                    people = record.get("people") or []
                    for track_id, person in zip(person_keys(people), people):
                        if track_id is None:  # a tentative detection, or a person of a still: not part of any track
                            continue
                        _replace_points(person, smoothed.people[track_id], row, num_keypoints)
                    row += 1
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")
        rows.append(row)

    staged(out_path, write)  # written next to the target and renamed: nothing half-written
    log.info("wrote %s: %d frames, %d persons smoothed with %s", out_path, rows[0], len(smoothed.people), method)
    return out_path


def _replace_points(person: dict, track: PersonTrack, row: int, num_keypoints: int) -> None:
    """Put the smoothed points of frame `row` into a person record (scores stay as measured)."""
    scores = np.array([p[2] if p is not None else None for p in person["kpts"]], dtype=np.float64)
    kpts = np.concatenate([track.keypoints[row], scores[:, None]], axis=1)
    person["kpts"] = rounded_rows(kpts, (PX_DECIMALS, PX_DECIMALS, SCORE_DECIMALS), num_keypoints)
    if person.get("kpts3d") is not None and track.keypoints3d is not None:
        person["kpts3d"] = rounded_rows(track.keypoints3d[row], (METRE_DECIMALS,) * 3, num_keypoints)
    person["smoothed"] = True
