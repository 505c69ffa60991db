"""Rigs people already have: the solved motion re-expressed on another skeleton's names,
hierarchy and rest pose, so a file drops onto such a character without a retarget step.

    vrm      the solver's own skeleton (VRM 1.0 humanoid names, T-pose); unchanged
    mixamo   Mixamo's `mixamorig:` names in its T-pose (`Spine1` between spine and chest)
    unreal   the Unreal Engine 5 mannequin's names (`pelvis`, `spine_01` ... `spine_05`,
             `neck_01`, `neck_02`, `clavicle_l`, `thigh_l`, `ball_l`, `thumb_01_l` ...)
             in its A-pose: upper arms 45 degrees down from the T-pose, every rotation
             relative to that rest pose
    smpl     SMPL's 24 joints (`pelvis`, `left_hip` ... `left_hand`; no finger bones)

How: a bone the target has and we do not (Mixamo `Spine1`, UE `spine_02`, SMPL
`spine2`, ...) is inserted on the line from its parent to the parent's child, with
identity local rotation, so every shared joint keeps its world position. A rest pose
other than the T-pose is a set of rest local rotations A_b; with P_b their global
rotations (forward kinematics of A), the joint frames stay axis-aligned at rest
(offsets' = P_parent @ offset, end sites' = P_b @ end) and each local rotation becomes

    L'_b = P_parent @ L_b @ P_b^-1

which leaves every head where the T-pose motion put it (the tests check this in Blender).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.errors import UserError
from realtime.rig.bones import FINGERS, Bone
from realtime.rig.solver import Motion, Skeleton, continuous_quaternions

RIGS = ("vrm", "mixamo", "unreal", "smpl")


@dataclass(frozen=True)
class Insert:
    """A bone `name` under rig bone `parent`, a `fraction` of the way to VRM bone `toward`;
    it takes over all of the parent's children."""

    name: str
    parent: str
    toward: str
    fraction: float


@dataclass(frozen=True)
class RigSpec:
    names: dict[str, str]                           # VRM bone -> rig bone
    inserts: tuple[Insert, ...] = ()
    hand_leaves: dict[str, str] = field(default_factory=dict)  # VRM hand -> rig leaf at the hand's end
    rest_degrees: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # VRM bone -> rest rotation vector (deg)
    fingers: bool = True


def _sides(table: dict[str, str], left: str, right: str) -> dict[str, str]:
    """{'UpperArm': 'Arm{S}'} -> leftUpperArm: <left>Arm ... with {S} replaced per side."""
    out = {}
    for part, target in table.items():
        out[f"left{part}"] = target.format(S=left)
        out[f"right{part}"] = target.format(S=right)
    return out


def _mixamo() -> RigSpec:
    limbs = {"Shoulder": "{S}Shoulder", "UpperArm": "{S}Arm", "LowerArm": "{S}ForeArm", "Hand": "{S}Hand",
             "UpperLeg": "{S}UpLeg", "LowerLeg": "{S}Leg", "Foot": "{S}Foot", "Toes": "{S}ToeBase"}
    for vrm, _, parts in FINGERS:
        mixamo = {"Little": "Pinky"}.get(vrm, vrm)
        for j, part in enumerate(parts):
            limbs[f"{vrm}{part}"] = f"{{S}}Hand{mixamo}{j + 1}"
    names = {"hips": "Hips", "spine": "Spine", "chest": "Spine2", "neck": "Neck", "head": "Head"}
    names.update(_sides(limbs, "Left", "Right"))
    names = {k: "mixamorig:" + v for k, v in names.items()}
    return RigSpec(names, (Insert("mixamorig:Spine1", "mixamorig:Spine", "chest", 0.5),))


def _unreal() -> RigSpec:
    limbs = {"Shoulder": "clavicle_{S}", "UpperArm": "upperarm_{S}", "LowerArm": "lowerarm_{S}", "Hand": "hand_{S}",
             "UpperLeg": "thigh_{S}", "LowerLeg": "calf_{S}", "Foot": "foot_{S}", "Toes": "ball_{S}"}
    for vrm, _, parts in FINGERS:
        ue = {"Little": "pinky"}.get(vrm, vrm.lower())
        for j, part in enumerate(parts):
            limbs[f"{vrm}{part}"] = f"{ue}_0{j + 1}_{{S}}"
    names = {"hips": "pelvis", "spine": "spine_01", "chest": "spine_03", "neck": "neck_01", "head": "head"}
    names.update(_sides(limbs, "l", "r"))
    inserts = (Insert("spine_02", "spine_01", "chest", 0.5), Insert("spine_04", "spine_03", "neck", 1 / 3),
               Insert("spine_05", "spine_04", "neck", 0.5), Insert("neck_02", "neck_01", "head", 0.5))
    # A-pose: the upper arms 45 degrees down (about the forward axis Z).
    return RigSpec(names, inserts, rest_degrees={"leftUpperArm": (0.0, 0.0, -45.0), "rightUpperArm": (0.0, 0.0, 45.0)})


def _smpl() -> RigSpec:
    limbs = {"Shoulder": "{S}_collar", "UpperArm": "{S}_shoulder", "LowerArm": "{S}_elbow", "Hand": "{S}_wrist",
             "UpperLeg": "{S}_hip", "LowerLeg": "{S}_knee", "Foot": "{S}_ankle", "Toes": "{S}_foot"}
    names = {"hips": "pelvis", "spine": "spine1", "chest": "spine3", "neck": "neck", "head": "head"}
    names.update(_sides(limbs, "left", "right"))
    return RigSpec(names, (Insert("spine2", "spine1", "chest", 0.5),),
                   hand_leaves={"leftHand": "left_hand", "rightHand": "right_hand"}, fingers=False)


def rig_spec(rig: str) -> RigSpec:
    if rig not in RIGS:
        raise UserError(f"unknown rig '{rig}'; use one of {', '.join(RIGS)}.")
    return {"mixamo": _mixamo, "unreal": _unreal, "smpl": _smpl}[rig]() if rig != "vrm" else RigSpec({})


@dataclass
class _Joint:
    """A bone of the rig being built: its table entry (name, parent) and its data."""

    bone: Bone
    offset: np.ndarray  # (3,) head relative to the parent's head, T-pose
    end: np.ndarray     # (3,) end site relative to the head (leaves), T-pose
    local: np.ndarray   # (T, 3, 3) local rotations relative to the T-pose
    held: np.ndarray    # (T,) bool

    def moved(self, **changes) -> None:
        self.bone = dataclasses.replace(self.bone, **changes)


def retarget(motion: Motion, rig: str) -> Motion:
    """`motion` on rig `rig` (see the module docstring); `vrm` returns it unchanged."""
    spec = rig_spec(rig)
    if rig == "vrm":
        return motion
    skeleton = motion.skeleton
    if not spec.fingers and any(name not in spec.names for name in skeleton.names):
        raise UserError(f"the {rig} rig has no finger bones; drop --fingers for --rig {rig}.")
    count = len(motion.times)
    rename = spec.names
    local = Rotation.from_quat(motion.rotations.reshape(-1, 4)).as_matrix().reshape(count, len(skeleton.bones), 3, 3)
    joints: dict[str, _Joint] = {}
    for b, bone in enumerate(skeleton.bones):
        renamed = dataclasses.replace(bone, name=rename[bone.name], parent=rename[bone.parent] if bone.parent else None)
        joints[renamed.name] = _Joint(renamed, skeleton.offsets[b].copy(), skeleton.ends[b].copy(), local[:, b],
                                      motion.held[:, b])
    order = list(joints)
    identity = np.broadcast_to(np.eye(3), (count, 3, 3))
    not_held = np.zeros(count, bool)
    for insert in spec.inserts:
        offset = insert.fraction * joints[rename[insert.toward]].offset
        for joint in joints.values():
            if joint.bone.parent == insert.parent:
                joint.moved(parent=insert.name)
                joint.offset = joint.offset - offset
        bone = dataclasses.replace(joints[insert.parent].bone, name=insert.name, parent=insert.parent, primary=None,
                                   secondary=None, tail=None)
        joints[insert.name] = _Joint(bone, offset, np.zeros(3), identity, not_held)
        order.insert(order.index(insert.parent) + 1, insert.name)
    for hand, leaf in spec.hand_leaves.items():
        parent = joints[rename[hand]]
        bone = dataclasses.replace(parent.bone, name=leaf, parent=parent.bone.name, primary=None, secondary=None, tail=None)
        joints[leaf] = _Joint(bone, parent.end, 0.5 * parent.end, identity, not_held)  # end: half the palm, the fingers' reach
        parent.end = np.zeros(3)
        order.insert(order.index(parent.bone.name) + 1, leaf)
    order = _depth_first(order, {name: joints[name].bone.parent for name in order})

    # Rest pose: P = forward kinematics of the rest local rotations A (identity: T-pose).
    vrm_name = {v: k for k, v in rename.items()}
    rest_global: dict[str, np.ndarray] = {}
    rotations = np.empty((count, len(order), 4))
    offsets, ends = np.zeros((len(order), 3)), np.zeros((len(order), 3))
    for i, name in enumerate(order):
        joint = joints[name]
        p_parent = rest_global[joint.bone.parent] if joint.bone.parent else np.eye(3)
        rest = Rotation.from_rotvec(np.radians(spec.rest_degrees.get(vrm_name.get(name, ""), (0.0, 0.0, 0.0)))).as_matrix()
        rest_global[name] = p_parent @ rest
        offsets[i] = p_parent @ joint.offset if joint.bone.parent else 0.0
        ends[i] = rest_global[name] @ joint.end
        rotations[:, i] = Rotation.from_matrix(p_parent @ joint.local @ rest_global[name].T).as_quat()  # L' = P_parent L P^-1
    return Motion(skeleton=Skeleton(tuple(joints[name].bone for name in order), offsets, ends), times=motion.times,
                  root_position=motion.root_position, rotations=continuous_quaternions(rotations),
                  held=np.stack([joints[name].held for name in order], axis=1), root_held=motion.root_held, origin=motion.origin)


def _depth_first(order: list[str], parents: dict[str, str | None]) -> list[str]:
    """Parents before children, subtrees contiguous (BVH nests them), siblings in `order`."""
    children: dict[str | None, list[str]] = {}
    for name in order:
        children.setdefault(parents[name], []).append(name)
    out: list[str] = []
    stack = list(reversed(children[None]))
    while stack:
        name = stack.pop()
        out.append(name)
        stack.extend(reversed(children.get(name, [])))
    return out
