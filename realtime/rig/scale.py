"""Metric scale stabilised over time: the pointmap's per-frame scale error, taken out.

The pointmap's metric scale wobbles from frame to frame (sapiens2#11): all of a frame's points
are scaled about the camera by a few per cent, so a person standing still moves centimetres to
and fro along the view and grows and shrinks. A person's bones keep their length, so a depth
frame's scale against the person's usual one is a robust mean over bones (`huber_mean` of
log(the bone's length in this frame / its running median over the last WINDOW depth frames),
long bones weighted more: their relative error is smaller). The frame's points are
divided by the part of that scale that is jitter, not measurement noise (`ScaleFilter.gain`:
var(jitter) / var(measured scale), from the spread of the frames' estimates and each estimate's
own variance; none for the first MIN_HISTORY frames): a scaling about the camera centre, so every
point stays on its pixel's ray; a pointmap without jitter is left nearly as it is. Causal, no added
latency: a real change of distance leaves the bone lengths alone and passes through on the frame it
happens; the running medians learn the person over the first depth frames (the first one is taken as
it is).

Bone lengths are measured on points rebuilt along their pixels' rays at the pointmap's depth
when the rays are given (the image fixes a bone's extent across the view to about a pixel;
only its extent along the view comes from the pointmap), else on the 3D points as they are.
Bones that point more than STEEP_DEG into the view are left out of a frame (their length is
mostly depth noise), and a frame's scale is taken only from at least MIN_BONES bones.

A still camera's floor says the same sooner (`FloorDistanceScale`, run by the ground stage before the
lifter): the camera's distance to the floor plane found in the background changes with nothing but the
frame's scale, is measured on thousands of pixels, and holds for every person in the frame from their first
depth frame on (a fresh track's bone lengths say nothing for MIN_HISTORY frames); its usual distance is fixed
after MIN_HISTORY frames, so the frames after those share one metre with the world's floor fitted on them.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Optional, Sequence

import numpy as np

from realtime.rig.robust import nanmedian

log = logging.getLogger(__name__)

BONES = (
    ("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("right_hip", "right_knee"), ("right_knee", "right_ankle"),
    ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"), ("right_shoulder", "right_elbow"),
    ("right_elbow", "right_wrist"), ("left_hip", "left_shoulder"), ("right_hip", "right_shoulder"),
    ("left_hip", "right_hip"), ("left_shoulder", "right_shoulder"),
)
WINDOW = 90  # depth frames (15 s at 6 depth frames a second)
STEEP_DEG = 50.0
MIN_BONES = 3
MAX_CORRECTION = 0.3  # a frame's scale is clipped to 1 +- this
HUBER = 1.5  # robust deviations: bones further off count less
SHARED_JOINTS = 2.0  # most joints end two bones, so their errors are not independent: the variance is about twice
MIN_HISTORY = 10  # measured depth frames before any scale is taken out
MIN_FLOORS = 3  # samples: frames whose floor was found before FloorDistanceScale says anything
FLOOR_MAX_CHANGE = 0.1  # a floor distance further than this from the usual one is another surface, not jitter


class ScaleFilter:
    """One person's pointmap scale per depth frame, against the person's own bone lengths."""

    def __init__(self, keypoint_names: Sequence[str], *, window: int = WINDOW):
        index = {n: i for i, n in enumerate(keypoint_names)}
        self.bones = np.array([(index[a], index[b]) for a, b in BONES])
        self._lengths: deque = deque(maxlen=window)  # (B,) metres per depth frame, NaN where not measured
        self._estimates: deque = deque(maxlen=window)  # (log scale, its variance) per measured depth frame
        self.scale = 1.0  # the last depth frame's

    def reset(self) -> None:
        self._lengths.clear()
        self._estimates.clear()
        self.scale = 1.0

    def bone_lengths(self, points3d: np.ndarray, rays: Optional[np.ndarray] = None) -> np.ndarray:
        """(K, 3) camera metres (and (K, 3) pixel rays with z = 1) -> (B,) metres, NaN where not measured."""
        points = np.asarray(points3d, dtype=np.float64)
        if rays is not None:
            rebuilt = rays * points[:, 2:3]
            points = np.where(np.isfinite(rebuilt).all(axis=1, keepdims=True), rebuilt, points)
        vectors = points[self.bones[:, 1]] - points[self.bones[:, 0]]
        lengths = np.linalg.norm(vectors, axis=1)
        along_view = np.abs(vectors[:, 2]) / np.maximum(lengths, 1e-9)
        return np.where(along_view < np.sin(np.radians(STEEP_DEG)), lengths, np.nan)

    def update(self, points3d: np.ndarray, rays: Optional[np.ndarray] = None) -> np.ndarray:
        """One depth frame: (K, 3) camera metres -> (K, 3) divided by the frame's scale (self.scale)."""
        lengths = self.bone_lengths(points3d, rays)
        self.scale = 1.0
        if self._lengths:
            usual = nanmedian(np.stack(self._lengths))
            with np.errstate(divide="ignore", invalid="ignore"):  # a bone of length 0: left out below
                ratios = np.log(lengths / usual)
            seen = np.isfinite(ratios)
            if seen.sum() >= MIN_BONES:  # long bones are measured more precisely: weights by length squared
                self._estimates.append(huber_mean(ratios[seen], usual[seen] ** 2))
                scale = np.exp(self.gain() * self._estimates[-1][0])
                self.scale = float(np.clip(scale, 1 - MAX_CORRECTION, 1 + MAX_CORRECTION))
        self._lengths.append(lengths)
        return np.asarray(points3d, dtype=np.float64) / self.scale

    def gain(self) -> float:
        """How much of a frame's measured log scale to take out: var(jitter) / var(measured), where
        var(measured) = var(jitter) + var(measurement); 0 until MIN_HISTORY frames were measured."""
        if len(self._estimates) < MIN_HISTORY:
            return 0.0
        values, noise = np.array(self._estimates).T
        spread = 1.4826 * float(np.median(np.abs(values - np.median(values))))
        if spread <= 0:
            return 0.0
        return float(np.clip(1.0 - SHARED_JOINTS * float(np.median(noise)) / spread ** 2, 0.0, 1.0))


class FloorDistanceScale:
    """A still camera's pointmap scale per frame from the floor in its background: the camera's distance to
    the floor plane found among thousands of background pixels (`realtime.rig.floor_scene`) is the same on
    every frame but for the frame's scale, so its ratio to the usual distance is that scale, the same for
    everyone in the frame and known from a person's first depth frame on (a person's own bone lengths need
    MIN_HISTORY depth frames first). The usual distance is the median of the first MIN_HISTORY distances, then
    kept: the world's floor is fitted once, from depth frames after those (`realtime.rig.world.WorldAnchor`), and
    a usual distance that went on moving would scale every later frame's people about the camera to another
    metre than the one the floor was fitted in, their feet off it (0.75 cm at 1.5 m for 0.5 %; bench/RESULTS.md,
    "Issue 51: penetration, what sets the world floor's level (eighth stop)"). 1.0 until MIN_FLOORS frames
    measured it, and for a distance more than FLOOR_MAX_CHANGE from the usual one (a step, a platform: another
    plane the people stand near; the pointmap's jitter is ~2 %), which is not kept either."""

    def __init__(self) -> None:
        self._distances: list[float] = []

    def reset(self) -> None:
        self._distances.clear()

    def update(self, distance: float) -> float:
        """This frame's distance from the camera to the floor (its pointmap's metres) -> the frame's scale."""
        if len(self._distances) < MIN_FLOORS:
            self._distances.append(distance)
            return 1.0
        scale = distance / float(np.median(self._distances))
        if abs(scale - 1.0) > FLOOR_MAX_CHANGE:
            return 1.0
        if len(self._distances) < MIN_HISTORY:
            self._distances.append(distance)
        return float(scale)


def huber_mean(values: np.ndarray, weights: np.ndarray, *, iterations: int = 5) -> tuple[float, float]:
    """A weighted Huber M-estimate of location: the weighted mean, with values more than HUBER robust
    deviations (1.4826 MAD about the median) from it weighted down, so one wrong bone cannot pull it far.
    Returns (the estimate, its variance from the weighted residuals)."""
    centre = float(np.median(values))
    spread = max(1.4826 * float(np.median(np.abs(values - centre))), 1e-4)
    w = np.asarray(weights, dtype=np.float64)
    for _ in range(iterations):
        distance = np.abs(values - centre) / (HUBER * spread)
        w = weights * np.minimum(1.0, 1.0 / np.maximum(distance, 1e-12))
        centre = float((w * values).sum() / w.sum())
    n = len(values)
    variance = float((w * w * (values - centre) ** 2).sum() / w.sum() ** 2) * n / max(n - 1, 1)
    return centre, variance

