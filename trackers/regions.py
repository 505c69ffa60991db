"""Per-region filter parameters spread over the 308 keypoints.

The regions are the `groups` of `keypoints308.json` (body, foot, left_hand,
right_hand, extra, face). Filters take one value per keypoint; this module turns
a `{region: value}` table into that `(K,)` array and maps the one user-facing
`smoothness` knob in [0, 1] onto a multiplicative factor.
"""

from __future__ import annotations

import numpy as np

from realtime.data import keypoint_groups
from realtime.errors import UserError


def per_keypoint(values: dict[str, float], num_keypoints: int = 308) -> np.ndarray:
    """(K,) float64 array with `values[region]` at each keypoint of that region.

    For K == 308 the regions come from the keypoint table; any other K (a
    custom or reduced keypoint set) uses the "body" value everywhere.
    """
    if num_keypoints != 308:
        return np.full(num_keypoints, float(values["body"]))
    out = np.full(num_keypoints, np.nan)
    for region, indices in keypoint_groups().items():
        out[indices] = values[region]
    if np.isnan(out).any():  # the table's groups must cover every keypoint
        raise ValueError("keypoint groups do not cover all 308 keypoints")
    return out


def check_smoothness(smoothness: float) -> float:
    """Validate the user knob; returns it as a float."""
    if not 0.0 <= float(smoothness) <= 1.0:
        raise UserError(f"smoothness must be between 0 and 1, got {smoothness}; pass a value such as 0.5.")
    return float(smoothness)


def smoothness_factor(smoothness: float, decades: float) -> float:
    """10 ** (decades * (0.5 - smoothness)): 1 at the default 0.5, >1 lighter, <1 heavier.

    A cutoff multiplied by this factor spans `decades` orders of magnitude
    from smoothness 0 (lightest) to 1 (heaviest).
    """
    return 10.0 ** (decades * (0.5 - check_smoothness(smoothness)))
