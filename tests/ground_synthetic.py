"""A grounded walker with exact foot plants, seen by a camera tilted 15 degrees down.

World: metres, Y up, the floor at y = 0. The person walks a circle (radius 1.2 m, centre
4 m in front of the camera) at 0.8 m/s; each foot stands still on the floor for 60 % of a
1.2 s gait cycle (the feet half a cycle apart) and swings to its next plant in an arc.
Knees by two-bone IK from the hips to the ankles; arms hang and swing; head upright.
Camera: 1.5 m above the floor, looking at the circle's centre, pitched 15 degrees down;
pinhole f = 1000 px, 1280 x 720.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from realtime.rig.leg_ik import solve_leg
from tests.mocap_synthetic import NAMES

FPS = 30.0
TILT_DEG = 15.0
FOCAL, CENTRE = 1000.0, np.array([640.0, 360.0])
RADIUS, SPEED, CYCLE, STANCE = 1.2, 0.8, 1.2, 0.6
HIP_HEIGHT, ANKLE_HEIGHT, THIGH, SHIN = 0.9, 0.08, 0.46, 0.46
_K = {n: i for i, n in enumerate(NAMES)}


@dataclass(frozen=True)
class Walk:
    world: np.ndarray      # (T, K, 3) world metres, NaN for points not placed
    camera: np.ndarray     # (T, K, 3) camera metres (x right, y down, z forward)
    pixels: np.ndarray     # (T, K, 2)
    contacts: np.ndarray   # (T, 2) bool, left / right foot planted
    up: np.ndarray         # (3,) the world's up in the camera frame
    times: np.ndarray      # (T,)


def _knee(hip: np.ndarray, knee: np.ndarray, ankle: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The knee that puts the ankle at `target` with the thigh and shin lengths of (hip, knee, ankle)."""
    return solve_leg(hip, knee, target, np.linalg.norm(knee - hip), np.linalg.norm(ankle - knee))[0]


def _path(s: np.ndarray, straight: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Arc length -> (position on the floor (.., 3), forward direction (.., 3)); `straight`: a line along +x through
    the circle's centre instead (the walker's path seen from the side; bench/motion.py turns it to any view)."""
    if straight:
        pos = np.stack([s, np.zeros_like(s), np.full_like(s, 4.0)], axis=-1)
        return pos, np.tile([1.0, 0.0, 0.0], s.shape + (1,))
    a = s / RADIUS
    pos = np.stack([RADIUS * np.cos(a), np.zeros_like(a), 4.0 + RADIUS * np.sin(a)], axis=-1)
    fwd = np.stack([-np.sin(a), np.zeros_like(a), np.cos(a)], axis=-1)
    return pos, fwd


def _lateral(fwd: np.ndarray) -> np.ndarray:
    """The walker's left, on the floor: up x forward."""
    return np.stack([fwd[..., 2], np.zeros(fwd.shape[:-1]), -fwd[..., 0]], axis=-1)


def _foot(t: np.ndarray, shift: float, side: float, speed: float = SPEED, straight: bool = False
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ankle position (T, 3), forward (T, 3) and planted (T,) for one foot (cycle phase shift, side +1 left)."""
    phase = (t / CYCLE + shift) % 1.0
    start = t - phase * CYCLE  # this cycle's plant time
    plant_s = speed * (start + STANCE * CYCLE / 2)  # the hip passes over the foot mid-stance
    pos0, fwd0 = _path(plant_s, straight)
    pos1, fwd1 = _path(plant_s + speed * CYCLE, straight)
    a = pos0 + side * 0.1 * _lateral(fwd0)
    b = pos1 + side * 0.1 * _lateral(fwd1)
    planted = phase < STANCE
    swing = np.clip((phase - STANCE) / (1 - STANCE), 0, 1)[:, None]
    ankle = np.where(planted[:, None], a, (1 - swing) * a + swing * b)
    ankle[:, 1] = ANKLE_HEIGHT + np.where(planted, 0.0, 0.08 * np.sin(np.pi * swing[:, 0]))
    fwd = np.where(planted[:, None], fwd0, (1 - swing) * fwd0 + swing * fwd1)
    return ankle, fwd / np.linalg.norm(fwd, axis=1, keepdims=True), planted


def camera_pose() -> tuple[np.ndarray, np.ndarray]:
    """(R (3, 3) world -> camera rows = camera axes in world, C (3,) camera centre)."""
    c, s = np.cos(np.radians(TILT_DEG)), np.sin(np.radians(TILT_DEG))
    z = np.array([0.0, -s, c])           # forward, pitched down
    y = np.array([0.0, -c, -s])          # image down
    x = np.cross(y, z)                   # image right
    return np.stack([x, y, z]), np.array([0.0, 1.5, 0.0])


def world_from_camera() -> np.ndarray:
    """(4, 4) the still camera's pose in the world (`camera_pose` inverted), as the world stage's camera holds it."""
    rotation, centre = camera_pose()
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = rotation.T, centre
    return pose


def walk(frames: int = 300, fps: float = FPS, *, speed: float = SPEED, straight: bool = False) -> Walk:
    """`frames` frames of the walker at `fps` (its motion is a function of time: any rate gives the same walk), at
    `speed` (m/s) along the circle, or along a straight line (`straight`)."""
    t = np.arange(frames) / fps
    hip_pos, fwd = _path(speed * t, straight)
    left = _lateral(fwd)
    up = np.array([0.0, 1.0, 0.0])
    pelvis = hip_pos + up * (HIP_HEIGHT + 0.02 * np.cos(4 * np.pi * t / CYCLE))[:, None]
    world = np.full((frames, len(NAMES), 3), np.nan)

    def put(name, value):
        world[:, _K[name]] = value

    contacts = []
    for side, sign, shift in (("left", 1.0, 0.0), ("right", -1.0, 0.5)):
        hip = pelvis + sign * 0.09 * left
        ankle, foot_fwd, planted = _foot(t, shift, sign, speed, straight)
        contacts.append(planted)
        foot_left = _lateral(foot_fwd)
        bent = hip + 0.5 * (ankle - hip) + 0.1 * foot_fwd  # knees bend forward
        knee = np.stack([_knee(h, k, a_, a_) for h, k, a_ in zip(hip, bent, ankle)])
        knee = np.stack([_knee(h, h + THIGH * (k - h) / np.linalg.norm(k - h), h + THIGH * (k - h) / np.linalg.norm(k - h)
                                     + SHIN * (a_ - k) / np.linalg.norm(a_ - k), a_) for h, k, a_ in zip(hip, knee, ankle)])
        put(f"{side}_hip", hip)
        put(f"{side}_knee", knee)
        put(f"{side}_ankle", ankle)
        put(f"{side}_heel", ankle - 0.05 * foot_fwd - 0.07 * up)
        put(f"{side}_big_toe", ankle + 0.15 * foot_fwd - sign * 0.03 * foot_left - 0.07 * up)
        put(f"{side}_small_toe", ankle + 0.14 * foot_fwd + sign * 0.03 * foot_left - 0.07 * up)
        shoulder = pelvis + sign * 0.18 * left + 0.5 * up
        swing = 0.15 * np.sin(2 * np.pi * t / CYCLE + (0 if sign > 0 else np.pi))[:, None]
        put(f"{side}_shoulder", shoulder)
        elbow = shoulder - 0.28 * up + swing * fwd
        put(f"{side}_elbow", elbow)
        put(f"{side}_wrist", elbow - 0.25 * up + 1.5 * swing * fwd)
    neck = pelvis + 0.55 * up
    put("neck", neck)
    put("nose", neck + 0.17 * up + 0.09 * fwd)
    for side, sign in (("left", 1.0), ("right", -1.0)):
        put(f"{side}_eye", neck + 0.2 * up + 0.07 * fwd + sign * 0.032 * left)
        put(f"{side}_ear", neck + 0.18 * up - 0.01 * fwd + sign * 0.075 * left)
    rotation, centre = camera_pose()
    camera = (world - centre) @ rotation.T
    pixels = FOCAL * camera[..., :2] / camera[..., 2:] + CENTRE
    return Walk(world, camera, pixels, np.stack(contacts, axis=1), rotation @ up, t)


def at_rate(seen: Walk, fps: float) -> Walk:
    """The same motion sampled at `fps` over the same span of time: world joints interpolated linearly between the
    nearest frames (NaN where either is unknown), seen by `camera_pose`'s camera; a frame's true contacts are those
    of the frame at or before it (the truth's decisions are those of the original rate, whatever the rate asked).
    A rate within 0.1 % of the walk's own is its own (a BVH's frame time of 0.033333 s is 30 fps): the walk as it is."""
    rate = 1.0 / float(np.median(np.diff(seen.times)))
    if abs(fps - rate) < 1e-3 * rate:
        return seen
    times = seen.times[0] + np.arange(int(np.floor((seen.times[-1] - seen.times[0]) * fps + 1e-6)) + 1) / fps
    position = (times - seen.times[0]) * rate
    before = np.clip(np.floor(position + 1e-6).astype(int), 0, len(seen.times) - 1)
    after = np.minimum(before + 1, len(seen.times) - 1)
    share = np.clip(position - before, 0.0, 1.0)[:, None, None]
    world = (1.0 - share) * seen.world[before] + share * seen.world[after]
    rotation, centre = camera_pose()
    camera = (world - centre) @ rotation.T
    pixels = FOCAL * camera[..., :2] / camera[..., 2:] + CENTRE
    return Walk(world, camera, pixels, seen.contacts[before].copy(), seen.up, times)


def feet_across_the_view(fps: float, seed: int, motion, seconds: float, noise: float = 0.004
                         ) -> tuple[np.ndarray, np.ndarray]:
    """The rule-based ContactDetector on both feet facing across the view (heel to toes 0.2 m along x, the feet 0.25 m
    apart in depth, 4 m out, camera y down), as `motion(t)` -> ((the left heel's rise, its toes' rise), (the right's),
    the hips' drop; m) moves them over `seconds`, each point shown with `noise` (m, each frame its own): times and both
    contacts. A heel rising above its toes pivots about them (it comes 0.2 m times one less the pitch's cosine nearer)."""
    heels = [NAMES.index("left_heel"), NAMES.index("right_heel")]
    toes = [[NAMES.index(f"{side}_big_toe"), NAMES.index(f"{side}_small_toe")] for side in ("left", "right")]
    hips = [NAMES.index("left_hip"), NAMES.index("right_hip")]
    rng = np.random.default_rng([seed, int(fps)])
    detector = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES)
    times = np.arange(int(round(seconds * fps)) + 1) / fps
    decided = []
    for t in times:
        *feet, drop = motion(t)
        points = np.full((len(NAMES), 3), np.nan)
        for k, ((heel_rise, toe_rise), z) in enumerate(zip(feet, (3.875, 4.125))):
            pitch = np.arcsin(min(max(heel_rise - toe_rise, 0.0) / 0.2, 1.0))
            points[heels[k]] = [0.2 * (1.0 - np.cos(pitch)), -heel_rise, z] + rng.normal(0.0, noise, 3)
            for toe, side in zip(toes[k], (-0.03, 0.03)):
                points[toe] = [0.2, -toe_rise, z + side] + rng.normal(0.0, noise, 3)
        points[hips] = [[0.1, -0.9 + drop, 3.9], [0.1, -0.9 + drop, 4.1]]
        decided.append(detector.update(t, points))
    return times, np.array(decided)
