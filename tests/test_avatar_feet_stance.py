"""The avatar's held foot on a stance that stands higher than the foot's measured resting heights (realtime/rig/lock.py
`FootPin`, `PinGates.still_look`): a performer's stances need not stand alike (a floor not level across the path, a
foot set down on a thicker spot; on the CMU walks one foot's stances stand 0.6 cm apart at the ankle, 1 cm at the
toes). A foot its hold shows standing still rests no lower than shown, ankle and toes, not at heights measured on
earlier stances under it."""

from __future__ import annotations

import numpy as np

from realtime.rig.lock import PinGates
from tests.test_avatar_feet import _REST, _foot, _pin_frames

_HIGHER = 0.015  # m: how much higher the second stance stands than the first


def _two_stances(fps: float = 30.0):
    """The right foot held flat at its resting heights for 1.5 s (they are measured there), in the air 0.5 s, then held
    flat 1.5 cm higher for 1.5 s; the left foot in the air all along (never held)."""
    plan = []
    for k in range(int(3.5 * fps)):
        time = k / fps
        left = _foot(np.array([0.0, 0.3, 0.2]), 0.0)
        if time < 1.5:
            right, share, since = _foot(np.array([0.3, _REST[1], 0.0]), 0.0), 1.0, 0.0
        elif time < 2.0:
            right, share, since = _foot(np.array([0.3, 0.2, 0.4]), 0.0), 0.0, None
        else:
            right, share, since = _foot(np.array([0.3, _REST[1] + _HIGHER, 0.8]), 0.0), 1.0, 2.0
        plan.append((time, (0.0, share), (None, since), np.array([left, right])))
    return np.array([p[0] for p in plan]), plan


def test_a_still_stance_higher_than_the_measured_resting_heights_rests_where_shown_not_under_it():
    gates = PinGates()
    times, plan = _two_stances()
    ankles, toes = _pin_frames(plan)
    first = (times >= 0.6) & (times < 1.5)
    assert np.abs(ankles[first, 1, 1] - _REST[0]).max() < 0.005  # the first stance at its measured heights
    looked = times >= 2.0 + gates.still_look + gates.settle + 0.05  # the second stance, once looked at and settled
    assert np.abs(ankles[looked, 1, 1] - (_REST[0] + _HIGHER)).max() < 0.005, ankles[looked, 1, 1]
    assert np.abs(toes[looked, 1, 1] - (_REST[1] + _HIGHER)).max() < 0.005, toes[looked, 1, 1]
    second = times >= 2.0 + gates.settle  # set down from the air over `settle` first
    assert ankles[second, 1, 1].max() < _REST[0] + _HIGHER + 0.005  # never put over where it is shown
    assert np.abs(np.diff(ankles[second, 1, 1])).max() < 0.01  # raised over `settle`, not in one frame's 1.5 cm jump
    assert np.abs(ankles[second, 1][:, [0, 2]] - ankles[second][0, 1, [0, 2]]).max() < 1e-3  # not moved along the floor
