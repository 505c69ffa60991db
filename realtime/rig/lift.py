"""A body every frame: 2D keypoints lifted to 3D between depth frames.

Depth (the pointmap) runs every N frames; pose every frame. On a depth frame each
measured 3D keypoint goes onto its keypoint's ray at the depth the pointmap measured along it
(`on_rays`): across the line of sight the image is the sharper measure (a pixel is 4 mm at 4 m, a
pointmap point's noise there is centimetres), and a depth frame's points would otherwise read as
motion to the contact detector.
These points re-anchor the lifter; between them each frame's 2D keypoints are lifted:

1. Camera intrinsics (fx, fy, cx, cy) are fitted by least squares to every depth
   frame's pairs of 2D keypoints and 3D points (u = fx X/Z + cx, v = fy Y/Z + cy).
2. The root's (left hip's) depth follows a straight line through the last ROOT_TRACK depth
   frames' root depths over time (within `root_track_time`: the body's walk along the line of sight),
   pulled ROOT_SIZE_GAIN of the way towards the depth the torso's outline in the image says (the last
   depth frame's scaled by z ~ 1 / size: the image's word on starts, stops and hops). The image size
   alone is too noisy a depth: 1 px on a 100 px torso is 1 % of it, 5 cm at 5 m. With one depth frame to go
   by (a track's first 1/6 s, before its second), the root's depth leaves that frame's at the speed of the line
   through the image size's depths since, shrunk towards standing still as far as their noise (SIZE_NOISE) over
   so few frames leaves that speed unsure against `start_speed` (each frame's size alone steps 10-20 cm from frame
   to frame at 5-7 m, and a landing foot not yet held steps with it).
3. Every keypoint keeps its depth relative to the root from the last depth frame and
   lies on its pixel's ray at that depth: x and y follow the image every frame, depth
   offsets are refreshed on each depth frame. (Solving each bone's depth from its length
   instead was tried: near-fronto-parallel bones make it ill-conditioned, 1 px of noise
   moved joints by centimetres.)
4. A foot on the floor does not move with the root: each of its points (ankle, heel, toes) lies
   on its pixel's ray at the point nearest to where it was on the previous frame (in the world, with
   `camera_motion`). Its motion across the line of sight still follows the image (heel-off shows), its
   motion along it is zero, as a planted foot's is. A foot is held when the contact detector had it
   planted on the previous frame (`planted`), or when its heel or big toe moved slower than `still_speed`
   across the line of sight over the last `still_time` (a swinging foot moves 2-4 m/s), which covers the frames
   between touchdown and the detector's decision, and heel-off after its release (the toes still down). Over a
   time, not from the last frame: each frame's keypoints carry their own noise, so one frame's motion of a still
   foot at 60 fps is as large as at 30 while the gate's share of it halves. Carried
   with the root instead, a planted foot of someone walking away from the camera drifts with the hips
   along the line of sight and jumps back on the next depth frame.
5. A hip stays within its leg's reach of its ankle while the contact detector has that foot planted (thigh
   and shin as the last depth frame measured them, LEG_SLACK more; not a foot that only looks still: one
   swinging along the line of sight does): where the root's depth puts it further, the body but its held
   feet moves along the line of sight, by the same depth for every point and as little as it takes. The root's depth from
   the torso's image size (a track's first depth frame, before a line has two) takes a torso that
   pitches for a body that moves: rising from a crouch towards the camera (a jump's push-off), the torso
   grows in the image by a quarter and the hips came 0.8 m nearer, half a metre past the planted feet's reach.
The gates are `LiftGates` fields; why each has its value is in bench/RESULTS.md (issue 32; issue 51).
With `stabilise_scale` (the ground stage), each depth frame is first divided by its pointmap
scale against the person's own bone lengths (`realtime.rig.scale.ScaleFilter`, the bones measured
along the fitted rays), so lifted frames inherit a steady scale too.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from realtime.rig.gates import Gates, gate
from realtime.rig.leg_ik import FOOT_POINTS, SIDES
from realtime.rig.scale import ScaleFilter

log = logging.getLogger(__name__)

ROOT = "left_hip"
TORSO = (("left_hip", "left_shoulder"), ("right_hip", "right_shoulder"))  # upright, so turning leaves their image size
ROOT_TRACK = 3  # samples: the root's depth between depth frames follows a line through the last this many depth frames'
ROOT_SIZE_GAIN = 0.1  # how far the torso's image size pulls the root's depth off that line
SIZE_NOISE = 2.0  # px: the torso's image size (its two sides) is off by about this much on one frame (a pixel a keypoint)
LEG_SLACK = 0.05  # a hip may be this share of its leg's length (the last depth frame's) further from a held ankle
# than the leg reaches: the depth frame's own noise (1.5 cm a point) is not taken for a depth error


@dataclass(frozen=True)
class LiftGates(Gates):
    """The lifter's gates: a still foot's speed (m/s) and how long a walk's depth track holds (s)."""

    still_speed: float = gate(0.6, "m/s", "a foot whose heel or big toe moves slower than this across the line of sight is "
                                          "held along it (a swinging foot moves 2-4 m/s)")
    still_time: float = gate(1 / 30, "s", "that motion is measured over this long (to the nearest frame; at least the last "
                                          "one): a frame's 2D noise is the same at any rate")
    root_track_time: float = gate(0.6, "s", "depth frames further apart than this (or a frame this far after the newest) say "
                                            "nothing of the walk now")
    start_speed: float = gate(1.5, "m/s", "before a track's second depth frame, a body's likely speed along the line of "
                                          "sight: the torso's image size over a few frames moves the root's depth off the "
                                          "first depth frame's only as fast as its noise against this allows")


class Intrinsics:
    """Least-squares fx, cx and fy, cy from (2D px, 3D camera metres) pairs, accumulated."""

    def __init__(self) -> None:
        self._sums = np.zeros((2, 5))  # per axis: sum a, sum a^2, sum u, sum a u, n  (a = X/Z)

    def add(self, pixels: np.ndarray, points: np.ndarray) -> None:
        ok = np.isfinite(pixels).all(axis=1) & np.isfinite(points).all(axis=1) & (points[:, 2] > 1e-3)
        for axis in (0, 1):
            a, u = points[ok, axis] / points[ok, 2], pixels[ok, axis]
            self._sums[axis] += [a.sum(), (a * a).sum(), u.sum(), (a * u).sum(), ok.sum()]

    @property
    def ready(self) -> bool:
        return bool((self._sums[:, 4] >= 4).all())

    def solve(self) -> np.ndarray:
        """(fx, fy, cx, cy)."""
        out = []
        for sa, saa, su, sau, n in self._sums:
            det = n * saa - sa * sa
            f = (n * sau - sa * su) / det
            out.append((f, (su - f * sa) / n))
        (fx, cx), (fy, cy) = out
        return np.array([fx, fy, cx, cy])


def rays(pixels: np.ndarray, intrinsics: np.ndarray) -> np.ndarray:
    """(K, 2) px -> (K, 3) ray directions with z = 1."""
    fx, fy, cx, cy = intrinsics
    return np.stack([(pixels[:, 0] - cx) / fx, (pixels[:, 1] - cy) / fy, np.ones(len(pixels))], axis=1)


def nearest_on_rays(points: np.ndarray, ray: np.ndarray) -> np.ndarray:
    """(K, 3) each point's nearest point on its ray (K, 3) (NaN where either is unknown)."""
    depth = (ray * points).sum(axis=1) / (ray * ray).sum(axis=1)
    return ray * depth[:, None]


def on_rays(points: np.ndarray, ray: np.ndarray) -> np.ndarray:
    """Each (K, 3) point moved to the nearest point of its keypoint's ray (K, 3): the pointmap's depth
    along the line of sight, the image's sharper position across it. Where the ray is unknown the point stays."""
    out = nearest_on_rays(points, ray)
    return np.where(np.isfinite(out), out, points)


class Lifter:
    """One person's 3D keypoints on every frame from 2D keypoints and the depth frames among them."""

    def __init__(self, keypoint_names: Sequence[str], *, stabilise_scale: bool = False, gates: LiftGates = LiftGates()):
        self.names, self.gates = list(keypoint_names), gates
        index = {n: i for i, n in enumerate(self.names)}
        self.root = index[ROOT]
        self.torso = np.array([(index[a], index[b]) for a, b in TORSO])
        self.feet = [np.array([index[f"{side}_{p}"] for p in ("ankle", *FOOT_POINTS)]) for side in SIDES]
        self.legs = [np.array([index[f"{side}_{p}"] for p in ("hip", "knee", "ankle")]) for side in SIDES]
        self.intrinsics = Intrinsics()
        self._last3d: Optional[np.ndarray] = None
        self._previous: Optional[np.ndarray] = None  # the last frame's output (K, 3)
        self._previous_time = 0.0  # the last frame's time (s)
        self._last_size: float = np.nan
        self._root_depths: deque = deque(maxlen=ROOT_TRACK)  # (time, the root's depth) on the last depth frames
        self._sized: list = []  # (time, the torso's image size's root depth) since the last depth frame
        self._soles: deque = deque()  # (time, (2, 2, 3) each foot's heel and big toe out) over still_time, this camera's
        self._frames = 0  # frames seen: the time when none is given
        self.scale = ScaleFilter(self.names) if stabilise_scale else None

    def reset(self) -> None:
        """Forget the person (the intrinsics stay: they are the camera's)."""
        self._last3d, self._previous, self._last_size = None, None, np.nan
        self._root_depths.clear()
        self._sized = []
        self._soles.clear()
        if self.scale is not None:
            self.scale.reset()

    def _torso_size(self, pixels: np.ndarray) -> float:
        """The torso's sides in the image (hip to shoulder, left and right): its scale."""
        d = np.linalg.norm(pixels[self.torso[:, 1]] - pixels[self.torso[:, 0]], axis=1)
        return float(d.sum()) if np.isfinite(d).all() else np.nan

    def update(self, pixels: np.ndarray, points3d: Optional[np.ndarray] = None,
               scores: Optional[np.ndarray] = None, planted: Optional[Sequence[bool]] = None,
               camera_motion: Optional[np.ndarray] = None, timestamp: Optional[float] = None) -> Optional[np.ndarray]:
        """pixels (K, 2), points3d (K, 3) camera metres on a depth frame (else None), scores (K,),
        planted (2,) (left, right): the feet on the floor on the previous frame (held along the line of
        sight between depth frames), camera_motion (4, 4): this frame's camera from the previous frame's
        where the camera moves (the feet are then held in the world; None: a static camera), timestamp: the
        frame's time (s; None: the frames are taken as evenly spaced, 1/30 s apart).
        Returns (K, 3) camera metres (NaN where unknown; on a depth frame the measured points, divided by
        the frame's scale with `stabilise_scale`, on their keypoints' rays), or None before the first depth frame."""
        pixels = np.asarray(pixels, dtype=np.float64)
        self._frames += 1
        time = self._frames / 30.0 if timestamp is None else float(timestamp)
        if scores is not None:
            pixels = np.where((np.asarray(scores) >= KEYPOINT_SCORE_THRESHOLD)[:, None], pixels, np.nan)
        if points3d is not None and np.isfinite(points3d[self.root]).all():
            points3d = np.asarray(points3d, dtype=np.float64)
            self.intrinsics.add(pixels, points3d)
            ray = rays(pixels, self.intrinsics.solve()) if self.intrinsics.ready else None
            if self.scale is not None:
                points3d = self.scale.update(points3d, ray)
            if ray is not None:
                points3d = on_rays(points3d, ray)
            self._last3d, self._last_size = points3d.copy(), self._torso_size(pixels)
            if self._root_depths and time <= self._root_depths[-1][0]:  # the source started over
                self._root_depths.clear()
            self._root_depths.append((time, float(points3d[self.root, 2])))
            self._sized = [(time, float(points3d[self.root, 2]))]
            self._remember_soles(points3d, ray, time)
            self._previous, self._previous_time = points3d.copy(), time
            return points3d
        if self._last3d is None or not self.intrinsics.ready:
            return None
        intrinsics = self.intrinsics.solve()
        ray = rays(pixels, intrinsics)
        out = self._lift(ray, pixels, time)
        if camera_motion is not None:  # the soles seen before, in this frame's camera
            for _, soles in self._soles:
                soles[:] = soles @ camera_motion[:3, :3].T + camera_motion[:3, 3]
        planted = [planted is not None and bool(planted[side]) for side in range(len(self.feet))]
        held = self._hold_feet(out, ray, planted, camera_motion, time)
        self._within_reach(out, ray, held, planted)
        self._remember_soles(out, ray, time)
        self._previous, self._previous_time = out.copy(), time
        return out

    def _remember_soles(self, points: np.ndarray, ray: Optional[np.ndarray], time: float) -> None:
        """Keeps this frame's heels and big toes for the still test, as far back as still_time reaches. `points` are
        on their keypoints' rays `ray` (a depth frame's 3D is noisier across the line of sight); unknown where the ray
        is (None: no intrinsics yet, the points as they are)."""
        soles = np.stack([points[foot[1:3]] for foot in self.feet])
        if ray is not None:
            soles = np.where(np.isfinite(np.stack([ray[foot[1:3]] for foot in self.feet])), soles, np.nan)
        if self._soles and time <= self._soles[-1][0]:  # the source started over
            self._soles.clear()
        self._soles.append((time, soles))
        while len(self._soles) > 1 and self._soles[1][0] <= time - self.gates.still_time:
            self._soles.popleft()

    def _hold_feet(self, out: np.ndarray, ray: np.ndarray, planted: list[bool], camera_motion: Optional[np.ndarray],
                   time: float) -> list[bool]:
        """Each still foot's points (ankle, heel, toes) in `out` moved along their rays to where they
        were on the previous frame (step 4 of the module's docstring); which feet (left, right)."""
        then, soles = self._still_reference(time)
        held_feet = []
        for side, foot in enumerate(self.feet):
            before = self._previous[foot]
            if camera_motion is not None:
                before = before @ camera_motion[:3, :3].T + camera_motion[:3, 3]
            held = nearest_on_rays(before, ray[foot])  # each point of its ray nearest to where it was
            still = False
            if soles is not None:
                last = soles[side]
                r = ray[foot[1:3]] / np.linalg.norm(ray[foot[1:3]], axis=1, keepdims=True)
                moved = np.linalg.norm(last - (last * r).sum(axis=1, keepdims=True) * r, axis=1)  # across the line of sight
                still = np.fmin(*moved) < self.gates.still_speed * (time - then)  # either one still (NaN: unknown)
            held_feet.append(bool(planted[side] or still))
            if held_feet[-1]:
                out[foot] = np.where(np.isfinite(held), held, out[foot])
        return held_feet

    def _within_reach(self, out: np.ndarray, ray: np.ndarray, held: list[bool], planted: list[bool]) -> None:
        """The body in `out` (all but the `held` feet) moved along the line of sight, every point by the same depth and
        as little as it takes, until each hip is within its leg's reach of its `planted` ankle (step 5 of the module's
        docstring); unchanged where it is, or where no depth brings it there."""
        low, high = -np.inf, np.inf  # the depth changes that keep every held leg within reach
        for side, leg in enumerate(self.legs):
            hip, knee, ankle = self._last3d[leg]
            reach = (1.0 + LEG_SLACK) * (np.linalg.norm(knee - hip) + np.linalg.norm(ankle - knee))
            if not (planted[side] and np.isfinite(reach) and np.isfinite(out[leg[[0, 2]]]).all()):
                continue
            # the hip at depth z on its ray (ray z = 1) is within reach of the ankle for z in the roots of
            # |ray z - ankle|^2 = reach^2
            r, a, z = ray[leg[0]], out[leg[2]], out[leg[0], 2]
            rr, ra = float(r @ r), float(r @ a)
            disc = ra * ra - rr * (float(a @ a) - reach * reach)
            if disc < 0:
                return
            root = np.sqrt(disc)
            low, high = max(low, (ra - root) / rr - z), min(high, (ra + root) / rr - z)
        if low > high or (low <= 0.0 <= high):
            return
        shift = low if low > 0.0 else high
        body = np.ones(len(out), bool)
        for side, foot in enumerate(self.feet):
            body[foot] &= not held[side]
        out[body] += ray[body] * shift

    def _still_reference(self, time: float) -> tuple[float, Optional[np.ndarray]]:
        """(its time, (2, 2, 3) the heels and big toes) of the kept frame nearest still_time before `time` (the last
        frame at least); (time, None) where none was kept."""
        if not self._soles or self._soles[-1][0] >= time:
            return time, None
        target = time - self.gates.still_time
        return min(self._soles, key=lambda entry: (abs(entry[0] - target), -entry[0]))

    def _root_line(self, time: float) -> Optional[float]:
        """The root's depth at `time` on the least-squares line through the last depth frames' root depths
        over time (None from fewer than two within root_track_time of the newest, or further than that after it)."""
        newest = self._root_depths[-1][0] if self._root_depths else np.nan
        window = self.gates.root_track_time
        track = np.array([(t, z) for t, z in self._root_depths if newest - t <= window + 1e-9])
        if len(track) < 2 or not newest < time <= newest + window:  # before it: the source started over
            return None
        dt = track[:, 0] - track[:, 0].mean()
        speed = float(dt @ (track[:, 1] - track[:, 1].mean())) / max(float(dt @ dt), 1e-12)
        return float(track[:, 1].mean() + speed * (time - track[:, 0].mean()))

    def _start_depth(self, time: float) -> float:
        """The root's depth at `time` before a second depth frame: the last depth frame's, moved at the speed of the
        line through the torso's image size's depths since (its offset left out: the first frame's size is as noisy as
        any), that speed shrunk towards 0 as far as those depths' noise (SIZE_NOISE) leaves it unsure against
        `start_speed`."""
        t0, z0 = self._sized[0]
        if not self._last_size > 0:  # the torso not measured on the depth frame: no speed to go by
            return z0
        track = np.array(self._sized)
        dt = track[:, 0] - track[:, 0].mean()
        unsure = min(abs(SIZE_NOISE / self._last_size * z0 / self.gates.start_speed), 1e100)  # s
        speed = float(dt @ (track[:, 1] - track[:, 1].mean())) / (float(dt @ dt) + unsure * unsure)
        return z0 + speed * (time - t0)

    def _lift(self, ray: np.ndarray, pixels: np.ndarray, time: float) -> np.ndarray:
        last = self._last3d
        size = self._torso_size(pixels)
        scale = self._last_size / size if np.isfinite(size) and np.isfinite(self._last_size) and size > 0 else 1.0
        root_depth = last[self.root, 2] * scale  # what the torso's image size says
        line = self._root_line(time)
        if line is not None:
            root_depth = line + ROOT_SIZE_GAIN * (root_depth - line) if np.isfinite(root_depth) else line
        elif self._sized and 0.0 < time - self._sized[0][0] <= self.gates.root_track_time:  # one depth frame to go by
            if np.isfinite(root_depth):
                self._sized.append((time, float(root_depth)))
            root_depth = self._start_depth(time)
        if not np.isfinite(root_depth):
            return np.full((len(self.names), 3), np.nan)
        depth = root_depth + (last[:, 2] - last[self.root, 2])  # each point's depth relative to the root, carried over
        return ray * depth[:, None]
