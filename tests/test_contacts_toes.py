"""A walking foot is on the floor from heel strike to toe-off (issue 51, walks' recall): a synthetic walker with
exact plants, walking towards the camera of tests/ground_synthetic.py (1.5 m up, 15 degrees down: the front view,
where the foot's roll forward is along the line of sight), its exact 3D keypoints fed to the rule-based
`ContactDetector` frame by frame.

Each foot stands flat, then its heel rises about its toes (heel-off: the toes stay where they stand) until toe-off,
then swings to its next plant ahead of the hips. The true contact is heel strike to toe-off, as bench/corpus.py's
truth has it (a heel or the toes on the floor and still)."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from tests.ground_synthetic import camera_pose
from tests.mocap_synthetic import NAMES

_K = {n: i for i, n in enumerate(NAMES)}
SPEED, CYCLE = 1.3, 1.0  # m/s, s: a walk's speed and its gait cycle (a step of each foot)
FLAT, ON_TOES = 0.35, 0.25  # s: each stance: the foot flat, then on its toes (heel-off to toe-off)
PITCH = np.radians(30.0)  # the foot's pitch at toe-off (the heel 10 cm up)
AHEAD = 0.3  # m: a heel comes down this far ahead of the hips
FOOT = 0.2  # m: heel to toes
TOLERANCE = 0.067  # s: bench/motion.py's: a decision this close to a true touchdown or lift-off counts neither way


def _rotate(point: np.ndarray, about: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """`point` turned by `angle` about the line through `about` along the unit `axis` (Rodrigues)."""
    v = point - about
    return about + v * np.cos(angle) + np.cross(axis, v) * np.sin(angle) + axis * (axis @ v) * (1 - np.cos(angle))


def walk(fps: float, seconds: float, lift_flat: bool = False):
    """(T,) times, (T, K, 3) camera-frame keypoints (NaN for those not placed), (T, 2) true contacts (left, right)
    and (T, 2) true on-the-toes frames of a body walking towards the camera. lift_flat: each foot leaves the floor
    flat after its FLAT stance, rising at 0.4 m/s over ON_TOES (no heel-off: no contact then)."""
    times = np.arange(int(round(seconds * fps))) / fps
    up, facing, lateral = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, -1.0]), np.array([1.0, 0.0, 0.0])
    start = np.array([0.0, 0.0, 4.0 + SPEED * seconds / 2])  # mid-clip 4 m out
    world = np.full((len(times), len(NAMES), 3), np.nan)
    truth, toes_only = np.zeros((len(times), 2), bool), np.zeros((len(times), 2), bool)
    stance = FLAT + ON_TOES
    for column, (side, sign, offset) in enumerate((("left", 1.0, 0.0), ("right", -1.0, 0.5))):
        world[:, _K[f"{side}_hip"]] = start + facing * SPEED * times[:, None] + up * 0.9 + lateral * sign * 0.09
        for i, t in enumerate(times):
            k = np.floor(t / CYCLE - offset)  # this foot's latest landing
            landing = (k + offset) * CYCLE
            phase = t - landing
            heel_at = start + facing * (SPEED * landing + AHEAD) + lateral * sign * 0.1 + up * 0.01
            if phase < stance:
                heel = heel_at
                pitch = PITCH * max(phase - FLAT, 0.0) / ON_TOES
                lift = 0.0
                truth[i, column] = not lift_flat or phase < FLAT
                toes_only[i, column] = phase >= FLAT and not lift_flat
                if lift_flat:
                    pitch, lift = 0.0, 0.4 * max(phase - FLAT, 0.0)
            else:  # the swing: to the next landing, CYCLE on, in an arc 12 cm up
                s = (phase - stance) / (CYCLE - stance)
                toe_off = heel_at + up * (0.4 * ON_TOES if lift_flat else 0.0)
                heel = toe_off + facing * SPEED * CYCLE * s * s * (3 - 2 * s)  # slow first: the toes rise as it starts
                heel = heel + up * (0.12 * np.sin(np.pi * s) - (toe_off - heel_at)[1] * s)
                pitch, lift = (0.0 if lift_flat else PITCH) * (1 - s), 0.0
            heel = heel + up * lift
            toes = heel + facing * FOOT
            ankle = heel + facing * 0.05 + up * 0.07
            heel_p, ankle_p = (_rotate(p, toes, lateral * -1.0, pitch) for p in (heel, ankle))  # heel up about the toes
            world[i, _K[f"{side}_heel"]] = heel_p
            world[i, _K[f"{side}_ankle"]] = ankle_p
            world[i, _K[f"{side}_big_toe"]] = toes - lateral * sign * 0.03
            world[i, _K[f"{side}_small_toe"]] = toes + lateral * sign * 0.03
    rotation, camera_centre = camera_pose()
    return times, (world - camera_centre) @ rotation.T, truth, toes_only


def _decide(times, points) -> np.ndarray:
    rotation, camera_centre = camera_pose()
    detector = ContactDetector(Floor(rotation @ np.array([0.0, 1.0, 0.0]), (np.zeros(3) - camera_centre) @ rotation.T),
                               NAMES)
    return np.array([detector.update(t, p) for t, p in zip(times, points)])


def _near_change(truth: np.ndarray, times: np.ndarray, tolerance: float = TOLERANCE) -> np.ndarray:
    out = np.zeros(truth.shape, bool)
    for i, column in zip(*np.nonzero(truth[1:] != truth[:-1])):
        out[:, column] |= np.abs(times - (times[i] + times[i + 1]) / 2) <= tolerance + 1e-9
    return out


def test_the_walk_is_built_as_it_says():
    """The synthetic heel rises about still toes to 10 cm at toe-off."""
    times, points, truth, toes_only = walk(30.0, 4.0)
    rotation, camera_centre = camera_pose()
    world = points @ rotation + camera_centre
    toes = world[:, _K["left_big_toe"]]
    on = toes_only[:, 0]
    assert on.sum() >= 10
    both = on[1:] & on[:-1]
    assert np.abs(np.diff(toes, axis=0)[both]).max() < 1e-9  # the toes stand still heel-off to toe-off
    assert world[on, _K["left_heel"], 1].max() == pytest.approx(0.01 + FOOT * np.sin(PITCH), abs=0.02)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_foot_on_its_toes_is_held_until_toe_off(fps):
    """Heel-off to toe-off the foot is still on the floor (its toes stand still): held on every such frame more than
    67 ms from toe-off, then released within 0.1 s of toe-off; never held in the swing beyond that."""
    times, points, truth, toes_only = walk(fps, 4.0)
    decided = _decide(times, points)
    counted = ~_near_change(truth, times) & (times > 0.5)[:, None]
    on_toes = toes_only & counted
    assert on_toes.sum() >= 8
    assert decided[on_toes].all(), times[np.nonzero(on_toes & ~decided)[0]]
    for column in (0, 1):
        offs = np.flatnonzero(truth[:-1, column] & ~truth[1:, column]) + 1
        for i in offs[(times[offs] > 0.5) & (times[offs] < times[-1] - 0.15)]:
            released = times[(times >= times[i]) & ~decided[:, column]]
            assert len(released) and released[0] - times[i] <= 0.1 + 1e-9, (column, times[i])
    assert not (decided & ~truth & counted).any()


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_foot_lifted_flat_is_released(fps):
    """A foot that leaves the floor flat (heel and toes rising together at 0.4 m/s) is no foot on its toes: released
    within 0.1 s of lifting."""
    times, points, truth, _ = walk(fps, 4.0, lift_flat=True)
    decided = _decide(times, points)
    for column in (0, 1):
        offs = np.flatnonzero(truth[:-1, column] & ~truth[1:, column]) + 1
        for i in offs[(times[offs] > 0.5) & (times[offs] < times[-1] - 0.15)]:
            released = times[(times >= times[i]) & ~decided[:, column]]
            assert len(released) and released[0] - times[i] <= 0.1 + 1e-9, (column, times[i])
