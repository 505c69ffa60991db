"""The avatar's held foot late in a stance, the hips walking past it (realtime/rig/lock.py `FootPin`,
`PinGates.hips_give`): the avatar's legs are the robust estimate's, a centimetre or two short of the performer's
straight stance leg, so its hips leave the flat foot out of reach while the true heel is still down. A foot out of
reach by at most `hips_give` stays flat where it is held (the solver brings the hips to it) unless the frame shows
its heel up as far as the leg would lift it (a heel-off, which it follows as before); further out the heel rises
only as far as the rest of the reach needs. Lifting the heel about the toes moves the ankle along the floor: on the
tuning walks that was 40-60 % of the avatar's foot slide while the true foot was down (bench/RESULTS.md, issue 51)."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.lock import FootPin, PinGates
from realtime.rig.solver import REACH, Legs
from tests.test_avatar_feet import _LENGTH, _REST, _UP, _foot, _Hold, _pitch

_LEG = 0.85  # m: the avatar's thigh and shin
_HIP = _REST[0] + 0.80  # m: the hips' height over the floor, 80 cm over the resting ankle
_TOES = np.array([0.1, _REST[1], 0.0])  # where the right foot's toes rest, the foot along +z
_ANKLE = _foot(_TOES, 0.0)[0]


def _ahead(out_of_reach: float) -> float:
    """How far ahead of the flat foot's ankle (along +z) the hips are when that ankle is `out_of_reach` (m) beyond the
    leg's reach."""
    return float(np.sqrt((REACH * _LEG + out_of_reach) ** 2 - (_HIP - _ANKLE[1]) ** 2))


def _stance(fps: float, out_of_reach: float, heel_off: bool):
    """The right foot held flat from 0 s while the hips walk past it (along +z, over 1.2 s) until its flat ankle is
    `out_of_reach` beyond the leg's reach; the frame shows the foot flat all along, or, `heel_off`, its heel lifted
    about its toes as far as the leg needs to reach (the true heel-off). The left foot in the air, never held.
    -> times, the pin's right ankle and toes targets (T, 3) each, the hips (T, 3)."""
    pin, hold = FootPin(), _Hold()
    hold.share["right"], hold.since["right"] = 1.0, 0.0
    times = np.arange(int(round(1.2 * fps)) + 1) / fps
    start, end = -0.15, _ahead(out_of_reach)  # from behind it, in reach
    ankles, toes, hips = [], [], []
    for time in times:
        hip = _ANKLE + [0.0, _HIP - _ANKLE[1], start + (end - start) * time / times[-1]]
        shown_right = _foot(_TOES, 0.0)
        if heel_off:  # the heel up about the toes as far as the leg needs
            for degrees in np.linspace(0.0, 60.0, 601):
                shown_right = _foot(_TOES, degrees)
                if np.linalg.norm(shown_right[0] - hip) <= REACH * _LEG:
                    break
        shown = np.array([_foot(np.array([-0.1, 0.3, 0.2]), 0.0), shown_right])
        hip_both = np.array([hip + [-0.2, 0.0, 0.0], hip])
        legs = Legs(hip=hip_both, knee=hip_both + [0.0, -0.4, 0.05], ankle=shown[:, 0], toes=shown[:, 1],
                    reach=np.array([_LEG, _LEG]), foot=np.array([_LENGTH, _LENGTH]))
        targets = pin.frame(time, hold, shown, shown, (_UP, 0.0))(legs)
        ankles.append(targets[0][1]), toes.append(targets[1][1]), hips.append(hip)
    return times, np.array(ankles), np.array(toes), np.array(hips)


@pytest.mark.parametrize("fps", [24.0, 60.0])
def test_a_flat_foot_the_hips_leave_a_little_out_of_reach_stays_flat_where_it_is_held(fps):
    give = PinGates().hips_give
    times, ankles, toes, hips = _stance(fps, 0.8 * give, heel_off=False)
    assert np.linalg.norm(_ANKLE - hips[-1]) > REACH * _LEG + 0.5 * give  # the flat foot out of the leg's reach at the end
    along = (ankles - ankles[0])[:, [0, 2]]
    assert np.abs(along).max() < 1e-4  # the ankle never moved along the floor (main: 1.1 cm, the heel rolled up)
    assert np.abs(_pitch(ankles, toes) - _pitch(*_foot(np.zeros(3), 0.0))).max() < 0.1  # flat all along
    assert np.abs(toes - toes[0]).max() < 1e-4


@pytest.mark.parametrize("fps", [24.0, 60.0])
def test_a_heel_off_the_frame_shows_lifts_the_heel_as_far_as_the_leg_needs(fps):
    give = PinGates().hips_give
    times, ankles, toes, hips = _stance(fps, 0.8 * give, heel_off=True)
    reach = np.linalg.norm(ankles - hips, axis=1)
    assert reach.max() <= REACH * _LEG + 1e-4  # the leg reaches the pinned foot: the hips are not brought to it
    assert _pitch(ankles[-1], toes[-1]) > _pitch(*_foot(np.zeros(3), 0.0)) + 5.0  # the heel up


def test_further_out_of_reach_than_the_give_the_heel_rises_only_as_far_as_the_rest_needs():
    give = PinGates().hips_give
    times, ankles, toes, hips = _stance(30.0, 2.0 * give, heel_off=False)
    reach = np.linalg.norm(ankles - hips, axis=1)
    assert abs(reach[-1] - (REACH * _LEG + give)) < 2e-3  # left out of reach by the give, the hips brought to it
    assert _pitch(ankles[-1], toes[-1]) > _pitch(*_foot(np.zeros(3), 0.0)) + 1.0
    assert np.abs(toes - toes[0]).max() < 1e-4
