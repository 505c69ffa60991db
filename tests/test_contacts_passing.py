"""A foot planted while it slides (issue 51, side steps' false contacts): a heel sliding along the floor dips under the
onset gate for an instant and is planted, then keeps sliding as fast as that gate. Before it is a stance
(`stance_time`), a contact whose heel, over the release's `off_time`, still moves faster than the onset gate it began
under, and is not coming down (a landing heel still slowing reads fast), is a foot passing through: it ends.

Exact 3D keypoints of a standing body seen by the camera of tests/ground_synthetic.py (1.5 m up, 15 degrees down); the
left foot slides across the line of sight (and a little away from the camera) on the floor, its speed falling from 0.6
to 0.2 m/s and rising again to 0.42 m/s (between the onset gate, 0.3 m/s standing, and `off_speed`, 0.45)."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector, ContactGates
from realtime.rig.floor import Floor
from tests.ground_synthetic import camera_pose
from tests.mocap_synthetic import NAMES

_K = {n: i for i, n in enumerate(NAMES)}
SLOWEST, AGAIN = 1.0, 1.03  # s: the slide at its slowest (0.2 m/s), and back at 0.42 m/s


def slide_speed(times: np.ndarray, again: float = 0.42) -> np.ndarray:
    """m/s along the floor: 0.6 until 0.9 s, down to 0.2 at SLOWEST, up to `again` at AGAIN and on."""
    return np.interp(times, [0.0, 0.9, SLOWEST, AGAIN, 10.0], [0.6, 0.6, 0.2, again, again])


def standing_slide(fps: float, seconds: float = 1.6, again: float = 0.42):
    """(T,) times, (T, K, 3) camera-frame keypoints (NaN for those not placed): both hips and the right foot still, the
    left foot sliding on the floor at `slide_speed`."""
    times = np.arange(int(round(seconds * fps))) / fps
    up, facing, left = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, -1.0])
    way = facing - 0.3 * left  # across the line of sight, a little away from the camera
    way = way / np.linalg.norm(way)
    step = np.diff(times, prepend=0.0)
    travelled = np.cumsum(slide_speed(times, again) * step)
    world = np.full((len(times), len(NAMES), 3), np.nan)
    centre = np.array([0.0, 0.0, 4.0])
    world[:, _K["left_hip"]] = centre + 0.9 * up + 0.09 * left
    world[:, _K["right_hip"]] = centre + 0.9 * up - 0.09 * left
    for side, sign in (("left", 1.0), ("right", -1.0)):
        ankle = np.repeat((centre + 0.1 * sign * left + 0.08 * up)[None], len(times), axis=0)
        if side == "left":
            ankle = ankle + (travelled - travelled[times <= SLOWEST][-1])[:, None] * way
        world[:, _K[f"{side}_ankle"]] = ankle
        world[:, _K[f"{side}_heel"]] = ankle - 0.05 * facing - 0.07 * up
        world[:, _K[f"{side}_big_toe"]] = ankle + 0.15 * facing - sign * 0.03 * left - 0.07 * up
        world[:, _K[f"{side}_small_toe"]] = ankle + 0.14 * facing + sign * 0.03 * left - 0.07 * up
    rotation, camera_centre = camera_pose()
    return times, (world - camera_centre) @ rotation.T


def _decide(times, points) -> np.ndarray:
    rotation, camera_centre = camera_pose()
    detector = ContactDetector(Floor(rotation @ np.array([0.0, 1.0, 0.0]), (np.zeros(3) - camera_centre) @ rotation.T),
                               NAMES)
    return np.array([detector.update(t, p) for t, p in zip(times, points)])


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_foot_planted_as_its_slide_slows_is_let_go_of_as_it_keeps_sliding(fps):
    """Planted as the slide slows under the onset gate; let go of before the contact would be a stance
    (`stance_time`), and not planted again while it slides; the right foot held throughout."""
    times, points = standing_slide(fps)
    decided = _decide(times, points)
    planted = times[decided[:, 0]]
    assert len(planted) and planted[0] < AGAIN, planted[:1]  # the onset gate let it in
    let_go = times[(times > planted[0]) & ~decided[:, 0]]
    assert len(let_go) and let_go[0] - planted[0] < ContactGates().stance_time, let_go[:1]
    assert not decided[times > let_go[0], 0].any()
    assert decided[times > 0.5, 1].all()


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_foot_planted_as_its_slide_stops_is_held(fps):
    """A slide that slows to a stop (0.2 m/s, then still: `again` 0) stays planted at every rate."""
    times, points = standing_slide(fps, again=0.0)
    decided = _decide(times, points)
    assert decided[times > AGAIN + 0.1, 0].all()
