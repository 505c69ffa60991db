"""A held foot the body walks out of reach of (issue 51): late in a stance the hips pass over and beyond the planted
foot while the frame's legs are too short to reach it; drawn out that slowly (under `LockGates.drawn_speed`), the
lock's anchor then follows the leg only as far as `LockGates.stretch` allows, a little on each frame, rather than
jumping the whole stretch back to the leg at once (realtime/rig/lock.py `FootLock`)."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.leg_ik import solve_leg
from realtime.rig.lock import FootLock, LockGates
from tests.mocap_synthetic import NAMES

INDEX = {n: i for i, n in enumerate(NAMES)}
HIP, KNEE, ANKLE = (INDEX[f"left_{p}"] for p in ("hip", "knee", "ankle"))
PLANTED = np.array([0.0, 0.08, 0.0])  # m: the left ankle, truly down (y is up)
HIP_HEIGHT = 0.85  # m
SPEED = 1.4  # m/s: a brisk walk, the hips forward along z
LEG = 0.42  # m: the frame's thigh and shin (the lifted legs a little short of the planted foot late in the stance)


def _frames(fps: float, seconds: float = 0.9):
    """(times, (T, K, 3) points): the hips pass over the planted left ankle and walk on; the frame shows the ankle where
    its short leg reaches towards the planted place (the right leg unseen)."""
    times = np.arange(int(round(seconds * fps))) / fps
    points = np.full((len(times), len(NAMES), 3), np.nan)
    for t, time in enumerate(times):
        hip = np.array([0.1, HIP_HEIGHT, SPEED * (time - 0.15)])
        knee, ankle = solve_leg(hip, hip + np.array([0.0, -0.4, 0.1]), PLANTED, LEG, LEG)
        points[t, [HIP, KNEE, ANKLE]] = hip, knee, ankle
    return times, points


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_held_foot_the_hips_walk_away_from_follows_them_a_little_each_frame_not_in_one_jump(fps):
    times, points = _frames(fps)
    lock, gates = FootLock(NAMES), LockGates()
    ankles, hips = [], []
    for time, frame in zip(times, points):
        out = lock.apply(time, frame, np.array([True, False]))
        ankles.append(out[ANKLE]), hips.append(out[HIP])
    ankles, hips = np.array(ankles), np.array(hips)
    assert np.linalg.norm(hips[-1] - PLANTED) > 2 * LEG + 2 * gates.stretch  # the hips walked well out of its reach
    reach = np.linalg.norm(ankles - hips, axis=1) - 2 * LEG
    assert (reach <= gates.stretch + 1e-6).all()  # the shin never stretched more than the gate
    held = np.flatnonzero(np.linalg.norm(ankles - PLANTED, axis=1) < 1e-9)
    assert len(held) > 0.3 * fps  # held in place while the leg reached it, stretched or not
    steps = np.linalg.norm(np.diff(ankles, axis=0), axis=1)
    assert steps.max() <= 1.2 * SPEED / fps  # out of reach, the foot goes no faster than the hips (main: the stretch)
