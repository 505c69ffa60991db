"""3D keypoints from the metric pointmap, and the axis conventions of 3D exports.

`sample_keypoints_3d` reads each confident, foreground keypoint's camera-space
position from the pointmap (metres, camera frame: x right, y down, z forward).

Pixel convention: pixel (i, j) of an image covers [j, j+1) x [i, i+1), so its
centre is at (j + 0.5, i + 0.5). A pointmap of size (h, w) covers the same
field of view as the (H, W) image, so image point (x, y) sits at pointmap
pixel coordinates u = (x + 0.5) * w / W - 0.5, v = (y + 0.5) * h / H - 0.5
(the align_corners=False convention of cv2.resize and torch interpolate).
"""

from __future__ import annotations

from typing import Optional

import numpy as np


def sample_keypoints_3d(
    pointmap: np.ndarray,
    keypoints: np.ndarray,
    scores: np.ndarray,
    image_size: tuple[int, int],
    foreground: Optional[np.ndarray] = None,
    min_score: float = 0.3,
) -> np.ndarray:
    """Camera-space 3D keypoints by bilinear sampling of a metric pointmap.

    pointmap:   (h, w, 3) float metres, camera frame; NaN/inf where unknown.
    keypoints:  (N, K, 2) float pixels of the original image (may contain NaN).
    scores:     (N, K) float confidences.
    image_size: (W, H) of the original image.
    foreground: (h', w') bool person mask (e.g. segmentation > 0) covering the image, or None;
                resampled (nearest) to the pointmap grid when its size differs.
    min_score:  keypoints with a lower (or NaN) score get NaN.

    Returns (N, K, 3) float32 metres; NaN where the score is below `min_score`,
    the point lies outside the image, its nearest pointmap pixel is background,
    or none of its 4 neighbours is usable. Bilinear weights are renormalised
    over the neighbours that are finite (and foreground), so a keypoint on a
    silhouette edge does not mix in the depth of the background behind it.
    """
    pointmap = np.asarray(pointmap, dtype=np.float64)
    h, w = pointmap.shape[:2]
    width, height = image_size
    keypoints = np.asarray(keypoints, dtype=np.float64)
    u = (keypoints[..., 0] + 0.5) * (w / width) - 0.5
    v = (keypoints[..., 1] + 0.5) * (h / height) - 0.5

    with np.errstate(invalid="ignore"):
        ok = (np.asarray(scores, dtype=np.float64) >= min_score) & (u > -0.5) & (u < w - 0.5) & (v > -0.5) & (v < h - 0.5)
    u = np.where(ok, u, 0.0)
    v = np.where(ok, v, 0.0)
    usable = np.isfinite(pointmap).all(axis=-1)
    if foreground is not None:
        foreground = _resample_nearest(np.asarray(foreground, dtype=bool), h, w)
        ok &= foreground[np.clip(np.round(v).astype(int), 0, h - 1), np.clip(np.round(u).astype(int), 0, w - 1)]
        usable &= foreground

    u0 = np.clip(np.floor(u).astype(int), 0, w - 1)
    v0 = np.clip(np.floor(v).astype(int), 0, h - 1)
    u1, v1 = np.minimum(u0 + 1, w - 1), np.minimum(v0 + 1, h - 1)
    fu, fv = np.clip(u - u0, 0.0, 1.0), np.clip(v - v0, 0.0, 1.0)

    total = np.zeros(keypoints.shape[:-1] + (3,))
    weight_sum = np.zeros(keypoints.shape[:-1])
    clean = np.where(usable[..., None], pointmap, 0.0)
    for vi, ui, weight in ((v0, u0, (1 - fu) * (1 - fv)), (v0, u1, fu * (1 - fv)), (v1, u0, (1 - fu) * fv), (v1, u1, fu * fv)):
        weight = weight * usable[vi, ui]
        total += weight[..., None] * clean[vi, ui]
        weight_sum += weight
    ok &= weight_sum > 1e-9
    out = total / np.where(ok, weight_sum, 1.0)[..., None]
    return np.where(ok[..., None], out, np.nan).astype(np.float32)


def _resample_nearest(mask: np.ndarray, h: int, w: int) -> np.ndarray:
    """(h', w') -> (h, w) by nearest pixel centre (same convention as the keypoint mapping)."""
    if mask.shape == (h, w):
        return mask
    rows = np.minimum(((np.arange(h) + 0.5) * mask.shape[0] / h).astype(int), mask.shape[0] - 1)
    cols = np.minimum(((np.arange(w) + 0.5) * mask.shape[1] / w).astype(int), mask.shape[1] - 1)
    return mask[np.ix_(rows, cols)]


# Camera frame (x right, y down, z forward) to the frames 3D tools expect. Both are
# proper rotations (no mirroring); for a level camera "up" becomes the vertical axis.
def camera_to_y_up(points: np.ndarray) -> np.ndarray:
    """OpenSim convention, Y up: (x, y, z) -> (x, -y, -z) (180 degrees about X). (..., 3) -> (..., 3)."""
    points = np.asarray(points, dtype=np.float64)
    return np.stack([points[..., 0], -points[..., 1], -points[..., 2]], axis=-1)


def camera_to_z_up(points: np.ndarray) -> np.ndarray:
    """C3D / Blender convention, Z up, Y away from the camera: (x, y, z) -> (x, z, -y). (..., 3) -> (..., 3)."""
    points = np.asarray(points, dtype=np.float64)
    return np.stack([points[..., 0], points[..., 2], -points[..., 1]], axis=-1)
