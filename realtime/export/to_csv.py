"""CSV export: wide, one row per frame, columns per person and keypoint.

Columns: `frame`, `time` (s), then for each person (by id) and each keypoint of
the subset: `p<id>_<name>_x`, `p<id>_<name>_y` (pixels), `p<id>_<name>_score`,
and when the person has 3D keypoints also `p<id>_<name>_X`, `_Y`, `_Z` (metres,
camera frame: x right, y down, z forward). An unknown value is an empty cell.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.export.numbers import format_rows
from realtime.export.subsets import get_subset
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)


def write_csv(tracks: Tracks, path: str | Path, *, subset: Optional[str] = None) -> Path:
    """Write `tracks` as one wide CSV; returns the path written."""
    path = Path(path)
    chosen = get_subset(subset, tracks.keypoint_names)
    header = ["frame", "time"]
    blocks = [tracks.frames[:, None].astype(np.float64), tracks.times[:, None]]
    decimals = [0, 6]
    for track_id, person in tracks.people.items():
        xy = chosen.take(person.keypoints, axis=1)
        scores = chosen.take(person.scores, axis=1)
        columns = [(xy[..., 0], "x", 2), (xy[..., 1], "y", 2), (scores, "score", 3)]
        if person.keypoints3d is not None:
            xyz = chosen.take(person.keypoints3d, axis=1)
            columns += [(xyz[..., 0], "X", 4), (xyz[..., 1], "Y", 4), (xyz[..., 2], "Z", 4)]
        # Interleave per keypoint: name_x, name_y, name_score[, name_X, name_Y, name_Z].
        blocks.append(np.stack([values for values, _, _ in columns], axis=-1).reshape(len(tracks), -1))
        decimals += [n for _ in chosen.names for _, _, n in columns]
        header += [f"p{track_id}_{name}_{suffix}" for name in chosen.names for _, suffix, _ in columns]
    lines = format_rows(np.concatenate(blocks, axis=1), decimals, separator=",", missing="")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerow(header)
        handle.write("\r\n".join(lines) + ("\r\n" if lines else ""))  # csv's own line ending
    log.info("wrote %s: %d rows x %d columns", path, len(lines), len(header))
    return path
