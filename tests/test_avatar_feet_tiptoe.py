"""The avatar's held foot after stances on the ball of the foot (realtime/rig/lock.py `FootPin._rest`,
`PinGates.standing_ankle`): a foot the lock holds mostly on its toes (a dancer's relevé) measures resting heights with
its ankle far up. Those are no standing foot's: a later flat stance of that foot rests where it is shown, not with its
heel held up at the releve's ankle."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.lock import PinGates
from tests.test_avatar_feet import _LENGTH, _REST, _foot, _pin_frames

_TIPTOE = 0.15  # m: the ankle's height on the ball of the foot (the toes where they rest)


def _releve_then_flat(fps: float):
    """The right foot held on the ball of its foot 1 s, swinging 0.3 s, then held flat 1 s (its measured heights are
    still the releve's: more of its held time was on its toes); the left foot in the air all along (never held, so
    it measures nothing)."""
    raised = np.degrees(np.arcsin((_TIPTOE - _REST[1]) / _LENGTH) - np.arcsin((_REST[0] - _REST[1]) / _LENGTH))
    tiptoe = _foot(np.array([0.3, _REST[1], 0.0]), raised)
    assert tiptoe[0, 1] == pytest.approx(_TIPTOE, abs=1e-3)
    plan = []
    for k in range(int(2.3 * fps)):
        time = k / fps
        left = _foot(np.array([0.0, 0.3, 0.2]), 0.0)
        if time < 1.0:
            right, share, since = tiptoe, 1.0, 0.0
        elif time < 1.3:
            right, share, since = _foot(np.array([0.3, 0.25, 0.2]), 0.0), 0.0, None  # swinging
        else:
            right, share, since = _foot(np.array([0.3, _REST[1], 0.4]), 0.0), 1.0, 1.3
        plan.append((time, (0.0, share), (None, since), np.array([left, right])))
    return np.array([p[0] for p in plan]), plan


@pytest.mark.parametrize("fps", [30.0, 60.0])
def test_a_flat_stance_after_a_releve_rests_where_it_is_shown_not_at_the_releves_ankle(fps):
    times, plan = _releve_then_flat(fps)
    pins: list = []
    ankles, toes = _pin_frames(plan, pins=pins)
    assert pins[0].rest["right"].heights[0] > PinGates().standing_ankle  # measured on its toes
    flat = times >= 1.3 + PinGates().settle + 0.05
    assert np.abs(ankles[flat, 1, 1] - _REST[0]).max() < 0.01, ankles[flat, 1, 1]
    assert np.abs(toes[flat, 1, 1] - _REST[1]).max() < 0.01, toes[flat, 1, 1]
    assert np.abs(ankles[flat, 1][:, [0, 2]] - ankles[flat][0, 1, [0, 2]]).max() < 2e-3  # not moved along the floor

