"""Marker sets for the single-person biomechanics formats (TRC, C3D).

Markers are the chosen keypoint subset, named as in the keypoint table, plus
`hip_center` (midpoint of left and right hip, see `derived.py`) because the
308 set has no pelvis / root point and most marker models need one.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from realtime.errors import UserError
from realtime.export.derived import hip_center
from realtime.export.subsets import get_subset
from realtime.export.tracks import Tracks

HIP_CENTER = "hip_center"


def marker_data(tracks: Tracks, subset: Optional[str], *, use_3d: bool, what: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Markers of the one person in `tracks`, shared by TRC and C3D.

    `what` names the format in errors. Returns names (M,), points (T, M, D) (pixels when 2D, metres when 3D, camera
    or image axes; NaN where unknown) and scores (T, M). The hip centre is appended
    when the tracks have both hips.
    """
    person = tracks.single_person(what)
    if use_3d and person.keypoints3d is None:
        raise UserError("these tracks have no 3D keypoints (record them with the depth task: `sapiens-rt run VIDEO --tasks "
                        "pose,depth`); export 2D to TRC, CSV or NPZ instead.")
    source = person.keypoints3d if use_3d else person.keypoints
    chosen = get_subset(subset, tracks.keypoint_names)
    names = list(chosen.names)
    points, scores = chosen.take(source, axis=1), chosen.take(person.scores, axis=1)
    if {"left_hip", "right_hip"} <= set(tracks.keypoint_names):
        root, root_score = hip_center(source, tracks.keypoint_names, person.scores)
        names.append(HIP_CENTER)
        points = np.concatenate([points, root[:, None]], axis=1)
        scores = np.concatenate([scores, root_score[:, None]], axis=1)
    return names, points, scores
