"""A synthetic animated humanoid with known local rotations, and the keypoints it makes.

The skeleton uses the solver's own bone table (with fingers) and hand-picked bone
lengths; the motion turns a full circle, bends at the hips, knees, elbows and fingers,
twists the spine, nods the head. Its poses stay inside what the keypoints can express
(see `realtime.rig.bones`): spine and chest only twist about their axis (the
derived spine points lie on the hips -> neck-base line) and the shoulders (clavicles)
stay at rest (the neck base is the shoulders' midpoint). Keypoints are placed at the
bone heads / ends they mark; ears and toes sit across the head and foot.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.data import keypoint_names
from realtime.rig.bones import FINGERS, SIDES, TOES_END, bone_table
from realtime.rig.solver import Skeleton, camera_to_rig, forward_kinematics

NAMES = keypoint_names()
FPS = 30.0
EAR_HALF_WIDTH, TOE_HALF_WIDTH = 0.075, 0.03
CAMERA_DISTANCE = 3.0  # metres in front of the camera


def end_positions(skeleton: Skeleton, heads: np.ndarray, globals_: np.ndarray) -> np.ndarray:
    """(T, B, 3) end sites of the leaf bones (NaN for bones with children)."""
    ends = heads + np.einsum("tbij,bj->tbi", globals_, skeleton.ends)
    return np.where(skeleton.leaves[None, :, None], ends, np.nan)


def synthetic_skeleton() -> Skeleton:
    bones = bone_table(fingers=True)
    offsets, ends = {}, {}
    centre = {"hips": (0, 0, 0), "spine": (0, 0, 0), "chest": (0, 0.25, 0), "neck": (0, 0.25, 0), "head": (0, 0.1, 0)}
    offsets.update(centre)
    ends["head"] = (0, 0.18, 0)
    for side, sx in SIDES:
        s = side
        offsets.update({
            f"{s}Shoulder": (0, 0.25, 0), f"{s}UpperArm": (sx * 0.18, 0, 0), f"{s}LowerArm": (sx * 0.28, 0, 0),
            f"{s}Hand": (sx * 0.25, 0, 0), f"{s}UpperLeg": (sx * 0.09, 0, 0), f"{s}LowerLeg": (0, -0.42, 0),
            f"{s}Foot": (0, -0.42, 0),
        })
        foot = dict((b.name, b) for b in bones)[f"{s}Foot"].rest_primary
        offsets[f"{s}Toes"] = tuple(0.15 * np.array(foot))
        ends[f"{s}Toes"] = TOES_END
        roots = {"Thumb": (sx * 0.02, -0.01, 0.025), "Index": (sx * 0.09, 0, 0.025), "Middle": (sx * 0.095, 0, 0),
                 "Ring": (sx * 0.09, 0, -0.02), "Little": (sx * 0.08, 0, -0.04)}
        for vrm, _, parts in FINGERS:
            direction = np.array((sx, 0, 1)) / np.sqrt(2) if vrm == "Thumb" else np.array((sx, 0, 0))
            offsets[f"{s}{vrm}{parts[0]}"] = roots[vrm]
            offsets[f"{s}{vrm}{parts[1]}"] = tuple(0.04 * direction)
            offsets[f"{s}{vrm}{parts[2]}"] = tuple(0.03 * direction)
            ends[f"{s}{vrm}{parts[2]}"] = tuple(0.025 * direction)
    names = [b.name for b in bones]
    return Skeleton(bones, np.array([offsets[n] for n in names], float), np.array([ends.get(n, (0, 0, 0)) for n in names], float))


def synthetic_motion(skeleton: Skeleton, frames: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """root_position (T, 3) and local rotations (T, B, 4) of a turning, bending person."""
    t = np.arange(frames) / FPS
    phase = np.arange(frames) / frames
    wave = lambda hz, shift=0.0: np.sin(2 * np.pi * hz * t + shift)  # noqa: E731
    euler = {}  # bone -> (T, 3) intrinsic XYZ degrees
    zero = np.zeros(frames)
    euler["hips"] = np.stack([25 * (1 - np.cos(2 * np.pi * 0.4 * t)) / 2, 360 * phase, 5 * wave(0.3)], axis=1)
    euler["spine"] = np.stack([zero, 15 * wave(0.5), zero], axis=1)  # twist only
    euler["chest"] = euler["spine"]
    euler["neck"] = np.stack([10 * wave(0.7), 20 * wave(0.4), zero], axis=1)
    euler["head"] = np.stack([20 * wave(0.9), 35 * wave(0.35, 1.0), 10 * wave(0.6)], axis=1)
    for side, sx in SIDES:
        s = side
        euler[f"{s}UpperArm"] = np.stack([40 * wave(0.3, sx), 30 * wave(0.45), sx * (-60 + 50 * wave(0.25, sx))], axis=1)
        # elbow: a hinge about the bend normal (-sx * Y), from straight to 120 degrees
        euler[f"{s}LowerArm"] = np.stack([zero, -sx * 60 * (1 - np.cos(2 * np.pi * 0.35 * t + sx)), zero], axis=1)
        euler[f"{s}Hand"] = np.stack([30 * wave(0.5), 20 * wave(0.8), 25 * wave(0.6, 2.0)], axis=1)
        euler[f"{s}UpperLeg"] = np.stack([-35 * (1 - np.cos(2 * np.pi * 0.4 * t)) / 2 - 10 * wave(0.7, sx), 10 * wave(0.3),
                                          sx * 8 * wave(0.5)], axis=1)
        # knee hinge about X
        euler[f"{s}LowerLeg"] = np.stack([45 * (1 - np.cos(2 * np.pi * 0.4 * t + 0.5 * sx)), zero, zero], axis=1)
        euler[f"{s}Foot"] = np.stack([15 * wave(0.6, sx), 10 * wave(0.4), 5 * wave(0.9)], axis=1)
        for vrm, _, parts in FINGERS:
            curl = 30 * (1 - np.cos(2 * np.pi * 0.5 * t + (2 if vrm == "Thumb" else 0)))
            for part in parts:
                euler[f"{s}{vrm}{part}"] = np.stack([zero, zero, -sx * curl], axis=1)
    names = skeleton.names
    rotations = np.zeros((frames, len(names), 4))
    rotations[..., 3] = 1.0
    for b, name in enumerate(names):
        if name in euler:
            rotations[:, b] = Rotation.from_euler("XYZ", euler[name], degrees=True).as_quat()
    root = np.stack([0.3 * wave(0.2), 0.9 - 0.1 * (1 - np.cos(2 * np.pi * 0.4 * t)) / 2,
                     -CAMERA_DISTANCE + 0.4 * wave(0.15)], axis=1)
    return root, rotations


def keypoints_from_pose(skeleton: Skeleton, heads: np.ndarray, globals_: np.ndarray) -> np.ndarray:
    """(T, 308, 3) rig-axes keypoints (NaN for those the pose does not place)."""
    index = {n: i for i, n in enumerate(skeleton.names)}
    ends = end_positions(skeleton, heads, globals_)
    points = np.full((heads.shape[0], len(NAMES), 3), np.nan)
    k = {n: i for i, n in enumerate(NAMES)}

    def put(name, value):
        points[:, k[name]] = value

    def across(bone, distance):  # along the bone's global X axis
        return distance * globals_[:, index[bone], :, 0]

    put("neck", heads[:, index["head"]])
    put("left_ear", ends[:, index["head"]] + across("head", EAR_HALF_WIDTH))
    put("right_ear", ends[:, index["head"]] - across("head", EAR_HALF_WIDTH))
    for side, _sx in SIDES:
        s = side
        put(f"{s}_shoulder", heads[:, index[f"{s}UpperArm"]])
        put(f"{s}_elbow", heads[:, index[f"{s}LowerArm"]])
        put(f"{s}_wrist", heads[:, index[f"{s}Hand"]])
        put(f"{s}_hip", heads[:, index[f"{s}UpperLeg"]])
        put(f"{s}_knee", heads[:, index[f"{s}LowerLeg"]])
        put(f"{s}_ankle", heads[:, index[f"{s}Foot"]])
        toes = heads[:, index[f"{s}Toes"]]
        sign = -1.0 if side == "left" else 1.0  # the big toe is on the inside
        put(f"{s}_big_toe", toes + sign * across(f"{s}Foot", TOE_HALF_WIDTH))
        put(f"{s}_small_toe", toes - sign * across(f"{s}Foot", TOE_HALF_WIDTH))
        for vrm, sapiens, parts in FINGERS:
            bones = [index[f"{s}{vrm}{p}"] for p in parts]
            put(f"{s}_{sapiens}_third_joint", heads[:, bones[0]])
            put(f"{s}_{sapiens}2", heads[:, bones[1]])
            put(f"{s}_{sapiens}3", heads[:, bones[2]])
            put(f"{s}_{sapiens}4", ends[:, bones[2]])
    return points


def synthetic_clip(frames: int = 300):
    """(skeleton, root (T, 3), rotations (T, B, 4), heads (T, B, 3) rig, keypoints (T, 308, 3) camera frame)."""
    skeleton = synthetic_skeleton()
    root, rotations = synthetic_motion(skeleton, frames)
    heads, globals_ = forward_kinematics(skeleton, root, rotations)
    camera = camera_to_rig(keypoints_from_pose(skeleton, heads, globals_))  # the map is its own inverse
    return skeleton, root, rotations, heads, camera
