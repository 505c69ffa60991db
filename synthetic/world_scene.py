"""A moving camera in a textured room with walking people: what camera egomotion sees, with its truth.

World: metres, y up, the floor at y = 0, inside a closed box room (x -6..6, z -4..10, 4 m high)
whose floor, walls and ceiling carry procedural textures (blurred noise at three scales and
random rectangles: corners to track). Camera: x right, y down, z forward, 640 x 480, f = 500 px.

Ground truth comes from one function, `scene_truth(motions, path, ...)`: any `Motion` (world joints
(T, K, 3) in the 308-keypoint layout, NaN where not placed, and foot contacts) plugs in: the
synthetic walkers (`walkers`, from `tests/ground_synthetic.py`) or real motion capture.
Camera paths (`CAMERA_PATHS`): static, pan, dolly, handheld shake, follow (the first performer).

`SceneRenderer.observe(truth, t, ...)` renders frame t: the gray image (ray-cast per pixel, the
textures sampled with `cv2.remap`, people drawn over as limbs of their projected thickness, 2 grey
levels of sensor noise), the people's mask (as the seg's person classes, its edge moved by up to a
pixel), on depth frames the pointmap (half resolution, camera metres: the frame's scale jitter
SCALE_JITTER and DEPTH_NOISE of the depth per pixel), and the people's keypoints: 2D with
NOISE_PX, 3D (depth frames only) with the same frame scale and NOISE_M per point, as bench/rig.py.
Everything is generated at run time; nothing is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import cv2
import numpy as np

FPS = 30.0
IMAGE_WH = (640, 480)
FOCAL = 500.0
ROOM = np.array([[-6.0, 0.0, -4.0], [6.0, 4.0, 10.0]])  # box corners (min, max)
TEXELS_PER_M = 80
NOISE_PX, NOISE_M, SCALE_JITTER, DEPTH_NOISE = 0.5, 0.015, 0.02, 0.005  # 2D: 1 px at 1280 x 960, as bench/rig.py
IMAGE_NOISE = 2.0  # grey levels
LIMB_RADIUS = 0.07  # m
CAMERA_PATHS = ("static", "pan", "dolly", "handheld", "follow")


@dataclass(frozen=True)
class Motion:
    """joints: (T, K, 3) world metres (NaN where not placed); contacts: (T, 2) bool left / right."""

    joints: np.ndarray
    contacts: np.ndarray


@dataclass(frozen=True)
class SceneTruth:
    joints: np.ndarray              # (P, T, K, 3) world metres
    contacts: np.ndarray            # (P, T, 2)
    world_from_camera: np.ndarray   # (T, 4, 4)
    times: np.ndarray               # (T,) s
    intrinsics: np.ndarray          # (fx, fy, cx, cy) px

    def camera_joints(self, t: int) -> np.ndarray:
        """(P, K, 3) camera metres at frame t."""
        camera_from_world = np.linalg.inv(self.world_from_camera[t])
        return self.joints[:, t] @ camera_from_world[:3, :3].T + camera_from_world[:3, 3]


def look_at(position: np.ndarray, target: np.ndarray) -> np.ndarray:
    """world_from_camera (4, 4) of a camera at `position` looking at `target`, no roll."""
    forward = (target - position) / np.linalg.norm(target - position)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    out = np.eye(4)
    out[:3, :3] = np.stack([right, down, forward], axis=1)
    out[:3, 3] = position
    return out


def _smooth_noise(rng: np.random.Generator, times: np.ndarray, amplitude: float, dims: int) -> np.ndarray:
    """(T, dims) a sum of sinusoids between 0.5 and 3 Hz, RMS ~ amplitude per dim."""
    out = np.zeros((len(times), dims))
    for _ in range(6):
        freq, phase = rng.uniform(0.5, 3.0, dims), rng.uniform(0, 2 * np.pi, dims)
        out += np.sin(2 * np.pi * freq * times[:, None] + phase)
    return out * amplitude / np.sqrt(3.0)


def camera_path(name: str, times: np.ndarray, follow: Optional[np.ndarray] = None, seed: int = 0) -> np.ndarray:
    """(T, 4, 4) world_from_camera for one of CAMERA_PATHS; `follow`: (T, 3) the followed root."""
    rng = np.random.default_rng(seed + 1000)
    home, target = np.array([0.0, 1.5, -1.0]), np.array([0.0, 0.5, 4.0])  # 15 deg down onto the walkers
    span = max(float(times[-1] - times[0]), 1e-6)
    poses = []
    if name == "follow" and follow is None:
        raise ValueError("the follow shot needs the followed root")
    if name == "follow":  # 3.5 m behind the performer's smoothed path, looking at it
        kernel = np.ones(15) / 15
        smooth = np.stack([np.convolve(np.pad(follow[:, i], 7, mode="edge"), kernel, "valid") for i in range(3)], axis=1)
    for i, t in enumerate(times):
        s = (t - times[0]) / span
        if name == "static":
            pose = look_at(home, target)
        elif name == "pan":
            yaw = np.radians(30.0) * np.sin(2 * np.pi * s)
            direction = np.array([np.sin(yaw), 0.0, np.cos(yaw)]) * 5.0
            pose = look_at(home, home + direction + np.array([0.0, -1.0, 0.0]))
        elif name == "dolly":
            position = home + np.array([-1.5 + 3.0 * s, 0.0, 1.2 * s])
            pose = look_at(position, position + (target - home))
        elif name == "handheld":
            pose = look_at(home, target)
        elif name == "follow":
            root = np.array([smooth[i, 0], 0.9, smooth[i, 2]])
            pose = look_at(root + np.array([0.0, 0.8, -3.5]), root)
        else:
            raise ValueError(f"unknown camera path {name!r}; choose one of {', '.join(CAMERA_PATHS)}")
        poses.append(pose)
    poses = np.stack(poses)
    if name in ("handheld", "follow"):  # a hand's shake: ~1.5 cm and ~0.7 deg at 0.5-3 Hz
        from scipy.spatial.transform import Rotation

        shake_t = _smooth_noise(rng, times, 0.015, 3)
        shake_r = Rotation.from_rotvec(np.radians(_smooth_noise(rng, times, 0.7 if name == "handheld" else 0.4, 3)))
        poses[:, :3, 3] += shake_t
        poses[:, :3, :3] = poses[:, :3, :3] @ shake_r.as_matrix()
    return poses


def walkers(count: int, frames: int, seed: int = 0) -> list[Motion]:
    """`tests/ground_synthetic.py`'s walker (exact plants) on `count` circles side by side (2.8 m
    apart, centred 4 m in front of the static camera), each starting at its own phase."""
    from tests.ground_synthetic import walk

    base = walk(frames)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        centre = np.array([2.8 * (i - (count - 1) / 2), 0.0, 4.0 + (0.6 if i % 2 else 0.0)])
        angle = rng.uniform(0, 2 * np.pi)
        c, s = np.cos(angle), np.sin(angle)
        turn = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
        joints = (base.world - np.array([0.0, 0.0, 4.0])) @ turn.T + centre
        out.append(Motion(joints, base.contacts.copy()))
    return out


def scene_truth(motions: Sequence[Motion], path: str, *, fps: float = FPS, seed: int = 0) -> SceneTruth:
    """The ground truth of a scene: the performers' world joints and the camera's path."""
    frames = min(len(m.joints) for m in motions)
    times = np.arange(frames) / fps
    joints = np.stack([m.joints[:frames] for m in motions])
    contacts = np.stack([m.contacts[:frames] for m in motions])
    from realtime.data import keypoint_names

    names = keypoint_names()
    hips = joints[0][:, [names.index("left_hip"), names.index("right_hip")]].mean(axis=1)
    poses = camera_path(path, times, follow=hips, seed=seed)
    w, h = IMAGE_WH
    return SceneTruth(joints, contacts, poses, times, np.array([FOCAL, FOCAL, (w - 1) / 2, (h - 1) / 2]))


@lru_cache(maxsize=4)
def _atlas(seed: int) -> tuple[np.ndarray, int]:
    """Six face textures stacked vertically (uint8), each `side` x `side` texels."""
    rng = np.random.default_rng(seed)
    side = int(TEXELS_PER_M * (ROOM[1] - ROOM[0]).max())
    faces = []
    for _ in range(6):
        tex = np.full((side, side), 128.0, np.float32)
        for sigma, amp in ((2, 25), (10, 30), (40, 35)):
            noise = cv2.GaussianBlur(rng.normal(0, 1, (side, side)).astype(np.float32), (0, 0), sigma)
            tex += amp * noise / max(float(noise.std()), 1e-6)
        for _ in range(120):  # posters, tiles, furniture: corners
            x, y = rng.integers(0, side, 2)
            ww, hh = rng.integers(8, 60, 2)
            cv2.rectangle(tex, (int(x), int(y)), (int(x + ww), int(y + hh)), float(rng.uniform(20, 235)), -1)
        faces.append(np.clip(tex, 0, 255).astype(np.uint8))
    return np.concatenate(faces, axis=0), side


def _rays(wh: tuple[int, int], intrinsics: np.ndarray) -> np.ndarray:
    """(h, w, 3) camera-frame rays with z = 1 through each pixel centre of an image of size wh, for
    intrinsics given at IMAGE_WH."""
    w, h = wh
    fx, fy, cx, cy = intrinsics
    sx, sy = w / IMAGE_WH[0], h / IMAGE_WH[1]
    u = (np.arange(w) + 0.5) / sx - 0.5
    v = (np.arange(h) + 0.5) / sy - 0.5
    uu, vv = np.meshgrid(u, v)
    return np.stack([(uu - cx) / fx, (vv - cy) / fy, np.ones_like(uu)], axis=-1)


def cast_room(world_from_camera: np.ndarray, rays: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ray-cast the room: (depth (h, w) along z, face index (h, w), texture coordinates (h, w, 2) m)."""
    d = rays.astype(np.float32) @ world_from_camera[:3, :3].T.astype(np.float32)  # world directions, not unit
    origin = world_from_camera[:3, 3].astype(np.float32)
    lo, hi = ROOM.astype(np.float32)
    t = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(3):
            ti = (np.where(d[..., i] > 0, hi[i], lo[i]) - origin[i]) / d[..., i]
            t.append(np.where(np.isfinite(ti) & (ti > 0), ti, np.float32(np.inf)))
    axis = np.where(t[0] < t[1], np.where(t[0] < t[2], 0, 2), np.where(t[1] < t[2], 1, 2))
    depth = np.minimum(np.minimum(t[0], t[1]), t[2])  # rays have z = 1: t is the depth
    hit = origin + d * depth[..., None]
    positive = np.where(axis == 0, d[..., 0], np.where(axis == 1, d[..., 1], d[..., 2])) > 0
    face = axis * 2 + positive
    u = np.where(axis == 0, hit[..., 1] - lo[1], hit[..., 0] - lo[0])  # the two coordinates along the face
    v = np.where(axis == 2, hit[..., 1] - lo[1], hit[..., 2] - lo[2])
    return depth, face, np.stack([u, v], axis=-1)


class SceneRenderer:
    """Renders a `SceneTruth` frame by frame (see the module's docstring). seed: the textures'."""

    def __init__(self, seed: int = 0, pointmap_scale: float = 0.5) -> None:
        self.atlas, self.side = _atlas(seed)
        self.pointmap_wh = (int(IMAGE_WH[0] * pointmap_scale), int(IMAGE_WH[1] * pointmap_scale))
        from realtime.data import keypoint_names

        names = keypoint_names()
        self._limbs = [(names.index(a), names.index(b)) for a, b in (
            ("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("right_hip", "right_knee"), ("right_knee", "right_ankle"),
            ("left_ankle", "left_big_toe"), ("right_ankle", "right_big_toe"),
            ("left_heel", "left_big_toe"), ("right_heel", "right_big_toe"),
            ("left_hip", "right_hip"), ("left_hip", "left_shoulder"),
            ("right_hip", "right_shoulder"), ("left_shoulder", "right_shoulder"),
            ("left_hip", "neck"), ("right_hip", "neck"),
            ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"), ("right_shoulder", "right_elbow"),
            ("right_elbow", "right_wrist"), ("neck", "nose"), ("left_ear", "right_ear"))]
        self._rays = {}

    def _rays_for(self, wh: tuple[int, int], intrinsics: np.ndarray) -> np.ndarray:
        if wh not in self._rays:
            self._rays[wh] = _rays(wh, intrinsics)
        return self._rays[wh]

    def observe(self, truth: SceneTruth, t: int, rng: np.random.Generator, depth_frame: bool) -> "Observation":
        pose = truth.world_from_camera[t]
        depth, face, coords = cast_room(pose, self._rays_for(IMAGE_WH, truth.intrinsics))
        map_x = coords[..., 0] * np.float32(TEXELS_PER_M)
        map_y = coords[..., 1] * np.float32(TEXELS_PER_M) + (face * self.side).astype(np.float32)
        image = cv2.remap(self.atlas, map_x, map_y, cv2.INTER_LINEAR).astype(np.float32)
        joints = truth.camera_joints(t)  # (P, K, 3)
        fx, fy, cx, cy = truth.intrinsics
        pixels = np.stack([fx * joints[..., 0] / joints[..., 2] + cx, fy * joints[..., 1] / joints[..., 2] + cy], axis=-1)
        mask = np.zeros(depth.shape, np.uint8)
        person_depth = np.full(depth.shape, np.inf, np.float32)
        for p in np.argsort(-np.nanmean(joints[..., 2], axis=1)):  # far to near
            for limb, (a, b) in enumerate(self._limbs):
                if not (np.isfinite(pixels[p, [a, b]]).all() and joints[p, a, 2] > 0.2 and joints[p, b, 2] > 0.2):
                    continue
                z = float((joints[p, a, 2] + joints[p, b, 2]) / 2)
                thick = max(2, int(2 * LIMB_RADIUS * fx / z))
                pa, pb = tuple(np.round(pixels[p, a]).astype(int)), tuple(np.round(pixels[p, b]).astype(int))
                shade = 40.0 + (limb * 37 + p * 91) % 180
                cv2.line(image, pa, pb, shade, thick)
                cv2.line(mask, pa, pb, 1, thick)
                cv2.line(person_depth, pa, pb, z, thick)
        image += (IMAGE_NOISE * rng.standard_normal(image.shape, np.float32))
        gray = np.clip(image, 0, 255).astype(np.uint8)
        seg = mask.astype(bool)
        edge = int(rng.integers(-1, 2))  # the seg's edge off by up to a pixel
        if edge:
            op = cv2.dilate if edge > 0 else cv2.erode
            seg = op(mask, np.ones((3, 3), np.uint8)).astype(bool)

        scale = 1.0 + rng.normal(0, SCALE_JITTER)
        pointmap = keypoints3d = None
        if depth_frame:
            small = cv2.resize(np.minimum(depth, person_depth), self.pointmap_wh, interpolation=cv2.INTER_NEAREST)
            small = small * scale * (1.0 + rng.normal(0, DEPTH_NOISE, small.shape))
            pointmap = (self._rays_for(self.pointmap_wh, truth.intrinsics) * small[..., None]).astype(np.float32)
            keypoints3d = joints * scale + rng.normal(0, NOISE_M, joints.shape)
        keypoints2d = pixels + rng.normal(0, NOISE_PX, pixels.shape)
        return Observation(gray, seg, pointmap, keypoints2d, keypoints3d)


@dataclass(frozen=True)
class Observation:
    """One frame as the pipeline would see it. gray: (H, W) uint8; person_mask: (H, W) bool;
    pointmap: (H/2, W/2, 3) camera metres or None; keypoints2d: (P, K, 2) px; keypoints3d: (P, K, 3)
    camera metres or None (depth frames only)."""

    gray: np.ndarray
    person_mask: np.ndarray
    pointmap: Optional[np.ndarray]
    keypoints2d: np.ndarray
    keypoints3d: Optional[np.ndarray]
