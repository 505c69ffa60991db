"""Points that the 308-keypoint set does not have, derived explicitly.

The Sapiens 308 set has no pelvis / root point. We define:

- hip centre (root) = midpoint of `left_hip` and `right_hip`; known only where
  both hips are known; its score is the smaller of the two hip scores.
- shoulder centre = midpoint of `left_shoulder` and `right_shoulder`, same rules.
  This is OpenPose's "Neck" (BODY_25 index 1), which OpenPose trained as the
  shoulder midpoint; the Sapiens `neck` point (index 69) marks the anatomical
  neck higher up and is not used for it.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

LEFT_HIP, RIGHT_HIP = "left_hip", "right_hip"
LEFT_SHOULDER, RIGHT_SHOULDER = "left_shoulder", "right_shoulder"


def midpoint(points: np.ndarray, a: int, b: int, scores: Optional[np.ndarray] = None) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Midpoint of keypoints a and b.

    points: (..., K, D); scores: (..., K) or None.
    Returns (..., D) (NaN where either end is unknown) and (...,) min score (or None).
    """
    points = np.asarray(points, dtype=np.float64)
    middle = 0.5 * (points[..., a, :] + points[..., b, :])  # NaN propagates
    if scores is None:
        return middle, None
    scores = np.asarray(scores, dtype=np.float64)
    return middle, np.minimum(scores[..., a], scores[..., b])  # NaN propagates


def hip_center(points: np.ndarray, keypoint_names: list[str],
               scores: Optional[np.ndarray] = None) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Root / hip centre: midpoint of left and right hip. Shapes as `midpoint`."""
    return midpoint(points, keypoint_names.index(LEFT_HIP), keypoint_names.index(RIGHT_HIP), scores)


def shoulder_center(points: np.ndarray, keypoint_names: list[str],
                    scores: Optional[np.ndarray] = None) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Shoulder centre (OpenPose "Neck"): midpoint of left and right shoulder. Shapes as `midpoint`."""
    return midpoint(points, keypoint_names.index(LEFT_SHOULDER), keypoint_names.index(RIGHT_SHOULDER), scores)
