"""Offline foot locking for the motion exports: a foot in contact stays put, the leg follows by two-bone IK.

Per foot and contact span (a run of frames with the foot on the floor), on the whole clip:
- the ankle's target is the span's median ankle position;
- over BLEND seconds before and after the span the ankle keeps its measured motion plus the
  span's edge offset (target minus the ankle at the span's first / last frame) times a weight
  ramping linearly to 0 away from the span (2/3, 1/3 one and two frames out at 30 fps), so nothing
  pops; where two spans' windows meet, the larger weight wins;
- the leg is solved analytically (`solve_leg`): hip fixed, the knee in the plane of the measured
  bend (hip, measured knee, target), thigh and shin of constant length (the clip's median of each,
  averaged between the legs as the rig solver's skeleton is; in the blend windows the lengths blend
  from the measured ones too, so a weight of 0 gives back the measured leg); a target out of reach
  gets the leg stretched (or folded) to its limit towards it;
- the heel and toes move rigidly with the ankle (the same translation).
Frames outside the spans and their windows are left as they are. Pure numpy, any frame of axes.

The same two-bone IK turns a solved skeleton's leg bones (`pin_leg`): the live motion stage pins the avatar's
feet with it, so the forward kinematics of its bones, not only its keypoints, put a planted foot where it is held.
"""

from __future__ import annotations

import logging
import math
from typing import Sequence

import numpy as np

log = logging.getLogger(__name__)

BLEND = 0.1  # s: a span's edge offset fades to nothing over this before and after it (the lock eases in and out)
SIDES = ("left", "right")
FOOT_POINTS = ("heel", "big_toe", "small_toe")  # moved with the ankle
_EPS = 1e-9


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(..., 3) -> unit vectors (zero where the length is ~0) and lengths (...,)."""
    length = np.linalg.norm(v, axis=-1)
    return v / np.maximum(length, _EPS)[..., None], length


def solve_leg(hip: np.ndarray, knee: np.ndarray, target: np.ndarray, thigh, shin) -> tuple[np.ndarray, np.ndarray]:
    """Two-bone IK: (..., 3) hip, measured knee and ankle target, thigh and shin lengths (m, scalars or (...,))
    -> (knee, ankle) (..., 3) with |knee - hip| = thigh and |ankle - knee| = shin.

    The ankle is the target when in reach, else the nearest reachable point on the line from the hip
    through it (|ankle - hip| clamped to [|thigh - shin|, thigh + shin]). The knee lies in the plane of
    hip, measured knee and target, on the measured knee's side; a measured leg with no bend (knee on
    the hip-target line) bends towards the axis least aligned with that line.
    """
    hip, knee, target = (np.asarray(a, dtype=np.float64) for a in (hip, knee, target))
    thigh, shin = np.asarray(thigh, dtype=np.float64), np.asarray(shin, dtype=np.float64)
    u, reach = _unit(target - hip)
    d = np.clip(reach, np.maximum(np.abs(thigh - shin), _EPS), thigh + shin)
    along = knee - hip
    bend = along - np.sum(along * u, axis=-1, keepdims=True) * u
    w, bend_len = _unit(bend)
    straight = bend_len < 1e-9
    if np.any(straight):  # no bend plane measured: any perpendicular of u
        axis = np.eye(3)[np.argmin(np.abs(u), axis=-1)]
        fallback, _ = _unit(np.cross(u, axis))
        w = np.where(straight[..., None], fallback, w)
    cos_a = np.clip((thigh * thigh + d * d - shin * shin) / (2 * thigh * d), -1.0, 1.0)  # law of cosines at the hip
    sin_a = np.sqrt(1.0 - cos_a * cos_a)
    new_knee = hip + thigh[..., None] * (cos_a[..., None] * u + sin_a[..., None] * w)
    return new_knee, hip + d[..., None] * u


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cross product of two (3,) vectors (np.cross costs ten times this on one pair: the live path)."""
    (a0, a1, a2), (b0, b1, b2) = a.tolist(), b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def _length(a: np.ndarray) -> float:
    return math.sqrt(float(a @ a))


def _skew(k: np.ndarray) -> np.ndarray:
    (k0, k1, k2) = k.tolist()
    return np.array([[0.0, -k2, k1], [k2, 0.0, -k0], [-k1, k0, 0.0]])


def _about(axis: np.ndarray, angle: float) -> np.ndarray:
    """(3, 3) the rotation by `angle` (rad) about the unit `axis` (Rodrigues)."""
    cross = _skew(axis)
    return np.eye(3) + math.sin(angle) * cross + (1.0 - math.cos(angle)) * (cross @ cross)


def turn_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(3,) a, b -> (3, 3) the smallest rotation that turns a's direction onto b's (Rodrigues; identity where either
    is ~0; half a turn about any perpendicular where they are opposite)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    size_a, size_b = _length(a), _length(b)
    if size_a < _EPS or size_b < _EPS:
        return np.eye(3)
    a, b = a / size_a, b / size_b
    axis = _cross(a, b)
    sine, cosine = _length(axis), float(a @ b)
    if sine < 1e-12:
        if cosine > 0:
            return np.eye(3)
        perpendicular = _cross(a, np.eye(3)[np.argmin(np.abs(a))])
        perpendicular /= _length(perpendicular)
        return 2.0 * np.outer(perpendicular, perpendicular) - np.eye(3)
    cross = _skew(axis / sine)
    return np.eye(3) + sine * cross + (1.0 - cosine) * (cross @ cross)


def pin_leg(hip: np.ndarray, upper: np.ndarray, lower: np.ndarray, foot: np.ndarray, offsets: np.ndarray,
            ankle: np.ndarray, toes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One leg of a solved skeleton turned so that its forward kinematics reaches a target: hip (3,) the upper leg's
    head; upper, lower, foot (3, 3) the global rotations of the upper leg, lower leg and foot bones; offsets (3, 3)
    the rest offsets (in the parent's rest frame) of the lower leg (the knee from the hip), the foot (the ankle from
    the knee) and the toes (from the ankle); ankle (3,) where the foot bone's head goes, toes (3,) a point the toes
    bone's head points at from there. -> the three new global rotations and the ankle reached (as `solve_leg`: the
    target when in reach, else the nearest point the leg reaches on the line from the hip to it).

    The knee bends about the solve's hinge (the upper leg's x axis): it lies in the plane through the hip and the
    target square to that axis, on the side the rig's knees bend to (the upper leg's +z), never sideways or
    backwards, whatever the solved bend (a straight leg has no bend plane of its own). The upper leg turns by the
    smallest rotation onto the knee, then about itself so that its hinge is square to the bend plane; the lower leg
    and the foot then turn by the smallest rotations, the knee about its hinge."""
    hip, ankle, toes = (np.asarray(a, dtype=np.float64) for a in (hip, ankle, toes))
    thigh, shin, sole = upper @ offsets[0], lower @ offsets[1], foot @ offsets[2]
    thigh_length, shin_length = _length(offsets[0]), _length(offsets[1])
    to = ankle - hip
    distance = _length(to)
    forward = _cross(to, upper[:, 0])  # square to the line and the hinge: where the knee goes
    size = _length(forward)
    if distance < _EPS or size < 1e-9 * distance:  # the target on the hinge's line (or at the hip): any plane
        knee, reached = solve_leg(hip, hip + thigh, ankle, thigh_length, shin_length)
    else:
        u, forward = to / distance, forward / size
        d = min(max(distance, abs(thigh_length - shin_length), _EPS), thigh_length + shin_length)
        cos_a = min(max((thigh_length ** 2 + d * d - shin_length ** 2) / (2.0 * thigh_length * d), -1.0), 1.0)
        knee = hip + thigh_length * (cos_a * u + math.sqrt(1.0 - cos_a * cos_a) * forward)
        reached = hip + d * u
    first = turn_between(thigh, knee - hip)
    axis = (knee - hip) / _length(knee - hip)
    normal = _cross(knee - hip, reached - knee)
    size = _length(normal)
    if size > 1e-9:  # the hinge onto the bend plane's normal (the knee bent forward about it), turning about the thigh
        normal /= size
        hinge = first @ upper[:, 0]
        first = _about(axis, math.atan2(float(_cross(hinge, normal) @ axis), float(hinge @ normal))) @ first
    second = turn_between(first @ shin, reached - knee) @ first
    third = turn_between(second @ sole, toes - reached) @ second
    return first @ upper, second @ lower, third @ foot, reached


def contact_spans(contact: np.ndarray) -> list[tuple[int, int]]:
    """(T,) bool -> [(first, last), ...] inclusive runs of True (contact spans; also the held-bone
    ranges of the exports' marks sidecar)."""
    edges = np.diff(np.concatenate([[0], np.asarray(contact, dtype=np.int8), [0]]))
    return [(int(a), int(b) - 1) for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))]


def _times(times: np.ndarray, count: int, blend: float) -> np.ndarray:
    """`times` checked: (count,) finite seconds in order; `blend` finite seconds above 0."""
    times = np.asarray(times, dtype=np.float64)
    if times.shape != (count,) or not np.isfinite(times).all() or (np.diff(times) < 0).any():
        raise ValueError(f"expected times ({count},): finite seconds in order")
    if not (np.isfinite(blend) and blend > 0):
        raise ValueError(f"blend must be a finite number of seconds above 0, got {blend!r}")
    return times


def lock_weights(ankle: np.ndarray, contact: np.ndarray, times: np.ndarray, blend: float = BLEND
                 ) -> tuple[np.ndarray, np.ndarray]:
    """One foot: ankle (T, 3), contact (T,) bool, times (T,) s -> weight (T,) in [0, 1] and shift (T, 3), the
    ankle's target being ankle + weight * shift. In a span: weight 1, shift to the span's median ankle. Within
    `blend` seconds before (after) it: weight falling linearly with the time from the span, to 0 at `blend`, shift
    the one of the span's first (last) frame, so the foot keeps its measured motion there plus a fading offset.
    Elsewhere weight 0 (shift NaN)."""
    count = len(ankle)
    times = _times(times, count, blend)
    weight, shift = np.zeros(count), np.full((count, 3), np.nan)
    for first, last in contact_spans(contact):
        span = ankle[first:last + 1]
        known = np.flatnonzero(np.isfinite(span).all(axis=1))
        if len(known) == 0:
            continue
        anchor = np.median(span[known], axis=0)
        frames = np.arange(np.searchsorted(times, times[first] - blend), np.searchsorted(times, times[last] + blend, "right"))
        outside = np.maximum(times[first] - times[frames], times[frames] - times[last])  # s before / after, <= 0 inside
        ramp = np.where(outside <= 0, 1.0, 1.0 - outside / blend)
        frames, ramp = frames[ramp > 1e-9], ramp[ramp > 1e-9]  # at `blend` or further: nothing
        edge = np.where(frames < first, first + known[0], np.where(frames > last, first + known[-1], frames))
        better = ramp > weight[frames]
        weight[frames[better]] = ramp[better]
        shift[frames[better]] = anchor - ankle[edge[better]]
    return weight, shift


def lock_feet(points3d: np.ndarray, keypoint_names: Sequence[str], contacts: np.ndarray, times: np.ndarray, *,
              blend: float = BLEND) -> np.ndarray:
    """(T, K, 3) metres (NaN where unknown), the K names, contacts (T, 2) bool (left, right), times (T,) s
    -> (T, K, 3) with each foot held during its contacts (see the module docstring)."""
    out = np.array(points3d, dtype=np.float64)
    contacts = np.asarray(contacts, dtype=bool)
    if contacts.shape != (len(out), 2):
        raise ValueError(f"expected contacts ({len(out)}, 2), got {contacts.shape}")
    index = {n: i for i, n in enumerate(keypoint_names)}
    legs = {side: (index[f"{side}_hip"], index[f"{side}_knee"], index[f"{side}_ankle"]) for side in SIDES}
    thighs, shins = [], []
    for hip, knee, ankle in legs.values():
        thighs.append(np.linalg.norm(out[:, knee] - out[:, hip], axis=-1))
        shins.append(np.linalg.norm(out[:, ankle] - out[:, knee], axis=-1))
    if not np.isfinite(np.concatenate(thighs + shins)).any():
        return out
    thigh = float(np.nanmean([np.nanmedian(t) if np.isfinite(t).any() else np.nan for t in thighs]))
    shin = float(np.nanmean([np.nanmedian(s) if np.isfinite(s).any() else np.nan for s in shins]))
    for s, side in enumerate(SIDES):
        hip, knee, ankle = legs[side]
        foot = [index[f"{side}_{p}"] for p in FOOT_POINTS if f"{side}_{p}" in index]
        weight, shift = lock_weights(out[:, ankle], contacts[:, s], times, blend)
        rows = np.flatnonzero((weight > 0) & np.isfinite(out[:, [hip, knee, ankle]]).all(axis=(1, 2)))
        if len(rows) == 0:
            continue
        w = weight[rows]
        measured = out[rows, ankle]
        target = measured + w[:, None] * shift[rows]
        row_thigh = thighs[s][rows] + w * (thigh - thighs[s][rows])
        row_shin = shins[s][rows] + w * (shin - shins[s][rows])
        new_knee, new_ankle = solve_leg(out[rows, hip], out[rows, knee], target, row_thigh, row_shin)
        out[rows, knee] = new_knee
        out[rows, ankle] = new_ankle
        if foot:
            out[np.ix_(rows, foot)] += (new_ankle - measured)[:, None, :]
        log.debug("%s foot: %d contact spans locked over %d frames", side, len(contact_spans(contacts[:, s])), len(rows))
    return out
