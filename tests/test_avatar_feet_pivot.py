"""Which point a hold's foot flattens about (realtime/rig/lock.py `FootPin`, `PinGates.pivot_shown`): the hold begins at
the avatar's foot of the frame before, the solve's, whose pitch its legs set (a side step's heel shown down had the
avatar's toes 3-9 cm in the floor); the foot keeps the one of its heel and toes that the hold's first frame shows
nearer its resting height where it comes down, and turns flat about it (a run lands on its forefoot)."""

from __future__ import annotations

import numpy as np

from tests.test_avatar_feet import _LENGTH, _REST, _foot, _pin_frames

_FPS = 30.0
_LAND = 1.0


def _from_ankle(ankle: np.ndarray, ankle_height: float, toes_height: float) -> np.ndarray:
    """(2, 3) ankle and toes of a foot pointing along +z, its ankle over `ankle` (x, z) at these heights."""
    drop = ankle_height - toes_height
    ankle = np.array([ankle[0], ankle_height, ankle[2]])
    return np.array([ankle, ankle + [0.0, -drop, np.sqrt(_LENGTH ** 2 - drop ** 2)]])


def _hold(before: np.ndarray, shown):
    """The right foot in the air, then on the frame before its hold (at _LAND) the avatar's foot `before`, then held
    as `shown(time)`; the left foot held flat from the start at the resting heights (they are measured there).
    -> times, the right foot's ankle and toes targets per frame."""
    plan = []
    for k in range(int(1.6 * _FPS)):
        time = k / _FPS
        left = _foot(np.array([0.3, _REST[1], 0.0]), 0.0)
        if time < _LAND - 1.5 / _FPS:
            right, share, since = _foot(np.array([0.0, 0.3, 0.4]), 0.0), 0.0, None
        elif time < _LAND - 1e-9:
            right, share, since = before, 0.0, None
        else:
            right, share, since = shown(time), 1.0, _LAND
        plan.append((time, (1.0, share), (0.0, since), np.array([left, right])))
    ankles, toes = _pin_frames(plan)
    return np.array([p[0] for p in plan]), ankles[:, 1], toes[:, 1]


def test_a_heel_shown_down_stays_where_it_came_down_though_the_avatars_toes_were_in_the_floor():
    """The frame before the hold, the avatar's foot has its toes 6 cm in the floor and its ankle 1 cm (pitched 43
    degrees, the flat pitch 22); the hold's frames show the heel down where it rests and the toes 3 cm up, coming
    down over 0.1 s (a heel strike). The ankle stays where it came down along the floor while the foot turns flat about it (on
    main the foot turned about its sunk toes and slid the heel 3 cm)."""
    place = np.array([0.0, 0.0, 0.5])
    before = _from_ankle(place, _REST[0] - 0.01, _REST[1] - 0.06)
    times, ankles, toes = _hold(before, lambda time: _from_ankle(
        place, _REST[0], _REST[1] + 0.03 * max(1.0 - (time - _LAND) / 0.1, 0.0)))
    held = times >= _LAND - 1e-9
    along = ankles[held][:, [0, 2]] - place[[0, 2]]
    assert np.abs(along).max() < 0.005, along
    late = times >= _LAND + 0.15
    assert np.abs(ankles[late, 1] - _REST[0]).max() < 0.01  # down at its resting heights, flat
    assert np.abs(toes[late, 1] - _REST[1]).max() < 0.01


def test_a_forefoot_landing_keeps_its_toes_where_they_came_down():
    """The avatar's foot pitched as the frames show it, the toes down where they rest and the heel 3 cm up (a run's
    landing): the toes stay where they came down along the floor while the heel comes down about them."""
    toes_at = np.array([0.0, _REST[1], 0.5])
    pitch = np.degrees(np.arcsin((_REST[0] + 0.03 - _REST[1]) / _LENGTH) - np.arcsin((_REST[0] - _REST[1]) / _LENGTH))
    foot = _foot(toes_at, pitch)
    times, ankles, toes = _hold(foot, lambda time: foot)
    held = times >= _LAND - 1e-9
    along = toes[held][:, [0, 2]] - toes_at[[0, 2]]
    assert np.abs(along).max() < 0.005, along
    late = times >= _LAND + 0.15
    assert np.abs(ankles[late, 1] - _REST[0]).max() < 0.01
