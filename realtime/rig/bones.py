"""The humanoid bone table: VRM humanoid bone names over the Sapiens 308 keypoints.

Rig axes (the rest pose and every output of `realtime.rig.solver`): metres,
right-handed, Y up, the body facing +Z, so +X is the character's LEFT (glTF's
convention). The camera frame of the tracks (x right, y down, z forward) maps to it
by a 180 degree turn about x: X = x, Y = -y, Z = -z. A person facing the camera
then faces +Z, and their left hand (on the right of the image) is at +X.

Rest pose: a T-pose. Spine, neck and head point up (+Y), arms and fingers straight
out along +-X with the palms down, the thumbs 45 degrees forward, the legs straight
down, the feet forward and 25 degrees down to the toes.

Points the 308 set does not have (derived per frame; unknown when an input is):
- `hips`       midpoint of left_hip and right_hip (the root),
- `neck_base`  midpoint of left_shoulder and right_shoulder (where neck and shoulders start),
- `spine_top`  midpoint of hips and neck_base (spine and chest split that line in halves),
- `ears`       midpoint of left_ear and right_ear (the head's tip),
- `<side>_toes` midpoint of <side>_big_toe and <side>_small_toe.
The Sapiens `neck` point (index 69) is where the head bone starts.

Each bone's orientation comes from a primary axis (head -> tail, measured) and a
second, cross-body axis (`Secondary`) whose rest direction is given: for limbs the
normal of the bend plane (shoulder-elbow-wrist, hip-knee-ankle), for the trunk and
head the left-right line, for hands and fingers the line across the knuckles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

X, Y, Z = np.eye(3)
FOOT_PITCH_DEG = 25.0  # rest foot: forward and this much down from ankle to toes
TOES_END = (0.0, 0.0, 0.03)  # the toes bone has no Sapiens point beyond the toe tips: a 3 cm stub


@dataclass(frozen=True)
class Secondary:
    """The second axis of a bone, from points.

    kind "vec":   b - a
         "bend":  (b - a) x (c - b), the normal of the plane through a, b, c
         "mean":  unit(b - a) + unit(d - c)
         "cross": (b - a) x (d - c)
    """

    kind: str
    points: tuple[str, ...]


@dataclass(frozen=True)
class Bone:
    name: str                       # VRM humanoid bone name (VRM 1.0 spelling)
    parent: Optional[str]
    head: str                       # solver point where the bone starts
    primary: Optional[tuple[str, str]]  # (from, to); None: no measurement (the toes), local rotation stays identity
    secondary: Optional[Secondary]
    rest_primary: tuple[float, float, float]
    rest_secondary: tuple[float, float, float]
    tail: Optional[str] = None      # point at the bone's end, for leaf bones' end sites


SIDES = (("left", 1.0), ("right", -1.0))
FINGERS = (  # VRM finger, Sapiens finger, VRM names of its three bones (palm to tip)
    ("Thumb", "thumb", ("Metacarpal", "Proximal", "Distal")),
    ("Index", "forefinger", ("Proximal", "Intermediate", "Distal")),
    ("Middle", "middle_finger", ("Proximal", "Intermediate", "Distal")),
    ("Ring", "ring_finger", ("Proximal", "Intermediate", "Distal")),
    ("Little", "pinky_finger", ("Proximal", "Intermediate", "Distal")),
)


def _t(v) -> tuple[float, float, float]:
    v = np.asarray(v, dtype=np.float64)
    return tuple(float(c) for c in v / np.linalg.norm(v))


def bone_table(fingers: bool = False) -> tuple[Bone, ...]:
    """The bones, parents before children; with `fingers`, 15 finger bones per hand too."""
    foot = _t((0.0, -np.sin(np.radians(FOOT_PITCH_DEG)), np.cos(np.radians(FOOT_PITCH_DEG))))
    shoulders = Secondary("vec", ("right_shoulder", "left_shoulder"))
    up = Secondary("vec", ("hips", "neck_base"))
    bones = [
        Bone("hips", None, "hips", ("right_hip", "left_hip"), up, _t(X), _t(Y)),
        Bone("spine", "hips", "hips", ("hips", "spine_top"),
             Secondary("mean", ("right_hip", "left_hip", "right_shoulder", "left_shoulder")), _t(Y), _t(X)),
        Bone("chest", "spine", "spine_top", ("spine_top", "neck_base"), shoulders, _t(Y), _t(X)),
        Bone("neck", "chest", "neck_base", ("neck_base", "neck"), shoulders, _t(Y), _t(X)),
        Bone("head", "neck", "neck", ("neck", "ears"), Secondary("vec", ("right_ear", "left_ear")), _t(Y), _t(X), tail="ears"),
    ]
    for side, sx in SIDES:
        s = side
        wrist, knuckles = f"{s}_wrist", Secondary("vec", (f"{s}_pinky_finger_third_joint", f"{s}_forefinger_third_joint"))
        arm_bend = Secondary("bend", (f"{s}_shoulder", f"{s}_elbow", wrist))
        leg_bend = Secondary("bend", (f"{s}_hip", f"{s}_knee", f"{s}_ankle"))
        toes = (f"{s}_big_toe", f"{s}_small_toe") if side == "left" else (f"{s}_small_toe", f"{s}_big_toe")
        bones += [
            Bone(f"{s}Shoulder", "chest", "neck_base", ("neck_base", f"{s}_shoulder"), up, _t(sx * X), _t(Y)),
            # elbow bent forward in a T-pose: (out) x (forward) = -sx * Y
            Bone(f"{s}UpperArm", f"{s}Shoulder", f"{s}_shoulder", (f"{s}_shoulder", f"{s}_elbow"), arm_bend, _t(sx * X),
                 _t(-sx * Y)),
            Bone(f"{s}LowerArm", f"{s}UpperArm", f"{s}_elbow", (f"{s}_elbow", wrist), arm_bend, _t(sx * X), _t(-sx * Y)),
            Bone(f"{s}Hand", f"{s}LowerArm", wrist, (wrist, f"{s}_middle_finger_third_joint"), knuckles, _t(sx * X), _t(Z),
                 tail=None if fingers else f"{s}_middle_finger_third_joint"),
        ]
        if fingers:
            palm = Secondary("cross",
                             (wrist, f"{s}_middle_finger_third_joint", f"{s}_pinky_finger_third_joint",
                              f"{s}_forefinger_third_joint"))
            for vrm, sapiens, parts in FINGERS:
                points = [f"{s}_{sapiens}_third_joint", f"{s}_{sapiens}2", f"{s}_{sapiens}3", f"{s}_{sapiens}4"]
                thumb = vrm == "Thumb"
                rest, second, rest_second = ((sx, 0.0, 1.0), palm, -sx * Y) if thumb else (sx * X, knuckles, Z)
                parent = f"{s}Hand"
                for j, part in enumerate(parts):
                    name = f"{s}{vrm}{part}"
                    bones.append(Bone(name, parent, points[j], (points[j], points[j + 1]), second, _t(rest), _t(rest_second),
                                      tail=points[3] if j == 2 else None))
                    parent = name
        # knee bent backward in rest: (down) x (back) = +X for both legs
        bones += [
            Bone(f"{s}UpperLeg", "hips", f"{s}_hip", (f"{s}_hip", f"{s}_knee"), leg_bend, _t(-Y), _t(X)),
            Bone(f"{s}LowerLeg", f"{s}UpperLeg", f"{s}_knee", (f"{s}_knee", f"{s}_ankle"), leg_bend, _t(-Y), _t(X)),
            Bone(f"{s}Foot", f"{s}LowerLeg", f"{s}_ankle", (f"{s}_ankle", f"{s}_toes"), Secondary("vec", toes), foot, _t(X)),
            Bone(f"{s}Toes", f"{s}Foot", f"{s}_toes", None, None, _t(Z), _t(X)),
        ]
    return _in_order(bones)


def _in_order(bones: list[Bone]) -> tuple[Bone, ...]:
    """Parents before children (depth first from the hips), so one pass does forward kinematics."""
    children: dict[Optional[str], list[Bone]] = {}
    for bone in bones:
        children.setdefault(bone.parent, []).append(bone)
    ordered: list[Bone] = []
    stack = list(reversed(children[None]))
    while stack:
        bone = stack.pop()
        ordered.append(bone)
        stack.extend(reversed(children.get(bone.name, [])))
    return tuple(ordered)


def bone_parents(bones: tuple[Bone, ...]) -> np.ndarray:
    """(B,) int64 index of each bone's parent, -1 for the root."""
    index = {b.name: i for i, b in enumerate(bones)}
    return np.array([index[b.parent] if b.parent else -1 for b in bones], dtype=np.int64)


def mirror_name(name: str) -> Optional[str]:
    """leftUpperArm <-> rightUpperArm; None for centre bones."""
    for a, b in (("left", "right"), ("right", "left")):
        if name.startswith(a):
            return b + name[len(a):]
    return None


DERIVED = {  # solver point -> the two keypoints it is the midpoint of
    "hips": ("left_hip", "right_hip"),
    "neck_base": ("left_shoulder", "right_shoulder"),
    "ears": ("left_ear", "right_ear"),
    "left_toes": ("left_big_toe", "left_small_toe"),
    "right_toes": ("right_big_toe", "right_small_toe"),
}


def solver_point_index(keypoint_names: Sequence[str], names: Sequence[str]) -> np.ndarray:
    """(J, 4) keypoint indices for the solver points `names`: each point is
    0.5 * (0.5 * (a + b) + 0.5 * (c + d)) of its four keypoints (`solver_points`). A keypoint
    is itself four times, a DERIVED point its two inputs twice (both exact: a midpoint of
    equal values is that value), `spine_top` the inputs of hips and neck_base."""
    index = {name: i for i, name in enumerate(keypoint_names)}

    def at(name: str) -> int:
        if name not in index:
            raise ValueError(f"keypoint {name!r} is not among the tracks' keypoint names")
        return index[name]

    rows = []
    for name in names:
        if name == "spine_top":
            rows.append([at(n) for n in DERIVED["hips"] + DERIVED["neck_base"]])
        elif name in DERIVED:
            rows.append([at(n) for n in DERIVED[name] * 2])
        else:
            rows.append([at(name)] * 4)
    return np.array(rows, dtype=np.int64).reshape(len(rows), 4)


def solver_points(points: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Solver points (..., J, 3) from keypoints (..., K, 3) and `solver_point_index`'s (J, 4) table.

    NaN propagates: a derived point is unknown where one of its inputs is.
    """
    a, b, c, d = (points[..., index[:, j], :] for j in range(4))
    return 0.5 * (0.5 * (a + b) + 0.5 * (c + d))


def points_used(bones: tuple[Bone, ...]) -> set[str]:
    names: set[str] = set()
    for bone in bones:
        names.add(bone.head)
        names.update(bone.primary or ())
        names.update(bone.secondary.points if bone.secondary else ())
        if bone.tail:
            names.add(bone.tail)
    return names
