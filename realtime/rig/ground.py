"""Grounded feet: the floor plane, foot contact with hysteresis, and foot locking.

Floor: a plane through where the feet stand, over time (camera frame). On each depth frame
each foot's centre (the mean of its heel and toes) is a candidate for the tilt, and its lowest point
(along the up known so far) for the height: the sole's level (the centre sits 2-4 cm above a planted
foot's lowest point on real walks, a toe-up foot more, and a floor through the centres was 6 cm above the
true one on CMU 07_04, the feet sunk into it); `fit_floor` fits a plane
to them by least squares (SVD), keeps the candidates within K_SIGMA robust deviations
(1.4826 MAD) of it, and refits until that set stops changing, starting from the lower half:
feet in the air lie above the band and drop out. Its normal, turned to point away from the
ground, is the world's up (gravity), so the rig's up is right even with a tilted camera.
`FloorEstimator` keeps refitting as candidates come in (a running estimate over the last
frames). A person who walks about gives candidates spread over the floor; one who stands
still gives two feet: the slope along them is the data's, the tilt across them (for a single
spot, all of it) comes from the body's up (mid-hip to neck, averaged over the frames). Where the
pointmap shows the floor (`realtime.rig.floor_scene`, fed by the ground stage), its normal is given
to the fit instead: the tilt is the scene's and the feet set only the floor's height.

Contact, per foot, from its heel (the part that plants first and lifts first: initial contact to heel-off, the
span an ankle lock is right for). Between depth frames the lifted 3D lies on each keypoint's pixel ray at a
depth carried over from the last depth frame, so a point's motion across the line of sight is measured (the
image) and its motion along it is not (a foot walking away from the camera and a planted one look alike
there). The detector therefore uses the heel's speed across the line of sight (the slope of a least-squares
line through its positions over the last SPEED_WINDOW seconds, the component along the camera's ray removed)
and the heel's height only as a loose gate (the heel's, not the foot centre's: in mid-swing the toes pass
1-2 cm over the floor and the heel 15-30 cm, and the centre passed the gate). A contact starts when the heel is
slower than the onset gate and lower than ON_HEIGHT, not within REFRACTORY seconds of the release of a stance (a
heel rising slowly after heel-off does not plant again; a contact shorter than STANCE_FRAMES was a swing foot
passing through, often a late swing moving along the line of sight and still in the image, and the same foot
lands next). It ends after OFF_FRAMES frames in a row in which the heel moves faster than OFF_SPEED, or has
left its stance position (the median of its first STANCE_FRAMES contact frames) by more than OFF_DRIFT across
the line of sight (heel-off: a slow, steady rise that no single frame's speed shows), or the heel is higher
than OFF_HEIGHT, or the heel is lifting: risen more than OFF_RISE above its stance position and still rising
faster than OFF_RISE_SPEED, both along the floor's up less its component along the line of sight (heel-off
seen from the image: the truth's heel-off, 3 cm above the heel's lowest, is about 2 cm above its stance
position, where the drift is not yet past OFF_DRIFT; a heel merely sitting higher than its first frames, from
noise, is not rising).
The onset gate is ON_SPEED while the body walks along the line of sight (a late swing moving away or towards the
camera shows little speed across it, and a looser gate plants it early) and rises to ON_SPEED_ACROSS as the walk
turns across it (the square of the share of the hips' speed along the floor that is across the line of sight,
once the hips move faster than WALKING): there the heel's speed across the line of sight is all of its speed, and
a landing heel still slowing, at 0.3-0.4 m/s with the image's noise, is down (CMU 08_11 seen from the side: recall
0.87 -> 0.91).
While the body walks, a foot coming down from a swing (its heel higher than OFF_HEIGHT within LANDING_RECENT)
does not plant behind the hips along the walk: a landing heel comes down ahead of them. A late swing moving along
the line of sight is shown behind where it is (its depth carried over from the last depth frame) and, descending
while it moves away, barely moves in the image: it planted there, 61 cm short of its landing on CMU 35_05 walking
straight away, and the lock then carried it to the landing inside the true stance. A foot already standing when
first seen, or planting again without having lifted above OFF_HEIGHT, has not swung and is not held to this. A
runner's foot lands under the hips rather than ahead of them, and by the time its heel has been slow for SPEED_WINDOW
the hips have run on (23 cm at 3.5 m/s): at RUNNING speed or faster the heel is compared with where the hips were
then (CMU 35_24, a 3.5 m/s run, recall 0.07-0.36 -> 0.50-0.86 and slide 11-43 -> 0.0-3.5 mm/frame except straight
away, 26; walking, the same rule everywhere cost precision straight away from the camera and the walkers' slide in
bench/world.py, issue 32 round 21). Running, the onset gate is also ON_SPEED_RUNNING whatever the direction: the
heel reads 0.3-0.4 m/s on the frame or two it stands, along the line of sight too, where a swing is 5-10 m/s (35_24
straight away: recall 0.50 -> 0.86, slide 26 -> 0.0; CMU 09_03, another subject's run held out from it: recall
0.25-1.0 -> 0.88-1.0, no foot held more than 3.3 cm above its lowest).

Locking, per foot, causal (no added latency): while in contact the ankle, heel and toes
stay where the ankle came in on the frame before the contact began (the detector needs the heel slow
over SPEED_WINDOW, so the foot was down by then; anchored on the deciding frame instead, it moved by that
frame's 2D noise, the live filter's lag behind the swing, or a depth frame's re-measuring: 1.0-1.7 mm/frame
of bench/world.py's slide), and the knee follows by two-bone IK
(hip fixed, thigh and shin lengths of the frame, the knee in the measured bend plane). Where the
anchor is just out of the leg's reach (a straight knee late in stance, with a noisy frame's bone
lengths) by at most STRETCH, the ankle stays on it all the same (the shin stretched by that much)
rather than being dragged along with the hips; further out (an anchor set between depth frames at a
depth carried over from the swing) the anchor moves to where the leg lands and holds there. A released
foot eases from where it was held to where it is shown over EASE_FRAMES frames rather than jumping there: the
shown ankle has moved from the anchor by heel-off, or by the depth frames' re-measuring of a foot anchored a few
centimetres off (up to 15-20 cm on bench/world.py's walks). The ease is a smoothstep (10, 35, 65, 90 % of the way,
then there): slow at first, because a release can come a frame or two before the foot truly leaves the floor, where
any motion is skating, and fastest mid-ease, in the swing. Even steps (a quarter a frame over 3 frames) slid
0.43 mm/frame on the CMU walks (the worst clip and heading 7.38) and 1.97 on bench/world.py's walks; the smoothstep
0.35 (5.97) and 1.45, for 1 mm more ankle error (bench/RESULTS.md, issue 32 round 18). After a stance (HOLD_AFTER
frames held or more) the ease waits until the foot is shown moving (it swings), for RELEASE_HOLD frames at most: an
early release leaves the foot on the floor a few frames more (the heel rising, the toes down), and an anchor a depth
frame found stale then moves in the swing rather than inside the stance. On the CMU walks the slide went 0.35 -> 0.20
mm/frame (the worst clip and heading 5.97 -> 2.66), on bench/world.py's walks 1.45 / 1.66 -> 1.15 / 1.19 (seeds 0-2 /
3-5), no clip or heading worse (bench/RESULTS.md, issue 32 round 20). Swinging is SWING_STEP or more a frame,
SWING_FRAMES frames in a row: a depth frame re-measuring a foot held off its place moves it so on one frame only, and
the ease begun there was slide in the stance (CMU 16_32 straight away 2.66 -> 1.79 mm/frame, bench/world.py's turning
walk 1.92 -> 0.79; with SWING_STEP 8 -> 12 mm, past the live filter's tail of such a jump, 1.67 and 0.75, the stylised
clips' world slide 2.91 -> 2.19; issue 32 round 21).
A foot planted again while still in that hold (it never swung) stays where it was held: the same stance, so the
jump to where it is shown would be slide (21 cm in one frame on CMU 131_01 in bench/world.py's follow shot); the
swing that ends it carries the correction (issue 32 round 21).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from realtime.rig.leg_ik import FOOT_POINTS, SIDES, solve_leg

log = logging.getLogger(__name__)

K_SIGMA = 2.5  # candidates within this many robust deviations of the plane are on the floor
MIN_SIGMA = 0.005  # m: the band never narrows below this (noise-free input)
MIN_SPREAD = 0.095  # m (RMS): candidates spread less than this across a direction do not fix the tilt about it.
# A straight walk's feet lie on two lines 0.1-0.2 m apart (CMU 07_04: 0.05 m RMS across its path, more with
# the depth noise); a plane through them takes up any left/right difference (1 cm of foot height is 3-4
# degrees), 10 degrees measured at 0.08 on the walk seen from the side, so the body's up is the better guess
# across such a path. Two feet standing 0.2 m apart (0.1 m RMS) still set the slope along them.
ON_HEIGHT, OFF_HEIGHT = 0.08, 0.11  # m, the heel above the floor (fitted to foot centres): loose, the lifted
# frames' depth error moves a swinging foot up or down by cm
ON_SPEED, OFF_SPEED = 0.3, 0.45  # m/s, the heel across the line of sight
ON_SPEED_ACROSS = 0.4  # m/s: the onset gate when the body walks across the line of sight (ON_SPEED along it)
ON_SPEED_RUNNING = 0.5  # m/s: the onset gate when the body runs (a running foot swings at 5-10 m/s, and its heel reads
# 0.3-0.4 m/s over SPEED_WINDOW on the frame or two it stands)
WALKING, HIPS_WINDOW = 0.3, 0.3  # m/s of the hips along the floor, over s: slower, the gate stays ON_SPEED
SPEED_WINDOW = 0.067  # s: three frames at 30 fps
OFF_DRIFT = 0.028  # m: the heel this far from its stance position (across the line of sight) has lifted
OFF_RISE, OFF_RISE_SPEED = 0.02, 0.15  # m above its stance position and m/s upward (across the line of sight): lifting
STANCE_FRAMES = 5  # the stance position: the median of the heel over the contact's first frames
DRIFT_WEIGHT = 1  # frames a drift past OFF_DRIFT counts for toward OFF_FRAMES
OFF_FRAMES = 2  # a contact ends after this many frames in a row off the floor (one noisy frame does not end it)
LANDING_RECENT = 0.3  # s: a heel higher than OFF_HEIGHT this recently is coming down from a swing
LANDING_AHEAD = 0.0  # m: such a heel plants only this far ahead of the hips along the walk, or further
RUNNING = 2.0  # m/s of the hips: running (people change from a walk to a run at about 2 m/s)
REFRACTORY = 0.2  # s: a foot released from a stance (STANCE_FRAMES frames, the releasing one counted) cannot plant again sooner
STRETCH = 0.15  # m: FootLock keeps the ankle on an anchor this far out of the leg's reach
EASE_FRAMES = 4  # a released foot goes from where it was held to where it is shown over this many frames (smoothstep)
RELEASE_HOLD, HOLD_AFTER = 10, 5  # released after HOLD_AFTER frames or more: held until it swings, RELEASE_HOLD frames at most
SWING_STEP, SWING_FRAMES = 0.012, 2  # m, frames: an ankle shown moving this far a frame, this many frames in a row, has
# left the floor: the hold ends, the ease begins (a depth frame re-measuring a foot moves it so on one frame only, and
# the live filter's tail of that jump 6-9 mm on the next; a swing moves 70-130 mm a frame)


@dataclass(frozen=True)
class Floor:
    """normal: (3,) unit up vector (camera frame); point: (3,) a point on the floor."""

    normal: np.ndarray
    point: np.ndarray

    def height(self, points: np.ndarray) -> np.ndarray:
        """(..., 3) -> (...,) metres above the floor."""
        return (np.asarray(points) - self.point) @ self.normal


def _plane(points: np.ndarray, up: np.ndarray, normal: Optional[np.ndarray] = None) -> Floor:
    """The least-squares plane through (N, 3) points, its normal on the side of `up`. Where the points
    spread less than MIN_SPREAD across a direction (a person standing still: two feet), the tilt about
    it is unknown: the normal is then `up` made perpendicular to the directions that are known.
    `normal`: the plane's normal, measured elsewhere (the scene's floor): only its height is fitted."""
    centre = points.mean(axis=0)
    if normal is not None:
        return Floor(normal, centre)
    _, s, vt = np.linalg.svd(points - centre, full_matrices=False)
    spread = np.zeros(3)
    spread[: len(s)] = s / np.sqrt(len(points))  # RMS extent along vt's rows
    if spread[1] >= MIN_SPREAD:
        normal = vt[-1]
    elif spread[0] >= MIN_SPREAD:  # a line of candidates: turn `up` about it
        normal = up - (up @ vt[0]) * vt[0]
    else:
        normal = up
    normal = normal / np.linalg.norm(normal)
    return Floor(normal if normal @ up > 0 else -normal, centre)


def fit_floor(candidates: np.ndarray, up_guess: Sequence[float] = (0.0, -1.0, 0.0), iterations: int = 10,
              normal: Optional[Sequence[float]] = None) -> Floor:
    """A floor plane through (N, 3) candidate foot points (NaN rows ignored); camera y down by default.
    normal: the floor's up when known from elsewhere (`realtime.rig.floor_scene`: the pointmap's
    background): the plane keeps it and the candidates set only its height (the same robust band)."""
    pts = np.asarray(candidates, dtype=np.float64)
    pts = pts[np.isfinite(pts).all(axis=1)]
    if len(pts) < 3:
        raise ValueError("a floor needs at least 3 foot points")
    up = np.asarray(up_guess, dtype=np.float64) / np.linalg.norm(up_guess)
    if normal is not None:
        normal = np.asarray(normal, dtype=np.float64) / np.linalg.norm(normal)
    floor = _plane(pts, up, normal)
    heights = floor.height(pts)
    keep = heights <= np.median(heights)  # the lower half: mostly feet on the floor
    if keep.sum() < 3:
        keep = np.ones(len(pts), bool)
    for _ in range(iterations):
        floor = _plane(pts[keep], up, normal)
        heights = floor.height(pts)
        sigma = max(1.4826 * float(np.median(np.abs(heights[keep]))), MIN_SIGMA)
        new = np.abs(heights) < K_SIGMA * sigma
        if new.sum() < 3 or (new == keep).all():
            break
        keep = new
    return floor


def foot_indices(keypoint_names: Sequence[str]) -> dict[str, np.ndarray]:
    """side -> indices of its heel and toes."""
    index = {n: i for i, n in enumerate(keypoint_names)}
    return {side: np.array([index[f"{side}_{p}"] for p in FOOT_POINTS]) for side in SIDES}


def lowest_points(points3d: np.ndarray, feet: dict[str, np.ndarray], up: np.ndarray) -> np.ndarray:
    """(K, 3) -> (2, 3): each foot's known heel or toe point lowest along `up` (NaN if none)."""
    points3d = np.asarray(points3d, dtype=np.float64)
    out = np.full((len(SIDES), 3), np.nan)
    for row, side in enumerate(SIDES):
        pts = points3d[feet[side]]
        pts = pts[np.isfinite(pts).all(axis=1)]
        if len(pts):
            out[row] = pts[np.argmin(pts @ up)]
    return out


def foot_centres(points3d: np.ndarray, feet: dict[str, np.ndarray]) -> np.ndarray:
    """(..., K, 3) -> (..., 2, 3): each foot's centre, the mean of its known heel and toe points (NaN if none)."""
    out = []
    for side in SIDES:
        pts = np.asarray(points3d, dtype=np.float64)[..., feet[side], :]
        known = np.isfinite(pts).all(axis=-1, keepdims=True)
        count = known.sum(axis=-2)
        total = np.where(known, pts, 0.0).sum(axis=-2)
        out.append(np.where(count > 0, total / np.maximum(count, 1), np.nan))
    return np.stack(out, axis=-2)


class FloorEstimator:
    """The camera's floor, refined as depth frames come in: each frame gives each foot's centre and lowest
    point (along the scene's normal, or the body's up so far) as candidates, the centres for the tilt and
    the lowest points for the height; after `min_frames` frames the floor is fitted to the last `max_frames` frames'
    candidates, and refitted every `refit_every` frames (a running estimate). The body's up
    (mid-hip to neck, averaged over the frames) is the fit's `up_guess`: it orients the normal and
    stands in for the tilt that feet kept in one spot cannot give. A `normal` given to `add` (the
    scene's floor, `realtime.rig.floor_scene`) replaces the fitted tilt: the feet then set only the
    floor's height."""

    def __init__(self, keypoint_names: Sequence[str], *, min_frames: int = 30, max_frames: int = 600, refit_every: int = 10):
        self.feet = foot_indices(keypoint_names)
        self.min_frames, self.refit_every = min_frames, refit_every
        self._candidates: deque = deque(maxlen=max_frames)  # (2, 3) per frame: the feet's centres
        self._soles: deque = deque(maxlen=max_frames)  # (2, 3) per frame: the feet's lowest points
        self._since_fit = 0
        self._up = np.zeros(3)  # sum of the unit body-up vectors seen
        index = {n: i for i, n in enumerate(keypoint_names)}
        self._neck, self._hips = index["neck"], [index["left_hip"], index["right_hip"]]
        self.floor: Optional[Floor] = None

    def add(self, points3d: np.ndarray, normal: Optional[np.ndarray] = None) -> bool:
        """One depth frame's (K, 3) camera metres; True when the floor was (re)fitted. normal: (3,) the
        floor's up in this camera, measured from the scene, or None (the tilt from the feet and body)."""
        centres = foot_centres(points3d, self.feet)
        if not np.isfinite(centres).all(axis=1).any():
            return False
        self._candidates.append(centres)
        body_up = points3d[self._neck] - np.mean(points3d[self._hips], axis=0)
        if np.isfinite(body_up).all() and np.linalg.norm(body_up) > 0:
            self._up += body_up / np.linalg.norm(body_up)
        up = self._up if np.linalg.norm(self._up) > 0 else np.array([0.0, -1.0, 0.0])
        self._soles.append(lowest_points(points3d, self.feet, up if normal is None else np.asarray(normal, np.float64)))
        self._since_fit += 1
        if len(self._candidates) < self.min_frames or (self.floor is not None and self._since_fit < self.refit_every):
            return False
        # the tilt from the centres (a tilt from the lowest points jumps between heel and toe: 0.30 -> 0.45 deg
        # on a walk), the height from the lowest points
        tilt = None if normal is not None else fit_floor(np.concatenate(self._candidates), up).normal
        soles = fit_floor(np.concatenate(self._soles), up, normal=normal if tilt is None else tilt)
        self.floor = soles if tilt is None else Floor(tilt, soles.point)  # the fitted tilt to the bit
        self._since_fit = 0
        return True


class ContactDetector:
    """Foot contact per side with hysteresis, frame by frame, from each heel's motion across the
    line of sight and each foot's height (see the module docstring)."""

    def __init__(self, floor: Floor, keypoint_names: Sequence[str]):
        self.floor = floor
        self.feet = foot_indices(keypoint_names)
        index = {n: i for i, n in enumerate(keypoint_names)}
        self.heels = {side: index[f"{side}_heel"] for side in SIDES}
        self.hips = [index["left_hip"], index["right_hip"]]
        self._hips: deque = deque()  # (time, mid-hips) over HIPS_WINDOW
        self.state = dict.fromkeys(SIDES, False)
        self._leaving = dict.fromkeys(SIDES, 0)  # frames in a row the foot has looked off the floor while in contact
        self._history: dict[str, deque] = {side: deque() for side in SIDES}  # (time, heel)
        self._stance: dict[str, list] = {side: [] for side in SIDES}  # the heel over the contact's first frames
        self._released = dict.fromkeys(SIDES, -np.inf)
        self._swung = dict.fromkeys(SIDES, -np.inf)  # when each heel was last higher than OFF_HEIGHT, out of contact

    @staticmethod
    def _across(vector: np.ndarray, sight: np.ndarray) -> np.ndarray:
        """`vector` less its component along the line of sight `sight` (camera to point)."""
        ray = sight / max(float(np.linalg.norm(sight)), 1e-9)
        return vector - (vector @ ray) * ray

    @staticmethod
    def _velocity(history: deque) -> Optional[np.ndarray]:
        """(3,) m/s: the least-squares slope of the positions in `history` over time (None from a single one)."""
        if len(history) < 2:
            return None
        times = np.array([t for t, _ in history])
        positions = np.stack([c for _, c in history])
        dt = times - times.mean()
        return (dt @ (positions - positions.mean(axis=0))) / max(float(dt @ dt), 1e-12)

    def _speed(self, velocity: Optional[np.ndarray], heel: np.ndarray, camera: np.ndarray) -> float:
        """m/s of the heel's `velocity` across the line of sight (infinite without one, from a single
        position: unknown, so no contact starts on a track's first frame)."""
        if velocity is None:
            return np.inf
        return float(np.linalg.norm(self._across(velocity, heel - camera)))

    def _walk(self, timestamp: float, points: np.ndarray) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """The hips' velocity along the floor (m/s, the slope over HIPS_WINDOW) and where they are now, while
        they move faster than WALKING; None while the body stands (or its hips are not seen)."""
        hips = points[self.hips].mean(axis=0)
        if not np.isfinite(hips).all():
            self._hips.clear()
            return None
        self._hips.append((timestamp, hips))
        while timestamp - self._hips[0][0] > HIPS_WINDOW + 1e-9:
            self._hips.popleft()
        velocity = self._velocity(self._hips)
        if velocity is None:
            return None
        up = self.floor.normal / np.linalg.norm(self.floor.normal)
        walk = velocity - (velocity @ up) * up
        return (walk, hips) if float(np.linalg.norm(walk)) >= WALKING else None

    def _onset_speed(self, walk: Optional[tuple[np.ndarray, np.ndarray]], camera: np.ndarray) -> float:
        """The onset gate (m/s): ON_SPEED, rising to ON_SPEED_ACROSS with the square of the share of the hips'
        velocity along the floor that is across the line of sight (see the module docstring); ON_SPEED_RUNNING at
        RUNNING speed."""
        if walk is None:
            return ON_SPEED
        velocity, hips = walk
        if float(np.linalg.norm(velocity)) >= RUNNING:
            return ON_SPEED_RUNNING
        up = self.floor.normal / np.linalg.norm(self.floor.normal)
        sight = hips - camera
        across = float(np.linalg.norm(self._across(velocity, sight - (sight @ up) * up))) / float(np.linalg.norm(velocity))
        return ON_SPEED + (ON_SPEED_ACROSS - ON_SPEED) * across ** 2

    @staticmethod
    def _behind(heel: np.ndarray, walk: Optional[tuple[np.ndarray, np.ndarray]]) -> bool:
        """The heel less than LANDING_AHEAD ahead of the hips along the walk (a landing heel comes down ahead); at
        RUNNING speed ahead of where the hips were SPEED_WINDOW ago (a running foot lands under them, and the hips
        have run on while its heel was seen slowing)."""
        if walk is None:
            return False
        velocity, hips = walk
        speed = float(np.linalg.norm(velocity))
        if speed >= RUNNING:
            hips = hips - velocity * SPEED_WINDOW
        return float((heel - hips) @ velocity) / speed < LANDING_AHEAD

    def _lifting(self, heel: np.ndarray, place: np.ndarray, velocity: Optional[np.ndarray], camera: np.ndarray) -> bool:
        """The heel risen more than OFF_RISE above its stance position `place` and rising faster than OFF_RISE_SPEED,
        both along the floor's up less its component along the line of sight (what the image shows of it)."""
        up = self._across(self.floor.normal, heel - camera)
        up = up / max(float(np.linalg.norm(up)), 1e-9)
        rise = float((heel - place) @ up)
        return velocity is not None and rise > OFF_RISE and float(velocity @ up) > OFF_RISE_SPEED

    def update(self, timestamp: float, points3d: np.ndarray, camera: Optional[np.ndarray] = None) -> np.ndarray:
        """(K, 3) metres -> (2,) bool contact (left, right). Points in the camera frame, or in the
        world (with the floor in the world) and `camera` the camera's centre there (its line of sight)."""
        camera = np.zeros(3) if camera is None else np.asarray(camera, np.float64)
        points = np.asarray(points3d, dtype=np.float64)
        walk = self._walk(timestamp, points)
        on_speed = self._onset_speed(walk, camera)
        centres = foot_centres(points, self.feet)
        for side, centre in zip(SIDES, centres):
            history = self._history[side]
            heel = points[self.heels[side]] if np.isfinite(points[self.heels[side]]).all() else centre
            if not np.isfinite(heel).all():
                self.state[side], self._leaving[side], self._stance[side] = False, 0, []
                history.clear()
                continue
            history.append((timestamp, heel))
            while timestamp - history[0][0] > SPEED_WINDOW + 1e-9:
                history.popleft()
            height = float(self.floor.height(heel))  # not the foot's centre: mid-swing toes pass 1-2 cm over the floor
            velocity = self._velocity(history)  # the heel's, over SPEED_WINDOW
            speed = self._speed(velocity, heel, camera)
            if self.state[side]:  # off once the heel has moved or left its place for OFF_FRAMES frames in a row
                stance = self._stance[side]
                if len(stance) < STANCE_FRAMES:
                    stance.append(heel)
                place = np.median(stance, axis=0)  # the stance position
                drift = float(np.linalg.norm(self._across(heel - place, heel - camera)))
                if drift > OFF_DRIFT:
                    self._leaving[side] += DRIFT_WEIGHT
                else:
                    moved = speed > OFF_SPEED or height > OFF_HEIGHT or self._lifting(heel, place, velocity, camera)
                    self._leaving[side] = self._leaving[side] + 1 if moved else 0
                self.state[side] = self._leaving[side] < OFF_FRAMES
                if not self.state[side]:
                    if len(stance) >= STANCE_FRAMES:  # a stance ended (heel-off): no new one for REFRACTORY
                        self._released[side] = timestamp
                    self._stance[side] = []
            else:
                rested = timestamp - self._released[side] > REFRACTORY - 1e-9
                landing = timestamp - self._swung[side] < LANDING_RECENT  # down from a swing just now
                self.state[side] = (height < ON_HEIGHT and speed < on_speed and rested
                                    and not (landing and self._behind(heel, walk)))
                self._leaving[side] = 0
                self._stance[side] = [heel] if self.state[side] else []
            if not self.state[side] and height > OFF_HEIGHT:
                self._swung[side] = timestamp
        return np.array([self.state[s] for s in SIDES])


def _still_to_go(left: int) -> float:
    """The share of a released foot's offset (held - shown) still applied with `left` of EASE_FRAMES frames to go:
    smoothstep, so the foot leaves its place slowly (heel-off; an early release is still in stance) and moves most
    mid-ease, in the swing."""
    if left > EASE_FRAMES:  # still in the release's hold
        return 1.0
    done = (EASE_FRAMES + 1 - left) / (EASE_FRAMES + 1)
    return 1.0 - done * done * (3.0 - 2.0 * done)


def two_bone_ik(hip: np.ndarray, knee: np.ndarray, ankle: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The knee that puts the ankle at `target` with the thigh and shin lengths of (hip, knee, ankle),
    bending in the plane of the current knee (`leg_ik.solve_leg`)."""
    return solve_leg(hip, knee, target, np.linalg.norm(knee - hip), np.linalg.norm(ankle - knee))[0]


class FootLock:
    """Holds a foot in contact where it came in on the frame before the contact began (the detector
    decides from the heel's speed over its last frames, so the foot was already down then: held there,
    it does not move once down; held where the contact is decided, it moved by that frame's noise, the
    live filter's lag behind the swing, or a depth frame's re-measuring). Where it came in, not where it
    was shown: a foot planting again while it still eases out of its last contact was shown part of the
    way from that old anchor, unless it never swung: planted again in the release's hold, it stays where it was
    held. The knee follows by two-bone IK; released, the foot eases to where it is
    shown over EASE_FRAMES frames, once it swings (RELEASE_HOLD frames at most) if it stood HOLD_AFTER frames or
    more (see the module docstring). Call `reset` when frames of the person were missed."""

    def __init__(self, keypoint_names: Sequence[str]):
        index = {n: i for i, n in enumerate(keypoint_names)}
        self.legs = {side: (index[f"{side}_hip"], index[f"{side}_knee"], index[f"{side}_ankle"]) for side in SIDES}
        self.feet = {side: np.array([index[f"{side}_ankle"], *foot_indices(keypoint_names)[side]]) for side in SIDES}
        self._anchor: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES, None)
        self._shown: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES, None)  # the last frame's ankle out
        self._came: dict[str, Optional[np.ndarray]] = dict.fromkeys(SIDES, None)  # the last frame's ankle in
        self._ease: dict[str, tuple] = dict.fromkeys(SIDES, (None, 0))  # (held - shown at release, frames left)
        self._held = dict.fromkeys(SIDES, 0)  # frames the current contact has been held
        self._steps = dict.fromkeys(SIDES, 0)  # frames in a row a released foot in its hold was shown moving

    def reset(self) -> None:
        """Forget the anchors and the last frame's feet (the person was not seen on some frames)."""
        self._anchor, self._shown = dict.fromkeys(SIDES, None), dict.fromkeys(SIDES, None)
        self._came = dict.fromkeys(SIDES, None)
        self._ease = dict.fromkeys(SIDES, (None, 0))
        self._held = dict.fromkeys(SIDES, 0)
        self._steps = dict.fromkeys(SIDES, 0)

    def _reach(self, out: np.ndarray, side: str, target: np.ndarray) -> np.ndarray:
        """The ankle nearest `target` that side's leg reaches with this frame's thigh and shin (the knee bent
        to it in `out`, in place)."""
        hip, knee, ankle = self.legs[side]
        thigh, shin = np.linalg.norm(out[knee] - out[hip]), np.linalg.norm(out[ankle] - out[knee])
        out[knee], reached = solve_leg(out[hip], out[knee], target, thigh, shin)
        return reached

    def apply(self, points3d: np.ndarray, contacts: np.ndarray) -> np.ndarray:
        """(K, 3) camera metres, (2,) contacts -> (K, 3) with the feet in contact held."""
        out = np.array(points3d, dtype=np.float64)
        for side, contact in zip(SIDES, contacts):
            hip, knee, ankle = self.legs[side]
            foot = self.feet[side]
            shown, self._shown[side] = self._shown[side], None
            came = self._came[side]
            self._came[side] = out[ankle].copy() if np.isfinite(out[ankle]).all() else None
            if not contact or not np.isfinite(out[[hip, knee, ankle]]).all():
                offset, left = self._ease[side]
                if self._anchor[side] is not None and shown is not None:  # released: ease out from where it was held
                    offset, left = shown - out[ankle], EASE_FRAMES + (RELEASE_HOLD if self._held[side] >= HOLD_AFTER else 0)
                self._anchor[side], self._held[side] = None, 0
                if left and not (np.isfinite(out[[hip, knee, ankle]]).all() and np.isfinite(offset).all()):
                    left = 0  # the leg not seen: the ease ends here rather than resuming later from a stale place
                stepped = left > EASE_FRAMES and came is not None and np.linalg.norm(out[ankle] - came) > SWING_STEP
                self._steps[side] = self._steps[side] + 1 if stepped else 0
                if self._steps[side] >= SWING_FRAMES:  # swinging (not one depth frame's re-measuring): the ease begins
                    left = EASE_FRAMES
                if left:
                    reached = self._reach(out, side, out[ankle] + offset * _still_to_go(left))
                    out[foot] = points3d[foot] + (reached - points3d[ankle])
                    left -= 1
                self._ease[side] = (offset, left) if left else (None, 0)
                self._shown[side] = out[ankle].copy()
                continue
            holding = self._ease[side][1] > EASE_FRAMES and shown is not None  # released, not yet swung
            self._ease[side], self._steps[side] = (None, 0), 0
            self._held[side] += 1
            if self._anchor[side] is None:  # where it came in on the last frame (see the class docstring)
                self._anchor[side] = (shown if holding else came if came is not None else out[ankle]).copy()
            # the ankle lands where the leg reaches: at the anchor unless the leg is too short
            reached = self._reach(out, side, self._anchor[side])
            if np.linalg.norm(reached - self._anchor[side]) <= STRETCH:
                reached = self._anchor[side]
            else:  # out of reach (the anchor's depth was carried over from a swing frame): hold where it lands
                self._anchor[side] = reached.copy()
            out[foot] = points3d[foot] + (reached - points3d[ankle])
            self._shown[side] = out[ankle].copy()
        return out
