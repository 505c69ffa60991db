"""The floor the people stand on, from their feet: a robust plane fit and its running estimate.

`fit_floor` fits a plane to candidate foot points by least squares (SVD), keeps those within K_SIGMA robust
deviations (1.4826 MAD) of it and refits until that set stops changing, starting from the lower half: feet in the
air lie above the band and drop out. Its normal, turned away from the ground, is the world's up. Points spread along
a line (a straight walk) or in one spot (a person standing) cannot fix the tilt about that line: the body's up
stands in for it there. Given the floor's normal (from elsewhere: the scene, `realtime.rig.floor_scene`; or fitted
first, `FloorEstimator`), only the height is fitted: by the same band, or (`planted_level`: the world's floor, where
the avatar's feet stand) as the level the planted feet stand at (`floor_level`), the densest level among the lowest
candidates. The band about the candidates' own spread leans on the feet in the air where they are most of them: in a
run only 15-30 % of the soles on the depth frames are planted, and the band's plane stands 3-8 cm above them
(bench/RESULTS.md, "Issue 51: the avatar's feet in runs"); the contact detector's floor keeps it (its gates and the
contact model were set on it).

`FloorEstimator` refits as depth frames come in: each foot's centre (mean of heel and toes) for the tilt, its
lowest point for the height (the sole's level: a planted foot's centre sits 2-4 cm above it).
Its window sizes count samples (one person's feet on one depth frame), not time: a fit needs enough feet.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.rig.gates import Gates, gate
from realtime.rig.leg_ik import FOOT_POINTS, SIDES

K_SIGMA = 2.5  # robust deviations: candidates within this of the plane are on the floor
LEVEL_START = 0.1  # `floor_level` starts from this quantile of the heights: inside the planted feet while at least
# about a sixth of the candidates are planted (a run's depth frames: 15-30 %)
LEVEL_SHARE = 0.15  # a level holding fewer of the heights than this (within `level_band`) is not the floor's: a few
# feet measured low (a stretch of frames played twice, a depth error) is not where a run's 15-30 % planted feet stand
SPARSE_SHARE = 0.45  # a level holding fewer of the heights than this (a run's: 28-37 %; walks, sits 50-93 %) is sparse
SPARSE_QUANTILE = 0.15  # a sparse level whose feet move (`FloorGates.moving_band`) is a run's: 35-45 % planted feet,
# the rest in the air 0-4 cm over them (low swings, landings, take-offs): the planted feet are this quantile of its band
STILL_MIN = 5  # heights: a level's still feet (`FloorGates.still_speed`) set it once at least this many are known


@dataclass(frozen=True)
class FloorGates(Gates):
    """The floor fit's gates (metres)."""

    min_band: float = gate(0.005, "m", "the band of candidates on the floor never narrows below this (noise-free feet)")
    min_spread: float = gate(0.095, "m", "candidates spread less than this (RMS) across a direction leave the tilt about it "
                                         "to the body's up (a straight walk's feet: two lines 0.1-0.2 m apart)")
    level_band: float = gate(0.025, "m", "the planted feet's lowest points lie within this of the floor's level (their "
                                         "measured scatter: 1-2 cm); a foot higher is in the air")
    moving_band: float = gate(0.8, "m/s", "a sparse level's feet moving faster than this (their median; each foot's mean "
                                          "speed to its depth frames before and after) are a run's, planted and in the air "
                                          "just over the floor; slower, they are planted feet alone (a sit's, a dance's)")
    still_speed: float = gate(0.3, "m/s", "a level's feet moving slower than this (each foot's mean speed to its depth frames "
                                          "before and after) are planted: the level is their median; the faster ones in its "
                                          "band are low swings over the floor, which pull its mean up")


@dataclass(frozen=True)
class Floor:
    """normal: (3,) unit up vector (camera frame); point: (3,) a point on the floor."""

    normal: np.ndarray
    point: np.ndarray

    def height(self, points: np.ndarray) -> np.ndarray:
        """(..., 3) -> (...,) metres above the floor."""
        return (np.asarray(points) - self.point) @ self.normal


def _plane(points: np.ndarray, up: np.ndarray, normal: Optional[np.ndarray], gates: FloorGates) -> Floor:
    """The least-squares plane through (N, 3) points, its normal on the side of `up`. Where the points spread less
    than `gates.min_spread` across a direction, the tilt about it is unknown: the normal is `up` made perpendicular
    to the directions that are known. `normal`: the plane's normal, measured elsewhere: only its height is fitted."""
    centre = points.mean(axis=0)
    if normal is not None:
        return Floor(normal, centre)
    _, s, vt = np.linalg.svd(points - centre, full_matrices=False)
    spread = np.zeros(3)
    spread[: len(s)] = s / np.sqrt(len(points))  # RMS extent along vt's rows
    if spread[1] >= gates.min_spread:
        normal = vt[-1]
    elif spread[0] >= gates.min_spread:  # a line of candidates: turn `up` about it
        normal = up - (up @ vt[0]) * vt[0]
    else:
        normal = up
    normal = normal / np.linalg.norm(normal)
    return Floor(normal if normal @ up > 0 else -normal, centre)


def floor_level(heights: np.ndarray, gates: FloorGates = FloorGates(), iterations: int = 20,
                speeds: Optional[np.ndarray] = None) -> float:
    """The level (m) the planted feet stand at among (N,) candidate heights along the floor's up (NaN ignored): a mean
    shift from their LEVEL_START quantile, each step to the mean of the heights within `gates.level_band` of the last
    level, until it stays. Feet in the air lie only above the floor, so the search starts among the lowest and stays on
    the first dense level it finds, however many feet are in the air; a level holding less than LEVEL_SHARE of the
    heights is passed over (the search starts again among the heights above it), unless no level holds that much
    (then the first). speeds: (N,) each height's foot's speed (m/s, NaN unknown; `foot_speeds`): a level holding less
    than SPARSE_SHARE of the heights whose feet move faster than `gates.moving_band` (their median) is a run's, its
    band planted feet and feet just over them: the level is its band's SPARSE_QUANTILE; otherwise, once STILL_MIN of
    the band's feet are known to move slower than `gates.still_speed` (planted), the level is their median."""
    values = np.asarray(heights, dtype=np.float64)
    speeds = np.full(len(values), np.nan) if speeds is None else np.asarray(speeds, dtype=np.float64)
    known = np.isfinite(values)
    values, speeds = values[known], speeds[known]
    if len(values) == 0:
        raise ValueError("a floor's level needs at least one finite height")
    first, rest = None, values
    while len(rest):
        level = float(np.quantile(rest, LEVEL_START))
        for _ in range(iterations):
            near = rest[np.abs(rest - level) <= gates.level_band]
            moved = float(near.mean()) if len(near) else level
            if abs(moved - level) < 1e-6:
                break
            level = moved
        first = level if first is None else first
        band = np.abs(values - level) <= gates.level_band
        if band.sum() >= LEVEL_SHARE * len(values):
            moving = speeds[band][np.isfinite(speeds[band])]
            if band.sum() < SPARSE_SHARE * len(values) and len(moving) and np.median(moving) > gates.moving_band:
                return float(np.quantile(values[band], SPARSE_QUANTILE))
            still = band & (np.nan_to_num(speeds, nan=np.inf) < gates.still_speed)
            return float(np.median(values[still])) if still.sum() >= STILL_MIN else level
        rest = rest[rest > level + gates.level_band]
    return first


def foot_speeds(centres: np.ndarray, times: Sequence[Optional[float]], tracks: Sequence) -> np.ndarray:
    """(N, 2, 3) the feet's centres on N samples (one person's depth frame each, in the order they came), their (N,)
    times (s, None unknown) and people (track ids) -> (N, 2) each foot's speed (m/s): the mean of its speeds to the
    same person's samples before and after; NaN where neither is known."""
    centres = np.asarray(centres, dtype=np.float64)
    total, count = np.zeros(centres.shape[:2]), np.zeros(centres.shape[:2])
    last: dict = {}  # track -> its last sample's index
    for i, (time, track) in enumerate(zip(times, tracks)):
        if time is None:
            continue
        j = last.get(track)
        if j is not None and time > times[j]:
            speed = np.linalg.norm(centres[i] - centres[j], axis=1) / (time - times[j])
            seen = np.isfinite(speed)
            for k in (j, i):  # the step counts for both its ends
                total[k][seen] += speed[seen]
                count[k][seen] += 1
        last[track] = i
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def fit_floor(candidates: np.ndarray, up_guess: Sequence[float] = (0.0, -1.0, 0.0), iterations: int = 10,
              normal: Optional[Sequence[float]] = None, gates: FloorGates = FloorGates(),
              planted_level: bool = False, speeds: Optional[np.ndarray] = None) -> Floor:
    """A floor plane through (N, 3) candidate foot points (NaN rows ignored); camera y down by default.
    normal: the floor's up when known (the pointmap's background, or a tilt fitted first): the plane keeps it and the
    candidates set only its height (the same robust band; `planted_level`: the level the planted feet stand at,
    `floor_level`, with the (N,) feet's `speeds`, m/s, if known)."""
    pts = np.asarray(candidates, dtype=np.float64)
    finite = np.isfinite(pts).all(axis=1)
    pts = pts[finite]
    speeds = None if speeds is None else np.asarray(speeds, dtype=np.float64)[finite]
    if len(pts) < 3:
        raise ValueError("a floor needs at least 3 foot points")
    up = np.asarray(up_guess, dtype=np.float64) / np.linalg.norm(up_guess)
    if normal is not None:
        normal = np.asarray(normal, dtype=np.float64) / np.linalg.norm(normal)
        if planted_level:
            normal = normal if normal @ up >= 0 else -normal
            centre = pts.mean(axis=0)
            return Floor(normal, centre - (centre @ normal - floor_level(pts @ normal, gates, speeds=speeds)) * normal)
    floor = _plane(pts, up, normal, gates)
    heights = floor.height(pts)
    keep = heights <= np.median(heights)  # the lower half: mostly feet on the floor
    if keep.sum() < 3:
        keep = np.ones(len(pts), bool)
    for _ in range(iterations):
        floor = _plane(pts[keep], up, normal, gates)
        heights = floor.height(pts)
        sigma = max(1.4826 * float(np.median(np.abs(heights[keep]))), gates.min_band)
        new = np.abs(heights) < K_SIGMA * sigma
        if new.sum() < 3 or (new == keep).all():
            break
        keep = new
    return floor


def foot_indices(keypoint_names: Sequence[str]) -> dict[str, np.ndarray]:
    """side -> indices of its heel and toes."""
    index = {n: i for i, n in enumerate(keypoint_names)}
    return {side: np.array([index[f"{side}_{p}"] for p in FOOT_POINTS]) for side in SIDES}


def lowest_points(points3d: np.ndarray, feet: dict[str, np.ndarray], up: np.ndarray) -> np.ndarray:
    """(K, 3) -> (2, 3): each foot's known heel or toe point lowest along `up` (NaN if none)."""
    points3d = np.asarray(points3d, dtype=np.float64)
    out = np.full((len(SIDES), 3), np.nan)
    for row, side in enumerate(SIDES):
        pts = points3d[feet[side]]
        pts = pts[np.isfinite(pts).all(axis=1)]
        if len(pts):
            out[row] = pts[np.argmin(pts @ up)]
    return out


def foot_centres(points3d: np.ndarray, feet: dict[str, np.ndarray]) -> np.ndarray:
    """(..., K, 3) -> (..., 2, 3): each foot's centre, the mean of its known heel and toe points (NaN if none)."""
    out = []
    for side in SIDES:
        pts = np.asarray(points3d, dtype=np.float64)[..., feet[side], :]
        known = np.isfinite(pts).all(axis=-1, keepdims=True)
        count = known.sum(axis=-2)
        total = np.where(known, pts, 0.0).sum(axis=-2)
        out.append(np.where(count > 0, total / np.maximum(count, 1), np.nan))
    return np.stack(out, axis=-2)


class FloorEstimator:
    """The camera's floor, refined as depth frames come in (see the module's docstring): after `min_samples`
    samples (one person's feet on one depth frame each) the floor is fitted to the last `max_samples`, and refitted
    every `refit_every` samples. The body's up (mid-hip to neck, averaged) orients the normal and stands in for the
    tilt that feet kept in one spot cannot give; a `normal` given to `add` (the scene's floor) replaces the fitted
    tilt. `gates`: the fit's (`FloorGates`). `planted_level`: the height is the level the planted feet stand at
    (`fit_floor`'s; the world's floor) rather than the band's (the contact detector's)."""

    def __init__(self, keypoint_names: Sequence[str], *, min_samples: int = 30, max_samples: int = 600,
                 refit_every: int = 10, gates: FloorGates = FloorGates(), planted_level: bool = False):
        for name, value in (("min_samples", min_samples), ("max_samples", max_samples), ("refit_every", refit_every)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"FloorEstimator's {name} must be a whole number of 1 or more, got {value!r}")
        self.feet = foot_indices(keypoint_names)
        self.min_samples, self.refit_every, self.gates = min_samples, refit_every, gates
        self.planted_level = planted_level
        self._candidates: deque = deque(maxlen=max_samples)  # (2, 3) per sample: the feet's centres
        self._soles: deque = deque(maxlen=max_samples)  # (2, 3) per sample: the feet's lowest points
        self._times: deque = deque(maxlen=max_samples)  # (time s or None, track) per sample
        self._since_fit = 0
        self._up = np.zeros(3)  # sum of the unit body-up vectors seen
        index = {n: i for i, n in enumerate(keypoint_names)}
        self._neck, self._hips = index["neck"], [index["left_hip"], index["right_hip"]]
        self.floor: Optional[Floor] = None

    def add(self, points3d: np.ndarray, normal: Optional[np.ndarray] = None, time: Optional[float] = None,
            track=None) -> bool:
        """One depth frame's (K, 3) camera metres of one person; True when the floor was (re)fitted. normal: (3,) the
        floor's up in this camera, measured from the scene, or None (the tilt from the feet and body). time (s) and
        track (the person): the feet's speeds for `planted_level` (`foot_speeds`)."""
        centres = foot_centres(points3d, self.feet)
        if not np.isfinite(centres).all(axis=1).any():
            return False
        self._candidates.append(centres)
        self._times.append((time, track))
        body_up = points3d[self._neck] - np.mean(points3d[self._hips], axis=0)
        if np.isfinite(body_up).all() and np.linalg.norm(body_up) > 0:
            self._up += body_up / np.linalg.norm(body_up)
        up = self._up if np.linalg.norm(self._up) > 0 else np.array([0.0, -1.0, 0.0])
        self._soles.append(lowest_points(points3d, self.feet, up if normal is None else np.asarray(normal, np.float64)))
        self._since_fit += 1
        if len(self._candidates) < self.min_samples or (self.floor is not None and self._since_fit < self.refit_every):
            return False
        # the tilt from the centres (from the lowest points it jumps between heel and toe), the height from the soles
        tilt = None if normal is not None else fit_floor(np.concatenate(self._candidates), up, gates=self.gates).normal
        speeds = foot_speeds(np.array(self._candidates), *zip(*self._times)).ravel() if self.planted_level else None
        soles = fit_floor(np.concatenate(self._soles), up, normal=normal if tilt is None else tilt, gates=self.gates,
                          planted_level=self.planted_level, speeds=speeds)
        self.floor = soles if tilt is None else Floor(tilt, soles.point)  # the fitted tilt to the bit
        self._since_fit = 0
        return True
