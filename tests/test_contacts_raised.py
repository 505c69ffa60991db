"""A raised foot held still in the air is not planted (issue 51, feet held while the body is airborne): a synthetic
dancer facing the camera of tests/ground_synthetic.py (1.5 m up, 15 degrees down), its exact 3D keypoints fed to
the rule-based `ContactDetector` frame by frame, the detector's floor where the test puts it (a floor fit can be
centimetres off where the feet rest).

Both feet stand for a second; then the left foot swings up, comes down to hover still `HOVER` above where it rested
(a dancer's raised foot: slow, and lower than the on_height gate above the floor), and lands. The right foot stands
throughout."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from tests.ground_synthetic import camera_pose
from tests.mocap_synthetic import NAMES

_K = {n: i for i, n in enumerate(NAMES)}
HOVER = 0.06  # m: the raised foot's lowest point above where it rests (the heel held 5-8 cm up in the corpus's dances)
ANKLE = 0.08  # m: a standing foot's ankle above the floor (its heel and toes 1 cm up)
UP, FACING, LEFT = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, -1.0]), np.array([1.0, 0.0, 0.0])
SWING = ((1.0, 0.0), (1.15, 0.15), (1.3, HOVER), (1.8, HOVER), (1.9, 0.0))  # (s, the left ankle's rise), linear
# between; standing before the first and after the last


def raised_foot(fps: float, seconds: float = 3.0, on_toes: bool = False):
    """(T,) times, (T, K, 3) camera-frame keypoints (NaN for those not placed), (T, 2) true contacts (left, right).
    on_toes: the left foot hovers with its heel as high as HOVER raises it but its toes on the floor (standing on
    the ball of the foot: a contact)."""
    times = np.arange(int(round(seconds * fps))) / fps
    rise = np.interp(times, *zip(*SWING))
    world = np.full((len(times), len(NAMES), 3), np.nan)
    centre = np.array([0.0, 0.0, 4.0])
    for side, sign in (("left", 1.0), ("right", -1.0)):
        lift = rise if side == "left" else np.zeros_like(times)
        ankle = centre + sign * 0.12 * LEFT + UP * (ANKLE + lift[:, None])
        world[:, _K[f"{side}_hip"]] = centre + sign * 0.09 * LEFT + 0.9 * UP
        world[:, _K[f"{side}_ankle"]] = ankle
        toes_down = 0.07 + (lift[:, None] if on_toes and side == "left" else 0.0)  # the toes kept on the floor
        world[:, _K[f"{side}_heel"]] = ankle - 0.05 * FACING - 0.07 * UP
        world[:, _K[f"{side}_big_toe"]] = ankle + 0.15 * FACING - sign * 0.03 * LEFT - toes_down * UP
        world[:, _K[f"{side}_small_toe"]] = ankle + 0.14 * FACING + sign * 0.03 * LEFT - toes_down * UP
    truth = np.ones((len(times), 2), bool)
    if not on_toes:
        truth[:, 0] = (times < SWING[0][0]) | (times >= SWING[-1][0])
    rotation, camera_centre = camera_pose()
    return times, (world - camera_centre) @ rotation.T, truth


def _decide(times, points, floor_offset: float) -> np.ndarray:
    """The detector's decisions with its floor `floor_offset` m above the true one (below where negative)."""
    rotation, camera_centre = camera_pose()
    floor = Floor(rotation @ UP, (floor_offset * UP - camera_centre) @ rotation.T)
    detector = ContactDetector(floor, NAMES)
    return np.array([detector.update(t, p) for t, p in zip(times, points)])


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
@pytest.mark.parametrize("floor_offset", [0.0, 0.03, -0.02])
def test_a_raised_foot_held_still_is_not_planted(fps, floor_offset):
    """The hovering foot is slow and under on_height above the floor (its heel 7 cm up, 4-9 cm as the floor is
    off), but 6 cm above where the performer's feet rest: it is not planted while it hovers, and it plants within
    0.1 s of landing; the standing foot stays planted throughout."""
    times, points, truth = raised_foot(fps)
    decided = _decide(times, points, floor_offset)
    hovering = (times >= SWING[2][0]) & (times < SWING[3][0])
    assert hovering.sum() >= 10 and not truth[hovering, 0].any()
    assert not decided[hovering, 0].any()
    landed = times[(times >= SWING[-1][0]) & decided[:, 0]]
    assert len(landed) and landed[0] - SWING[-1][0] <= 0.1 + 1e-9
    assert decided[times >= 0.2, 1].all()


@pytest.mark.parametrize("fps", [30.0, 60.0])
def test_a_foot_on_its_toes_still_plants(fps):
    """The same heel held up with the toes on the floor (standing on the ball of the foot) is a contact: the
    foot's lowest point is where the feet rest, so it plants while it stands there."""
    times, points, truth = raised_foot(fps, on_toes=True)
    decided = _decide(times, points, 0.0)
    standing = (times >= SWING[2][0] + 0.1) & (times < SWING[3][0])
    assert truth[standing, 0].all()
    assert decided[standing, 0].all()
