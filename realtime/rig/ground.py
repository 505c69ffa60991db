"""Grounded feet: the floor plane, foot contact with hysteresis, and foot locking.

Floor: a plane through the lowest foot points over time (camera frame). Each frame's
lowest foot point (heels, toes) is a candidate; a plane is fitted to them by least
squares (SVD), the candidates more than BAND above it are dropped, and the fit is
repeated. Its normal, turned to point away from the ground, is the world's up (gravity),
so the rig's up is right even with a tilted camera. A person who walks about gives
candidates spread over the floor; one who stands still gives a small patch, whose tilt
is less certain.

Contact, per foot: the foot's height above the floor (its lowest point) and its speed
(mean of its points), with hysteresis: on below ON_HEIGHT and ON_SPEED, off above
OFF_HEIGHT or OFF_SPEED.

Locking, per foot, causal (no added latency): while in contact the ankle, heel and toes
stay where they were when the contact began, and the knee follows by two-bone IK
(hip fixed, thigh and shin lengths of the frame, the knee in the measured bend plane).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.frames import Frame

log = logging.getLogger(__name__)

BAND = 0.03  # m: candidates this far above the fitted floor are feet in the air
ON_HEIGHT, OFF_HEIGHT = 0.05, 0.08  # m
ON_SPEED, OFF_SPEED = 0.35, 0.7  # m/s
SPEED_WINDOW = 0.15  # s
SIDES = ("left", "right")
FOOT_POINTS = ("heel", "big_toe", "small_toe")


@dataclass(frozen=True)
class Floor:
    """normal: (3,) unit up vector (camera frame); point: (3,) a point on the floor."""

    normal: np.ndarray
    point: np.ndarray

    def height(self, points: np.ndarray) -> np.ndarray:
        """(..., 3) -> (...,) metres above the floor."""
        return (np.asarray(points) - self.point) @ self.normal


def fit_floor(candidates: np.ndarray, up_guess: Sequence[float] = (0.0, -1.0, 0.0), iterations: int = 4) -> Floor:
    """A floor plane through (N, 3) candidate contact points (NaN rows ignored); camera y down by default."""
    pts = candidates[np.isfinite(candidates).all(axis=1)]
    if len(pts) < 3:
        raise ValueError("a floor needs at least 3 foot points")
    up = np.asarray(up_guess, dtype=np.float64) / np.linalg.norm(up_guess)
    keep = np.ones(len(pts), bool)
    floor = Floor(up, pts.mean(axis=0))
    for _ in range(iterations):
        centre = pts[keep].mean(axis=0)
        _, _, vt = np.linalg.svd(pts[keep] - centre, full_matrices=False)
        normal = vt[-1] if vt[-1] @ up > 0 else -vt[-1]
        floor = Floor(normal, centre)
        heights = floor.height(pts)
        base = np.percentile(heights, 10)
        new = heights - base < BAND
        if new.sum() < 3 or (new == keep).all():
            break
        keep = new
    # put the plane at the contact points, not their mean over the band
    return Floor(floor.normal, floor.point + floor.normal * float(np.median(floor.height(pts[keep]))))


def foot_indices(keypoint_names: Sequence[str]) -> dict[str, np.ndarray]:
    """side -> indices of its heel and toes."""
    index = {n: i for i, n in enumerate(keypoint_names)}
    return {side: np.array([index[f"{side}_{p}"] for p in FOOT_POINTS]) for side in SIDES}


def lowest_foot_points(points3d: np.ndarray, keypoint_names: Sequence[str], up: Sequence[float] = (0.0, -1.0, 0.0)) -> np.ndarray:
    """(T, K, 3) -> (T, 3): each frame's lowest foot point along `up` (NaN where no foot point is known)."""
    feet = np.concatenate(list(foot_indices(keypoint_names).values()))
    pts = points3d[:, feet]
    h = np.where(np.isfinite(pts).all(axis=2), pts @ np.asarray(up, dtype=np.float64), np.inf)
    best = np.argmin(h, axis=1)
    out = pts[np.arange(len(pts)), best]
    out[~np.isfinite(h.min(axis=1))] = np.nan
    return out


class ContactDetector:
    """Foot contact per side with hysteresis, frame by frame. The foot's speed is its travel over
    the last SPEED_WINDOW seconds (a single frame's step is mostly keypoint noise)."""

    def __init__(self, floor: Floor, keypoint_names: Sequence[str]):
        self.floor = floor
        self.feet = foot_indices(keypoint_names)
        self.state = dict.fromkeys(SIDES, False)
        self._history: dict[str, deque] = {side: deque() for side in SIDES}

    def update(self, timestamp: float, points3d: np.ndarray) -> np.ndarray:
        """(K, 3) camera metres -> (2,) bool contact (left, right)."""
        for side in SIDES:
            pts = points3d[self.feet[side]]
            known = np.isfinite(pts).all(axis=1)
            history = self._history[side]
            if not known.any():
                self.state[side] = False
                history.clear()
                continue
            height = float(self.floor.height(pts[known]).min())
            centre = pts[known].mean(axis=0)
            history.append((timestamp, centre))
            while len(history) > 2 and timestamp - history[1][0] >= SPEED_WINDOW:
                history.popleft()
            (t0, c0) = history[0]
            speed = float(np.linalg.norm(centre - c0) / (timestamp - t0)) if timestamp > t0 else 0.0
            if self.state[side]:
                self.state[side] = height <= OFF_HEIGHT and speed <= OFF_SPEED
            else:
                self.state[side] = height < ON_HEIGHT and speed < ON_SPEED
        return np.array([self.state[s] for s in SIDES])


def two_bone_ik(hip: np.ndarray, knee: np.ndarray, ankle: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The knee that puts the ankle at `target` with the thigh and shin lengths of (hip, knee, ankle),
    bending in the plane of the current knee."""
    l1, l2 = np.linalg.norm(knee - hip), np.linalg.norm(ankle - knee)
    reach = target - hip
    d = float(np.clip(np.linalg.norm(reach), abs(l1 - l2) + 1e-6, l1 + l2 - 1e-6))
    u = reach / max(np.linalg.norm(reach), 1e-9)
    bend = (knee - hip) - ((knee - hip) @ u) * u
    w = bend / max(np.linalg.norm(bend), 1e-9)
    cos_a = np.clip((l1 * l1 + d * d - l2 * l2) / (2 * l1 * d), -1.0, 1.0)
    return hip + l1 * (cos_a * u + np.sqrt(1 - cos_a * cos_a) * w)


class FootLock:
    """Holds a foot in contact where the contact began; the knee follows by two-bone IK."""

    def __init__(self, keypoint_names: Sequence[str]):
        index = {n: i for i, n in enumerate(keypoint_names)}
        self.legs = {side: (index[f"{side}_hip"], index[f"{side}_knee"], index[f"{side}_ankle"]) for side in SIDES}
        self.feet = {side: np.array([index[f"{side}_ankle"], *foot_indices(keypoint_names)[side]]) for side in SIDES}
        self._anchor: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES, None)

    def apply(self, points3d: np.ndarray, contacts: np.ndarray) -> np.ndarray:
        """(K, 3) camera metres, (2,) contacts -> (K, 3) with the feet in contact held."""
        out = np.array(points3d, dtype=np.float64)
        for side, contact in zip(SIDES, contacts):
            hip, knee, ankle = self.legs[side]
            foot = self.feet[side]
            if not contact or not np.isfinite(out[[hip, knee, ankle]]).all():
                self._anchor[side] = None
                continue
            if self._anchor[side] is None:
                self._anchor[side] = out[ankle].copy()
                continue
            shift = self._anchor[side] - out[ankle]
            out[knee] = two_bone_ik(out[hip], out[knee], out[ankle], self._anchor[side])
            # the ankle lands where the legs reach (at the anchor unless the leg is too short)
            reach = self._anchor[side] - out[hip]
            length = np.linalg.norm(points3d[knee] - points3d[hip]) + np.linalg.norm(points3d[ankle] - points3d[knee])
            reach_len = np.linalg.norm(reach)
            target = out[hip] + reach * min(1.0, (length - 1e-6) / max(reach_len, 1e-9))
            out[foot] = points3d[foot] + (target - points3d[ankle]) if np.isfinite(shift).all() else points3d[foot]
        return out


class GroundStage:
    """Pipeline stage after smooth: foot contact per tracked person (`Person.contacts`).

    The floor is the camera's, shared by everyone: fitted to the lowest foot points of the depth
    frames (at least MIN_CANDIDATES of them, the last MAX_CANDIDATES, refitted every
    REFIT_EVERY new ones). Between depth frames each person's 3D comes from a `Lifter`.
    Contacts are None until the floor is known.
    """

    name = "ground"
    MIN_CANDIDATES, MAX_CANDIDATES, REFIT_EVERY = 30, 600, 10

    def __init__(self, keypoint_names: Sequence[str], *, forget_after: float = 5.0):
        from realtime.rig.lift import Lifter

        self.keypoint_names = list(keypoint_names)
        self.forget_after = forget_after
        self._new_lifter = lambda: Lifter(self.keypoint_names)
        self._people: dict[int, tuple] = {}  # track id -> (Lifter, ContactDetector or None, last seen)
        self._candidates: deque = deque(maxlen=self.MAX_CANDIDATES)
        self._since_fit = 0
        self.floor: Optional[Floor] = None

    def _add_candidate(self, points3d: np.ndarray) -> None:
        point = lowest_foot_points(np.asarray(points3d, dtype=np.float64)[None], self.keypoint_names)[0]
        if not np.isfinite(point).all():
            return
        self._candidates.append(point)
        self._since_fit += 1
        if len(self._candidates) >= self.MIN_CANDIDATES and (self.floor is None or self._since_fit >= self.REFIT_EVERY):
            self.floor = fit_floor(np.stack(self._candidates))
            self._since_fit = 0
            for _, detector, _ in self._people.values():
                if detector is not None:
                    detector.floor = self.floor

    def process(self, frame: Frame) -> Frame:
        people = []
        for person in frame.people:
            if person.track_id is None or person.keypoints is None:
                people.append(person)
                continue
            lifter, detector, _ = self._people.get(person.track_id, (None, None, 0.0))
            lifter = lifter or self._new_lifter()
            if person.keypoints3d is not None:
                self._add_candidate(person.keypoints3d)
            points = lifter.update(person.best_keypoints, person.keypoints3d, person.keypoint_scores)
            if detector is None and self.floor is not None:
                detector = ContactDetector(self.floor, self.keypoint_names)
            self._people[person.track_id] = (lifter, detector, frame.timestamp)
            if detector is not None and points is not None:
                person = person.replace(contacts=detector.update(frame.timestamp, points))
            people.append(person)
        for track in [k for k, (_, _, seen) in self._people.items() if frame.timestamp - seen > self.forget_after]:
            del self._people[track]
        return frame.replace(people=tuple(people))

    def close(self) -> None:
        self._people.clear()
