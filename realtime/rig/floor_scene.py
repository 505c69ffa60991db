"""The floor's tilt from the scene: the pointmap's background, not only the feet.

A feet-only floor (`realtime.rig.floor.fit_floor`) cannot measure the tilt across a straight walk
or a person standing still (the feet lie on a line) and takes it from the body's up, so a leaning
body tilts it. The pointmap sees the floor itself: on each frame with a fresh pointmap
`ScenePlanes.add` takes a few thousand background pixels (the pointmap resampled to at most
GRID_PIXELS, the people's pixels left out) and finds the floor among them (`scene_floor`):

- RANSAC: HYPOTHESES planes through 3 random points of those MIN_HIP or more below the hips (along
  the body's up), each scored by its inliers among about SCORE_POINTS of all the points (within
  INLIER_M + INLIER_REL x depth of it);
- only planes the people stand on count: the normal within MAX_TILT_DEG of the body's up (mid-hip
  to neck: walls lose; a body leans 20-30 degrees running and 40-57 sitting down or stretching, so the
  gate is wide, and the feet decide), each person's lower foot within FOOT_BAND of it (tables, ledges,
  ceilings and walls lose) and the hips at least MIN_HIP above it (below the body);
- the best one refined by least squares over its inliers, each weighted by 1 / tolerance^2 (a
  pointmap's noise grows with depth), the band narrowed to K_SIGMA robust deviations of their
  distances (the foot of a wall drops out), and kept only when well measured:
  MIN_INLIERS inliers spread at least MIN_EXTENT (RMS) along both directions of the plane.

The feet and hips are this frame's raw 3D keypoints, which the pointmap's samples are (infer
samples them from it): the same scale. The frame's scale does not change a plane's normal (it
scales the scene about the camera's centre), so the normals of all frames agree and are what
`ScenePlanes` keeps: the last `window` frames' normals; `normal()` is their mean after those
further than AGREE_DEG from their median are dropped, once MIN_FOUND frames were found. A camera
that moves (the egomotion stage's pose, `odometry_from_camera`) has each frame's normal turned into
the odometry frame and back into the current camera. The plane's height stays with the feet
(`FloorEstimator`, on the scale-steadied keypoints).
"""

from __future__ import annotations

from collections import deque
from typing import Optional

import cv2
import numpy as np

from realtime.rig.floor import Floor, foot_centres

GRID_PIXELS = 4096  # the pointmap resampled (nearest) to at most this many pixels
HYPOTHESES = 128  # RANSAC planes per frame
SCORE_POINTS = 1000  # about this many of the points score the hypotheses
INLIER_M, INLIER_REL = 0.03, 0.01  # m, and fraction of the depth: a point this close to a plane is on it
MAX_TILT_DEG = 60.0  # the floor's normal within this of the body's up (30 lost the floor of a body leaning to sit)
FOOT_BAND = 0.15  # m: each person's lower foot centre within this of the floor (the median over people)
MIN_HIP = 0.4  # m: the hips at least this far above the floor
MIN_INLIERS = 200  # a frame's floor from fewer points is not used
MIN_EXTENT = 0.3  # m (RMS): the inliers spread at least this far along both directions of the plane
REFINE = 3  # least-squares refits over the inliers, the band narrowed to their spread each time
K_SIGMA, MIN_BAND = 2.5, 0.2  # the refit's band: this many robust deviations, at least this much of the tolerance
AGREE_DEG = 2.0  # frames whose normal is further than this from the frames' median are left out
MIN_FOUND = 3  # samples: frames whose floor was found before `ScenePlanes.normal` says anything


def grid_shape(shape: tuple[int, ...], max_pixels: int = GRID_PIXELS) -> tuple[int, int]:
    """(h, w) of a map of `shape` (h, w, ...) resampled to at most `max_pixels` pixels (aspect kept)."""
    h, w = shape[:2]
    step = max(1.0, float(np.sqrt(h * w / max_pixels)))
    return max(1, int(h / step)), max(1, int(w / step))


def background_points(pointmap: np.ndarray, person: Optional[np.ndarray], max_pixels: int = GRID_PIXELS) -> np.ndarray:
    """(h, w, 3) camera metres, (h', w') bool True on people (any size; None: nobody) -> (N, 3) the
    finite points in front of the camera off the people, from the pointmap resampled (nearest) to
    `grid_shape` (pass the mask at that shape to spare a resize)."""
    h, w = pointmap.shape[:2]
    rows, cols = grid_shape(pointmap.shape, max_pixels)
    size = (cols, rows)
    grid = pointmap if size == (w, h) else cv2.resize(np.ascontiguousarray(pointmap, np.float32), size,
                                                      interpolation=cv2.INTER_NEAREST)
    keep = np.isfinite(grid).all(axis=-1) & (grid[..., 2] > 0)
    if person is not None:
        mask = person if person.shape == keep.shape else cv2.resize(
            person.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST) > 0
        keep &= ~mask
    return grid[keep].astype(np.float64)


def scene_floor(points: np.ndarray, up: np.ndarray, feet: np.ndarray, hips: np.ndarray,
                rng: np.random.Generator) -> Optional[tuple[Floor, int]]:
    """The floor the people stand on among (N, 3) background points (see the module's docstring).
    up: (3,) the body's up; feet: (P, 2, 3) each person's foot centres; hips: (P, 3); all camera
    metres on the points' scale. -> (the plane, its normal on the side of `up`; its inlier count),
    None when no plane passes or it is not well measured."""
    if len(points) < max(MIN_INLIERS, 3) or len(feet) == 0:
        return None
    up = np.asarray(up, np.float64) / np.linalg.norm(up)
    tolerance = INLIER_M + INLIER_REL * points[:, 2]
    # hypotheses: planes through 3 random points below the hips (ceilings, tables and the tops of walls
    # are not drawn from), normals on the side of the body's up
    pool = points[points @ up < np.median(np.asarray(hips, np.float64) @ up) - MIN_HIP]
    if len(pool) < 3:
        return None
    a, b, c = (pool[rng.integers(0, len(pool), HYPOTHESES)] for _ in range(3))
    normals = np.cross(b - a, c - a)
    length = np.linalg.norm(normals, axis=1)
    normals = normals / np.maximum(length, 1e-12)[:, None]
    normals *= np.where(normals @ up < 0, -1.0, 1.0)[:, None]
    offsets = np.einsum("hd,hd->h", normals, a)  # n . x = offset on the plane
    valid = (length > 1e-9) & (normals @ up > np.cos(np.radians(MAX_TILT_DEG)))
    valid &= _stands_on(normals, offsets, feet, hips)
    if not valid.any():
        return None
    normals, offsets = normals[valid], offsets[valid]
    every = max(1, len(points) // SCORE_POINTS)  # scored on an even subset: the refit below uses them all
    counts = (np.abs(points[::every] @ normals.T - offsets) < tolerance[::every, None]).sum(axis=0)
    best = int(np.argmax(counts))
    normal, offset = normals[best], offsets[best]
    band = tolerance
    for _ in range(REFINE):
        residual = np.abs(points @ normal - offset)
        near = residual < band
        # the band narrowed to the inliers' own spread (K_SIGMA robust deviations, in units of the tolerance)
        sigma = 1.4826 * float(np.median(residual[near] / tolerance[near])) if near.any() else 1.0
        band = tolerance * min(1.0, max(K_SIGMA * sigma, MIN_BAND))
        near = residual < band
        inliers, weight = points[near], 1.0 / tolerance[near] ** 2  # a point's noise grows with its depth
        if len(inliers) < MIN_INLIERS:
            return None
        centre = weight @ inliers / weight.sum()
        _, s, vt = np.linalg.svd(np.sqrt(weight / weight.mean())[:, None] * (inliers - centre), full_matrices=False)
        normal = vt[-1] if vt[-1] @ up > 0 else -vt[-1]
        offset = float(normal @ centre)
    spread = s[:2] / np.sqrt(len(inliers))  # RMS extent along the plane's two directions (weighted)
    tilted = normal @ up < np.cos(np.radians(MAX_TILT_DEG))
    if spread.min() < MIN_EXTENT or tilted or not _stands_on(normal[None], np.array([offset]), feet, hips)[0]:
        return None
    return Floor(normal, centre), len(inliers)


def _stands_on(normals: np.ndarray, offsets: np.ndarray, feet: np.ndarray, hips: np.ndarray) -> np.ndarray:
    """(H, 3) unit normals and (H,) offsets -> (H,) bool: the people stand on the plane (the median of
    their lower feet within FOOT_BAND of it, of their hips at least MIN_HIP above it)."""
    foot = (np.asarray(feet, np.float64) @ normals.T - offsets).min(axis=1)  # (P, H): each person's lower foot
    hip = np.asarray(hips, np.float64) @ normals.T - offsets  # (P, H)
    return (np.abs(np.median(foot, axis=0)) < FOOT_BAND) & (np.median(hip, axis=0) > MIN_HIP)


def body_cues(people: list[np.ndarray], feet: dict[str, np.ndarray], hips: list[int],
              neck: int) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """What `ScenePlanes.add` takes from the people: their (P, 2, 3) foot centres (`feet`: side -> heel and toe
    indices), (P, 3) mid-hips and the (3,) body up (mid-hips to `neck`, the unit vectors averaged), from each
    person's raw (K, 3) keypoints; None when no one's up is known."""
    centres = np.stack([foot_centres(points, feet) for points in people])
    mids = np.stack([points[hips].mean(axis=0) for points in people])
    ups = [points[neck] - mid for points, mid in zip(people, mids)]
    ups = [u / np.linalg.norm(u) for u in ups if np.isfinite(u).all() and np.linalg.norm(u) > 0]
    return (centres, mids, np.mean(ups, axis=0)) if ups else None


class ScenePlanes:
    """The floor's normal from the last `window` frames' backgrounds (see the module's docstring).
    add(...) once per frame with a fresh pointmap; normal(...) the floor's up in the current camera,
    or None until MIN_FOUND frames found it. seed: RANSAC's (runs repeat exactly)."""

    def __init__(self, window: int = 60, seed: int = 0) -> None:
        self._normals: deque = deque(maxlen=window)  # (normal (3,) camera, odometry_from_camera rotation or None)
        self._rng = np.random.default_rng(seed)
        self.found = 0  # frames whose background gave a floor
        self.tried = 0  # frames given

    def add(self, pointmap: np.ndarray, person: Optional[np.ndarray], feet: np.ndarray, hips: np.ndarray,
            up: np.ndarray, rotation: Optional[np.ndarray] = None) -> Optional[Floor]:
        """One frame: (h, w, 3) pointmap, (h', w') bool person mask (or None), the people's (P, 2, 3)
        foot centres and (P, 3) hips (raw 3D keypoints, NaN rows dropped), (3,) body up, the frame's
        (3, 3) odometry_from_camera rotation (None: no egomotion). -> the frame's floor, or None."""
        self.tried += 1
        feet, hips = np.asarray(feet, np.float64), np.asarray(hips, np.float64)
        known = np.isfinite(feet).all(axis=(1, 2)) & np.isfinite(hips).all(axis=1)
        if not known.any() or not np.isfinite(up).all() or np.linalg.norm(up) == 0:
            return None
        found = scene_floor(background_points(pointmap, person), up, feet[known], hips[known], self._rng)
        if found is None:
            return None
        self.found += 1
        self._normals.append((found[0].normal, None if rotation is None else np.asarray(rotation, np.float64)))
        return found[0]

    def normal(self, rotation: Optional[np.ndarray] = None, moving: bool = False) -> Optional[np.ndarray]:
        """(3,) the floor's up in the camera of `rotation` (its odometry_from_camera); `moving`: the
        camera is seen to move, so each frame's normal is turned through the odometry frame (frames
        without a rotation are then left out); otherwise taken as they are (a static camera)."""
        if moving and rotation is not None:
            rows = [r @ n for n, r in self._normals if r is not None]
            to_camera = np.asarray(rotation, np.float64).T
        else:
            rows, to_camera = [n for n, _ in self._normals], np.eye(3)
        if len(rows) < MIN_FOUND:
            return None
        normals = np.array(rows)
        median = np.median(normals, axis=0)
        median /= np.linalg.norm(median)
        agree = normals @ median > np.cos(np.radians(AGREE_DEG))
        mean = normals[agree].sum(axis=0) if agree.sum() >= MIN_FOUND else median
        return to_camera @ (mean / np.linalg.norm(mean))
