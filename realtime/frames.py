"""The data that flows through the pipeline: `Frame`, `Person`, `DenseMaps`.

    capture -> detect -> infer -> smooth -> render / export

Each stage returns a *new* frame with `dataclasses.replace` and fills only its
own fields; nobody mutates another stage's fields:

    capture  index, timestamp, image, dropped_before, read_at
    detect   people (box, box_score), boxes_from
    infer    people (keypoints, keypoint_scores, keypoints3d), dense
    smooth   people (track_id, keypoints_smoothed, predicted)
    face     people (face, lips_open, head_rotation)
    egomotion odometry (the camera's pose in the odometry frame, for the ground and world stages)
    ground   people (contacts; keypoints3d refined: scale-steadied, lifted between depth frames), floor_up
    world    camera (the camera in the world); people (height; contacts again, in the world, while `camera.world`)
    motion   people (keypoints3d_smoothed, bones)
    live     (nothing: sends datagrams; the avatar gets the frame here)
    render   overlay

Arrays are numpy at this boundary (tensors stay inside `infer`). Coordinates
are pixels of the original image, x right, y down; K = 308 keypoints in the
order of `realtime/data/keypoints308.json`. A keypoint that is not known is
marked by a mask or NaN, never by (0, 0).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

import numpy as np


@dataclass(frozen=True)
class Person:
    """One person in one frame.

    box:                (4,) float32 xyxy, original-image pixels.
    box_score:          detector confidence in [0, 1] (1.0 for boxes not from the detector).
    track_id:           stable integer identity across frames, set by the smooth stage;
                        None while the tracker has not confirmed the person (tentative).
    keypoints:          (K, 2) float32 pixels, raw model output (set by infer); NaN where
                        the heatmap has no peak at all (score <= 0).
    keypoint_scores:    (K,) float32 raw heatmap maxima (may exceed 1 or be <= 0).
    keypoints_smoothed: (K, 2) float32 pixels after temporal filtering, or None.
    predicted:          (K,) bool, True where the filter predicted instead of measuring
                        (set together with keypoints_smoothed).
    keypoints3d:        (K, 3) float32 metres in the camera frame, NaN where unknown. Infer sets it
                        on depth frames; the ground stage (when it runs) steadies its scale and
                        fills the frames between depth frames by lifting the 2D keypoints.
    face:               (F,) float32 expression weights in [0, 1], ARKit blendshapes in the order of
                        `realtime.rig.face.ARKIT_NAMES`; None where the face could not be read.
    head_rotation:      (4,) float32 quaternion x, y, z, w of the head relative to the person's
                        neutral head, rig axes (Y up, facing +Z); set together with `face`.
    lips_open:          the inner lips apart in [0, 1] (no ARKit name of its own; feeds the VRM
                        vowels); set together with `face`.
    contacts:           (2,) bool, the left and right foot on the floor (`realtime.rig.ground`);
                        None until the floor is known or without 3D keypoints.
    keypoints3d_smoothed: (K, 3) float32 metres, `keypoints3d` through the live filter (the
                        motion stage); NaN where unknown. What `--osc` sends.
    bones:              the solved skeleton (`Bones`, the motion stage); None without 3D. Its root is
                        in the world frame (y up, floor at 0) on frames whose `Frame.camera.world` is True.
    height:             (stature metres, confidence 0..1) from the world stage (`realtime.rig.world.
                        HeightEstimator`), rounded to `HEIGHT_DECIMALS`; None until measured.
    """

    box: np.ndarray
    box_score: float = 1.0
    track_id: Optional[int] = None
    keypoints: Optional[np.ndarray] = None
    keypoint_scores: Optional[np.ndarray] = None
    keypoints_smoothed: Optional[np.ndarray] = None
    predicted: Optional[np.ndarray] = None
    keypoints3d: Optional[np.ndarray] = None
    face: Optional[np.ndarray] = None
    head_rotation: Optional[np.ndarray] = None
    contacts: Optional[np.ndarray] = None
    lips_open: Optional[float] = None
    keypoints3d_smoothed: Optional[np.ndarray] = None
    bones: Optional["Bones"] = None
    height: Optional[tuple[float, float]] = None

    def __post_init__(self) -> None:
        if np.shape(self.box) != (4,):
            raise ValueError(f"Person.box must have shape (4,), got {np.shape(self.box)}")
        if self.keypoints is not None and self.keypoint_scores is not None:
            if self.keypoints.shape[:1] != self.keypoint_scores.shape:
                raise ValueError("Person.keypoints (K, 2) and keypoint_scores (K,) disagree on K")

    @property
    def smoothed(self) -> bool:
        return self.keypoints_smoothed is not None

    @property
    def best_keypoints(self) -> Optional[np.ndarray]:
        """Smoothed keypoints when the smooth stage ran, else the raw ones."""
        return self.keypoints_smoothed if self.keypoints_smoothed is not None else self.keypoints

    def replace(self, **changes) -> "Person":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Bones:
    """One person's solved skeleton in one frame (the motion stage), in rig axes: right-handed,
    Y up, the character facing +Z, +X the character's left, metres.

    names:         (B,) bone names, VRM 1.0 humanoid names (`realtime.rig.bones.bone_table` order,
                   parents first; the first is the hips, the root).
    offsets:       (B, 3) float64 each bone's rest offset from its parent (the skeleton estimated so
                   far; the root's is its height above the floor at rest).
    root_position: (3,) float64 where the hips are (the root's translation).
    rotations:     (B, 4) float64 local quaternions x, y, z, w relative to the T-pose.
    held:          (B,) bool, True where a bone kept its last rotation (its points were not seen).
    root_held:     True when the root kept its last position.

    Values are rounded to the decimals the tracks file keeps (`BONE_DECIMALS`), so a frame read
    back from a tracks file holds the very same numbers and a replay sends the same bytes.
    """

    names: tuple[str, ...]
    offsets: np.ndarray
    root_position: np.ndarray
    rotations: np.ndarray
    held: np.ndarray
    root_held: bool = False

    def __post_init__(self) -> None:
        count = len(self.names)
        shapes = {"offsets": (count, 3), "root_position": (3,), "rotations": (count, 4), "held": (count,)}
        for name, shape in shapes.items():
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"Bones.{name} must have shape {shape}, got {np.shape(getattr(self, name))}")

    @property
    def positions(self) -> np.ndarray:
        """(B, 3) local positions: the rest offsets, the root at `root_position`."""
        out = np.array(self.offsets, dtype=np.float64)
        out[0] = self.root_position
        return out


# Decimals of `Bones` (and of the tracks file's "bones"): 0.01 mm, 1e-6 of a unit quaternion.
BONE_DECIMALS = {"offsets": 5, "root_position": 5, "rotations": 6}


def rounded_bones(names, offsets, root_position, rotations, held, root_held: bool) -> Bones:
    """A `Bones` with its numbers rounded to `BONE_DECIMALS`."""
    return Bones(tuple(names), np.round(np.asarray(offsets, np.float64), BONE_DECIMALS["offsets"]),
                 np.round(np.asarray(root_position, np.float64), BONE_DECIMALS["root_position"]),
                 np.round(np.asarray(rotations, np.float64), BONE_DECIMALS["rotations"]),
                 np.asarray(held, bool), bool(root_held))


# Decimals of `Camera` (and of the tracks file's "camera"): 0.01 mm, 1e-6 of a unit quaternion, 0.01 px.
CAMERA_DECIMALS = {"position": 5, "rotation": 6, "intrinsics": 2, "pointmap_scale": 6}
HEIGHT_DECIMALS = 3  # Person.height: mm and 0.001 of confidence
FLOOR_UP_DECIMALS = 6  # Frame.floor_up (and the tracks file's "floor_up"): 1e-6 of a unit vector, 0.00006 degrees
CAMERA_STATUS = ("waiting", "static", "tracking", "lost")


@dataclass(frozen=True)
class Camera:
    """The camera of one frame in the world (the world stage, `realtime.stages.world`; the egomotion
    stage's pose before the world is fixed is `Odometry`).

    The world: metres, y up (the floor's normal), origin on the floor under the first tracked
    person's start, z along the floor towards the first camera (the rig axes of `Bones`); with a
    static camera it is that camera's floor frame. Camera axes: x right, y down, z forward.

    position:   (3,) float64 the camera's centre in the world.
    rotation:   (4,) float64 quaternion x, y, z, w of world_from_camera's rotation.
    intrinsics: (4,) float64 fx, fy, cx, cy in pixels of the original image (estimated from the
                pointmaps), or None before the first pointmap.
    status:     'waiting' (no pointmap yet), 'static' (held still), 'tracking', 'lost' (too few
                background corners: the last pose is held).
    world:      True when this frame's people (`Bones` root, `contacts`) are in the world: the camera
                was seen to move (`--camera auto`) or is said to (`--camera moving`) and the floor is
                known; False: they are camera-relative, as without a world stage.
    grounded:   False while the world frame is provisional (the floor not fitted yet).
    pointmap_scale: on a frame with a pointmap of its own, that pointmap's metric scale against the
                camera path's metres, measured on the background by the egomotion stage (1.02: its points
                are 2 % too far); the ground stage divides a moving camera's people's measured 3D by it, so
                they share the camera path's metres and lose the pointmap's per-frame scale jitter. None on
                other frames and without egomotion (`--camera static`).

    Numbers are rounded to `CAMERA_DECIMALS`, so a frame read back from a tracks file holds the
    very same values (`world_from_camera` is computed from them).
    """

    position: np.ndarray
    rotation: np.ndarray
    intrinsics: Optional[np.ndarray] = None
    status: str = "static"
    world: bool = False
    grounded: bool = False
    pointmap_scale: Optional[float] = None

    def __post_init__(self) -> None:
        if np.shape(self.position) != (3,) or np.shape(self.rotation) != (4,):
            raise ValueError("Camera.position must be (3,) and Camera.rotation (4,)")
        if self.intrinsics is not None and np.shape(self.intrinsics) != (4,):
            raise ValueError(f"Camera.intrinsics must be (4,) fx, fy, cx, cy, got {np.shape(self.intrinsics)}")
        if self.status not in CAMERA_STATUS:
            raise ValueError(f"Camera.status must be one of {CAMERA_STATUS}, got {self.status!r}")
        if self.pointmap_scale is not None and not (np.isfinite(self.pointmap_scale) and self.pointmap_scale > 0):
            raise ValueError(f"Camera.pointmap_scale must be a positive number or None, got {self.pointmap_scale!r}")

    @property
    def world_from_camera(self) -> np.ndarray:
        """(4, 4) float64: camera coordinates -> world coordinates."""
        x, y, z, w = np.asarray(self.rotation, np.float64) / np.linalg.norm(self.rotation)
        out = np.eye(4)
        out[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                       [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                       [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
        out[:3, 3] = self.position
        return out


@dataclass(frozen=True)
class Odometry:
    """The camera of one frame in the odometry frame (the egomotion stage, `realtime.stages.egomotion`), for
    the ground stage (a planted foot held still while the camera moves) and the world stage (which anchors it
    in the world and hands on `Camera`). Not rounded, not written to the tracks file.

    The odometry frame is the first pointmap frame's camera (x right, y down, z forward, metres).

    odometry_from_camera: (4, 4) float64 the camera's pose in the odometry frame.
    intrinsics:     (4,) float64 fx, fy, cx, cy in pixels of the original image, or None before the first pointmap.
    status:         as `Camera.status`.
    moving:         True when the camera moves: seen to move (`--camera auto`) or said to (`--camera moving`).
    pointmap_scale: as `Camera.pointmap_scale` (measured here, handed on by the world stage).
    """

    odometry_from_camera: np.ndarray
    intrinsics: Optional[np.ndarray] = None
    status: str = "static"
    moving: bool = False
    pointmap_scale: Optional[float] = None

    def __post_init__(self) -> None:
        if np.shape(self.odometry_from_camera) != (4, 4):
            raise ValueError(f"Odometry.odometry_from_camera must be (4, 4), got {np.shape(self.odometry_from_camera)}")
        if self.intrinsics is not None and np.shape(self.intrinsics) != (4,):
            raise ValueError(f"Odometry.intrinsics must be (4,) fx, fy, cx, cy, got {np.shape(self.intrinsics)}")
        if self.status not in CAMERA_STATUS:
            raise ValueError(f"Odometry.status must be one of {CAMERA_STATUS}, got {self.status!r}")


def _quaternion(m: np.ndarray) -> np.ndarray:
    """(3, 3) rotation -> (4,) unit quaternion x, y, z, w with w >= 0 (Shepperd's method)."""
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * np.sqrt(trace + 1.0)
        q = np.array([(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s])
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(max(1.0 + m[i, i] - m[j, j] - m[k, k], 1e-300))
        q = np.empty(4)
        q[i], q[j], q[k], q[3] = 0.25 * s, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s, (m[k, j] - m[j, k]) / s
    q /= np.linalg.norm(q)
    return q if q[3] >= 0 else -q


def rounded_camera(world_from_camera: np.ndarray, intrinsics: Optional[np.ndarray], status: str, world: bool,
                   grounded: bool, pointmap_scale: Optional[float] = None) -> Camera:
    """A `Camera` from a (4, 4) pose, its numbers rounded to `CAMERA_DECIMALS` (the quaternion with w >= 0)."""
    quat = _quaternion(np.asarray(world_from_camera, np.float64)[:3, :3])
    return Camera(np.round(np.asarray(world_from_camera, np.float64)[:3, 3], CAMERA_DECIMALS["position"]),
                  np.round(quat, CAMERA_DECIMALS["rotation"]),
                  None if intrinsics is None else np.round(np.asarray(intrinsics, np.float64), CAMERA_DECIMALS["intrinsics"]),
                  status, bool(world), bool(grounded),
                  None if pointmap_scale is None else round(float(pointmap_scale), CAMERA_DECIMALS["pointmap_scale"]))


class DenseMaps:
    """Per-pixel outputs of the whole-image tasks for one frame, by field name.

    Each map covers the whole original image, possibly at a lower resolution
    than the image (resize before overlaying). A field that is absent is None.
    The built-in tasks (`realtime.tasks`) fill:

    seg:       (h, w) uint8 class index (0 = background, `seg29.json` order).
    normal:    (h, w, 3) float32 unit normals in camera space (x right, y down, z forward).
    pointmap:  (h, w, 3) float32 metric camera-space points, metres.
    depth:     (h, w) float32 metres (the pointmap's Z).
    albedo:    (h, w, 3) float32 RGB base colour in [0, 1].

    A registered task adds its own field; read any field with `get(name)`.
    computed_on: index of the frame these maps were computed on, the oldest of them when some
               are reused: dense tasks may run every N frames, and seg every other frame when
               a live run is behind, their last result reused in between.
               `computed_on_of(field)` says it per map.
    """

    __slots__ = ("_maps", "computed_on", "_computed_on_each")

    def __init__(self, computed_on: Optional[int] = None, *, computed_on_each: Optional[dict[str, int]] = None,
                 **maps: Optional[np.ndarray]) -> None:
        object.__setattr__(self, "_maps", {k: v for k, v in maps.items() if v is not None})
        each = {k: v for k, v in (computed_on_each or {}).items() if k in self._maps}
        if computed_on is None and each:
            computed_on = min(each.values())
        object.__setattr__(self, "computed_on", computed_on)
        object.__setattr__(self, "_computed_on_each", each)

    def computed_on_of(self, name: str) -> Optional[int]:
        """The index of the frame map `name` was computed on (`computed_on` if not said per map)."""
        return self._computed_on_each.get(name, self.computed_on)

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def get(self, name: str) -> Optional[np.ndarray]:
        return self._maps.get(name)

    @property
    def fields(self) -> tuple[str, ...]:
        """The names of the maps present."""
        return tuple(self._maps)

    seg = property(lambda self: self._maps.get("seg"))
    normal = property(lambda self: self._maps.get("normal"))
    pointmap = property(lambda self: self._maps.get("pointmap"))
    depth = property(lambda self: self._maps.get("depth"))
    albedo = property(lambda self: self._maps.get("albedo"))

    def __repr__(self) -> str:
        return f"DenseMaps(fields={self.fields}, computed_on={self.computed_on})"


@dataclass(frozen=True)
class Frame:
    """One input frame and everything the stages have added to it.

    index:          0-based position in the source (dropped frames keep their numbers).
    timestamp:      seconds since the start of the source, from the container's
                    pts (files, streams) or the capture clock (webcams).
    image:          (H, W, 3) uint8 RGB.
    dropped_before: frames the source gate dropped since the previous frame (live sources).
    read_at:        `time.perf_counter()` when the frame was read; only for latency metrics.
    people:         persons found in this frame.
    boxes_from:     where the boxes came from: "detector", "pose", "seg" or "frame" (the
                    whole frame, also when the detector found nobody).
    dense:          whole-image task outputs by field (`DenseMaps`), if any such task ran.
    odometry:       the camera in the odometry frame (`Odometry`, the egomotion stage); None without one.
    camera:         the camera in the world (`Camera`, the world stage); None without one.
    floor_up:       (3,) float64 the floor's up (its unit normal) in this frame's camera (x right, y down,
                    z forward), measured by the ground stage from the pointmap's background
                    (`realtime.rig.floor_scene.ScenePlanes`) and rounded to `FLOOR_UP_DECIMALS`; None when
                    not measured (no pointmap yet, `scene_floor=False`, too little floor in view). The
                    world stage takes the world's up from it.
    overlay:        (H', W', 3) uint8 RGB picture composed by the render stage.
    stage_seconds:  time each stage spent on this frame, by stage name.
    """

    index: int
    timestamp: float
    image: np.ndarray
    dropped_before: int = 0
    read_at: float = 0.0
    people: tuple[Person, ...] = ()
    boxes_from: Optional[str] = None
    dense: Optional[DenseMaps] = None
    odometry: Optional[Odometry] = None
    camera: Optional[Camera] = None
    floor_up: Optional[np.ndarray] = None
    overlay: Optional[np.ndarray] = None
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.image.ndim != 3 or self.image.shape[2] != 3 or self.image.dtype != np.uint8:
            raise ValueError(
                f"Frame.image must be (H, W, 3) uint8 RGB, got {self.image.shape} {self.image.dtype}"
            )
        if self.floor_up is not None and np.shape(self.floor_up) != (3,):
            raise ValueError(f"Frame.floor_up must have shape (3,), got {np.shape(self.floor_up)}")

    @property
    def height(self) -> int:
        return self.image.shape[0]

    @property
    def width(self) -> int:
        return self.image.shape[1]

    def replace(self, **changes) -> "Frame":
        return dataclasses.replace(self, **changes)

    def with_stage_time(self, stage: str, seconds: float, **changes) -> "Frame":
        """A copy with `changes` applied and the stage's time recorded."""
        return dataclasses.replace(self, stage_seconds={**self.stage_seconds, stage: seconds}, **changes)
