"""3D keypoints -> local bone rotations on a VRM-named humanoid, and forward kinematics.

Shared by the BVH / glTF exporters and the live VMC sink. Axes, rest pose and the
derived points are described in `realtime.rig.bones` (rig axes: metres, Y up,
facing +Z, +X = the character's left; camera (x, y, z) -> rig (x, -y, -z)).

Per frame, each bone's global rotation R turns its rest frame (rest primary axis,
rest second axis) into the measured one (bone direction, cross-body axis made
orthogonal to it): R = M @ M0^T with M = [p, s, p x s] as columns. Then the local
rotation is parent^-1 @ R, and forward kinematics is

    global_b = global_parent @ local_b
    head_b   = head_parent + global_parent @ offset_b

Continuity (no roll flips): the second axis is blended with the bone's previous one
by how well the measurement defines it (the sine of the angle between the two
vectors it comes from): a straight arm has no bend plane, so its twist is carried
over from the last frame, and quaternion signs are kept continuous over time.
Missing keypoints: a bone whose direction is unknown holds its last local rotation
(identity before the first measurement), and `held` marks it.

Bone lengths (`Skeleton.offsets`) are per-clip robust estimates: the median over
frames of each bone's head in its parent's frame, averaged between left and right. Live
(`LiveSolver`), once the caller says which frames' 3D points were measured (a depth frame's),
only those frames are sampled: between depth frames each point keeps its depth relative to the
hips from the last one (`realtime.rig.lift`) and a held foot keeps its own, so a shin whose ends
moved apart along the line of sight reads long (bench/RESULTS.md, issue 51, "the solve's leg lengths").
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.rig.bones import (
    TOES_END,
    Bone,
    bone_parents,
    bone_table,
    mirror_name,
    points_used,
    solver_point_index,
    solver_points,
)
from realtime.rig.leg_ik import SIDES, pin_leg
from realtime.rig.robust import nanmedian

log = logging.getLogger(__name__)

# Sine of the angle between the vectors that give a bone's second axis: below LOW it is
# not trusted at all (the last frame's axis is kept), above HIGH it is used as measured.
LOW, HIGH = 0.1, 0.4
DEFAULT_OFFSET = 0.1  # metres along the parent's rest direction for a bone never measured in the clip
MIN_MEASURED = 5  # measured frames (depth frames) before the live skeleton is estimated from them alone
_EPS = 1e-9


def camera_to_rig(points: np.ndarray) -> np.ndarray:
    """Camera frame (x right, y down, z forward) -> rig axes (Y up, facing the camera = +Z). (..., 3)."""
    points = np.asarray(points, dtype=np.float64)
    return np.stack([points[..., 0], -points[..., 1], -points[..., 2]], axis=-1)


@dataclass(frozen=True)
class Skeleton:
    """The rest pose (T-pose, rig axes, metres).

    bones:   the bone table, parents before children.
    offsets: (B, 3) each bone's head relative to its parent's head in the rest pose (root: zeros).
    ends:    (B, 3) end site of each leaf bone relative to its head (zeros for bones with children).
    """

    bones: tuple[Bone, ...]
    offsets: np.ndarray
    ends: np.ndarray

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.bones]

    @property
    def parents(self) -> np.ndarray:
        return bone_parents(self.bones)

    @property
    def leaves(self) -> np.ndarray:
        """(B,) bool: bones without children (they carry an end site)."""
        leaf = np.ones(len(self.bones), bool)
        leaf[self.parents[self.parents >= 0]] = False
        return leaf

    def rest_positions(self) -> np.ndarray:
        """(B, 3) heads in the rest pose with the root at the origin."""
        heads, _ = forward_kinematics(self, np.zeros((1, 3)), identity_rotations(1, len(self.bones)))
        return heads[0]

    def floor_height(self) -> float:
        """Height of the root above the lowest rest point (toe ends): where the floor is."""
        rest = self.rest_positions()
        return float(-min((rest + self.ends)[:, 1].min(), rest[:, 1].min()))


@dataclass(frozen=True)
class Motion:
    """Solved animation of one person.

    times:         (T,) seconds.
    root_position: (T, 3) hips position, rig axes, metres, placed so the first known hips
                   position is above the origin at the rest hip height (`origin` undoes that).
    rotations:     (T, B, 4) local rotations, quaternions x, y, z, w (scipy order), sign-continuous.
    held:          (T, B) bool, True where the bone's keypoints were missing and its last
                   rotation was held.
    root_held:     (T,) bool, True where the hips were missing and the last position was held.
    origin:        (3,) rig-axes point subtracted from the hips: root_position + origin = the
                   camera-derived position.
    """

    skeleton: Skeleton
    times: np.ndarray
    root_position: np.ndarray
    rotations: np.ndarray
    held: np.ndarray
    root_held: np.ndarray
    origin: np.ndarray


def identity_rotations(frames: int, bones: int) -> np.ndarray:
    q = np.zeros((frames, bones, 4))
    q[..., 3] = 1.0
    return q


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.where(norm > _EPS, v / np.maximum(norm, _EPS), 0.0), norm[..., 0]


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.cross for (..., 3), without its axis shuffling (this runs per frame, live)."""
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _sine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """|sin| of the angle between u and v (..., 3); 0 where either is zero or unknown."""
    uu, _ = _unit(u)
    vv, _ = _unit(v)
    return np.nan_to_num(np.linalg.norm(_cross(uu, vv), axis=-1), nan=0.0)


@dataclass(frozen=True)
class _Plan:
    """Index arrays, computed once per bone table, for the per-frame solve.

    names:    the solver points, in the order of the (..., J, 3) arrays `measure` takes.
    measured: the bones with a primary axis; ends (M, 2): its (from, to) point indices.
    kinds:    per second-axis kind, (its bones, their point indices).
    heads, tails: (B,) point index of each bone's head and tail (-1: no tail).
    parents:  (B,) parent bone index, -1 for the root; twins: (B,) the mirror bone (-1: none).
    A plan is looked up once per solver: hashing a bone table costs as much as a frame's measuring.
    """

    bones: int
    names: list[str]
    measured: np.ndarray
    ends: np.ndarray
    kinds: dict[str, tuple[np.ndarray, np.ndarray]]
    heads: np.ndarray
    tails: np.ndarray
    parents: np.ndarray
    twins: np.ndarray


@lru_cache(maxsize=8)
def _plan(bones: tuple[Bone, ...]) -> _Plan:
    names = sorted(points_used(bones))
    index = {n: i for i, n in enumerate(names)}
    measured = np.array([i for i, b in enumerate(bones) if b.primary is not None])
    ends = np.array([[index[n] for n in bones[i].primary] for i in measured])
    kinds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for kind in ("vec", "bend", "mean", "cross"):
        members = [i for i in measured if bones[i].secondary.kind == kind]
        if members:
            kinds[kind] = (np.array(members), np.array([[index[n] for n in bones[i].secondary.points] for i in members]))
    bone_index = {b.name: i for i, b in enumerate(bones)}
    return _Plan(len(bones), names, measured, ends, kinds, heads=np.array([index[b.head] for b in bones]),
                 tails=np.array([index[b.tail] if b.tail else -1 for b in bones]), parents=bone_parents(bones),
                 twins=np.array([bone_index.get(mirror_name(b.name) or "", -1) for b in bones]))


def rig_points(rig: np.ndarray, keypoint_names: list[str], bones: tuple[Bone, ...]) -> np.ndarray:
    """Keypoints (..., K, 3) in rig axes -> the bones' solver points (..., J, 3), in `measure`'s order."""
    return solver_points(rig, solver_point_index(keypoint_names, _plan(bones).names))


def measure(P: np.ndarray, plan: _Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each bone's measured primary and second axis and the second axis' quality.

    P: the solver points (..., J, 3) in rig axes (`rig_points`); plan: `_plan(bones)`.
    Returns primary (..., B, 3), secondary (..., B, 3) (NaN where unknown, and for the
    toes, which have no measurement) and quality (..., B) in [0, 1] (a sine).
    """
    measured, ends = plan.measured, plan.ends
    shape = P.shape[:-2]
    primary = np.full(shape + (plan.bones, 3), np.nan)
    secondary = np.full(shape + (plan.bones, 3), np.nan)
    quality = np.ones(shape + (plan.bones,))
    primary[..., measured, :] = P[..., ends[:, 1], :] - P[..., ends[:, 0], :]
    for kind, (members, idx) in plan.kinds.items():
        v = [P[..., idx[:, j], :] for j in range(idx.shape[1])]
        if kind == "vec":
            secondary[..., members, :] = v[1] - v[0]
        elif kind == "mean":
            secondary[..., members, :] = _unit(v[1] - v[0])[0] + _unit(v[3] - v[2])[0]
        else:  # bend: normal of the plane through three points; cross: of two segments
            u, w = (v[1] - v[0], v[2] - v[1]) if kind == "bend" else (v[1] - v[0], v[3] - v[2])
            secondary[..., members, :] = _cross(u, w)
            quality[..., members] = _sine(u, w)
    quality *= _sine(primary, secondary)
    return primary, secondary, quality


class RotationSolver:
    """Frame-by-frame global and local rotations with continuity (the state is the last frame)."""

    def __init__(self, bones: tuple[Bone, ...]):
        self.bones = bones
        self.parents = bone_parents(bones)
        p0 = np.array([b.rest_primary for b in bones])
        s0 = np.array([b.rest_secondary for b in bones])
        self.rest_secondary = s0
        self.rest_third = np.cross(p0, s0)
        self.rest_frames = np.stack([p0, s0, self.rest_third], axis=-1)  # (B, 3, 3), columns
        self.fixed = np.array([b.primary is None for b in bones])
        self.reset()

    def reset(self) -> None:
        count = len(self.bones)
        self.last_global = np.tile(np.eye(3), (count, 1, 1))
        self.last_local = np.tile(np.eye(3), (count, 1, 1))

    def step(self, primary: np.ndarray, secondary: np.ndarray, quality: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One frame: primary, secondary (B, 3), quality (B,) from `measure`.

        Returns global (B, 3, 3), local (B, 3, 3) rotation matrices and held (B,) bool.
        """
        p, length = _unit(np.nan_to_num(primary, nan=0.0))
        ok = np.isfinite(primary).all(axis=-1) & (length > _EPS) & ~self.fixed

        def across(v):  # the part of v orthogonal to p, as a unit vector (zeros where none)
            return _unit(v - np.sum(v * p, axis=-1, keepdims=True) * p)

        measured, _ = across(np.nan_to_num(secondary, nan=0.0))
        previous, _ = across(np.einsum("bij,bj->bi", self.last_global, self.rest_secondary))
        weight = np.clip((np.nan_to_num(quality) - LOW) / (HIGH - LOW), 0.0, 1.0)
        weight = np.where(np.isfinite(secondary).all(axis=-1), weight, 0.0)[:, None]
        # The bone turned so far since the last frame that its old second axis lies along it:
        # fall back to its old third axis.
        fallback, _ = across(np.einsum("bij,bj->bi", self.last_global, self.rest_third))
        previous = np.where((np.linalg.norm(previous, axis=-1) > 1e-6)[:, None], previous, fallback)
        # Turn the previous axis towards the measured one about the bone by `weight` of the angle
        # between them (a blend of angles, not of vectors: opposite vectors do not cancel).
        angle = np.arctan2(np.sum(_cross(previous, measured) * p, axis=-1), np.sum(previous * measured, axis=-1))
        angle = np.where(np.linalg.norm(measured, axis=-1) > 0, angle, 0.0)[:, None] * weight
        s = np.cos(angle) * previous + np.sin(angle) * _cross(p, previous)
        frames = np.stack([p, s, _cross(p, s)], axis=-1)
        globals_ = frames @ np.swapaxes(self.rest_frames, -1, -2)

        held = ~ok & ~self.fixed
        for b in np.flatnonzero(~ok):  # held or fixed bones follow their parent (parents come first)
            local = self.last_local[b] if held[b] else np.eye(3)
            parent = self.parents[b]
            globals_[b] = local if parent < 0 else globals_[parent] @ local
        parent_globals = np.where((self.parents >= 0)[:, None, None], globals_[np.maximum(self.parents, 0)], np.eye(3))
        locals_ = np.swapaxes(parent_globals, -1, -2) @ globals_
        self.last_global, self.last_local = globals_, locals_
        return globals_, locals_, held


def _offset_samples(plan: _Plan, heads, globals_, held, P) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame samples (..., B, 3) of each bone's head in its parent's rest frame, and of
    each leaf bone's end relative to its head in its own; NaN where not measured.
    heads (..., B, 3) and P (..., J, 3) the solver points."""
    parents = plan.parents
    q = np.maximum(parents, 0)
    offsets = np.einsum("...bji,...bj->...bi", globals_[..., q, :, :], heads - heads[..., q, :])
    offsets = np.where(held[..., q, None], np.nan, offsets)
    offsets[..., parents < 0, :] = 0.0
    tails = np.where((plan.tails >= 0)[:, None], P[..., np.maximum(plan.tails, 0), :], np.nan)
    ends = np.einsum("...bji,...bj->...bi", globals_, tails - heads)
    return offsets, np.where(held[..., None], np.nan, ends)


def robust_skeleton(bones: tuple[Bone, ...], offset_samples: np.ndarray, end_samples: np.ndarray) -> Skeleton:
    """Median of the samples (N, B, 3) per bone, then left and right averaged (mirrored in X)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: bones never seen
        offsets = nanmedian(offset_samples) if len(offset_samples) else np.full((len(bones), 3), np.nan)
        ends = nanmedian(end_samples) if len(end_samples) else np.full((len(bones), 3), np.nan)
        twins = _plan(bones).twins
        paired = twins >= 0
        mirror = np.array([-1.0, 1.0, 1.0])
        for values in (offsets, ends):  # one side unseen: the other side's
            values[paired] = np.nanmean(np.stack([values[paired], values[twins[paired]] * mirror]), axis=0)
    by_name = {b.name: b for b in bones}
    for i, bone in enumerate(bones):
        if not np.isfinite(offsets[i]).all():
            parent = by_name[bone.parent] if bone.parent else None
            offsets[i] = 0.0 if parent is None else DEFAULT_OFFSET * np.array(parent.rest_primary)
        if bone.primary is None:
            ends[i] = TOES_END
        elif bone.tail is None:
            ends[i] = 0.0
        elif not np.isfinite(ends[i]).all():
            ends[i] = DEFAULT_OFFSET * np.array(bone.rest_primary)
    return Skeleton(bones, offsets, ends)


def _hold_last(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T, D) with NaN rows -> each NaN row replaced by the last known one (the first known before it);
    returns the filled array and (T,) held mask."""
    known = np.isfinite(values).all(axis=-1)
    held = ~known
    if not known.any():
        return np.zeros_like(values), held
    idx = np.where(known, np.arange(len(values)), -1)
    idx = np.maximum.accumulate(idx)
    idx[idx < 0] = np.flatnonzero(known)[0]
    return values[idx], held


def solve(points3d: np.ndarray, keypoint_names: list[str], times: Optional[np.ndarray] = None, *, fingers: bool = False,
          camera_frame: bool = True) -> Motion:
    """Solve a whole clip of one person.

    points3d:     (T, K, 3) metres, NaN where unknown; camera frame (x right, y down,
                  z forward) unless `camera_frame=False` (then already in rig axes).
    keypoint_names: the K names (the 308 Sapiens names).
    times:        (T,) seconds (default: frame numbers / 30).
    fingers:      add 15 finger bones per hand.
    """
    points3d = np.asarray(points3d, dtype=np.float64)
    if points3d.ndim != 3 or points3d.shape[2] != 3:
        raise ValueError(f"expected points3d (T, K, 3), got {points3d.shape}")
    count = points3d.shape[0]
    times = np.arange(count) / 30.0 if times is None else np.asarray(times, dtype=np.float64)
    rig = camera_to_rig(points3d) if camera_frame else points3d
    bones = bone_table(fingers)
    points = rig_points(rig, keypoint_names, bones)
    plan = _plan(bones)
    primary, secondary, quality = measure(points, plan)

    solver = RotationSolver(bones)
    globals_ = np.empty((count, len(bones), 3, 3))
    locals_ = np.empty((count, len(bones), 3, 3))
    held = np.zeros((count, len(bones)), bool)
    for t in range(count):
        globals_[t], locals_[t], held[t] = solver.step(primary[t], secondary[t], quality[t])

    heads = points[..., plan.heads, :]
    skeleton = robust_skeleton(bones, *_offset_samples(plan, heads, globals_, held, points))
    root, root_held = _hold_last(heads[:, 0, :])
    first = np.flatnonzero(~root_held)
    origin = (root[first[0]] if len(first) else np.zeros(3)) - np.array([0.0, skeleton.floor_height(), 0.0])
    rotations = Rotation.from_matrix(locals_.reshape(-1, 3, 3)).as_quat().reshape(count, len(bones), 4)
    return Motion(skeleton, times, root - origin, continuous_quaternions(rotations), held, root_held, origin)


def continuous_quaternions(q: np.ndarray) -> np.ndarray:
    """(T, B, 4) with each quaternion's sign chosen to be nearest the previous frame's."""
    q = np.array(q, dtype=np.float64)
    for t in range(1, len(q)):
        flip = np.sum(q[t] * q[t - 1], axis=-1) < 0
        q[t, flip] *= -1.0
    return q


def forward_kinematics(skeleton: Skeleton, root_position: np.ndarray, rotations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Heads (T, B, 3) and global rotations (T, B, 3, 3) from root_position (T, 3) and
    local quaternions (T, B, 4) (x, y, z, w)."""
    rotations = np.asarray(rotations, dtype=np.float64)
    count, num_bones = rotations.shape[:2]
    local = Rotation.from_quat(rotations.reshape(-1, 4)).as_matrix().reshape(count, num_bones, 3, 3)
    heads = np.empty((count, num_bones, 3))
    globals_ = np.empty((count, num_bones, 3, 3))
    for b, parent in enumerate(skeleton.parents):
        if parent < 0:
            globals_[:, b] = local[:, b]
            heads[:, b] = root_position
        else:
            globals_[:, b] = globals_[:, parent] @ local[:, b]
            heads[:, b] = heads[:, parent] + globals_[:, parent] @ skeleton.offsets[b]
    return heads, globals_


@dataclass(frozen=True)
class Legs:
    """A solved frame's legs by forward kinematics, in the rig axes of the points it was solved from (the hips at
    the hips point, before the root is placed), per side (left, right): hip, knee, ankle and toes (2, 3) the heads of
    the upper leg, lower leg, foot and toes bones; reach (2,) thigh + shin, foot (2,) the ankle-to-toes length (m)."""

    hip: np.ndarray
    knee: np.ndarray
    ankle: np.ndarray
    toes: np.ndarray
    reach: np.ndarray
    foot: np.ndarray


# Where the feet of a solved frame go: Legs -> ((2, 3) the ankles' targets, (2, 3) points the toes point at from
# there), NaN rows for a foot left as solved; or None: both as solved. In the rig axes of the points solved.
FeetTargets = Callable[[Legs], Optional[tuple[np.ndarray, np.ndarray]]]
REACH = 0.999  # a pinned leg reaches at most this share of thigh + shin (a straight knee has no bend plane)


def hips_shift(hip: np.ndarray, reach: np.ndarray, ankles: np.ndarray) -> np.ndarray:
    """(3,) how far the hips move towards the pinned `ankles` ((2, 3), NaN rows not pinned) that legs with heads `hip`
    (2, 3) and thigh + shin `reach` (2,) do not reach within REACH of it: both legs, a few rounds."""
    shift = np.zeros(3)
    pinned = np.flatnonzero(np.isfinite(ankles).all(axis=1))
    for _ in range(3):
        for side in pinned:
            to = ankles[side] - (hip[side] + shift)
            distance = np.linalg.norm(to)
            if distance > REACH * reach[side]:
                shift += (distance - REACH * reach[side]) * to / distance
    return shift


@dataclass(frozen=True)
class LivePose:
    """One solved frame: root_position (3,) rig metres, rotations (B, 4) local quaternions
    x, y, z, w, held (B,) bool, and the skeleton as estimated so far."""

    skeleton: Skeleton
    root_position: np.ndarray
    rotations: np.ndarray
    held: np.ndarray
    root_held: bool


class LiveSolver:
    """The solver one frame at a time, for live streaming (one person).

    Bone lengths are the robust estimate over the last `history` frames, refreshed every
    `refresh` frames; once MIN_MEASURED frames came with their measured points (`update`'s
    `measured`: depth frames), over the last `history` of those only. The root is placed like
    `solve` does, from the first known hips.
    """

    def __init__(self, keypoint_names: list[str], *, fingers: bool = False, history: int = 300, refresh: int = 10):
        self.keypoint_names = list(keypoint_names)
        self.bones = bone_table(fingers)
        self._plan = _plan(self.bones)
        self._point_index = solver_point_index(self.keypoint_names, self._plan.names)  # (J, 4), once
        self.solver = RotationSolver(self.bones)
        self.refresh = refresh
        self._offsets: deque = deque(maxlen=history)
        self._ends: deque = deque(maxlen=history)
        self._measured = RotationSolver(self.bones)  # the measured frames' own rotations, continuous between them
        self._measured_offsets: deque = deque(maxlen=history)
        self._measured_ends: deque = deque(maxlen=history)
        self._skeleton: Optional[Skeleton] = None
        self._default: Optional[Skeleton] = None
        self._floor = np.zeros(3)
        self._since_refresh = 0
        self._origin: Optional[np.ndarray] = None
        self._root = np.zeros(3)
        self._last_quat: Optional[np.ndarray] = None
        index = {b.name: i for i, b in enumerate(self.bones)}
        self._legs = np.array([[index[f"{side}{part}"] for part in ("UpperLeg", "LowerLeg", "Foot", "Toes")] for side in SIDES])

    def reset(self) -> None:
        """Forget the person (a new person is followed): continuity and root placement restart."""
        self.solver.reset()
        self._measured.reset()
        self._origin, self._last_quat = None, None
        for samples in (self._offsets, self._ends, self._measured_offsets, self._measured_ends):
            samples.clear()
        self._skeleton = None

    def rest_skeleton(self) -> Skeleton:
        """The skeleton estimated so far; before any measurement the default bone offsets."""
        if self._skeleton is None:
            if self._default is None:
                count = len(self.bones)
                self._default = robust_skeleton(self.bones, np.full((1, count, 3), np.nan), np.full((1, count, 3), np.nan))
            return self._default
        return self._skeleton

    def update(self, points3d: np.ndarray, *, absolute_root: bool = False, feet: Optional[FeetTargets] = None,
               measured: Optional[np.ndarray] = None) -> LivePose:
        """points3d: (K, 3) camera frame metres, NaN where unknown. absolute_root: the root is the
        hips where they are (rig axes of `points3d`: a world frame given in camera axes, x, -y, -z of
        the world), not placed from the first hips above the rest hip height. feet: where the feet go
        (`FeetTargets`, given the solved frame's `Legs`): each foot given is pinned there by turning its
        leg's bones (`realtime.rig.leg_ik.pin_leg`), the hips moved just enough for a target out of the
        leg's reach; the rotation state the next frame continues from stays the solve's. measured: (K, 3) this
        frame's 3D points as measured (a depth frame's, before any filter or foot lock; the frame of `points3d`),
        or None where they were not (lifted from 2D): the bone lengths come from those frames once MIN_MEASURED did."""
        if measured is not None:
            measured = np.asarray(measured, dtype=np.float64)
            if measured.shape != np.shape(points3d):
                raise ValueError(f"LiveSolver.update measured must be shaped as points3d {np.shape(points3d)}, "
                                 f"got {measured.shape}")
        rig = camera_to_rig(np.asarray(points3d, dtype=np.float64))
        points = solver_points(rig, self._point_index)
        primary, secondary, quality = measure(points, self._plan)
        globals_, locals_, held = self.solver.step(primary, secondary, quality)
        heads = points[self._plan.heads]
        offsets, ends = _offset_samples(self._plan, heads, globals_, held, points)
        self._offsets.append(offsets)
        self._ends.append(ends)
        if measured is not None:
            measured = np.where(np.isfinite(measured).all(axis=-1, keepdims=True), measured, np.nan)  # inf: unknown
            taken = solver_points(camera_to_rig(measured), self._point_index)
            taken_globals, _, taken_held = self._measured.step(*measure(taken, self._plan))
            offsets, ends = _offset_samples(self._plan, taken[self._plan.heads], taken_globals, taken_held, taken)
            self._measured_offsets.append(offsets)
            self._measured_ends.append(ends)
        self._since_refresh += 1
        if self._skeleton is None or self._since_refresh >= self.refresh:
            sampled = len(self._measured_offsets) >= MIN_MEASURED
            self._skeleton = robust_skeleton(self.bones, np.stack(self._measured_offsets if sampled else self._offsets),
                                             np.stack(self._measured_ends if sampled else self._ends))
            self._floor = np.array([0.0, self._skeleton.floor_height(), 0.0])
            self._since_refresh = 0
        hips = heads[0]
        root_held = not np.isfinite(hips).all()
        shift = np.zeros(3)
        if feet is not None and not root_held:
            locals_, shift = self._pin(hips, globals_, locals_, feet)
        if not root_held:
            if absolute_root:
                self._root = hips + shift
            else:
                if self._origin is None:
                    self._origin = hips.copy()
                self._root = hips - self._origin + self._floor + shift
        quat = Rotation.from_matrix(locals_).as_quat()
        if self._last_quat is not None:
            quat[np.sum(quat * self._last_quat, axis=-1) < 0] *= -1.0
        self._last_quat = quat
        return LivePose(self._skeleton, self._root.copy(), quat, held, root_held)

    def _pin(self, hips: np.ndarray, globals_: np.ndarray, locals_: np.ndarray, feet: FeetTargets
             ) -> tuple[np.ndarray, np.ndarray]:
        """The solved frame's leg bones turned so that the feet reach `feet`'s targets (see `update`): the new
        local rotations (B, 3, 3) and the hips' shift (3,)."""
        offsets = self._skeleton.offsets
        legs = self._legs  # (2, 4) upper leg, lower leg, foot, toes
        hip = hips + np.einsum("ij,sj->si", globals_[0], offsets[legs[:, 0]])
        knee = hip + np.einsum("sij,sj->si", globals_[legs[:, 0]], offsets[legs[:, 1]])
        ankle = knee + np.einsum("sij,sj->si", globals_[legs[:, 1]], offsets[legs[:, 2]])
        toes = ankle + np.einsum("sij,sj->si", globals_[legs[:, 2]], offsets[legs[:, 3]])
        reach = np.linalg.norm(offsets[legs[:, 1]], axis=1) + np.linalg.norm(offsets[legs[:, 2]], axis=1)
        targets = feet(Legs(hip, knee, ankle, toes, reach, np.linalg.norm(offsets[legs[:, 3]], axis=1)))
        if targets is None:
            return locals_, np.zeros(3)
        ankles, aims = (np.asarray(a, dtype=np.float64) for a in targets)
        pinned = np.isfinite(ankles).all(axis=1) & np.isfinite(aims).all(axis=1)
        shift = hips_shift(hip, reach, np.where(pinned[:, None], ankles, np.nan))
        if not pinned.any():
            return locals_, shift
        globals_, locals_ = globals_.copy(), locals_.copy()
        for side in np.flatnonzero(pinned):
            upper, lower, foot, toe = legs[side]
            globals_[upper], globals_[lower], globals_[foot], _ = pin_leg(
                hip[side] + shift, globals_[upper], globals_[lower], globals_[foot], offsets[[lower, foot, toe]],
                ankles[side], aims[side])
            locals_[upper] = globals_[0].T @ globals_[upper]
            locals_[lower] = globals_[upper].T @ globals_[lower]
            locals_[foot] = globals_[lower].T @ globals_[foot]
        return locals_, shift
