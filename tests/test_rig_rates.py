"""The rig's decisions in time, not frames: the same motion at 30 and 60 fps gives the same contacts, holds and eases
within a frame's time (realtime/rig/contacts.py, lock.py, lift.py: every gate in seconds, metres or metres per
second, judged on the frames' timestamps). Motion here is a function of time, sampled at each rate."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from realtime.rig.lift import Lifter
from realtime.rig.lock import FootLock
from tests.ground_synthetic import CENTRE, FOCAL, feet_across_the_view, walk
from tests.mocap_synthetic import NAMES

FLOOR = Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3))  # camera y down: a heel `h` above the floor has y = -h
HEELS = [NAMES.index("left_heel"), NAMES.index("right_heel")]
HIPS = [NAMES.index("left_hip"), NAMES.index("right_hip")]
FRAME = 1 / 30  # a 30 fps frame's time: the most two rates' decisions may differ by
EVENT_TOLERANCE = 0.067  # s: issue 51's tolerance on a touchdown's or lift-off's time (2 frames at 30 fps)


def _smooth(p: float) -> float:
    return p * p * (3.0 - 2.0 * p)


def _walking_heel(t: float) -> tuple[np.ndarray, bool]:
    """A heel 4 m ahead of the camera, walking across the view: planted 0-0.6 s, a swing 15 cm high to 0.7 m further
    by 1.0 s, planted to 1.6 s, another swing to 2.0 s, planted after. -> (its position, truly planted)."""
    x, height = 0.0, 0.0
    for k, (lift, land) in enumerate(((0.6, 1.0), (1.6, 2.0))):
        if t >= land:
            x = 0.7 * (k + 1)
        elif t >= lift:
            p = (t - lift) / (land - lift)
            x, height = 0.7 * k + 0.7 * _smooth(p), 0.15 * np.sin(np.pi * p)
    return np.array([x - 0.5, -height, 4.0]), height == 0.0


def _passing_heel(t: float) -> tuple[np.ndarray, bool]:
    """A late swing still in the image for 0.1 s (0.2-0.3 s), moving on at 0.9 m/s, then landing still at 0.4 s."""
    x = -0.9 * max(0.2 - t, 0.0) + 0.9 * min(max(t - 0.3, 0.0), 0.1)
    return np.array([x, 0.0, 4.0]), t >= 0.4


def _jumping_heel(t: float) -> tuple[np.ndarray, bool]:
    """Both feet standing, a jump from 0.5 s to 1.0 s (the heels 30 cm up at the top), standing again."""
    p = min(max((t - 0.5) / 0.5, 0.0), 1.0)
    height = 1.2 * p * (1.0 - p)
    return np.array([0.0, -height, 4.0]), height == 0.0


def _contacts(motion, fps: float, seconds: float, hips_speed: float = 0.0, both: bool = False):
    """The detector on `motion` (t -> heel, planted) sampled at `fps`: times, its left (or both) contacts, the truth,
    and each frame's heel height."""
    detector = ContactDetector(FLOOR, NAMES)
    times = np.arange(int(round(seconds * fps)) + 1) / fps
    decided, truth, heights = [], [], []
    for t in times:
        heel, planted = motion(t)
        points = np.full((len(NAMES), 3), np.nan)
        points[HEELS[0]] = heel
        if both:
            points[HEELS[1]] = heel + [0.25, 0.0, 0.0]
        points[HIPS] = [[-0.6 + hips_speed * t, -0.9, 4.0], [-0.4 + hips_speed * t, -0.9, 4.0]]
        contacts = detector.update(t, points)
        decided.append(contacts if both else contacts[:1])
        truth.append(planted)
        heights.append(-heel[1])
    return times, np.array(decided), np.array(truth), np.array(heights)


def _events(times: np.ndarray, contact: np.ndarray) -> list[tuple[float, int]]:
    """(time, +1 onset / -1 release) of one foot's decisions."""
    change = np.diff(contact.astype(int))
    return [(float(times[i + 1]), int(change[i])) for i in np.flatnonzero(change)]


def _same_within_a_frame(a: list, b: list) -> None:
    assert [kind for _, kind in a] == [kind for _, kind in b], (a, b)
    for (ta, _), (tb, _) in zip(a, b):
        assert abs(ta - tb) <= FRAME + 1e-9, (a, b)


def test_a_walking_foot_plants_and_lifts_at_the_same_times_at_30_and_60_fps():
    events = {}
    for fps in (30.0, 60.0):
        times, decided, truth, _ = _contacts(_walking_heel, fps, 2.6, hips_speed=0.7)
        events[fps] = _events(times, decided[:, 0])
        lifts = [t for t, kind in _events(times, truth) if kind < 0]
        lands = [t for t, kind in _events(times, truth) if kind > 0]
        onsets = [t for t, kind in events[fps] if kind > 0][1:]  # the first: the track's start
        releases = [t for t, kind in events[fps] if kind < 0]
        assert len(releases) == len(lifts) == 2 and len(onsets) == len(lands) == 2, events[fps]
        assert all(0.0 <= r - lift <= 0.1 for r, lift in zip(releases, lifts)), (releases, lifts)  # heel-off seen soon
        assert all(0.0 <= o - land <= 0.2 for o, land in zip(onsets, lands)), (onsets, lands)  # slow over its window
    _same_within_a_frame(events[30.0], events[60.0])


def test_a_foot_that_only_passed_through_lands_without_waiting_at_30_and_60_fps():
    """Still for 0.1 s (a late swing in the image), shorter than a stance: no refractory time follows it, at either rate
    (counted in frames, 0.1 s was a stance at 60 fps and the landing waited 0.2 s)."""
    events = {}
    for fps in (30.0, 60.0):
        times, decided, _, _ = _contacts(_passing_heel, fps, 1.0)
        events[fps] = _events(times, decided[:, 0])
        landing = [t for t, kind in events[fps] if kind > 0][-1]
        assert 0.4 <= landing <= 0.5, events[fps]
    _same_within_a_frame(events[30.0], events[60.0])


def test_a_jump_releases_both_feet_at_the_same_time_at_30_and_60_fps():
    """Both feet are released within 0.1 s of the take-off and planted again after the landing, at the same times at
    both rates. The release waits `off_time` (1/15 s) of the heel off the floor, so a foot rising fast is held up to
    about 11 cm on those frames (a jump's own rule is issue 51's later work); never higher."""
    events = {}
    for fps in (30.0, 60.0):
        times, decided, _, heights = _contacts(_jumping_heel, fps, 1.6, both=True)
        assert not decided[heights > 0.12].any()
        for side in (0, 1):
            events[fps, side] = _events(times, decided[:, side])
            (take_off,) = [t for t, kind in events[fps, side] if kind < 0]
            assert 0.5 <= take_off <= 0.6 and decided[times > 1.15, side].all(), events[fps, side]
    for side in (0, 1):
        _same_within_a_frame(events[30.0, side], events[60.0, side])


def _released_stance(fps: float) -> tuple[np.ndarray, np.ndarray]:
    """A foot held for 0.5 s while shown 8 cm off where it came down (a stale anchor), then released and shown still
    for 0.8 s: times after the release, and its ankle's distance from where it is shown."""
    lock = FootLock(NAMES)
    body = walk(2).camera[0]
    foot = [NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]
    off = body.copy()
    off[foot] += [0.0, 0.0, 0.08]
    ankle = NAMES.index("left_ankle")
    frames = np.arange(int(round(1.3 * fps)) + 1)
    distance = []
    for k in frames:
        t = k / fps
        down = t < 0.5
        out = lock.apply(t, body if k == 0 else off, np.array([down, False]))
        distance.append(np.linalg.norm(out[ankle] - off[ankle]))
    after = frames / fps >= 0.5
    return frames[after] / fps - 0.5, np.array(distance)[after]


def test_a_released_stance_waits_and_eases_over_the_same_time_at_30_and_60_fps():
    """Released after a stance, a foot shown still keeps where it was held until the release's wait is over (then
    eases out); counted in frames the wait and the ease took half as long at 60 fps."""
    moments = {}
    for fps in (30.0, 60.0):
        after, distance = _released_stance(fps)
        leaves = after[np.argmax(distance < 0.08 - 1e-3)]  # the first frame it has moved from where it was held
        arrives = after[np.argmax(distance < 1e-6)]  # the first frame it is where it is shown
        assert distance[0] == pytest.approx(0.08, abs=1e-6)
        assert 0.25 <= leaves <= 0.4 and 0.05 <= arrives - leaves <= 0.2, (fps, leaves, arrives)
        moments[fps] = (leaves, arrives)
    for a, b in zip(moments[30.0], moments[60.0]):
        assert abs(a - b) <= FRAME + 1e-9, moments


def _lifted_depth_change(fps: float, sideways: float) -> float:
    """A depth frame, then 0.13 s of the body walking straight away from the camera at 1.5 m/s with its left foot
    moving `sideways` m/s across the view: how far the lifted foot's depth moved (held along the line of sight: ~0)."""
    start = walk(1).camera[0]
    foot = [NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]
    lifter = Lifter(NAMES)
    lifter.update(FOCAL * start[:, :2] / start[:, 2:] + CENTRE, start, timestamp=0.0)
    for k in range(1, int(round(0.13 * fps)) + 1):
        t = k / fps
        body = start + np.array([0.0, 0.0, 1.5 * t])
        body[foot] = start[foot] + np.array([sideways * t, 0.0, 0.0])
        out = lifter.update(FOCAL * body[:, :2] / body[:, 2:] + CENTRE, None, None, None, None, timestamp=t)
    return float(np.mean(out[foot, 2] - start[foot, 2]))


@pytest.mark.parametrize("fps", [30.0, 60.0])
def test_a_still_foot_is_held_and_a_moving_one_carried_at_30_and_60_fps(fps):
    """0.3 m/s across the line of sight is still (held where it was along it); 0.9 m/s is a moving foot, carried with
    the body, at either rate (counted as 2 cm a frame, 0.9 m/s was still at 60 fps)."""
    assert abs(_lifted_depth_change(fps, 0.3)) < 0.02  # held: the point of each ray nearest to where it was
    assert _lifted_depth_change(fps, 0.9) > 0.15  # carried: the body walked 0.2 m away


def _resting_past_the_drift_gate(fps: float, seed: int, noise: float = 0.004) -> tuple[np.ndarray, np.ndarray]:
    """A heel planted 0.3 s, then rising 2.8 cm (off_drift: a slow heel-off) over 0.3 s and resting there to 1.5 s,
    shown with `noise` (m, each frame its own, across the view): times and its contact."""
    rng = np.random.default_rng([seed, int(fps)])
    detector = ContactDetector(FLOOR, NAMES)
    times = np.arange(int(round(1.5 * fps)) + 1) / fps
    decided = []
    for t in times:
        points = np.full((len(NAMES), 3), np.nan)
        points[HEELS[0]] = [0.0, -0.028 * min(max(t - 0.3, 0.0) / 0.3, 1.0) + rng.normal(0.0, noise), 4.0]
        points[HIPS] = [[-0.1, -0.9, 4.0], [0.1, -0.9, 4.0]]
        decided.append(detector.update(t, points)[0])
    return times, np.array(decided)


def test_a_heel_resting_at_the_drift_gate_is_released_at_the_same_time_at_30_and_60_fps():
    """Each frame's noise is its own, so about half the frames show the heel past the gate: judged over frames in a
    row (two at 30 fps, four at 60), the 60 fps run released it 0.1-0.15 s later in the median over 60 noise draws.
    Judged on each measure's median over off_time, the median release is the same at both rates within the event
    tolerance of issue 51 (67 ms), and soon after the heel has come to rest."""
    releases = {}
    for fps in (30.0, 60.0):
        releases[fps] = []
        for seed in range(60):
            times, decided = _resting_past_the_drift_gate(fps, seed)
            assert decided[int(0.3 * fps)], "planted before the slip"
            off = np.flatnonzero(decided[:-1] & ~decided[1:])
            releases[fps].append(times[off[0] + 1] if len(off) else np.inf)
    median = {fps: float(np.median(r)) for fps, r in releases.items()}
    assert abs(median[30.0] - median[60.0]) <= EVENT_TOLERANCE, median
    assert all(0.6 <= m <= 0.8 for m in median.values()), median


def _sitting_down(fps: float, seed: int, noise: float = 0.004) -> tuple[np.ndarray, np.ndarray]:
    """Both feet planted (heels 0.25 m apart, 4 m out, across the view) while the hips drop 0.45 m in 1 s (0.3-1.3 s)
    and the feet shift 4.5 cm along the floor across the view as the body sits (as the sitter's of CMU 114_16 do,
    about 5 cm/s: planted, far under any speed gate), shown with `noise` (m, each frame its own): times and both contacts."""
    rng = np.random.default_rng([seed, int(fps)])
    detector = ContactDetector(FLOOR, NAMES)
    times = np.arange(int(round(1.6 * fps)) + 1) / fps
    decided = []
    for t in times:
        p = _smooth(min(max((t - 0.3) / 1.0, 0.0), 1.0))
        points = np.full((len(NAMES), 3), np.nan)
        for k, x in enumerate((-0.125, 0.125)):
            points[HEELS[k]] = [x + 0.045 * p, 0.0, 4.0] + rng.normal(0.0, noise, 3)
        points[HIPS] = [[-0.1, -0.9 + 0.45 * p, 4.0], [0.1, -0.9 + 0.45 * p, 4.0]]
        decided.append(detector.update(t, points))
    return times, np.array(decided)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_feet_shifting_along_the_floor_as_the_body_sits_down_stay_planted(fps):
    """A foot that shifts a few centimetres along the floor while the body sits is still planted (its heel has not
    risen): held from its first stance to the end at every rate, over 20 noise draws. (Released at 2.8 cm, the drift
    gate of a heel-off, each rate let go of them at its own moment and 30 and 60 fps disagreed.)"""
    for seed in range(20):
        times, decided = _sitting_down(fps, seed)
        stood = times >= 0.2
        assert decided[stood].all(), (seed, times[stood][~decided[stood].all(axis=1)][:3])


def _on_the_toes(fps: float, seed: int, motion) -> tuple[np.ndarray, np.ndarray]:
    """Both feet across the view as `motion(t)` -> (the heels' rise, the toes' rise, the hips' drop; m) moves both
    alike, 1.6 s (`feet_across_the_view`)."""
    def both(t: float):
        heel_rise, toe_rise, drop = motion(t)
        return (heel_rise, toe_rise), (heel_rise, toe_rise), drop
    return feet_across_the_view(fps, seed, both, 1.6)


def _sitting_onto_the_toes(t: float) -> tuple[float, float, float]:
    """The hips drop 0.45 m in 1 s (0.3-1.3 s); from 0.7 s the heels rise 10 cm in 0.5 s onto the toes, which stay
    down (as the sitter's of CMU 114_16 rise 7-14 cm, and the squatter's of 115_07 10-13 cm)."""
    return 0.10 * _smooth(min(max((t - 0.7) / 0.5, 0.0), 1.0)), 0.0, 0.45 * _smooth(min(max((t - 0.3) / 1.0, 0.0), 1.0))


def _lifting_a_foot(t: float) -> tuple[float, float, float]:
    """A body crouching (the hips drop 0.3 m in 0.5 s, 0.1-0.6 s): the heels rise 5 cm in 0.2 s (0.4-0.6 s), then the
    toes leave the floor too, 12 cm up in 0.3 s (0.6-0.9 s), the heels with them."""
    toes = 0.12 * _smooth(min(max((t - 0.6) / 0.3, 0.0), 1.0))
    drop = 0.3 * _smooth(min(max((t - 0.1) / 0.5, 0.0), 1.0))
    return 0.05 * _smooth(min(max((t - 0.4) / 0.2, 0.0), 1.0)) + toes, toes, drop


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_heel_rising_onto_still_toes_as_the_body_sits_keeps_the_foot_planted(fps):
    """Sitting down or crouching, the heels rise onto the toes while the toes stay down: the foot is still on the floor
    (issue 51's truth: the heel or the toes down and still), held from its first stance to the end at every rate over
    20 noise draws. (Judged by the heel alone, it was let go at heel-off and planted again mid-rise at a moment of its
    own at each rate: CMU 114_16's 30 vs 60 fps disagreement.)"""
    for seed in range(20):
        times, decided = _on_the_toes(fps, seed, _sitting_onto_the_toes)
        stood = times >= 0.2
        assert decided[stood].all(), (seed, times[stood][~decided[stood].all(axis=1)][:3])


def test_a_foot_lifted_heel_then_toes_is_released_as_its_toes_leave_at_30_and_60_fps():
    """Crouching, a foot whose heel rises and whose toes then leave the floor is released once the toes have left
    (within 0.15 s of it, never still held 12 cm up), at the same time at 30 and 60 fps within issue 51's event
    tolerance (the median over 20 noise draws)."""
    releases = {}
    for fps in (30.0, 60.0):
        releases[fps] = []
        for seed in range(20):
            times, decided = _on_the_toes(fps, seed, _lifting_a_foot)
            assert decided[(times >= 0.2) & (times <= 0.35)].all(), seed
            assert not decided[times >= 0.9].any(), seed
            off = np.flatnonzero(decided[:-1, 0] & ~decided[1:, 0])
            releases[fps].append(times[off[-1] + 1])
    median = {fps: float(np.median(r)) for fps, r in releases.items()}
    assert all(0.6 <= m <= 0.75 for m in median.values()), median
    assert abs(median[30.0] - median[60.0]) <= EVENT_TOLERANCE, median
