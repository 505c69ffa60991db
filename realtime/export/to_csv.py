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

from realtime.export.subsets import get_subset
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)


def _format(values: np.ndarray, decimals: int) -> np.ndarray:
    """(T, N) floats -> (T, N) strings with `decimals`, '' where not finite."""
    text = np.char.mod(f"%.{decimals}f", np.nan_to_num(values))
    return np.where(np.isfinite(values), text, "")


def write_csv(tracks: Tracks, path: str | Path, *, subset: Optional[str] = None) -> Path:
    """Write `tracks` as one wide CSV; returns the path written."""
    path = Path(path)
    chosen = get_subset(subset, tracks.keypoint_names)
    header = ["frame", "time"]
    blocks = [tracks.frames.astype(str)[:, None], _format(tracks.times[:, None], 6)]
    for track_id, person in tracks.people.items():
        xy = chosen.take(person.keypoints, axis=1)
        scores = chosen.take(person.scores, axis=1)
        columns = [(xy[..., 0], "x", 2), (xy[..., 1], "y", 2), (scores, "score", 3)]
        if person.keypoints3d is not None:
            xyz = chosen.take(person.keypoints3d, axis=1)
            columns += [(xyz[..., 0], "X", 4), (xyz[..., 1], "Y", 4), (xyz[..., 2], "Z", 4)]
        # Interleave per keypoint: name_x, name_y, name_score[, name_X, name_Y, name_Z].
        texts = np.stack([_format(values, decimals) for values, _, decimals in columns], axis=-1)  # (T, K, C)
        blocks.append(texts.reshape(len(tracks), -1))
        header += [f"p{track_id}_{name}_{suffix}" for name in chosen.names for _, suffix, _ in columns]
    rows = np.concatenate(blocks, axis=1) if blocks else np.zeros((0, 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows.tolist())
    log.info("wrote %s: %d rows x %d columns", path, len(rows), len(header))
    return path
