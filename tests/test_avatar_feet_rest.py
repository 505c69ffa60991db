"""A foot's resting heights (realtime/rig/lock.py `RestingHeights`, read by `FootPin`) are where it rests flat: a
stance held on the ball of the foot (a dancer's relevé) does not move them, so a later flat stance is not held up."""

from __future__ import annotations

import numpy as np

from tests.test_avatar_feet import _LENGTH, _REST, _foot, _pin_frames


def _stance_plan(stances, fps: float):
    """Per frame (time, share, since, shown) for `_pin_frames`: the right foot through `stances` ((seconds, foot (2, 3)
    or None: swinging, not held)), the left foot never held (so the right foot rests on its own heights)."""
    plan, time, begun = [], 0.0, 0.0
    for seconds, foot in stances:
        for k in range(int(round(seconds * fps))):
            at = begun + k / fps
            left = _foot(np.array([0.0, _REST[1], 0.3]), 0.0)
            right = _foot(np.array([0.3, 0.25, 0.2]), 0.0) if foot is None else foot
            plan.append((at, (0.0, 0.0 if foot is None else 1.0), (None, None if foot is None else begun),
                         np.array([left, right])))
            time = at
        begun += seconds
    return plan, time


def test_a_stance_on_the_ball_of_the_foot_between_flat_ones_does_not_hold_the_next_flat_one_up():
    """The right foot stands flat 1 s (ankle 8 cm, toes 2), swings, stands on the ball of the foot 1.5 s (ankle 15 cm,
    toes 2: a relevé, 7 cm over where it rests), swings, then stands flat again: that stance rests where it is shown.
    A median over every held frame, more of them the relevé's, would hold the flat stance's ankle 15 cm up (a CMU
    dance's flat stances floated over their measured heights)."""
    fps = 30.0
    raised = np.degrees(np.arcsin((0.15 - _REST[1]) / _LENGTH) - np.arcsin((_REST[0] - _REST[1]) / _LENGTH))
    tiptoe = _foot(np.array([0.3, _REST[1], 0.0]), raised)
    assert abs(tiptoe[0, 1] - 0.15) < 1e-3
    flat = _foot(np.array([0.3, _REST[1], 0.4]), 0.0)
    plan, _ = _stance_plan([(1.0, _foot(np.array([0.3, _REST[1], -0.4]), 0.0)), (0.3, None), (1.5, tiptoe),
                            (0.3, None), (1.0, flat)], fps)
    times = np.array([p[0] for p in plan])
    ankles, toes = _pin_frames(plan)
    last = times >= 3.1 + 0.2  # the last flat stance, once settled
    assert np.abs(ankles[last, 1, 1] - _REST[0]).max() < 0.01, ankles[last, 1, 1]
    assert np.abs(toes[last, 1, 1] - _REST[1]).max() < 0.01, toes[last, 1, 1]
    assert np.abs(ankles[last, 1][:, [0, 2]] - ankles[last][0, 1, [0, 2]]).max() < 2e-3  # not moved along the floor
    on_toes = (times >= 1.3 + 0.2) & (times < 2.8)
    assert np.all(ankles[on_toes, 1, 1] >= _REST[0] - 0.01)  # the relevé itself is held no lower than flat
