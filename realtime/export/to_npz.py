"""NPZ export: the tracks as numpy arrays (P persons, T frames, K keypoints).

    ids          (P,) int64 track ids
    frames       (T,) int64 source frame indices;  times (T,) float64 seconds
    keypoints    (P, T, K, 2) float64 pixels, NaN where unknown or absent
    scores       (P, T, K) float64, NaN where unknown or absent
    keypoints3d  (P, T, K, 3) float64 metres (camera frame), NaN where unknown
    has_3d       (P,) bool, False where a person has no 3D at all
    boxes        (P, T, 5) float64 x1, y1, x2, y2, score
    present      (P, T) bool;  smoothed (P, T) bool
    keypoint_names (K,) str;  fps () float64;  image_size (2,) int64 W, H
    subset       () str;  header_json () str: the JSONL header line
People without identities (stills, unrelated photos), only when there are some:
    unidentified_rows (N,) int64 index into frames;  unidentified_keypoints (N, K, 2)
    unidentified_scores (N, K);  unidentified_boxes (N, 5);  unidentified_keypoints3d (N, K, 3) if any 3D
    files        (T,) str: the image of each frame (stills only)
Loads with `np.load(path)` (no pickle needed).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.export.subsets import get_subset
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)


def write_npz(tracks: Tracks, path: str | Path, *, subset: Optional[str] = None) -> Path:
    """Write `tracks` as a compressed .npz of arrays; returns the path written."""
    path = Path(path)
    chosen = get_subset(subset, tracks.keypoint_names)
    people = list(tracks.people.values())
    T, K = len(tracks), len(chosen.names)

    def stack(arrays: list[np.ndarray], shape: tuple) -> np.ndarray:
        return np.stack(arrays) if arrays else np.zeros((0, *shape))

    no_3d = np.full((T, len(tracks.keypoint_names), 3), np.nan)
    arrays = dict(
        ids=np.array([p.id for p in people], dtype=np.int64),
        frames=tracks.frames,
        times=tracks.times,
        keypoints=stack([chosen.take(p.keypoints) for p in people], (T, K, 2)),
        scores=stack([chosen.take(p.scores) for p in people], (T, K)),
        keypoints3d=stack([chosen.take(no_3d if p.keypoints3d is None else p.keypoints3d) for p in people], (T, K, 3)),
        has_3d=np.array([p.keypoints3d is not None for p in people], dtype=bool),
        boxes=stack([p.boxes for p in people], (T, 5)),
        present=stack([p.present for p in people], (T,)).astype(bool),
        smoothed=stack([p.smoothed for p in people], (T,)).astype(bool),
        keypoint_names=np.array(chosen.names, dtype=str),
        fps=np.float64(tracks.fps),
        image_size=np.array(tracks.image_wh, dtype=np.int64),
        subset=np.array(chosen.name),
        header_json=np.array(json.dumps(tracks.header)),
    )
    seen = tracks.unidentified
    if seen is not None:  # people without identities (stills): one entry each, `unidentified_rows` into frames
        arrays.update(unidentified_rows=seen.rows, unidentified_keypoints=chosen.take(seen.keypoints),
                      unidentified_scores=chosen.take(seen.scores), unidentified_boxes=seen.boxes)
        if seen.keypoints3d is not None:
            arrays["unidentified_keypoints3d"] = chosen.take(seen.keypoints3d)
    if tracks.files is not None:
        arrays["files"] = np.array(tracks.files, dtype=str)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:  # a file handle keeps numpy from appending ".npz"
        np.savez_compressed(handle, **arrays)
    log.info("wrote %s: %d persons x %d frames x %d keypoints", path, len(people), T, K)
    return path
