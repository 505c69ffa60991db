"""The Lifter between depth frames: a planted foot keeps its place along the line of sight while the body
walks away from the camera (realtime/rig/lift.py, step 4)."""

from __future__ import annotations

import numpy as np

from realtime.rig.lift import Lifter
from tests.ground_synthetic import CENTRE, FOCAL, walk
from tests.mocap_synthetic import NAMES

LEFT_FOOT = [NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]


def _pixels(points: np.ndarray) -> np.ndarray:
    return FOCAL * points[:, :2] / points[:, 2:] + CENTRE


def _walk_away(planted, camera_motion=None, shift=(0.0, 0.0, 0.0)):
    """A depth frame, then 4 frames of the body moving 5 cm a frame straight away from the camera with its left
    foot still (in the camera frame, or `shift` a frame in it: a camera moving by -shift); the left foot's error."""
    start, shift = walk(1).camera[0], np.asarray(shift)
    lifter = Lifter(NAMES)
    lifter.update(_pixels(start), start)
    errors = []
    for t in range(1, 5):
        body = start + np.array([0.0, 0.0, 0.05 * t]) + shift * t
        body[LEFT_FOOT] = start[LEFT_FOOT] + shift * t
        out = lifter.update(_pixels(body), None, None, planted, camera_motion)
        errors.append(float(np.abs(out[LEFT_FOOT] - body[LEFT_FOOT]).max()))
    return errors


def test_a_planted_foot_stays_where_it_is_while_the_body_walks_away():
    assert max(_walk_away([True, False])) < 1e-6
    carried = _walk_away(None)  # with the root: 5 cm a frame along the line of sight
    assert carried[-1] > 0.15


def test_a_planted_foot_is_held_in_the_world_when_the_camera_moves():
    shift = np.array([0.0, 0.0, -0.03])  # the camera dollies 3 cm a frame toward the person
    motion = np.eye(4)
    motion[:3, 3] = shift  # this frame's camera from the last frame's
    assert max(_walk_away([True, False], motion, shift)) < 1e-6
    assert _walk_away([True, False], None, shift)[-1] > 0.1  # held in the camera frame: off by the camera's motion
