"""Foot locking, per foot, causal (no added latency): a foot in contact stays where it came down.

While in contact the ankle, heel and toes stay where the ankle came in `anchor_back` before the contact began (a frame
at 30 fps, interpolated between frames at 24; at higher rates the frame before, where a foot still shown moving was,
not further back over ground it has since moved, but at the height it had anchor_back before where the floor's up is
given: the same instant of a landing at every rate, a foot still shown coming down not read lower; the detector
decides from the heel's speed over its last frames, so the foot was already down then; held where the contact is
decided, it would move by that frame's noise or a depth frame's re-measuring), or on the last depth frame (`measured`)
where that came later: a landing foot's depth carried over from the swing between depth frames is 10-20 cm off, and
the depth frame measured where it is down; and the knee follows by two-bone IK (hip fixed, the frame's thigh and shin,
the knee in the measured bend plane). An anchor just out of the leg's reach (by at most `stretch`) is kept, the shin
stretched; further out at once (a depth carried over from the swing) the anchor moves once to where the leg lands;
drawn further out slowly (`drawn_speed`: the hips walking past the foot), it follows the leg only as far as the
stretch allows, not the whole stretch back in one frame.

Released, the foot eases from where it was held to where it is shown over `ease_time`, a smoothstep (slow first:
a release can come a frame before the foot leaves the floor). After a stance (`hold_after` or longer) the ease
waits until the foot is shown swinging (faster than `swing_speed` for `swing_time`: a depth frame re-measuring a
held foot moves it on one frame only), `release_hold` at most, so an anchor found stale is corrected in the swing,
not inside the stance; a foot planted again in that wait never swung and stays where it was held. Every gate is a
`LockGates` field; why each has its value is in bench/RESULTS.md (issue 32, rounds 16-21; issue 51).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.rig.floor import foot_indices
from realtime.rig.gates import Gates, gate, lasted
from realtime.rig.leg_ik import SIDES, solve_leg
from realtime.rig.solver import REACH, hips_shift


@dataclass(frozen=True)
class LockGates(Gates):
    """The foot lock's gates: distances (m), speeds (m/s) and times (s)."""

    anchor_back: float = gate(1 / 30, "s", "a foot in contact is held where its ankle came in this long before the "
                                           "contact began, no further back than the frame before")
    stretch: float = gate(0.15, "m", "an anchor this far out of the leg's reach keeps the ankle (the shin stretched) "
                                     "rather than dragging it with the hips")
    drawn_speed: float = gate(2.0, "m/s", "further out, an anchor whose overreach grows slower than this (the hips "
                                          "walking past the held foot) follows the leg only as far as stretch allows; "
                                          "faster (a depth carried over from the swing) it lands once where the leg "
                                          "reaches")
    ease_time: float = gate(1 / 6, "s", "a released foot reaches where it is shown this long after the last frame it "
                                        "was held (a smoothstep)")
    hold_after: float = gate(1 / 6, "s", "a foot held this long or longer waits, once released, until it swings")
    release_hold: float = gate(1 / 3, "s", "that wait lasts at most this long")
    swing_speed: float = gate(0.36, "m/s", "a foot whose ankle and toes are shown faster than this swings (a heel "
                                           "rising about still toes does not; a swing: 2-4 m/s; a depth frame's "
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


def _at_time(trail: Sequence[tuple], time: float) -> tuple:
    """The values of a trail of (time, value, ...) entries (oldest first, not empty) at `time`: interpolated between
    the two entries about it, the oldest's where `time` is before it, the newest's where after it."""
    if time <= trail[0][0]:
        return trail[0][1:]
    for before, after in zip(trail, list(trail)[1:]):
        if time <= after[0]:
            w = (time - before[0]) / (after[0] - before[0])
            return tuple(a + w * (b - a) for a, b in zip(before[1:], after[1:]))
    return trail[-1][1:]


def _trim(trail: deque, since: float) -> None:
    """Drops a trail's entries older than needed to interpolate at `since` (the newest at or before it stays)."""
    while len(trail) > 1 and trail[1][0] <= since:
        trail.popleft()


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
        self.toes = {side: np.array([index[f"{side}_big_toe"], index[f"{side}_small_toe"]]) for side in SIDES}
        self.reset()

    def reset(self) -> None:
        """Forget the anchors and the last frame's feet (the person was not seen on some frames)."""
        self._last: Optional[float] = None  # the last frame's time
        self._anchor: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)
        self._shown: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)  # the last frame's ankle out
        self._came: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)  # the last frame's ankle in
        self._came_toes: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)  # and its toes in (their midpoint)
        self._trail: dict[str, deque] = {side: deque() for side in SIDES}  # (time, ankle in) of the frames before this
        # one, as far back as anchor_back reaches
        self._ease: dict[str, Optional[_Ease]] = dict.fromkeys(SIDES)
        self._held: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # when the current contact's hold began
        self._over: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # the last held frame's anchor out of the leg's
        # reach (m, at most stretch); None: not held on the last frame
        self._swing: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # the time of the frame before a waiting foot
        # was first shown moving faster than swing_speed (in a row)
        self.share: dict[str, float] = dict.fromkeys(SIDES, 0.0)  # the last frame's hold per foot: 1 held (or waiting
        # to swing), the share of the held place still applied while it eases out, 0 as shown
        self.since: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # the last frame's current hold: when it began
        self.back = self.gates.anchor_back  # s: how far back of the last frame a hold begun on it is anchored

    def _back(self, side: str, time: float) -> Optional[np.ndarray]:
        """The ankle as it came in at `time` (s), interpolated between the frames before this one (the oldest kept
        where `time` is before it, the last where after it); None where no frame before this one was seen."""
        trail = self._trail[side]
        return _at_time(trail, time)[0] if trail else None

    def _anchor_back(self, side: str, now: float, up: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """Where a hold begun at `now` anchors the ankle: as it came in `back` before (`_back`); where that is the frame
        before rather than anchor_back ago and the floor's `up` is given, at the height it had anchor_back ago (at
        every rate the same instant of a landing: a frame later it has come further down, on a depth carried over
        from its swing too); None where no frame before this one was seen."""
        back = self._back(side, now - self.back)
        if back is not None and up is not None and self.back < self.gates.anchor_back:
            back = back + float((self._back(side, now - self.gates.anchor_back) - back) @ up) * up
        return back

    def _reach(self, out: np.ndarray, side: str, target: np.ndarray) -> np.ndarray:
        """The ankle nearest `target` that side's leg reaches with this frame's thigh and shin (the knee bent to it in
        `out`, in place)."""
        hip, knee, ankle = self.legs[side]
        thigh, shin = np.linalg.norm(out[knee] - out[hip]), np.linalg.norm(out[ankle] - out[knee])
        out[knee], reached = solve_leg(out[hip], out[knee], target, thigh, shin)
        return reached

    def apply(self, timestamp: float, points3d: np.ndarray, contacts: np.ndarray, measured: bool = False,
              up: Optional[np.ndarray] = None) -> np.ndarray:
        """timestamp (s), (K, 3) metres, (2,) contacts (left, right) -> (K, 3) with the feet in contact held. measured:
        this frame's points are a depth frame's (a hold begun from now on is anchored no earlier than it). up: (3,) the
        floor's up in the points' axes, or None (unknown: a hold at the frame before is at that frame's height too). A
        time not after the last frame's starts the lock over (`reset`)."""
        timestamp = float(timestamp)
        if not np.isfinite(timestamp):
            raise ValueError(f"FootLock.apply needs a finite timestamp in seconds, got {timestamp!r}")
        if self._last is not None and timestamp <= self._last:
            self.reset()
        previous, self._last = self._last, timestamp
        step = 0.0 if previous is None else timestamp - previous  # this frame's interval
        gates = self.gates
        # a hold begun now is anchored no further back than the frame before (`FootPin` begins it at the same time): at
        # 60 fps anchor_back is two frames, and a foot still shown moving would step back over that frame
        self.back = gates.anchor_back if previous is None else min(gates.anchor_back, step)
        out = np.array(points3d, dtype=np.float64)
        for side, contact in zip(SIDES, contacts):
            hip, knee, ankle = self.legs[side]
            foot = self.feet[side]
            shown, self._shown[side] = self._shown[side], None
            came, came_toes = self._came[side], self._came_toes[side]
            self._came[side] = out[ankle].copy() if np.isfinite(out[ankle]).all() else None
            # where a hold begun now is anchored, from the frames before this one (read before this frame joins them)
            back = self._anchor_back(side, timestamp, up) if contact and self._anchor[side] is None else None
            trail = self._trail[side]
            if self._came[side] is None or measured:  # after a depth frame, an anchor no earlier than it
                trail.clear()
            if self._came[side] is not None:
                trail.append((timestamp, self._came[side]))
                _trim(trail, timestamp - gates.anchor_back)
            toes = out[self.toes[side]].mean(axis=0)
            self._came_toes[side] = toes if np.isfinite(toes).all() else None
            ease = self._ease[side]
            if ease is not None and ease.waiting is not None and lasted(timestamp - ease.waiting, gates.release_hold, step):
                ease.waiting, ease.since = None, previous  # waited long enough: the ease runs from the last frame
            leg_seen = np.isfinite(out[[hip, knee, ankle]]).all()
            if not contact or not leg_seen:
                if self._anchor[side] is not None and shown is not None:  # released: ease out from where it was held
                    stood = lasted(timestamp - self._held[side], gates.hold_after, step)
                    ease = _Ease(shown - out[ankle], timestamp if stood else None, None if stood else previous)
                self._anchor[side], self._held[side], self._over[side] = None, None, None
                if ease is not None and not (leg_seen and np.isfinite(ease.offset).all()):
                    ease = None  # the leg not seen: the ease ends here rather than resuming later from a stale place
                moving = (ease is not None and ease.waiting is not None and came is not None
                          and np.linalg.norm(out[ankle] - came) > gates.swing_speed * step
                          and (came_toes is None or self._came_toes[side] is None
                               or np.linalg.norm(self._came_toes[side] - came_toes) > gates.swing_speed * step))
                self._swing[side] = (self._swing[side] if self._swing[side] is not None else previous) if moving else None
                if moving and lasted(timestamp - self._swing[side], gates.swing_time, step):  # swinging, not one jump
                    ease.waiting, ease.since = None, previous
                if ease is not None and ease.waiting is None and lasted(timestamp - ease.since, gates.ease_time, step):
                    ease = None  # eased all the way: as shown
                self.share[side], self.since[side] = 0.0, None
                if ease is not None:
                    progress = 0.0 if ease.waiting is not None else (timestamp - ease.since) / gates.ease_time
                    self.share[side] = _still_to_go(progress)
                    reached = self._reach(out, side, out[ankle] + ease.offset * self.share[side])
                    out[foot] = points3d[foot] + (reached - points3d[ankle])
                self._ease[side] = ease
                self._shown[side] = out[ankle].copy()
                continue
            holding = ease is not None and ease.waiting is not None and shown is not None  # released, not yet swung
            self._ease[side], self._swing[side] = None, None
            if self._held[side] is None:
                self._held[side] = timestamp
            if self._anchor[side] is None:  # where it came in anchor_back ago (or stays, planted again unswung)
                self._anchor[side] = (shown if holding else back if back is not None else out[ankle]).copy()
            # the ankle lands where the leg reaches: at the anchor unless the leg is too short
            reached = self._reach(out, side, self._anchor[side])
            over, before = float(np.linalg.norm(reached - self._anchor[side])), self._over[side]
            self._over[side] = min(over, gates.stretch)
            if over <= gates.stretch:
                reached = self._anchor[side]
            elif before is not None and over - before <= gates.drawn_speed * step:  # drawn out by the hips walking on:
                away = self._anchor[side] - reached  # the anchor follows only as far as the stretch allows
                self._anchor[side] = reached + away * (gates.stretch / over)
                reached = self._anchor[side]
            else:  # out of reach at once (the anchor's depth was carried over from a swing frame): hold where it lands
                self._anchor[side] = reached.copy()
                self._over[side] = 0.0
            out[foot] = points3d[foot] + (reached - points3d[ankle])
            self._shown[side] = out[ankle].copy()
            self.share[side], self.since[side] = 1.0, self._held[side]
        return out


@dataclass(frozen=True)
class PinGates(Gates):
    """The bone pin's gates (`FootPin`): times (s) and heights (m)."""

    settle: float = gate(0.1, "s", "a planted foot above the floor comes down to it and its flat pose at most this long "
                                   "after its hold began (a smoothstep; only down and its pitch: it does not slide); one "
                                   "below it goes up at once")
    settle_speed: float = gate(1.5, "m/s", "and sooner where it has less to come down: in its height over this speed, "
                                           "counted from the frame before the hold (the landing goes on: a foot within "
                                           "this speed's one frame of its rest is put down at once)")
    rise_speed: float = gate(0.6, "m/s", "a held foot's heel rises (about its toes) at most this fast (a heel-off: 0.3-0.5 "
                                         "m/s; a depth frame re-measuring the ankle jumps it by centimetres in a frame)")
    rest_after: float = gate(0.5, "s", "a foot's resting heights are used once it has been held this long")
    rest_window: float = gate(20.0, "s", "the resting heights are measured over this much of the latest held time")
    rest_every: float = gate(0.25, "s", "the resting heights are measured again after this much more held time")
    standing_ankle: float = gate(0.1, "m", "an ankle higher above the floor than this is not a standing foot's (a foot "
                                           "held up, or on its toes): a look at it is no still look, heights measured "
                                           "there no place to rest it (an ankle rests 5-9 cm up)")
    first_ankle: float = gate(0.08, "m", "before a foot's resting heights are measured (its own or the other foot's), a "
                                         "hold puts its ankle at most this high above the floor, nor raises it higher where "
                                         "its first frame shows it over the other foot's heights (a landing decided a "
                                         "frame early holds a foot still in the air; a run's clip holds too little for "
                                         "them, and its ankle rests 7-9 cm up: one frame's landing stood it 1-3 cm over)")
    first_toes_look: float = gate(0.1, "s", "and its toes where that frame shows them; shown level with the ankle or over "
                                            "it (a heel strike, whose toes come down within 0.1-0.15 s, or a foot standing "
                                            "toes-up, whose toes stay up: a kick's or a sitter's standing foot can rest 3-4 "
                                            "cm over its ankle), lowered as the median of their heights over this long "
                                            "shows them coming down, never raised")
    strike_speed: float = gate(0.4, "m/s", "shown coming down faster than this over first_toes_look, they are a heel "
                                           "strike's (3-8 cm in 0.1 s) and go down to first_toes over settle, not behind "
                                           "the shown toes (the live filter's lag slid the avatar's toes along the floor "
                                           "on a brisk walk's first strikes; a sitter's standing toes drift 0.06 m/s), "
                                           "then on down as shown")
    first_toes: float = gate(0.03, "m", "a heel strike's toes on one frame's heights rest this high at most, lower where "
                                        "shown lower (toes resting flat: 1-3 cm; a heel-off lifts the heel about toes held "
                                        "higher than they rest, and they float)")
    still_look: float = gate(0.2, "s", "a held foot that its hold shows standing still rests no lower than shown, by "
                                       "the median heights of its ankle and toes on the later half of the latest look "
                                       "this long (from the hold's start on) at a still foot: the whole foot raised as "
                                       "far as both are over the heights it rests at (a stance standing higher than "
                                       "those measured on the others), its toes as far over the ankle as shown, no "
                                       "higher than shown (a foot standing toes-up); on one frame's heights its ankle "
                                       "as high as shown as well")
    still_within: float = gate(0.02, "m", "a foot is still in a look where the medians of its later half are within this "
                                          "of its earlier half's, ankle and toes (a heel strike's toes drop 3-8 cm in it), "
                                          "its ankle no higher than standing_ankle")
    hips_give: float = gate(0.03, "m", "a held foot out of the avatar's leg's reach by at most this stays flat, the hips "
                                       "brought to it, unless the frame shows its heel up as far as the leg would lift "
                                       "it (a heel-off): the avatar's legs are the robust estimate's and come short of "
                                       "a straight stance leg by a centimetre or more")

REST_PERCENTILE = 50.0  # a held foot's ankle and toes rest at this percentile of their heights while held: the
# measurement's noise is symmetric about where the foot rests, and the lock holds few frames of heel-off or -strike
# (a lower percentile sank the feet: bench/RESULTS.md, issue 51)


class RestingHeights:
    """Where one of a performer's feet rests above the floor when it stands flat (its ankle and its toes), from their
    heights on the frames it is held: the REST_PERCENTILE of each over the latest `rest_window` seconds of held time,
    once `rest_after` seconds were held. The avatar's planted foot is put there (`FootPin`). Per foot: a capture's
    two feet need not rest alike (a floor that is not level across the path, a marker set higher on one foot)."""

    def __init__(self, gates: PinGates = PinGates()):
        self.gates = gates
        self._samples: deque = deque()  # (seconds held, ankle height, toes height)
        self._held = 0.0  # seconds in _samples
        self._since_update = 0.0
        self.heights: Optional[tuple[float, float]] = None  # (ankle, toes) m above the floor

    def add(self, seconds: float, ankle: float, toes: float) -> None:
        if not (np.isfinite(seconds) and seconds > 0 and np.isfinite(ankle) and np.isfinite(toes)):
            return
        self._samples.append((seconds, ankle, toes))
        self._held += seconds
        self._since_update += seconds
        while self._held - self._samples[0][0] >= self.gates.rest_window:
            self._held -= self._samples.popleft()[0]
        if self._held >= self.gates.rest_after and (self.heights is None or self._since_update >= self.gates.rest_every):
            values = np.array(self._samples)[:, 1:]
            ankle_rest, toes_rest = np.percentile(values, REST_PERCENTILE, axis=0)
            self.heights = (float(ankle_rest), float(toes_rest))
            self._since_update = 0.0


@dataclass
class _Pin:
    """One foot's pin: `offset` (3,) the avatar's ankle less the lock's held ankle when the hold began (so nothing jumps),
    `toes` (3,) its toes less its ankle then, `start` the time the settle counts from (the frame before the hold began),
    `heading` (3,) the foot's direction along the floor then (None: no floor known, or a foot pointing up or down),
    `since` the lock's hold it belongs to, `share` the lock's share of it on the last frame; `base` (3,) the pinned
    ankle as the lock held it on the last frame of the hold (the lock, released, shows the foot's own motion: the heel's
    rise is taken from it, the place is not), `rise` the heel's rise above it so far (m), `last` the last frame's time;
    `rest` the resting heights (ankle, toes) it puts the foot at: the foot's measured ones when the hold began
    (`RestingHeights`; the other foot's while its own are not), else where the lock held its ankle and toes then, the
    ankle at most `first_ankle` up (kept for the hold: an estimate refreshed within it would move the foot; but one
    frame's heights give way to the measured ones once there are any, over `settle`, from `rest_from` at `rest_since`);
    `measured`: `rest` is measured resting heights, not one frame's; `settle` the seconds it comes down over
    (`PinGates.settle_speed`), set on its first placed frame."""

    offset: np.ndarray
    toes: np.ndarray
    start: float
    heading: Optional[np.ndarray]
    since: Optional[float]
    share: float = 1.0
    base: Optional[np.ndarray] = None
    rise: float = 0.0
    last: Optional[float] = None
    rest: Optional[tuple[float, float]] = None
    measured: bool = False
    look: Optional[np.ndarray] = None  # (ankle, toes) heights as shown on the later half of this hold's latest look
    # at a still foot (`PinGates.still_look`; kept while the foot moves, as a heel-off's toes stay down)
    still_since: Optional[float] = None  # when the first look at a still foot ended (the toes go up over `settle`)
    settle: Optional[float] = None
    down: float = 0.0  # on one frame's heights: how far the hold lowered the ankle shown (`first_ankle`), its toes too
    lowering: bool = False  # on one frame's heights that showed the toes level with the ankle or over it: the toes are
    # lowered as the frames after show them coming down (`PinGates.first_toes_look`, `strike_speed`)
    struck: bool = False  # and they came down fast, a heel strike's: at first_toes, lowered further only as shown
    rest_from: Optional[tuple[float, float]] = None  # the one frame's heights a hold began on, while `rest` takes over
    rest_since: float = 0.0  # the time the measured `rest` took over from them
    pivot: Optional[np.ndarray] = None  # (3,) along the floor: where the flat foot goes from under its held ankle, so
    # that a foot that came down on its toes flattens about them (set on its first placed frame)


def _forward(heading: np.ndarray, up: np.ndarray, sine: float) -> np.ndarray:
    """The unit direction along `heading` pitched down by the angle of sine `sine`."""
    sine = float(np.clip(sine, -0.99, 0.99))
    return heading * np.sqrt(1.0 - sine * sine) - sine * up


def _reaching(toes: np.ndarray, heading: np.ndarray, up: np.ndarray, length: float, sine: float, hip: np.ndarray,
              reach: float) -> float:
    """The pitch (its sine) of a foot rolled about its `toes`, at least `sine`, at which the ankle comes within
    `reach` of the `hip` (the heel rises as a leg that cannot reach lifts it); the nearest it gets otherwise."""
    def gap(s: float) -> float:
        return float(np.linalg.norm(toes - length * _forward(heading, up, s) - hip)) - reach

    if gap(sine) <= 0.0:
        return sine
    candidates = np.linspace(sine, 0.99, 12)
    gaps = np.array([gap(c) for c in candidates])
    inside = np.flatnonzero(gaps <= 0.0)
    if len(inside) == 0:
        return float(candidates[np.argmin(gaps)])
    low, high = float(candidates[inside[0] - 1]), float(candidates[inside[0]])
    for _ in range(12):  # bisection: the first pitch that reaches
        middle = 0.5 * (low + high)
        low, high = (low, middle) if gap(middle) <= 0.0 else (middle, high)
    return high


def _lift(heights: tuple[float, float], shown: tuple[float, float]) -> float:
    """How far a foot resting at `heights` (ankle, toes) goes up, whole, to be no lower than `shown`: as far as both
    points are shown over them, never down."""
    return max(min(shown[0] - heights[0], shown[1] - heights[1]), 0.0)


def _smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


class FootPin:
    """The avatar's feet held where the foot lock holds them: the bones' forward kinematics, not only the keypoints.

    The skeleton is solved from the locked keypoints with bone lengths of its own (the robust estimate), so its
    feet would move with every frame's difference between those lengths and the frame's. Per foot, while the lock
    (`FootLock`) holds it, the pin gives the solver (`realtime.rig.solver.LiveSolver.update`'s `feet`) where the
    ankle and the toes go, in the rig axes of the points solved:
    - the ankle where the avatar's ankle was when the lock's held ankle came in (`LockGates.anchor_back` before the
      hold began, no further back than the frame before, or the last depth frame where that came later, as the lock
      takes it; this frame's solve of the lock's points, the knee bent to the held ankle with the frame's thigh and
      shin, puts the avatar's foot elsewhere: its legs are not the frame's), moved as the lock moves its held ankle (a
      hold out of the leg's reach is moved by the lock);
    - with the floor known (`floor`: its up and height in those axes) and the feet's resting heights measured
      (`RestingHeights`; a foot not measured yet takes the other foot's; never below the floor), the foot goes down
      to them, flat, heading as it came down (about its toes where they came down first: a run lands on the
      forefoot), over its height at `settle_speed` (at most `settle` seconds) counted
      from the frame before the hold (the landing goes on; a run's stance is 3-6 frames); a foot below them goes up
      to them at once, so a held foot is never in the floor (the solve's own foot often is where a hold begins: its
      legs are the robust estimate's, a lifted frame's may be shorter); a hold begun before they were measured, on one
      frame's heights, goes over to them over `settle` once they are (a first stance can last the whole clip); a hold
      begun on one frame's heights or the other foot's rests no lower than its first frame shows the foot; a foot
      the hold shows standing still (`still_look`) rests as far up as shown, never under its heights; its heel
      rises about its toes where a leg out of reach lifts it (out of reach by at most `hips_give`, only where the frame
      shows the heel up that far: else the foot stays flat and the solver brings the hips to it), and as the released
      lock shows it (a foot planted on its toes rolled about them instead, its heel following the measured pitch, was
      tried and measured worse: bench/RESULTS.md, issue 51, "a foot held on its toes");
    - released, the lock eases the foot out (`FootLock.share`): the pin's feet blend into the solve's by the same
      share; where the leg no longer reaches a released foot's place (by more than `hips_give`) it goes as far as the
      leg reaches, so a released foot moves the hips no more than that (a run's toe-off: the lock waits for a swing
      while the body runs on).
    `frame` once per frame gives the solver its `FeetTargets`; `reset` when frames of the person were missed."""

    def __init__(self, *, gates: PinGates = PinGates()):
        self.gates = gates
        self.rest = {side: RestingHeights(gates) for side in SIDES}
        self.reset()

    def reset(self) -> None:
        """Forget the holds (the resting heights are the performer's and stay)."""
        self._pins: dict[str, Optional[_Pin]] = dict.fromkeys(SIDES)
        self._last: Optional[float] = None
        self._step = 0.0
        self._measured = False  # this frame is a depth frame
        self._trail: dict[str, deque] = {side: deque() for side in SIDES}  # (time, ankle, toes) of the avatar's foot on
        # the frames before this one, as far back as the lock's anchor_back reaches
        self._seen: dict[str, deque] = {side: deque() for side in SIDES}  # (time, ankle and toes heights) as shown,
        # as far back as still_look reaches

    def frame(self, timestamp: float, lock: FootLock, locked: np.ndarray, shown: np.ndarray,
              floor: Optional[tuple[np.ndarray, float]], measured: bool = False):
        """This frame's `FeetTargets`. locked, shown: (2, 2, 3) the lock's output and its input (left, right;
        ankle, toes), rig axes of the points solved; floor: (up (3,), height (m) of the axes' origin above the
        floor), or None where the floor is not known; measured: this frame is a depth frame (as `FootLock.apply`'s)."""
        timestamp = float(timestamp)
        self._measured = measured
        step = 0.0 if self._last is None or timestamp <= self._last else timestamp - self._last
        self._last, self._step = timestamp, step
        if floor is not None:
            up, height = floor
            for s, side in enumerate(SIDES):  # a held foot's heights: where feet rest
                ankle, toes = shown[s] @ up + height
                if lock.share[side] >= 1.0 and lock.since[side] is not None:
                    self.rest[side].add(step, ankle, toes)
                seen = self._seen[side]
                if seen and timestamp <= seen[-1][0]:
                    seen.clear()
                if np.isfinite(ankle) and np.isfinite(toes):
                    seen.append((timestamp, (float(ankle), float(toes))))
                _trim(seen, timestamp - self.gates.still_look)

        def targets(legs) -> Optional[tuple[np.ndarray, np.ndarray]]:
            return self._targets(timestamp, legs, lock, locked, floor)

        return targets

    def _still(self, side: str, since: float) -> Optional[np.ndarray]:
        """(n, 2) the foot's ankle and toes heights as shown over the last `still_look` seconds (from `since` on: the
        hold's, not the landing's toes still up) where it stood still in it (neither coming down nor going up:
        `PinGates.still_within`; its ankle no higher than a standing foot's, `standing_ankle`: a foot held up is not
        standing); None where it did not, or too few frames were seen."""
        kept = [(time, heights) for time, heights in self._seen[side] if time >= since]
        if len(kept) < 4 or kept[-1][0] - kept[0][0] < 0.99 * self.gates.still_look:  # a whole look, at any rate
            return None
        seen = np.array([heights for _, heights in kept])
        if float(np.median(seen[:, 0])) > self.gates.standing_ankle:
            return None
        half = len(seen) // 2
        moved = np.abs(np.median(seen[:half], axis=0) - np.median(seen[half:], axis=0))
        return seen if float(moved.max()) < self.gates.still_within else None

    def _rest(self, side: str) -> Optional[tuple[float, float]]:
        """A foot's measured resting heights; the other foot's while its own are not measured yet (the same
        performer's feet rest alike within a centimetre or two; one frame's heights can be a landing foot's in the
        air); None while neither is, or where they are no standing foot's (the ankle over `standing_ankle`: a foot
        held mostly on its toes measures its relevé, not where it rests flat)."""
        other = SIDES[1 - SIDES.index(side)]
        heights = self.rest[side].heights or self.rest[other].heights
        return heights if heights is not None and heights[0] <= self.gates.standing_ankle else None

    def _targets(self, timestamp: float, legs, lock: FootLock, locked: np.ndarray,
                 floor: Optional[tuple[np.ndarray, float]]) -> Optional[tuple[np.ndarray, np.ndarray]]:
        ankles, aims = np.full((2, 3), np.nan), np.full((2, 3), np.nan)
        unpinned = []  # (side, the solve's foot) of the feet not pinned on this frame
        for s, side in enumerate(SIDES):
            share, pin = lock.share[side], self._pins[side]
            free = (legs.ankle[s], legs.toes[s])
            if not np.isfinite(np.concatenate(free)).all():
                self._trail[side].clear()  # the leg not solved: no foot to begin a hold from
            if share <= 0.0 or not np.isfinite(locked[s, 0]).all() or not np.isfinite(np.concatenate(free)).all():
                self._pins[side] = None
                unpinned.append((side, free))
                continue
            if pin is None or (lock.since[side] is not None and lock.since[side] != pin.since):  # a hold begins
                # where the avatar's foot was when the lock's ankle came to where it holds it (anchor_back ago): the
                # solve's own foot moves with the hips over a held ankle (its legs are not the frame's)
                ankle, toes = self._back(side, timestamp - lock.back, timestamp, free)  # as far back as the lock's
                if pin is not None:  # where the last hold's blend has the foot now
                    placed = self._place(pin, timestamp, legs, s, locked[s, 0], floor, False)
                    ankle, toes = (pin.share * p + (1.0 - pin.share) * f for p, f in zip(placed, free))
                pin = self._pins[side] = _Pin(ankle - locked[s, 0], toes - ankle, timestamp - self._step,
                                              self._heading(toes - ankle, floor), lock.since[side])
                if floor is not None:
                    measured = self._rest(side)
                    pin.measured = measured is not None
                    seen = self._seen[side]
                    shown = seen[-1][1] if seen and seen[-1][0] == timestamp else None  # this frame's heights
                    if measured is None:  # one frame's heights: the ankle no higher than first_ankle, the toes as
                        # shown, lowered with the ankle (and, on the frames after, as they are shown coming down), but
                        # not under first_toes for more than the ankle stood over a standing foot's (a foot on its toes)
                        ankle_height, toes_height = (float(h) for h in locked[s] @ floor[0] + floor[1])
                        if shown is not None:  # no lower than this frame shows the foot (the lock anchored it on
                            # the frame before, a depth frame re-measures it 1-3 cm higher): the whole foot as far up
                            # as both points are shown over, the ankle as high as shown
                            lift = _lift((ankle_height, toes_height), shown)
                            ankle_height, toes_height = max(ankle_height + lift, shown[0]), toes_height + lift
                        pin.down = max(ankle_height - self.gates.first_ankle, 0.0)
                        pin.lowering = toes_height >= ankle_height  # a heel strike's toes, or a foot's standing toes-up
                        floor_toes = min(toes_height - max(ankle_height - self.gates.standing_ankle, 0.0),
                                         self.gates.first_toes)
                        measured = (ankle_height - pin.down, max(toes_height - pin.down, floor_toes))
                    elif self.rest[side].heights is None and shown is not None:  # the other foot's heights: the
                        # whole foot no lower than this frame shows both points over them (feet can rest 2 cm apart),
                        # the ankle no higher than first_ankle (a landing decided a frame early shows it in the air)
                        lift = min(_lift(measured, shown), max(self.gates.first_ankle - measured[0], 0.0))
                        measured = (measured[0] + lift, measured[1] + lift)
                    pin.rest = (max(measured[0], 0.0), max(measured[1], 0.0))  # never in the floor
            elif floor is not None and pin.lowering and not pin.measured and self._rest(side) is None:
                # a hold on one frame's heights that showed its toes level with its ankle or over it: they come down
                # as they are shown coming down (a foot standing toes-up keeps them up), never up again; coming down
                # fast, a heel strike's, flat at first_toes over `settle`, and on down as shown after
                look = [(time, heights[1]) for time, heights in self._seen[side]
                        if time > timestamp - self.gates.first_toes_look - 1e-9]
                span = look[-1][0] - look[0][0] if look else 0.0
                if (not pin.struck and span >= 0.5 * self.gates.first_toes_look
                        and look[0][1] - look[-1][1] > self.gates.strike_speed * span):
                    pin.rest_from, pin.rest_since = self._resting(pin, timestamp), timestamp  # a heel strike's: flat
                    pin.rest, pin.struck = (pin.rest[0], min(pin.rest[1], self.gates.first_toes)), True
                elif look:
                    toes = max(min(pin.rest[1], float(np.median([h for _, h in look])) - pin.down), 0.0)
                    pin.rest = (pin.rest[0], toes)
            elif floor is not None and pin.rest is not None and not pin.measured:
                # a hold begun on one frame's heights outlasts the measuring of the resting heights (a first stance
                # that lasts: standing, a lunge, a sit): it goes over to them over `settle`, if a standing foot could
                # rest there (`_rest`: a foot held in the air all along measures its own height in the air)
                measured = self._rest(side)
                if measured is not None:
                    pin.rest_from, pin.rest_since = self._resting(pin, timestamp), timestamp
                    pin.rest, pin.measured = (max(measured[0], 0.0), max(measured[1], 0.0)), True
            if floor is not None and pin.rest is not None and lock.since[side] is not None:
                still = self._still(side, pin.start)
                if still is not None:  # this hold shows the foot standing still: how it stands now (the later
                    # half: a heel strike's toes still coming down in the earlier)
                    pin.look = np.median(still[len(still) // 2:], axis=0)
                    if pin.still_since is None:
                        pin.still_since = timestamp
            pin.share = share
            ankle, toes = self._place(pin, timestamp, legs, s, locked[s, 0], floor, lock.since[side] is not None)
            ankle, toes = share * ankle + (1.0 - share) * free[0], share * toes + (1.0 - share) * free[1]
            if lock.since[side] is None:  # released (waiting to swing, or easing out): where the leg cannot reach it, the
                # foot goes as far as the leg reaches rather than pulling the hips back (a run's toe-off: they run on)
                to = ankle - legs.hip[s]
                distance = float(np.linalg.norm(to))
                beyond = distance - REACH * float(legs.reach[s]) - self.gates.hips_give
                if beyond > 0.0:
                    back = beyond / distance * to
                    ankle, toes = ankle - back, toes - back
            ankles[s], aims[s] = ankle, toes
            self._remember(side, timestamp, (ankle, toes), lock.gates.anchor_back)
        # a foot not pinned moves with the hips the solver brings to a pinned one
        shift = hips_shift(legs.hip, legs.reach, ankles)
        for side, (ankle, toes) in unpinned:  # (where a hold begun on the next frame starts it)
            self._remember(side, timestamp, (ankle + shift, toes + shift), lock.gates.anchor_back)
        return (ankles, aims) if np.isfinite(ankles).any() else None

    def _remember(self, side: str, timestamp: float, foot: tuple[np.ndarray, np.ndarray], back: float) -> None:
        """Keeps this frame's avatar foot (ankle, toes) of `side`, as far back as `back` seconds reach."""
        trail = self._trail[side]
        if np.isfinite(np.concatenate(foot)).all():
            if trail and (timestamp <= trail[-1][0] or self._measured):  # after a depth frame, a hold begins no
                # earlier than its avatar foot, as the lock's anchor
                trail.clear()
            trail.append((timestamp, *(np.array(p, np.float64) for p in foot)))
        _trim(trail, timestamp - back)

    def _back(self, side: str, time: float, now: float, free: tuple[np.ndarray, np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray]:
        """The avatar's foot (ankle, toes) at `time`, interpolated between the kept frames and this one (`free` at
        `now`); the oldest kept where `time` is before it, this frame's where nothing is kept (or only frames not before
        this one: the source started over)."""
        ankle, toes = _at_time([*(kept for kept in self._trail[side] if kept[0] < now), (now, *free)], time)
        return ankle, toes

    def _resting(self, pin: _Pin, timestamp: float) -> Optional[tuple[float, float]]:
        """The heights the pinned foot rests at now: `rest`, or on the way to it from `rest_from` over `settle`."""
        rest = pin.rest
        if pin.rest_from is not None and rest is not None:  # going over from the heights the hold began on
            weight = _smoothstep((timestamp - pin.rest_since) / self.gates.settle) if self.gates.settle > 0 else 1.0
            rest = tuple(a + weight * (b - a) for a, b in zip(pin.rest_from, rest))
        if pin.look is not None and rest is not None:  # a foot this hold shows standing still: as far up as shown,
            # over one frame's heights or measured ones (the other foot's, or its own)
            ankle, toes = (float(h) for h in pin.look)
            # and the toes as far over the ankle as shown, not over where they are shown (an ankle measured while held
            # up stands too high)
            lift = max(min(ankle - rest[0], toes - rest[1]), 0.0)  # the whole foot up as far as both points are
            # shown over its heights (a stance standing higher than those measured on the others), pitched as it rests
            ankle_goal = rest[0] + lift
            # on one frame's heights the ankle as high as shown too, its toes as they go (that frame's depth can put
            # the ankle centimetres low); measured heights are many frames' and keep their pitch (a foot pitched to
            # each look slides its toes along the floor)
            goal = (ankle_goal if pin.measured else max(ankle_goal, ankle),
                    max(rest[1] + lift, min(ankle_goal + toes - ankle, toes)))
            weight = _smoothstep((timestamp - pin.still_since) / self.gates.settle) if self.gates.settle > 0 else 1.0
            rest = tuple(a + weight * (max(b, 0.0) - a) for a, b in zip(rest, goal))
        return rest

    @staticmethod
    def _heading(foot: np.ndarray, floor) -> Optional[np.ndarray]:
        if floor is None:
            return None
        up = floor[0]
        along = foot - (foot @ up) * up
        length = np.linalg.norm(along)
        return along / length if length > 0.3 * np.linalg.norm(foot) else None

    def _place(self, pin: _Pin, timestamp: float, legs, s: int, locked_ankle: np.ndarray, floor, holding: bool
               ) -> tuple[np.ndarray, np.ndarray]:
        """Where the pinned foot's ankle and toes are this frame (see the class's docstring). holding: the lock holds
        the foot (not released and waiting for it to swing)."""
        ankle = locked_ankle + pin.offset
        toes = ankle + pin.toes
        rest = self._resting(pin, timestamp)
        if floor is None or rest is None or pin.heading is None:
            return ankle, toes
        up, height = floor
        if holding or pin.base is None:
            pin.base = ankle
        step = 0.0 if pin.last is None else max(timestamp - pin.last, 0.0)
        pin.last = timestamp
        shown = max(float((ankle - pin.base) @ up), 0.0)  # the heel's rise as the released lock shows it
        limit = self.gates.rise_speed * step
        pin.rise = float(np.clip(shown, pin.rise - limit, pin.rise + limit))
        ankle_rest, toes_rest = rest
        length = float(legs.foot[s])
        # flat: as the foot rests (one frame's heights too: a depth error showing the toes far over the ankle on the
        # hold's first frame is lowered as the frames after show them)
        sin_flat = float(np.clip((ankle_rest - toes_rest) / length, -0.9, 0.9))
        flat = pin.base - (pin.base @ up + height - ankle_rest) * up  # the ankle on the floor, the foot flat
        toes_flat = flat + length * _forward(pin.heading, up, sin_flat)
        if pin.pivot is None:  # the point nearer where it rests came down first and stays: the toes (a run lands on the
            # forefoot) or the heel
            pin.pivot = np.zeros(3)
            if float(toes @ up) + height - toes_rest < float(ankle @ up) + height - ankle_rest:
                gap = toes - toes_flat
                pin.pivot = gap - float(gap @ up) * up
        flat, toes_flat = flat + pin.pivot, toes_flat + pin.pivot
        # the heel up (about the toes where they rest flat) as shown, and further while the leg cannot reach: as far as
        # the leg needs where this frame shows the heel up that far (a heel-off), else only as far as the hips, brought
        # down to the foot by hips_give, leave it needing (a leg a little short of a straight stance leg)
        sin_shown, reach = sin_flat + pin.rise / length, REACH * float(legs.reach[s])
        sin_pitch = _reaching(toes_flat, pin.heading, up, length, sin_shown, legs.hip[s], reach)
        seen = self._seen[SIDES[s]]
        if sin_pitch > sin_shown and seen and seen[-1][0] == timestamp:
            heel = sin_flat + max(seen[-1][1][0] - ankle_rest, 0.0) / length
            given = _reaching(toes_flat, pin.heading, up, length, sin_shown, legs.hip[s], reach + self.gates.hips_give)
            sin_pitch = max(given, min(sin_pitch, heel))
        placed = (toes_flat - length * _forward(pin.heading, up, sin_pitch), toes_flat)
        if pin.settle is None:  # the hold's settle: its height to come down over settle_speed, at most settle
            drop = max(float((start - goal) @ up) for start, goal in zip((ankle, toes), placed))
            pin.settle = min(max(drop, 0.0) / self.gates.settle_speed, self.gates.settle)
        weight = _smoothstep((timestamp - pin.start) / pin.settle) if pin.settle > 0 else 1.0
        out = []
        for start, goal in zip((ankle, toes), placed):  # the settle lowers a foot; one below where it rests goes up
            point = start + weight * (goal - start)  # there at once (a run's stance is about as short as the settle)
            out.append(point + max(float((goal - point) @ up), 0.0) * up)
        return out[0], out[1]
