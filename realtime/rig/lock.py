"""Foot locking, per foot, causal (no added latency): a foot in contact stays where it came down.

While in contact the ankle, heel and toes stay where the ankle came in on the frame before the contact began (the
detector decides from the heel's speed over its last frames, so the foot was already down then; held where the
contact is decided, it would move by that frame's noise or a depth frame's re-measuring), and the knee follows by
two-bone IK (hip fixed, the frame's thigh and shin, the knee in the measured bend plane). An anchor just out of
the leg's reach (by at most `stretch`) is kept, the shin stretched; further out (a depth carried over from the
swing) the anchor moves once to where the leg lands.

Released, the foot eases from where it was held to where it is shown over `ease_time`, a smoothstep (slow first:
a release can come a frame before the foot leaves the floor). After a stance (`hold_after` or longer) the ease
waits until the foot is shown swinging (faster than `swing_speed` for `swing_time`: a depth frame re-measuring a
held foot moves it on one frame only), `release_hold` at most, so an anchor found stale is corrected in the swing,
not inside the stance; a foot planted again in that wait never swung and stays where it was held. Every gate is a
`LockGates` field; why each has its value is in bench/RESULTS.md (issue 32, rounds 16-21; issue 51).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.rig.floor import foot_indices
from realtime.rig.gates import Gates, gate, lasted
from realtime.rig.leg_ik import SIDES, solve_leg


@dataclass(frozen=True)
class LockGates(Gates):
    """The foot lock's gates: distances (m), speeds (m/s) and times (s)."""

    stretch: float = gate(0.15, "m", "an anchor this far out of the leg's reach keeps the ankle (the shin stretched) "
                                     "rather than dragging it with the hips")
    ease_time: float = gate(1 / 6, "s", "a released foot reaches where it is shown this long after the last frame it "
                                        "was held (a smoothstep)")
    hold_after: float = gate(1 / 6, "s", "a foot held this long or longer waits, once released, until it swings")
    release_hold: float = gate(1 / 3, "s", "that wait lasts at most this long")
    swing_speed: float = gate(0.36, "m/s", "an ankle shown faster than this swings (a swing: 2-4 m/s; a depth frame's "
                                           "re-measuring is one frame's jump, the live filter's tail of it 0.2-0.3 m/s)")
    swing_time: float = gate(1 / 15, "s", "swinging: faster than swing_speed this long in a row")


@dataclass
class _Ease:
    """A released foot's way from where it was held to where it is shown: `offset` (3,) held - shown at the release;
    `waiting`: the release's time while the ease waits for a swing (None once it runs); `since`: the time of the last
    frame it was fully held (the ease's start, once it runs)."""

    offset: np.ndarray
    waiting: Optional[float]
    since: Optional[float]


def _still_to_go(progress: float) -> float:
    """The share of a released foot's offset still applied `progress` (0-1) of the way through the ease: smoothstep,
    so the foot leaves its place slowly (heel-off; an early release is still in stance) and moves most mid-ease."""
    return 1.0 - progress * progress * (3.0 - 2.0 * progress)


class FootLock:
    """Holds each foot in contact where it came in (see the module's docstring). `apply` once per frame with its
    timestamp; call `reset` when frames of the person were missed. `gates`: `LockGates`, any overridden."""

    def __init__(self, keypoint_names: Sequence[str], *, gates: LockGates = LockGates()):
        self.gates = gates
        index = {n: i for i, n in enumerate(keypoint_names)}
        self.legs = {side: (index[f"{side}_hip"], index[f"{side}_knee"], index[f"{side}_ankle"]) for side in SIDES}
        self.feet = {side: np.array([index[f"{side}_ankle"], *foot_indices(keypoint_names)[side]]) for side in SIDES}
        self.reset()

    def reset(self) -> None:
        """Forget the anchors and the last frame's feet (the person was not seen on some frames)."""
        self._last: Optional[float] = None  # the last frame's time
        self._anchor: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)
        self._shown: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)  # the last frame's ankle out
        self._came: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)  # the last frame's ankle in
        self._ease: dict[str, Optional[_Ease]] = dict.fromkeys(SIDES)
        self._held: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # when the current contact's hold began
        self._swing: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # the time of the frame before a waiting foot
        # was first shown moving faster than swing_speed (in a row)

    def _reach(self, out: np.ndarray, side: str, target: np.ndarray) -> np.ndarray:
        """The ankle nearest `target` that side's leg reaches with this frame's thigh and shin (the knee bent to it in
        `out`, in place)."""
        hip, knee, ankle = self.legs[side]
        thigh, shin = np.linalg.norm(out[knee] - out[hip]), np.linalg.norm(out[ankle] - out[knee])
        out[knee], reached = solve_leg(out[hip], out[knee], target, thigh, shin)
        return reached

    def apply(self, timestamp: float, points3d: np.ndarray, contacts: np.ndarray) -> np.ndarray:
        """timestamp (s), (K, 3) metres, (2,) contacts (left, right) -> (K, 3) with the feet in contact held. A time
        not after the last frame's starts the lock over (`reset`)."""
        timestamp = float(timestamp)
        if not np.isfinite(timestamp):
            raise ValueError(f"FootLock.apply needs a finite timestamp in seconds, got {timestamp!r}")
        if self._last is not None and timestamp <= self._last:
            self.reset()
        previous, self._last = self._last, timestamp
        step = 0.0 if previous is None else timestamp - previous  # this frame's interval
        gates = self.gates
        out = np.array(points3d, dtype=np.float64)
        for side, contact in zip(SIDES, contacts):
            hip, knee, ankle = self.legs[side]
            foot = self.feet[side]
            shown, self._shown[side] = self._shown[side], None
            came = self._came[side]
            self._came[side] = out[ankle].copy() if np.isfinite(out[ankle]).all() else None
            ease = self._ease[side]
            if ease is not None and ease.waiting is not None and lasted(timestamp - ease.waiting, gates.release_hold, step):
                ease.waiting, ease.since = None, previous  # waited long enough: the ease runs from the last frame
            leg_seen = np.isfinite(out[[hip, knee, ankle]]).all()
            if not contact or not leg_seen:
                if self._anchor[side] is not None and shown is not None:  # released: ease out from where it was held
                    stood = lasted(timestamp - self._held[side], gates.hold_after, step)
                    ease = _Ease(shown - out[ankle], timestamp if stood else None, None if stood else previous)
                self._anchor[side], self._held[side] = None, None
                if ease is not None and not (leg_seen and np.isfinite(ease.offset).all()):
                    ease = None  # the leg not seen: the ease ends here rather than resuming later from a stale place
                moving = (ease is not None and ease.waiting is not None and came is not None
                          and np.linalg.norm(out[ankle] - came) > gates.swing_speed * step)
                self._swing[side] = (self._swing[side] if self._swing[side] is not None else previous) if moving else None
                if moving and lasted(timestamp - self._swing[side], gates.swing_time, step):  # swinging, not one jump
                    ease.waiting, ease.since = None, previous
                if ease is not None and ease.waiting is None and lasted(timestamp - ease.since, gates.ease_time, step):
                    ease = None  # eased all the way: as shown
                if ease is not None:
                    progress = 0.0 if ease.waiting is not None else (timestamp - ease.since) / gates.ease_time
                    reached = self._reach(out, side, out[ankle] + ease.offset * _still_to_go(progress))
                    out[foot] = points3d[foot] + (reached - points3d[ankle])
                self._ease[side] = ease
                self._shown[side] = out[ankle].copy()
                continue
            holding = ease is not None and ease.waiting is not None and shown is not None  # released, not yet swung
            self._ease[side], self._swing[side] = None, None
            if self._held[side] is None:
                self._held[side] = timestamp
            if self._anchor[side] is None:  # where it came in on the last frame (or stays, planted again unswung)
                self._anchor[side] = (shown if holding else came if came is not None else out[ankle]).copy()
            # the ankle lands where the leg reaches: at the anchor unless the leg is too short
            reached = self._reach(out, side, self._anchor[side])
            if np.linalg.norm(reached - self._anchor[side]) <= gates.stretch:
                reached = self._anchor[side]
            else:  # out of reach (the anchor's depth was carried over from a swing frame): hold where it lands
                self._anchor[side] = reached.copy()
            out[foot] = points3d[foot] + (reached - points3d[ankle])
            self._shown[side] = out[ankle].copy()
        return out
