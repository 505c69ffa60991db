"""The avatar's held foot whose hold began on one frame that showed its ankle low (realtime/rig/lock.py `FootPin`,
`PinGates.still_look`): a depth frame can put a landing ankle 1.5-3 cm under where it stands (a kick's standing foot,
held on one frame's heights: its ankle held 2.8 cm under the true one while the frames after showed it 1.6 cm
higher). A foot its hold shows standing still rests its ankle no lower than shown, even where its toes are shown no
higher than they rest: the heel goes up, the toes stay."""

from __future__ import annotations

import numpy as np

from realtime.rig.lock import PinGates
from tests.test_avatar_feet import _REST, _foot, _pin_frames, _pitch

_LOW = 0.015  # m: how far under its resting height the hold's first frame shows the ankle
_LAND, _LIFT = 0.3, 0.75  # s: the right foot's hold, shorter than `PinGates.rest_after` (no heights measured)


def _low_first_frame(fps: float = 30.0):
    """The right foot in the air, then held flat at its resting heights from _LAND to _LIFT, the hold's first frame
    showing its heel lowered about the toes so that the ankle stands _LOW under where it rests; the left foot in the
    air all along (never held)."""
    lowered = -np.degrees(np.arcsin(_LOW / np.linalg.norm(_foot(np.zeros(3), 0.0)[0])))  # about the toes, small angle
    plan = []
    for k in range(int(1.0 * fps)):
        time = k / fps
        left = _foot(np.array([0.0, 0.3, 0.2]), 0.0)
        if time < _LAND - 1e-9:
            right, share, since = _foot(np.array([0.3, 0.15, 0.0]), 0.0), 0.0, None
        elif time < _LIFT:
            first = abs(time - _LAND) < 0.5 / fps
            right, share, since = _foot(np.array([0.3, _REST[1], 0.0]), lowered if first else 0.0), 1.0, _LAND
        else:
            right, share, since = _foot(np.array([0.3, 0.15, 0.4]), 0.0), 0.0, None
        plan.append((time, (0.0, share), (None, since), np.array([left, right])))
    return np.array([p[0] for p in plan]), plan


def test_a_still_foot_held_on_one_frame_that_showed_its_ankle_low_rests_its_ankle_where_shown():
    gates = PinGates()
    times, plan = _low_first_frame()
    shown_ankle = plan[int(round(0.5 * 30))][3][1, 0, 1]
    assert abs(plan[9][3][1, 0, 1] - (shown_ankle - _LOW)) < 2e-3  # the hold's first frame: the ankle shown low
    ankles, toes = _pin_frames(plan)
    looked = (times >= _LAND + gates.still_look + gates.settle + 0.05) & (times < _LIFT)  # looked at and settled
    assert looked.sum() >= 3
    assert np.abs(ankles[looked, 1, 1] - shown_ankle).max() < 0.005, ankles[looked, 1, 1]
    assert np.abs(toes[looked, 1, 1] - _REST[1]).max() < 0.005, toes[looked, 1, 1]  # the toes stay where they rest
    held = (times >= _LAND + gates.settle) & (times < _LIFT)  # set down from the air over `settle` first
    assert ankles[held, 1, 1].max() < shown_ankle + 0.005  # never over where it is shown
    assert np.abs(np.diff(ankles[held, 1, 1])).max() < 0.01  # raised over `settle`, not in one frame's jump
    # the foot pitched about its ankle: its toes move along the floor by what the pitch takes (16 cm x the change
    # in the cosine: 5 mm here), over `settle`, not further
    along = np.linalg.norm(toes[held, 1][:, [0, 2]] - toes[held, 1][0, [0, 2]], axis=1)
    assert along.max() < 0.007, along
    assert np.all(np.isfinite(_pitch(ankles[held, 1], toes[held, 1])))
