"""Foot contact, per foot, frame by frame, causal: from the heel's motion across the line of sight and its height,
then, from heel-off to toe-off, the toes'.

The heel plants first and lifts first; the foot stays on the floor on its toes until toe-off. Between
depth frames the lifted 3D lies on each keypoint's ray at a depth carried over from the last depth frame, so a
point's motion across the line of sight is measured and its motion along it is not: speeds are taken across it
(the slope of a least-squares line through the heel over `speed_window`; for a release over it to the nearest frame:
the three frames of a 24 fps camera, not a two-frame slope whose noise alone passes `off_speed`), the height only as a
loose gate.

A contact starts when the heel is lower than `on_height` and slower than the onset gate, not within `refractory`
of the end of a stance (unless the heel has not risen `off_rise` above that stance's position: a foot let go of on
the floor, as it glides or by noise; nor its toes: a foot leaving heel-last; not one let go of by `off_along`, whose
rise the image hides, nor stepping sideways), and, while the body walks forwards or backwards, not behind the hips
just after a swing (a landing heel comes down ahead of them; a late swing along the line of sight is shown behind
where it is; stepping sideways, the trailing foot comes down behind them along the walk and the rule is off; after a
flight, both heels up together and neither foot planted, it is off too: a jump's feet land together and the hips go
on over them). The
onset gate is `on_speed` walking along the line of sight, rises towards `on_speed_across` as the walk turns across it, and is
`on_speed_running` at a run (where the heel is compared with where the hips were `speed_window` ago: a runner's
foot lands under them); a heel down from a swing, slower than on the frame before, behind toes already down (lower
than `on_height`, slower than the onset gate) plants under `on_speed_landing` (a toes-first landing: the heel still
swinging down while the toes stand; a heel-first one waits for the onset gate). A contact ends once, over its last
`off_time` (the median of each measure), the heel moves faster than `off_speed`, is higher than `off_height`, has
risen (or sunk) from its stance position (its median over the contact's first `stance_time`) by more than
`off_drift` or slid from it along the floor by more than `off_slide` (both across the line of sight: a planted foot
shifts a few centimetres as the body sits or turns, a heel-off rises; while the
body walks, or before the contact is a stance, a move of `off_drift` either way: a heel-off going with the step, a
foot passing through), or is lifting
(risen `off_rise` above that position and rising faster than `off_rise_speed`: heel-off, a rise too slow for the speed
gate; or risen `off_lift` with the toes risen as much: a foot lifted whole while it moves along the line of sight
shows little of its rise, the image's drop of a foot coming nearer taking the rest, where heel-off lifts the heel
alone and the toes stay down). A stance also ends, on its toes or not, while the body does not walk forwards or
backwards, once its heel and toes have both moved `off_along` one way along the line of sight over the last
`stance_time`, and as far from the other foot (the lifter holds a planted foot on its ray between
depth frames, so this is a depth frame's word: a foot leaving or sliding along the line of sight; a depth frame that
moves the whole body moves no foot); stepping sideways (the hips at `walking` or faster) with the heel risen `off_lift`
over `off_time`, the heel's move alone (a side step's heel leaves first, the foot turning on its toes).
Unless the toes still stand: a stance whose heel looks off (but for a lift of the whole
foot) while its toes (the big and small toe's midpoint), over the same `off_time`, have not moved from where they
stood over the `stance_time` before it (the heel's gates on their move, speed and rise across the line of sight)
goes on on its toes (heel-off; or the heel's noise; not while the body steps sideways: its hips moving at `walking`
or faster, slower than that along its facing). On its toes it ends once, over its last `off_time`, the toes
look off by those gates, or the heel is higher than `toes_heel_rise` above the floor or its stance position or rises
faster than `toes_heel_rising` (a toe lifting along the line of sight shows little of its own motion; the heel's rise
shows it) — but for a settled stance: one begun with the hips seen not walking (slower than `walking` along the
floor, or moving more up or down than along it; not yet seen for `hips_window`, as a track starts: not walking) whose
hips have since gone up or down faster than `walking` (sitting down, crouching, standing up: the heel rises 7-14 cm
onto the toes, as high and as fast as a toe-off's) goes on on its toes, stepping sideways or not while the hips move
more up or down than along the floor, until the toes rise, slide `off_slide` along the floor or move fast (their
move and speed down not counted: toes pressed as the heel rises), or the whole foot lifts (`off_lift`); beside a foot
in the air (not in contact, its heel higher than `off_height` within `landing_recent`: stepping, hopping or leaping off
this one) the heel's limits hold again, and while the hips go up faster than `walking` (a take-off) so does
`toes_heel_rising` (standing up, the heels come down; a sitter's heels rise as the hips go down). While the
hips go up faster than `walking` over `stance_time` (a take-off), a heel faster than `off_speed` over the last
`takeoff_time` is judged over that instead (a foot springing off leaves in two or three frames). Judged over
a time, not counted over frames in a
row: each frame's measurement noise is its own, so a run of frames all past a gate is likelier at 30 fps (two
frames) than at 60 (four), and a foot near a gate would be released at one rate and held at the other. Every gate
is a `ContactGates` field; why each has its value is in bench/RESULTS.md (issue 32, rounds 3-22; issue 51).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.rig.floor import Floor, foot_centres, foot_indices
from realtime.rig.gates import Gates, gate, lasted
from realtime.rig.leg_ik import SIDES


@dataclass(frozen=True)
class ContactGates(Gates):
    """The contact detector's gates: heights above the floor (m), the heel's and the hips' speeds (m/s, across the
    line of sight for the heel), and times (s)."""

    on_height: float = gate(0.08, "m", "the heel lower than this may plant (loose: the lifted frames' depth moves a foot "
                                       "up or down by centimetres)")
    off_height: float = gate(0.11, "m", "the heel higher than this has lifted (above on_height: hysteresis)")
    on_speed: float = gate(0.3, "m/s", "the onset gate walking along the line of sight, or standing (a late swing moving "
                                       "along it shows little speed across it)")
    on_speed_across: float = gate(0.4, "m/s", "the onset gate walking across the line of sight (a landing heel still "
                                              "slowing reads 0.3-0.4 m/s with the image's noise)")
    on_speed_running: float = gate(0.5, "m/s", "the onset gate at a run (a running heel reads 0.3-0.4 m/s on the frames it "
                                               "stands, a running swing 5-10 m/s)")
    off_speed: float = gate(0.45, "m/s", "the heel faster than this has lifted")
    speed_window: float = gate(0.067, "s", "the heel's and the toes' speed: the slope of a line through their positions "
                                           "over this long (to the nearest frame for the release's speed gates)")
    walking: float = gate(0.3, "m/s", "the hips faster than this along the floor walk (slower: standing)")
    running: float = gate(2.0, "m/s", "the hips this fast or faster run (people change from a walk to a run at about 2)")
    hips_window: float = gate(0.3, "s", "the hips' speed: the slope of a line through their positions over this long")
    off_drift: float = gate(0.028, "m", "the heel this far above or below its stance position (up across the line of "
                                        "sight) has lifted (heel-off: a slow, steady rise no single frame's speed shows)")
    off_slide: float = gate(0.06, "m", "the heel this far from its stance position along the floor, across the line of "
                                       "sight, has moved off (a planted foot shifting as the body sits or turns slides "
                                       "slower than any gate's speed; heel-off is a rise, off_drift's)")
    off_rise: float = gate(0.02, "m", "the heel this far above its stance position, and rising, is lifting")
    off_rise_speed: float = gate(0.15, "m/s", "rising faster than this (up across the line of sight) is lifting")
    off_lift: float = gate(0.012, "m", "the heel and the toes both this far above their stance positions (up across the "
                                       "line of sight), the heel rising, are lifting: the whole foot off the floor, as a "
                                       "side step lifts it along the line of sight; heel-off lifts the heel alone")
    stance_time: float = gate(1 / 6, "s", "the stance position: the heel's median over the contact's first this long; "
                                          "a contact this long is a stance (shorter: a foot passing through)")
    off_time: float = gate(1 / 15, "s", "a contact ends once the heel has looked off the floor over this long (the median "
                                        "of each measure: one noisy frame does not end it)")
    takeoff_time: float = gate(1 / 30, "s", "while the hips go up faster than walking over stance_time (a take-off), a heel "
                                           "faster than off_speed over this long is judged over it, not off_time (a foot "
                                           "springing off leaves at 1-3 m/s: off_time's median lags its lift-off by 2-4 "
                                           "frames)")
    landing_recent: float = gate(0.3, "s", "a heel higher than off_height this recently is coming down from a swing")
    refractory: float = gate(0.2, "s", "a foot released from a stance does not plant again sooner (a heel rising slowly "
                                       "after heel-off)")
    off_along: float = gate(0.045, "m", "a stance's heel and toes both this far along the line of sight from where they "
                                        "were stance_time before, and from the other foot (past the contact's "
                                        "first stance_time: its first depth frame puts right a foot planted as it lands), "
                                        "have moved off: a foot leaving or sliding along the line of sight shows 0.26-0.34 "
                                        "of it across it, a depth frame all of it")
    toes_heel_rise: float = gate(0.1, "m", "on its toes, a heel this high above the floor or its stance position has left "
                                           "the floor (a walk's toe-off: the heel 8-15 cm up; toes lifting along the line of "
                                           "sight show little else)")
    toes_heel_rising: float = gate(0.45, "m/s", "on its toes, a heel rising faster than this (up across the line of sight) "
                                                "is leaving the floor (a toe-off: 1-3 m/s)")
    on_speed_landing: float = gate(0.45, "m/s", "the onset gate for a heel down from a swing (higher than off_height within "
                                                "landing_recent), slower than on the frame before, behind toes already down "
                                                "and still (a toes-first landing: the heel swings down at 0.3-1.5 m/s)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.on_height >= self.off_height:
            raise ValueError(f"ContactGates.on_height ({self.on_height} m) must be below off_height ({self.off_height} m)")
        if self.walking >= self.running:
            raise ValueError(f"ContactGates.walking ({self.walking} m/s) must be below running ({self.running} m/s)")


def _across(vector: np.ndarray, sight: np.ndarray) -> np.ndarray:
    """`vector` less its component along the line of sight `sight` (camera to point)."""
    ray = sight / max(float(np.linalg.norm(sight)), 1e-9)
    return vector - (vector @ ray) * ray


def _within(history: deque, timestamp: float, window: float) -> list:
    """The (time, position) pairs of `history` no older than `window` (s) at `timestamp`."""
    return [(t, c) for t, c in history if timestamp - t <= window + 1e-9]


def _velocity(history: Sequence) -> Optional[np.ndarray]:
    """(3,) m/s: the least-squares slope of the positions in `history` ((time, position) pairs) over time (None from a
    single one)."""
    if len(history) < 2:
        return None
    times = np.array([t for t, _ in history])
    positions = np.stack([c for _, c in history])
    dt = times - times.mean()
    return (dt @ (positions - positions.mean(axis=0))) / max(float(dt @ dt), 1e-12)


class ContactDetector:
    """Foot contact per side with hysteresis (see the module's docstring). `state`: the last frame's contacts by
    side. `gates`: `ContactGates`, any overridden by the caller."""

    def __init__(self, floor: Floor, keypoint_names: Sequence[str], *, gates: ContactGates = ContactGates()):
        self.floor, self.gates = floor, gates
        self.feet = foot_indices(keypoint_names)
        index = {n: i for i, n in enumerate(keypoint_names)}
        self.heels = {side: index[f"{side}_heel"] for side in SIDES}
        self.toes = {side: np.array([index[f"{side}_big_toe"], index[f"{side}_small_toe"]]) for side in SIDES}
        self.hips = [index["left_hip"], index["right_hip"]]
        self._start()

    def _start(self) -> None:
        self._last: Optional[float] = None  # the last frame's time
        self._hips: deque = deque()  # (time, mid-hips) over hips_window
        # the hips seen not walking (slower than `walking` along the floor, or moving more up or down than along it);
        # None until they have been seen for hips_window (a speed over fewer frames is the noise's)
        self._still: Optional[bool] = None
        self._settling = False  # the hips going up or down faster than `walking` (sitting down, crouching, standing up)
        self._springing = False  # the hips going up faster than `walking` (standing up, or a take-off: a hop, a jump)
        self._taking_off = False  # ... over the last stance_time (a take-off's spring shows sooner than over hips_window)
        self.state = dict.fromkeys(SIDES, False)
        self._history: dict[str, deque] = {side: deque() for side in SIDES}  # (time, heel) over speed_window
        self._onset: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # the time of the frame before the contact began
        self._began: dict[str, Optional[float]] = dict.fromkeys(SIDES)  # the time of the contact's first frame
        self._stance: dict[str, list] = {side: [] for side in SIDES}  # the heel over the contact's first stance_time
        self._toes: dict[str, list] = {side: [] for side in SIDES}  # the toes' midpoint over the same frames
        self._stood = dict.fromkeys(SIDES, False)  # the contact has lasted stance_time
        self._measures: dict[str, deque] = {side: deque() for side in SIDES}  # the off gates' measures over off_time
        self._released = dict.fromkeys(SIDES, -np.inf)  # when each foot's last stance ended
        # ... and its heel's and toes' stance positions (None: let go of along the line of sight, or none yet)
        self._let_go: dict[str, Optional[tuple[np.ndarray, np.ndarray]]] = dict.fromkeys(SIDES)
        self._swung = dict.fromkeys(SIDES, -np.inf)  # when each heel was last higher than off_height, out of contact
        self._flown = -np.inf  # when both heels were last higher than off_height together, neither in contact (a flight)
        self._landing_speed = dict.fromkeys(SIDES, np.inf)  # each unheld heel's onset speed on the frame before
        self._toe_history: dict[str, deque] = {side: deque() for side in SIDES}  # (time, toes) over speed_window
        self._toe_track: dict[str, deque] = {side: deque() for side in SIDES}  # (time, toes, velocity, rising velocity, camera)
        self._soles: deque = deque()  # (time, (2, 3) heels, (2, 3) toes' midpoints) over stance_time
        self._walked = np.inf  # the last frame's walk along the facing (m/s; none yet: walking)
        self._on_toes: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES)  # where the toes stand, heel-off to toe-off
        self._planted_still = dict.fromkeys(SIDES, False)  # the contact began with the hips not seen walking
        self._settled = dict.fromkeys(SIDES, False)  # ... and the hips have since gone up or down faster than `walking`

    def _speed(self, velocity: Optional[np.ndarray], heel: np.ndarray, camera: np.ndarray) -> float:
        """m/s of a point's (the heel's) `velocity` across the line of sight (infinite without one: no contact starts on
        a track's first frame)."""
        if velocity is None:
            return np.inf
        return float(np.linalg.norm(_across(velocity, heel - camera)))

    def _walk(self, timestamp: float, points: np.ndarray, step: float) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """The hips' velocity along the floor (m/s, over hips_window) and where they are now, while they move faster
        than `walking`; None while the body stands (or its hips are not seen)."""
        hips = points[self.hips].mean(axis=0)
        self._still, self._settling, self._springing, self._taking_off = None, False, False, False
        if not np.isfinite(hips).all():
            self._hips.clear()
            return None
        self._hips.append((timestamp, hips))
        while timestamp - self._hips[0][0] > self.gates.hips_window + 1e-9:
            self._hips.popleft()
        velocity = _velocity(self._hips)
        if velocity is None:
            return None
        up = self.floor.normal / np.linalg.norm(self.floor.normal)
        walk = velocity - (velocity @ up) * up
        along, vertical = float(np.linalg.norm(walk)), abs(float(velocity @ up))
        if lasted(timestamp - self._hips[0][0], self.gates.hips_window, step):
            self._still = along < self.gates.walking or vertical > along
            self._settling = vertical > self.gates.walking
            self._springing = float(velocity @ up) > self.gates.walking
        if lasted(timestamp - self._hips[0][0], self.gates.stance_time, step):
            recent = _velocity(_within(self._hips, timestamp, self.gates.stance_time))
            self._taking_off = recent is not None and float(recent @ up) > self.gates.walking
        return (walk, hips) if along >= self.gates.walking else None

    def _forward(self, walk: Optional[tuple[np.ndarray, np.ndarray]], points: np.ndarray) -> float:
        """m/s: the hips' velocity along the floor (`walk`'s) along the body's facing, the floor's direction square to
        the hips' line, either way (forwards or backwards); 0 while the body stands or its hips' line is not seen."""
        if walk is None:
            return 0.0
        up = self.floor.normal / np.linalg.norm(self.floor.normal)
        facing = np.cross(up, points[self.hips[0]] - points[self.hips[1]])
        norm = float(np.linalg.norm(facing))
        return abs(float(walk[0] @ facing)) / norm if np.isfinite(facing).all() and norm > 1e-9 else 0.0

    def _onset_speed(self, walk: Optional[tuple[np.ndarray, np.ndarray]], forward: float, camera: np.ndarray) -> float:
        """The onset gate (m/s): on_speed, rising to on_speed_across with the square of the share of the hips'
        velocity along the floor that is across the line of sight; on_speed_running at a run (`forward`, the walk
        along the body's facing, `running` or faster: a side shuffle that fast is no run)."""
        gates = self.gates
        if walk is None:
            return gates.on_speed
        velocity, hips = walk
        if forward >= gates.running:
            return gates.on_speed_running
        up = self.floor.normal / np.linalg.norm(self.floor.normal)
        sight = hips - camera
        across = float(np.linalg.norm(_across(velocity, sight - (sight @ up) * up))) / float(np.linalg.norm(velocity))
        return gates.on_speed + (gates.on_speed_across - gates.on_speed) * across ** 2

    def _behind(self, heel: np.ndarray, walk: Optional[tuple[np.ndarray, np.ndarray]], forward: float) -> bool:
        """The heel behind the hips along the walk while the body walks forwards or backwards (`forward`, the walk
        along its facing, `walking` or faster: a side step's trailing foot comes down behind the hips along the walk,
        beside them along the facing); at a run, behind where the hips were speed_window ago."""
        if walk is None or forward < self.gates.walking:
            return False
        velocity, hips = walk
        if forward >= self.gates.running:
            hips = hips - velocity * self.gates.speed_window
        return float((heel - hips) @ velocity) < 0.0

    def _rise(self, heel: np.ndarray, place: np.ndarray, velocity: Optional[np.ndarray], camera: np.ndarray
              ) -> tuple[float, float]:
        """(m, m/s): how far the heel has risen above its stance position `place` and how fast it rises (0 without a
        velocity), both along the floor's up less its component along the line of sight (what the image shows of it)."""
        up = _across(self.floor.normal, heel - camera)
        up = up / max(float(np.linalg.norm(up)), 1e-9)
        return float((heel - place) @ up), 0.0 if velocity is None else float(velocity @ up)

    def _toes_down(self, side: str, toe: np.ndarray, camera: np.ndarray) -> float:
        """m/s: the toes' speed across the line of sight (their latest velocity, over speed_window to the nearest
        frame) while they are lower than on_height; infinite where they are higher, not seen or not yet timed."""
        track = self._toe_track[side]
        if not track or not np.isfinite(toe).all() or float(self.floor.height(toe)) >= self.gates.on_height:
            return np.inf
        velocity = track[-1][2]
        return self._speed(velocity, toe, camera) if np.isfinite(velocity).all() else np.inf

    def _toes_risen(self, side: str, toe: np.ndarray, camera: np.ndarray) -> float:
        """m: how far the toes' midpoint `toe` has risen above its stance position (the median over the contact's first
        stance_time), up across the line of sight; NaN where the toes are not seen."""
        seen = [t for t in self._toes[side] if np.isfinite(t).all()]
        if not seen or not np.isfinite(toe).all():
            return float("nan")
        return self._rise(toe, np.median(seen, axis=0), None, camera)[0]

    def _along(self, side: str, timestamp: float, step: float, camera: np.ndarray, sideways: bool = False) -> float:
        """m: how far the heel and the toes of `side` have both moved one way along the line of sight since stance_time
        ago (to the nearest frame; not before the contact's first stance_time has passed: its first depth frame puts a
        landing foot right), the lesser of the two, and no more than they moved from the other foot (where it is seen,
        held or not, over the last stance_time: a depth frame that moves the whole body moves no foot); 0 where they
        moved apart or are not seen. `sideways`: the heels' alone."""
        gates = self.gates
        since = max(timestamp - gates.stance_time, self._began[side] + gates.stance_time) - 0.5 * step - 1e-9
        window = [entry for entry in self._soles if entry[0] >= since]
        if len(window) < 2:
            return 0.0
        (_, heels_now, toes_now), i, j = window[-1], SIDES.index(side), 1 - SIDES.index(side)  # this foot, the other
        ray = heels_now[i] - camera
        ray = ray / max(float(np.linalg.norm(ray)), 1e-9)
        # (heel, toes): this foot's since the window's start, the other's since stance_time ago (the same instants at
        # every rate: a foot not held moves between depth frames as its image does)
        mine = np.array([(heels_now[i] - window[0][1][i]) @ ray, (toes_now[i] - window[0][2][i]) @ ray])
        theirs = np.array([(heels_now[j] - self._soles[0][1][j]) @ ray, (toes_now[j] - self._soles[0][2][j]) @ ray])
        if sideways:
            mine, theirs = mine[:1], theirs[:1]
        moves = [mine]
        if np.isfinite(theirs).all():
            moves.append(mine - theirs.mean())
        return min(float(np.abs(m).min()) if (m > 0).all() or (m < 0).all() else 0.0 for m in moves)

    def _looks_off(self, side: str, timestamp: float, step: float, measures: tuple) -> tuple[bool, bool, float, float]:
        """Whether the heel has looked off the floor over the contact's last off_time (to the nearest frame: `step` is
        this frame's interval): the median of each of `measures` (its drift, slide, speed, height, rise, rising speed
        and the toes' rise now) and the frames' before (one spike does not end it; unseen toes: NaN, no flat lift);
        whether the whole foot has risen (`off_lift`, heel and toes); the heel's median height over the floor or rise
        above its stance position, the higher (m), and its median rising speed (m/s)."""
        window = self._measures[side]
        window.append((timestamp, measures))
        while timestamp - window[0][0] > self.gates.off_time + 0.5 * step + 1e-9:
            window.popleft()
        drift, slide, speed, height, rise, rising, toes = np.median([m for _, m in window], axis=0)
        if self._taking_off:  # the hips going up faster than walking over stance_time: a heel fast over takeoff_time
            recent = np.median([m for t, m in window if timestamp - t <= self.gates.takeoff_time + 0.5 * step + 1e-9],
                               axis=0)
            if recent[2] > self.gates.off_speed:  # its speed (a slow heel-off stays judged over off_time)
                drift, slide, speed, height, rise, rising, toes = recent
        gates = self.gates
        flat = bool(rise > gates.off_lift and toes > gates.off_lift)  # the toes NaN: not flat
        lifting = rise > gates.off_rise or flat
        return (bool(drift > gates.off_drift or slide > gates.off_slide or speed > gates.off_speed or height > gates.off_height
                     or (lifting and rising > gates.off_rise_speed)), flat, float(max(height, rise)), float(rising))

    def _track_toes(self, side: str, timestamp: float, toes: np.ndarray, camera: np.ndarray, step: float) -> None:
        """Keep the toes (the big and small toe's midpoint) and their velocity over the last stance_time and off_time
        (their stance position and the window they are judged over): over speed_window to the nearest frame for their
        speed, over no more than it for their rising speed, as the heel's release (`step`: this frame's interval);
        forgotten where they are not seen."""
        history, track = self._toe_history[side], self._toe_track[side]
        if not np.isfinite(toes).all():
            history.clear()
            track.clear()
            return
        history.append((timestamp, toes))
        while timestamp - history[0][0] > self.gates.speed_window + 0.5 * step + 1e-9:
            history.popleft()
        velocity, rising = _velocity(history), _velocity(_within(history, timestamp, self.gates.speed_window))
        track.append((timestamp, toes, np.full(3, np.inf) if velocity is None else velocity,
                      np.full(3, np.inf) if rising is None else rising, camera))
        while timestamp - track[0][0] > self.gates.stance_time + self.gates.off_time + 1e-9:
            track.popleft()

    def _toes_window(self, timestamp: float, step: float, side: str) -> list:
        """The toes' entries over the last off_time (to the nearest frame)."""
        return [e for e in self._toe_track[side] if timestamp - e[0] <= self.gates.off_time + 0.5 * step + 1e-9]

    def _toes_stand(self, side: str, timestamp: float, step: float, settled: bool = False) -> Optional[np.ndarray]:
        """Where the toes stood before the last off_time (their median over the stance_time before it), if they
        have not looked off the floor since (`_toes_off`): a heel that left the floor above still toes is a heel-off,
        the foot still on its toes; None otherwise (or with too little seen of them)."""
        window = self._toes_window(timestamp, step, side)
        before = [toes for t, toes, *_ in self._toe_track[side] if timestamp - t > self.gates.off_time + 0.5 * step + 1e-9]
        if not window or not before:
            return None
        place = np.median(before, axis=0)
        return None if self._toes_off(side, timestamp, step, place, settled) else place

    def _toes_off(self, side: str, timestamp: float, step: float, place: np.ndarray, settled: bool = False) -> bool:
        """Whether the toes have looked off the floor over the last off_time: the medians of their move from `place`
        (across the line of sight), their speed (across it) and their rise and rising speed (up across it), against
        the heel's release gates. `settled` (a body sitting, crouching or standing up): their move down and the speed
        of it are not lifting (toes pressed or pivoting down as the heel rises), a slide along the floor past
        `off_slide` is."""
        measures = []
        for _, toes, velocity, lifting, camera in self._toes_window(timestamp, step, side):
            sight = toes - camera
            rise, rising = self._rise(toes, place, lifting, camera)
            moved = float(np.linalg.norm(_across(toes - place, sight)))
            speed = min(float(np.linalg.norm(_across(velocity, sight))), 1e3) if np.isfinite(velocity).all() else 1e3
            rising = rising if np.isfinite(rising) else 1e3
            slide = float(np.sqrt(max(moved ** 2 - rise ** 2, 0.0)))
            if settled:
                moved = max(rise, 0.0)
                speed = float(np.sqrt(max(speed ** 2 - min(rising, 0.0) ** 2, 0.0)))
            measures.append((moved, slide, speed, rise, rising))
        if not measures:
            return True
        moved, slide, speed, rise, rising = np.median(measures, axis=0)
        gates = self.gates
        return bool(moved > gates.off_drift or speed > gates.off_speed or (settled and slide > gates.off_slide)
                    or (rise > gates.off_rise and rising > gates.off_rise_speed))

    def remember(self, timestamp: float, points3d: np.ndarray, camera: Optional[np.ndarray] = None) -> None:
        """`update` for a caller that does not want this frame's decision yet but will later: the rules' history is
        their decisions, so they are made (as `LearnedContacts.remember` keeps its model's window)."""
        self.update(timestamp, points3d, camera)

    def update(self, timestamp: float, points3d: np.ndarray, camera: Optional[np.ndarray] = None) -> np.ndarray:
        """(K, 3) metres -> (2,) bool contact (left, right). Points in the camera frame, or in the world (with the
        floor in the world) and `camera` the camera's centre there (its line of sight). timestamp: seconds; a time
        not after the last frame's starts the detector over (the source started again)."""
        timestamp = float(timestamp)
        if not np.isfinite(timestamp):
            raise ValueError(f"ContactDetector.update needs a finite timestamp in seconds, got {timestamp!r}")
        if self._last is not None and timestamp <= self._last:
            self._start()
        previous, self._last = self._last, timestamp
        step = 0.0 if previous is None else timestamp - previous  # this frame's interval
        gates = self.gates
        camera = np.zeros(3) if camera is None else np.asarray(camera, np.float64)
        points = np.asarray(points3d, dtype=np.float64)
        walk = self._walk(timestamp, points, step)
        forward = self._forward(walk, points)
        # the walk along the facing for off_along: no faster than on the last frame (a depth frame's jump of the hips
        # along the line of sight is no walk, and weighs on a slope over fewer frames more)
        walked, self._walked = min(forward, self._walked), forward
        on_speed = self._onset_speed(walk, forward, camera)
        centres = foot_centres(points, self.feet)
        toes = foot_centres(points, self.toes)  # each foot's toes' midpoint (NaN where unseen)
        held = dict(self.state)  # the last frame's contacts (each foot judges the other's by them, in either order)
        self._soles.append((timestamp, points[[self.heels[side] for side in SIDES]], toes))
        while timestamp - self._soles[0][0] > gates.stance_time + 0.5 * step + 1e-9:
            self._soles.popleft()
        for side, centre, toe in zip(SIDES, centres, toes):
            history = self._history[side]
            heel = points[self.heels[side]] if np.isfinite(points[self.heels[side]]).all() else centre
            if not np.isfinite(heel).all():
                self.state[side], self._stance[side], self._toes[side], self._on_toes[side] = False, [], [], None
                self._landing_speed[side] = np.inf
                history.clear()
                self._measures[side].clear()
                continue
            history.append((timestamp, heel))
            while timestamp - history[0][0] > gates.speed_window + 0.5 * step + 1e-9:
                history.popleft()
            self._track_toes(side, timestamp, toe, camera, step)
            height = float(self.floor.height(heel))  # the heel's, not the foot's centre: mid-swing toes pass near the floor
            # the heel's velocity over no more than speed_window (the onset's speed, the rising speed: a landing or a
            # whole-foot lift shows no later); the release's speed over speed_window to the nearest frame (at 24 fps
            # three frames: a two-frame slope's noise alone passes off_speed on a planted heel)
            velocity = _velocity(_within(history, timestamp, gates.speed_window))
            speed = self._speed(_velocity(history), heel, camera)
            if self.state[side]:
                self._landing_speed[side] = np.inf
                stood = self._stood[side]  # a stance before this frame (one released as it lasts stance_time is none)
                if not stood:  # the stance position: the heel over the contact's first stance_time
                    self._stance[side].append(heel)
                    self._toes[side].append(toe)
                    self._stood[side] = lasted(timestamp - self._onset[side], gates.stance_time, step)
                place = np.median(self._stance[side], axis=0)
                rise, rising = self._rise(heel, place, velocity, camera)
                moved = float(np.linalg.norm(_across(heel - place, heel - camera)))
                slide = float(np.sqrt(max(moved ** 2 - rise ** 2, 0.0)))  # across the line of sight, less the rise
                # walking, or before a stance (a foot passing through), any move counts: a heel-off goes with the step
                drift = abs(rise) if stood and walk is None else moved
                lifted = self._toes_risen(side, toe, camera)
                off, flat, risen, rises = self._looks_off(side, timestamp, step,
                                                          (drift, slide, min(speed, 1e3), height, rise, rising, lifted))
                standing = self._on_toes[side]
                # a stance begun not walking whose hips have since gone up or down faster than walking (sitting down,
                # crouching, standing up): its heel rises as high and as fast as it will onto the toes
                settled = self._settled[side] = self._settled[side] or bool(self._planted_still[side] and self._settling)
                # not walking forwards or backwards: a walk's stance foot rolls along it, as far as the depth says;
                # stepping sideways (the hips seen walking, not up or down: no sitter's settled stance) with the heel
                # risen off_lift over off_time, the heel's move alone (a side step's heel leaves first, the foot
                # turning on its toes towards the step)
                heel_rises = [rise for _, (_, _, _, _, rise, _, _) in self._measures[side]]
                heel_up = self._still is False and not settled and float(np.median(heel_rises)) > gates.off_lift
                along = (self._along(side, timestamp, step, camera, sideways=heel_up) > gates.off_along
                         and walked < gates.walking)
                # a settled stance beside a foot in the air (not held, its heel above off_height within landing_recent)
                # steps, hops or leaps off, and one whose hips spring up as its heel rises fast takes off: the heel's
                # limits again (a sitter or a squatter stands on both feet; standing up, the heels come down)
                other = SIDES[1 - SIDES.index(side)]
                alone = not held[other] and not lasted(timestamp - self._swung[other], gates.landing_recent, step)
                seated = settled and not alone
                heel_left = ((not seated and risen > gates.toes_heel_rise)
                             or ((not seated or self._springing) and rises > gates.toes_heel_rising))
                if standing is not None:  # on its toes since heel-off: until they leave the floor, or the heel is that high
                    off = (heel_left or (settled and flat and rises > gates.off_rise_speed)
                           or self._toes_off(side, timestamp, step, standing, settled))
                elif (off and stood and not flat and not heel_left
                      and (walk is None or forward >= gates.walking or (settled and self._still))):
                    # heel-off (or the heel's noise), not stepping sideways: the foot stays on its toes while they stand
                    standing = self._on_toes[side] = self._toes_stand(side, timestamp, step, settled)
                    off = standing is None
                off = off or along  # moved whole along the line of sight
                if off and lasted(timestamp - self._began[side], gates.off_time, step):  # measured over off_time
                    seen = [t for t in self._toes[side] if np.isfinite(t).all()]  # the toes over its first stance_time
                    self.state[side], self._stance[side], self._toes[side], self._on_toes[side] = False, [], [], None
                    self._measures[side].clear()
                    if stood:  # a stance ended (toe-off): no new one for `refractory`
                        self._released[side] = timestamp
                        self._let_go[side] = None if along or not seen else (place, np.median(seen, axis=0))
            else:
                # within refractory, a heel and toes not risen off_rise above their stance positions have not left the
                # floor (a stance let go of as it glides or by noise; a heel-off rises on, a foot leaving heel-last
                # raises its toes; along the line of sight a rise shows little), but for a side step (the hips walking,
                # slower than that along the facing: its feet slide and turn low as they leave)
                places = self._let_go[side]
                rested = (lasted(timestamp - self._released[side], gates.refractory, step)
                          or (places is not None and np.isfinite(toe).all() and (walk is None or forward >= gates.walking)
                              and max(self._rise(heel, places[0], None, camera)[0],
                                      self._rise(toe, places[1], None, camera)[0]) < gates.off_rise))
                # down from a swing, not from a flight (a jump's feet land together; hips moving on over them)
                landing = (not lasted(timestamp - self._swung[side], gates.landing_recent, step)
                           and lasted(timestamp - self._flown, gates.landing_recent, step))
                landing_speed = self._speed(velocity, heel, camera)
                # a heel down from a swing, slowing, behind toes down and still: a toes-first landing (a heel-first one,
                # the toes still coming down, waits: planted sooner, its hold begins where the heel is still moving)
                slowing = (landing and landing_speed < self._landing_speed[side]
                           and self._toes_down(side, toe, camera) < on_speed)
                self._landing_speed[side] = landing_speed
                gate_speed = max(on_speed, gates.on_speed_landing) if slowing else on_speed
                self.state[side] = (height < gates.on_height and landing_speed < gate_speed and rested
                                    and not (landing and self._behind(heel, walk, forward)))
                if self.state[side]:
                    self._onset[side], self._stance[side], self._stood[side] = previous, [heel], False
                    self._toes[side] = [toe]
                    # the hips not yet seen for hips_window (a track's first frames): not seen walking
                    self._planted_still[side], self._settled[side] = self._still is not False, False
                    self._began[side] = timestamp
                    self._measures[side].clear()  # this frame's measures (on the floor) open the window
                    self._measures[side].append((timestamp, (0.0, 0.0, speed, height,
                                                             *self._rise(heel, heel, velocity, camera), 0.0)))
            if not self.state[side] and height > gates.off_height:
                self._swung[side] = timestamp
        if all(self._swung[side] == timestamp for side in SIDES):  # both feet up at once: the body is in the air
            self._flown = timestamp
        return np.array([self.state[s] for s in SIDES])
