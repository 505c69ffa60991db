"""A held foot's first frame against the heights its hold begins on (realtime/rig/lock.py `FootPin`): the lock anchors a
hold where the ankle came in on the frame before, and a depth frame re-measures a landed foot 1-3 cm higher (a kick's
standing foot: anchored 2-3 cm under what the hold's frames show); the other foot's measured heights can be 2 cm under
where this foot rests (a performer's feet need not rest alike). A hold begun on one frame's heights or on the other
foot's rests no lower than its first frame shows the foot, from its first frames on (before `PinGates.still_look`
has looked at it)."""

from __future__ import annotations

import numpy as np

from realtime.rig.lock import PinGates
from tests.test_avatar_feet import _REST, _foot, _pin_frames

_FPS = 60.0


def _early(times: np.ndarray, land: float) -> np.ndarray:
    """The hold's frames once set down (`settle`) and before its first still look could raise the foot."""
    gates = PinGates()
    return (times >= land + gates.settle + 0.02) & (times < land + gates.still_look - 0.02)


def test_a_first_hold_anchored_under_where_its_first_frame_shows_the_foot_rests_where_shown():
    """No resting heights measured: the right foot lands at 0.3 s, standing flat where it rests, but the lock anchored
    it on the frame before 2 cm lower (ankle and toes); the avatar's foot stands where the frames show it, not 2 cm in
    the floor until a look raises it."""
    land, low = 0.3, 0.02
    plan = []
    for k in range(int(0.8 * _FPS)):
        time = k / _FPS
        left = _foot(np.array([0.0, 0.3, 0.2]), 0.0)  # in the air all along
        if time < land - 1e-9:
            right, share, since = _foot(np.array([0.3, 0.15, 0.0]), 0.0), 0.0, None
        else:
            right, share, since = _foot(np.array([0.3, _REST[1], 0.0]), 0.0), 1.0, land
        anchored = np.array([left, right - [0.0, low, 0.0]])
        plan.append((time, (0.0, share), (None, since), np.array([left, right]), anchored))
    times = np.array([p[0] for p in plan])
    ankles, toes = _pin_frames(plan)
    early = _early(times, land)
    assert early.sum() >= 3
    assert np.abs(ankles[early, 1, 1] - _REST[0]).max() < 0.005, ankles[early, 1, 1]
    assert np.abs(toes[early, 1, 1] - _REST[1]).max() < 0.005, toes[early, 1, 1]
    held = times >= land + PinGates().settle
    assert ankles[held, 1, 1].max() < _REST[0] + 0.005  # never over where it is shown
    assert np.abs(ankles[held, 1][:, [0, 2]] - ankles[held][0, 1, [0, 2]]).max() < 0.005  # not moved along the floor


def test_a_first_hold_on_the_other_feet_heights_rests_no_lower_than_shown():
    """The right foot held flat from the start, its toes on the floor (its resting heights measured: ankle 6 cm up);
    the left foot's first hold, at 1.0 s, shows it standing 1.5 cm higher than the right rests (ankle and toes; its
    ankle still under `first_ankle`): it stands where shown, not 1.5 cm in the floor at the right foot's heights."""
    land, higher = 1.0, 0.015
    plan = []
    for k in range(int(1.5 * _FPS)):
        time = k / _FPS
        right = _foot(np.array([0.3, 0.0, 0.0]), 0.0)
        if time < land - 1e-9:
            left, share, since = _foot(np.array([0.0, 0.3, 0.2]), 0.0), 0.0, None
        else:
            left, share, since = _foot(np.array([0.0, higher, 0.5]), 0.0), 1.0, land
        plan.append((time, (share, 1.0), (since, 0.0), np.array([left, right]), None))
    times = np.array([p[0] for p in plan])
    ankles, toes = _pin_frames(plan)
    early = _early(times, land)
    assert early.sum() >= 3
    rest = _foot(np.zeros(3), 0.0)[:, 1]  # (ankle, toes) heights of the right foot as it rests
    assert rest[0] + higher < PinGates().first_ankle
    assert np.abs(ankles[early, 0, 1] - (rest[0] + higher)).max() < 0.005, ankles[early, 0, 1]
    assert np.abs(toes[early, 0, 1] - (rest[1] + higher)).max() < 0.005, toes[early, 0, 1]
    assert np.abs(ankles[times >= 0.6, 1, 1] - rest[0]).max() < 0.005  # the right foot as it rests
