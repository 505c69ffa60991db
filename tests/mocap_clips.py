"""Real human motion: the CMU motion-capture clips in tests/data/mocap/ (see its README) as world
joints in the 308-keypoint layout, with foot contacts, and as a `Walk` seen by bench/rig.py's
tilted camera.

`read_bvh` parses a BVH file (hierarchy, offsets, channels; rotations in the listed order, intrinsic)
and `forward` gives every joint's world position and rotation. `load_clips` maps the CMU skeleton to
keypoints: hips, knees, ankles, shoulders, elbows, wrists and the neck base at their joints; the heel,
big and small toes, nose, eyes and ears at fixed offsets in the ankle's, toe's and head's frames.
World: metres, y up, the floor at y = 0. A capture's world need not be level with its floor (CMU
07_04's stance feet rise 5 cm over its 3.5 m walk, 0.8 degrees), so `level_floor` fits a plane to the
feet where they touch down (the lower envelope of each frame's lowest foot point) and turns the clip
so that plane is y = 0: the true up is the floor's normal. True contacts, from the clean motion: a
heel within CONTACT_HEIGHT of its lowest point in the clip (its 2nd percentile) and moving slower than
CONTACT_SPEED along the floor (the slope of a line through its positions over CONTACT_WINDOW frames)
(`heel_contacts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.data import keypoint_names

FOLDER = Path(__file__).resolve().parent / "data" / "mocap"
CLIPS = ("cmu_131_01", "cmu_131_02", "cmu_131_03")  # stylised (subject 131): start walk stop x2, start hop stop
WALKS = ("cmu_07_04", "cmu_07_06", "cmu_08_11")  # everyday walking (subjects 7 and 8), 3.1-3.7 s each
HELD_OUT = ("cmu_35_05", "cmu_16_32", "cmu_39_03")  # everyday walking (subjects 35, 16, 39), added after the tuning
OTHER_GAITS = ("cmu_16_18", "cmu_35_24", "cmu_09_03")  # a walk turning 90 degrees left (subject 16), 3.5 m/s runs
# (subjects 35 and 9): after the tuning of the walks (09_03 held out from the running rules too)
UNSEEN = ("cmu_38_01", "cmu_55_04", "cmu_05_01")  # everyday walking (subjects 38, 55, 5), added after all the tuning
# and measured once (issue 32 round 22): nothing was chosen on them
CONTACT_HEIGHT, CONTACT_SPEED, CONTACT_WINDOW = 0.03, 0.15, 3  # m above the floor, m/s, frames
ENVELOPE = 15  # frames (0.5 s at 30 fps): longer than a stance, so every window holds one
ACROSS_SPREAD = 0.08  # m RMS: lowest foot points spread less than this across their path are a straight walk
MIN_SLOPE_SPAN = 1.0  # m: lowest foot points spanning less than this along their path set no slope (in place)
NAMES = keypoint_names()


@dataclass(frozen=True)
class Bvh:
    names: list[str]
    parents: np.ndarray     # (J,) -1 for the root
    offsets: np.ndarray     # (J, 3)
    channels: list[list[str]]
    motion: np.ndarray      # (T, C)
    frame_time: float


def read_bvh(path: Path) -> Bvh:
    tokens = Path(path).read_text().split()
    names, parents, offsets, channels, stack = [], [], [], [], []
    i, last = 0, -1
    while tokens[i] != "MOTION":
        word = tokens[i]
        if word in ("ROOT", "JOINT"):
            names.append(tokens[i + 1])
            parents.append(stack[-1] if stack else -1)
            offsets.append(None)
            channels.append([])
            last = len(names) - 1
            i += 2
        elif word == "End":  # an end site: skipped (a block with an offset)
            depth = 0
            while True:
                i += 1
                depth += tokens[i] == "{"
                if tokens[i] == "}":
                    depth -= 1
                    if depth == 0:
                        break
            i += 1
        elif word == "{":
            stack.append(last)
            i += 1
        elif word == "}":
            stack.pop()
            i += 1
        elif word == "OFFSET":
            offsets[stack[-1]] = [float(v) for v in tokens[i + 1:i + 4]]
            i += 4
        elif word == "CHANNELS":
            count = int(tokens[i + 1])
            channels[stack[-1]] = tokens[i + 2:i + 2 + count]
            i += 2 + count
        else:
            i += 1
    frames = int(tokens[i + 2])
    frame_time = float(tokens[i + 5])
    width = sum(len(c) for c in channels)
    motion = np.array(tokens[i + 6:i + 6 + frames * width], dtype=np.float64).reshape(frames, width)
    return Bvh(names, np.array(parents), np.array(offsets), channels, motion, frame_time)


def forward(bvh: Bvh) -> tuple[np.ndarray, np.ndarray]:
    """(T, J, 3) joint positions and (T, J, 3, 3) global rotations."""
    frames, count = len(bvh.motion), len(bvh.names)
    positions, rotations = np.zeros((frames, count, 3)), np.zeros((frames, count, 3, 3))
    column = 0
    for j in range(count):
        names = bvh.channels[j]
        values = bvh.motion[:, column:column + len(names)]
        column += len(names)
        axes = "".join(n[0] for n in names if n.endswith("rotation"))
        angles = values[:, [k for k, n in enumerate(names) if n.endswith("rotation")]]
        local = Rotation.from_euler(axes.upper(), angles, degrees=True).as_matrix()
        shift = values[:, [k for k, n in enumerate(names) if n.endswith("position")]] if "Xposition" in names else 0.0
        parent = bvh.parents[j]
        if parent < 0:
            positions[:, j] = bvh.offsets[j] + shift
            rotations[:, j] = local
        else:
            positions[:, j] = positions[:, parent] + rotations[:, parent] @ bvh.offsets[j]
            rotations[:, j] = rotations[:, parent] @ local
    return positions, rotations


@dataclass(frozen=True)
class Clip:
    name: str
    joints: np.ndarray     # (T, K, 3) world metres, NaN where not placed
    contacts: np.ndarray   # (T, 2) bool
    fps: float


_AT_JOINT = {"left_hip": "LeftHip", "right_hip": "RightHip", "left_knee": "LeftKnee", "right_knee": "RightKnee",
             "left_ankle": "LeftAnkle", "right_ankle": "RightAnkle", "left_shoulder": "LeftShoulder",
             "right_shoulder": "RightShoulder", "left_elbow": "LeftElbow", "right_elbow": "RightElbow",
             "left_wrist": "LeftWrist", "right_wrist": "RightWrist", "neck": "lowerneck"}
# (keypoint, joint whose frame holds it, offset in that joint's rest frame: x = the body's left, y up, z forward)
_IN_FRAME = [("left_heel", "LeftAnkle", (0.0, -0.065, -0.05)), ("right_heel", "RightAnkle", (0.0, -0.065, -0.05)),
             ("left_big_toe", "LeftToe", (-0.025, -0.01, 0.06)), ("left_small_toe", "LeftToe", (0.03, -0.01, 0.045)),
             ("right_big_toe", "RightToe", (0.025, -0.01, 0.06)), ("right_small_toe", "RightToe", (-0.03, -0.01, 0.045)),
             ("nose", "Head", (0.0, 0.04, 0.1)), ("left_eye", "Head", (0.032, 0.07, 0.08)),
             ("right_eye", "Head", (-0.032, 0.07, 0.08)), ("left_ear", "Head", (0.075, 0.05, -0.01)),
             ("right_ear", "Head", (-0.075, 0.05, -0.01))]


_FEET = [NAMES.index(f"{s}_{p}") for s in ("left", "right") for p in ("heel", "big_toe", "small_toe")]


def level_floor(joints: np.ndarray, across: bool = True) -> np.ndarray:
    """The clip turned and shifted so the floor its feet stand on is y = 0: a least-squares plane through
    each frame's lowest foot point, refitted to the points within 1 cm above it. A straight walk (those
    points spread less than ACROSS_SPREAD across their main direction), or any clip with `across` False (a
    capture whose vertical is trusted across its path), is fitted by `_slope_along` instead; a clip whose
    points span less than MIN_SLOPE_SPAN along that direction (in place) is only shifted."""
    feet = joints[:, _FEET]
    lowest = feet[np.arange(len(feet)), np.argmin(feet[..., 1], axis=1)]  # (T, 3)
    ground = lowest[:, [0, 2]]
    _, spread, axes = np.linalg.svd(ground - ground.mean(axis=0), full_matrices=False)
    if np.ptp(ground @ axes[0]) < MIN_SLOPE_SPAN:
        gx, gz = 0.0, 0.0
    elif not across or spread[1] / np.sqrt(len(ground)) < ACROSS_SPREAD:
        gx, gz = _slope_along(lowest, axes[0])
    else:
        keep = lowest[:, 1] <= np.percentile(lowest[:, 1], 30)
        for _ in range(10):
            a = np.c_[lowest[keep][:, [0, 2]], np.ones(keep.sum())]
            (gx, gz, c), *_ = np.linalg.lstsq(a, lowest[keep][:, 1], rcond=None)
            above = lowest[:, 1] - (gx * lowest[:, 0] + gz * lowest[:, 2] + c)
            new = above < 0.01
            if (new == keep).all() or new.sum() < 10:
                break
            keep = new
    up = np.array([-gx, 1.0, -gz]) / np.linalg.norm([-gx, 1.0, -gz])
    turn, _ = Rotation.align_vectors([[0.0, 1.0, 0.0]], [up])
    out = joints @ turn.as_matrix().T
    flat = out[:, _FEET]
    lowest = flat[np.arange(len(flat)), np.argmin(flat[..., 1], axis=1), 1]
    return out - np.array([0.0, np.percentile(lowest, 2), 0.0])


def _slope_along(lowest: np.ndarray, direction: np.ndarray) -> tuple[float, float]:
    """A straight walk's floor gradient (d y / d x, d y / d z): only the slope along the path `direction`
    (unit, x-z), the capture's vertical kept across it, since two foot lines 0.1-0.2 m apart cannot set
    that tilt (1 cm of left/right foot-height difference is 3 degrees; a plane fitted 2.3 on 07_06 and 28
    on 08_11). The line goes through the stance bottoms (each frame's lowest point that is within 1 cm
    of the lowest ENVELOPE frames either side: all along the walk, where the lowest 30 % overall lie at
    one end of a sloped capture floor), refitted to the points within 1 cm of it."""
    along, y = lowest[:, [0, 2]] @ direction, lowest[:, 1]
    keep = y <= np.array([y[max(t - ENVELOPE, 0):t + ENVELOPE + 1].min() for t in range(len(y))]) + 0.01
    for _ in range(10):
        slope, offset = np.polyfit(along[keep], y[keep], 1)
        new = np.abs(y - (slope * along + offset)) < 0.01
        if (new == keep).all() or new.sum() < 10:
            break
        keep = new
    return tuple(slope * direction)


def heel_contacts(joints: np.ndarray, fps: float, height: float = CONTACT_HEIGHT, speed_gate: float = CONTACT_SPEED
                  ) -> np.ndarray:
    """(T, 2) a heel on the floor and still: within `height` of its lowest (CONTACT_HEIGHT) and slower than
    `speed_gate` (CONTACT_SPEED) along the floor (the slope of a least-squares line over CONTACT_WINDOW frames).
    joints: (T, K, 3) world metres, y up (only the heels are read)."""
    out = []
    half = CONTACT_WINDOW // 2
    for side in ("left", "right"):
        heel = joints[:, NAMES.index(f"{side}_heel")]
        speed = np.zeros(len(heel))
        for t in range(len(heel)):
            w = heel[max(t - half, 0):t + half + 1][:, [0, 2]]
            dt = np.arange(len(w)) - (len(w) - 1) / 2
            speed[t] = np.linalg.norm(dt @ (w - w.mean(axis=0)) / (dt @ dt)) * fps
        low = heel[:, 1] - np.percentile(heel[:, 1], 2) < height
        out.append(low & (speed < speed_gate))
    return np.stack(out, axis=1)


def bvh_keypoints(path: Path) -> tuple[np.ndarray, float]:
    """A BVH file of the CMU (cgspeed) skeleton as (T, K, 3) keypoints in its capture's world (metres, NaN
    where not placed; not levelled) and its frame rate."""
    return skeleton_keypoints(read_bvh(path))


def skeleton_keypoints(bvh: Bvh) -> tuple[np.ndarray, float]:
    """`bvh_keypoints` of a BVH already read (the cgspeed joint names, metres)."""
    positions, rotations = forward(bvh)
    index = {n: i for i, n in enumerate(bvh.names)}
    joints = np.full((len(positions), len(NAMES), 3), np.nan)
    for key, joint in _AT_JOINT.items():
        joints[:, NAMES.index(key)] = positions[:, index[joint]]
    for key, joint, offset in _IN_FRAME:
        joints[:, NAMES.index(key)] = positions[:, index[joint]] + rotations[:, index[joint]] @ np.array(offset)
    return joints, 1.0 / bvh.frame_time


@lru_cache(maxsize=None)
def load_clip(name: str) -> Clip:
    joints, fps = bvh_keypoints(FOLDER / f"{name}.bvh")
    joints = level_floor(joints)  # the floor at y = 0
    return Clip(name, joints, heel_contacts(joints, fps), fps)


def load_clips(names=CLIPS) -> list[Clip]:
    return [load_clip(name) for name in names]


def clip_walk(clip: Clip, frames: int | None = None, heading: float = 0.0):
    """The clip as a `tests.ground_synthetic.Walk` seen by its camera (tilted 15 degrees, 1.5 m up):
    the clip's ground path centred 4 m in front of it, turned `heading` degrees about the vertical
    (0: as captured)."""
    from tests.ground_synthetic import CENTRE, FOCAL, Walk, camera_pose

    world = clip.joints[:frames].copy()
    if heading:
        world = world @ Rotation.from_euler("y", heading, degrees=True).as_matrix().T
    hips = world[:, [NAMES.index("left_hip"), NAMES.index("right_hip")]].mean(axis=1)
    middle = (hips.min(axis=0) + hips.max(axis=0)) / 2
    world[..., 0] -= middle[0]
    world[..., 2] += 4.0 - middle[2]
    rotation, centre = camera_pose()
    camera = (world - centre) @ rotation.T
    pixels = FOCAL * camera[..., :2] / camera[..., 2:] + CENTRE
    times = np.arange(len(world)) / clip.fps
    return Walk(world, camera, pixels, clip.contacts[:frames].copy(), rotation @ np.array([0.0, 1.0, 0.0]), times)
