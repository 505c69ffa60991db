"""Keypoints of two runs of the same model compared as far as the model defines them.

The golden fixtures' tiny models have random weights: their heatmaps are nearly flat, so a
change in the last bits of a heatmap (another GPU kernel, bf16 rounding in another order)
moves the argmax to a far cell or sends the DARK Newton step off a near-singular Hessian,
hundreds of pixels away (tests/test_keypoint_agreement.py measures it on the CPU). A bug
(the wrong frame, channel order, person or buffer) moves most keypoints; that noise moves a
few. So two runs agree when most keypoints are within `within_px` and the median within
`median_px`, not when every one is.
"""

from __future__ import annotations

import numpy as np


def keypoint_agreement(got: np.ndarray, want: np.ndarray, mask: np.ndarray, within_px: float) -> tuple[float, float]:
    """(share of the masked keypoints within `within_px` of `want`, their median distance in px)."""
    distance = np.linalg.norm(np.asarray(got, np.float64) - np.asarray(want, np.float64), axis=-1)[mask]
    if distance.size == 0:
        raise AssertionError("no keypoint to compare: the mask selects none")
    return float(np.mean(distance <= within_px)), float(np.median(distance))


def assert_keypoints_agree(got: np.ndarray, want: np.ndarray, mask: np.ndarray, *, within_px: float = 1.0,
                           share: float = 0.97, median_px: float = 0.01) -> None:
    """At least `share` of the masked keypoints within `within_px`, and the median within `median_px`."""
    got_share, median = keypoint_agreement(got, want, mask, within_px)
    assert got_share >= share and median <= median_px, (
        f"{got_share:.4f} of {int(np.sum(mask))} keypoints within {within_px} px (want >= {share}), "
        f"median {median:.2e} px (want <= {median_px})")
