"""The world frame: y up from the floor, origin on the floor under the first person's start, metres.

Frames in play (4x4 rigid transforms, `a_from_b` maps b's coordinates to a's):
- camera: x right, y down, z forward (the pointmap's and the keypoints' 3D).
- odometry: the first pointmap frame's camera (`realtime.rig.egomotion.CameraTracker` gives
  odometry_from_camera per frame; a static camera: identity).
- world: y up (the floor's normal, i.e. gravity), origin on the floor under the first tracked
  person's mid-hips when first seen, z pointing back at the first camera along the floor (as the rig
  axes of `realtime.rig.solver.camera_to_rig`: a person facing that camera faces +z), x = y cross z.

`WorldAnchor` fixes the world frame: it fits the floor in the odometry frame to the people's feet
(`realtime.rig.floor.FloorEstimator`, fed odometry-frame points; its height the level the planted feet stand
at, `realtime.rig.floor.floor_level`, however many feet are in the air) and freezes the frame at the
first fit; until then a provisional frame stands in (up = the scene's floor normal, or the bodies'
up, or the first camera's -y), marked `grounded=False`. The floor's tilt is the scene's (the ground
stage's `Frame.floor_up`, measured from the pointmap's background) when given: the feet then set only
its height; without it, the feet's fit (across a straight walk the body's up: its lean tilts the
world). A person's first depth frames come before the ground stage's scale is steady (`add(...,
settled=False)`; a frame scaled about the camera by 2 % puts feet 4 m out 2-4 cm higher or lower),
so once `min_samples` settled ones are in, the floor's height is fitted again from them alone, once,
unless people were placed in the world by then (`freeze`: their coordinates must not jump); the up
and the origin across the floor stay. `HeightEstimator` gives a performer's standing height (metres,
with a confidence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.rig.floor import Floor, FloorEstimator, fit_floor, foot_centres, foot_speeds, lowest_points

RIG_FROM_CAMERA = np.diag([1.0, -1.0, -1.0])  # `camera_to_rig`: rig = F cam (F is its own inverse)
EYE_TO_STATURE = 0.936  # eye height / stature of adults (anthropometric tables: ~0.93-0.94)
HIPS_UP = 0.9  # m: the hips above the floor, for the provisional frame before the floor is fitted
UPRIGHT = 0.95  # the trunk (hips to neck) this near vertical (its cosine, about 18 degrees): standing upright
STANDING = 0.2  # m: both ankles this near the floor: standing on it


def transform_points(transform: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(4, 4) a_from_b, (..., 3) points in b -> (..., 3) in a (NaN stays NaN)."""
    return np.asarray(points, np.float64) @ transform[:3, :3].T + transform[:3, 3]


def rigid(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = rotation, translation
    return out


@dataclass(frozen=True)
class WorldFrame:
    """world_from_odometry: (4, 4); grounded: False while provisional (no floor yet)."""

    world_from_odometry: np.ndarray
    grounded: bool = True

    def camera(self, odometry_from_camera: np.ndarray) -> np.ndarray:
        """world_from_camera (4, 4)."""
        return self.world_from_odometry @ odometry_from_camera


def world_frame(up: np.ndarray, floor_point: np.ndarray, origin_hint: np.ndarray,
                forward: Sequence[float] = (0.0, 0.0, 1.0), grounded: bool = True) -> WorldFrame:
    """The world frame from odometry-frame quantities: the floor's up (3,), a point on it, the point
    whose foot on the floor becomes the origin (the first person's hips), and the camera's forward
    (its -z along the floor becomes the world's z)."""
    y = np.asarray(up, np.float64) / np.linalg.norm(up)
    z = -(np.asarray(forward, np.float64) - (np.asarray(forward) @ y) * y)
    if np.linalg.norm(z) < 1e-6:  # looking straight down: the camera's up along the floor instead
        z = np.array([0.0, -1.0, 0.0]) - y[1] * y
    z /= np.linalg.norm(z)
    x = np.cross(y, z)
    rotation = np.stack([x, y, z])  # rows: world axes in odometry coordinates
    hint = np.asarray(origin_hint, np.float64)
    origin = hint - ((hint - floor_point) @ y) * y
    return WorldFrame(rigid(rotation, -rotation @ origin), grounded)


class WorldAnchor:
    """Fixes the world frame from the people seen (see the module's docstring).

    add(odometry_from_camera, points3d, floor_up) once per person per depth frame (points3d (K, 3)
    camera metres, the ground stage's scale-stabilised keypoints; floor_up (3,) the scene's floor
    normal in that camera, or None); the first call with known hips sets the origin. `frame` is
    provisional until the floor's first fit (`min_samples`: one person's feet on one depth frame each), then fixed; its up is
    the last floor_up given by then, if any (taken into the odometry frame); its height is fitted once more from the
    first `min_samples` settled samples (`add(..., settled=True)`) unless `freeze` came first.
    """

    def __init__(self, keypoint_names: Sequence[str], *, min_samples: int = 30) -> None:
        index = {n: i for i, n in enumerate(keypoint_names)}
        self._hips = [index["left_hip"], index["right_hip"]]
        self.floors = FloorEstimator(keypoint_names, min_samples=min_samples, refit_every=10**9, planted_level=True)
        self._origin: Optional[np.ndarray] = None
        self._scene_up: Optional[np.ndarray] = None  # the last floor_up given, in the odometry frame
        self._frame: Optional[WorldFrame] = None
        self._settled: list[tuple] = []  # the first settled samples' (K, 3) odometry-frame points, time, track
        self._unsettled = 0  # samples before the first fit that were not settled
        self.final = False  # the height is refitted from settled samples, or frozen: the frame changes no more

    @property
    def floor(self) -> Optional[Floor]:
        """The floor in the odometry frame (None before the first fit)."""
        return self.floors.floor

    def freeze(self) -> None:
        """People are placed in the world from now on: the frame stays as it is."""
        self.final = self._frame is not None or self.final

    def add(self, odometry_from_camera: np.ndarray, points3d: np.ndarray, floor_up: Optional[np.ndarray] = None,
            settled: bool = True, time: Optional[float] = None, track=None) -> bool:
        """True when this call fixed the world frame. settled: False for a person's depth frames before the ground
        stage's scale is steady (the floor's height is fitted once more without them). time (s), track (the person):
        the feet's speeds for the floor's level (`realtime.rig.floor.floor_level`)."""
        points = transform_points(odometry_from_camera, points3d)
        hips = points[self._hips].mean(axis=0)
        if self._origin is None and np.isfinite(hips).all():
            self._origin = hips
        feet = np.isfinite(foot_centres(points, self.floors.feet)).all(axis=1).any()  # a sample of the floor at all
        if feet and settled and not self.final and len(self._settled) < self.floors.min_samples:
            self._settled.append((points, time, track))
        if feet and not settled and self._frame is None:
            self._unsettled += 1
        if self._frame is not None:
            self._refit_height()
            return False
        if floor_up is not None:
            self._scene_up = odometry_from_camera[:3, :3] @ np.asarray(floor_up, np.float64)
        self.floors.add(points, self._scene_up, time=time, track=track)
        floor = self.floors.floor
        if floor is not None and self._origin is not None:  # the floor may have come first (hips not yet seen)
            self._frame = world_frame(floor.normal, floor.point, self._origin)
            self._refit_height()
            return True
        return False

    def _refit_height(self) -> None:
        """Once `min_samples` settled samples are in (and the frame is not final): the floor's height from their feet's
        lowest points alone, along the frame's up; the frame moved to it, once."""
        if self.final or len(self._settled) < self.floors.min_samples:
            return
        if not self._unsettled:  # the first fit had settled feet only: it stands
            self.final, self._settled = True, []
            return
        up = self._frame.world_from_odometry[1, :3]
        points, times, tracks = zip(*self._settled)
        soles = np.concatenate([lowest_points(p, self.floors.feet, up) for p in points])
        speeds = foot_speeds(np.array([foot_centres(p, self.floors.feet) for p in points]), times, tracks).ravel()
        floor = fit_floor(soles, up, normal=up, gates=self.floors.gates, planted_level=True, speeds=speeds)
        self._frame = world_frame(up, floor.point, self._origin)
        self.final, self._settled = True, []

    @property
    def frame(self) -> WorldFrame:
        if self._frame is not None:
            return self._frame
        up = self.floors._up if np.linalg.norm(self.floors._up) > 0 else np.array([0.0, -1.0, 0.0])
        up = up if self._scene_up is None else self._scene_up
        origin = self._origin if self._origin is not None else np.zeros(3)
        floor_point = origin - HIPS_UP * up / np.linalg.norm(up)
        return world_frame(up, floor_point, origin, grounded=False)


class HeightEstimator:
    """A performer's standing height (stature, metres) with a confidence in [0, 1].

    add(points_world) per depth frame ((K, 3) world metres, y up, floor at 0): when the body stands
    upright (neck straight above the hips, both ankles near the floor) the eyes' height divided by
    EYE_TO_STATURE is a sample. height: the median of the samples; confidence: grows with their
    number (half at `half_samples`) and falls with the median's standard error (against `spread_m`).
    """

    def __init__(self, keypoint_names: Sequence[str], *, half_samples: int = 10, spread_m: float = 0.02) -> None:
        index = {n: i for i, n in enumerate(keypoint_names)}
        self._eyes = [index["left_eye"], index["right_eye"]]
        self._hips = [index["left_hip"], index["right_hip"]]
        self._ankles = [index["left_ankle"], index["right_ankle"]]
        self._neck = index["neck"]
        self.half_samples, self.spread_m = half_samples, spread_m
        self.samples: list[float] = []

    def add(self, points_world: np.ndarray) -> None:
        p = np.asarray(points_world, np.float64)
        eyes, hips, neck, ankles = p[self._eyes].mean(axis=0), p[self._hips].mean(axis=0), p[self._neck], p[self._ankles]
        if not (np.isfinite(eyes).all() and np.isfinite(hips).all() and np.isfinite(neck).all() and np.isfinite(ankles).all()):
            return
        trunk = neck - hips
        upright = trunk[1] > UPRIGHT * np.linalg.norm(trunk)
        standing = np.abs(ankles[:, 1]).max() < STANDING
        if upright and standing:
            self.samples.append(float(eyes[1] / EYE_TO_STATURE))

    def estimate(self) -> tuple[Optional[float], float]:
        """(height m or None, confidence)."""
        if not self.samples:
            return None, 0.0
        values = np.array(self.samples)
        height = float(np.median(values))
        spread = 1.4826 * float(np.median(np.abs(values - height))) if len(values) > 2 else self.spread_m
        error = 1.25 * spread / np.sqrt(len(values))  # the median's standard error
        confidence = len(values) / (len(values) + self.half_samples) * float(np.exp(-error / self.spread_m))
        return height, confidence
