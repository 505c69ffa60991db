"""Contacts the rule-based detector used to miss on planted feet (issue 51, stylised and brisk walks' recall): exact
synthetic keypoints in the camera of tests/ground_synthetic.py (1.5 m up, 15 degrees down), fed to `ContactDetector`
frame by frame, against the known truth.

- A walk measured with a frame-to-frame jitter across the line of sight: the heel's speed is the slope of a line
  through it over `speed_window` (67 ms), to the nearest frame; at 24 fps that is three frames (a line through two,
  as the window held before, doubles the jitter into a speed over the onset and release gates).
- A foot that glides along the floor (a stylised walk's slide on a planted foot, slower than the truth's 0.2 m/s):
  released each time it has slid `off_slide` from where it stood, it plants again at once where its heel is still on
  the floor (the `refractory` wait after a stance is for a heel rising after heel-off)."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from tests.ground_synthetic import camera_pose
from tests.mocap_synthetic import NAMES
from tests.test_contacts_toes import _near_change, walk

_K = {n: i for i, n in enumerate(NAMES)}
JITTER = 0.01  # m: every keypoint this far left, then right, of where it is, frame by frame (across the line of sight)


def _decide(times, points) -> np.ndarray:
    rotation, camera_centre = camera_pose()
    floor = Floor(rotation @ np.array([0.0, 1.0, 0.0]), (np.zeros(3) - camera_centre) @ rotation.T)
    detector = ContactDetector(floor, NAMES)
    return np.array([detector.update(t, p) for t, p in zip(times, points)])


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_jittered_walk_is_held_at_every_rate(fps):
    """A walk towards the camera whose keypoints jitter 1 cm either way across the line of sight, alternately, frame
    by frame: every planted frame more than 67 ms from a touchdown or toe-off is held, and no frame of a swing."""
    times, points, truth, _ = walk(fps, 4.0)
    jittered = points.copy()
    jittered[..., 0] += JITTER * (-1.0) ** np.arange(len(times))[:, None]
    decided = _decide(times, jittered)
    counted = ~_near_change(truth, times) & (times > 0.5)[:, None]
    assert (truth & counted).sum() >= 30
    assert decided[truth & counted].all(), times[np.nonzero((truth & counted & ~decided).any(axis=1))[0]]
    assert not (decided & ~truth & counted).any()


def glide(fps: float, speed: float = 0.15):
    """(T,) times, (T, K, 3) camera-frame keypoints, (T, 2) true contacts of a body standing 4 m from the camera,
    facing it, its right foot planted, its left foot standing 0.5 s, gliding sideways along the floor (across the
    line of sight) at `speed` m/s for 1.2 s, standing again 0.5 s: on the floor and slower than the truth's 0.2 m/s
    throughout."""
    times = np.arange(int(round(2.2 * fps))) / fps
    up, facing, lateral = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, -1.0]), np.array([1.0, 0.0, 0.0])
    centre = np.array([0.0, 0.0, 4.0])
    moved = speed * np.clip(times - 0.5, 0.0, 1.2)
    world = np.full((len(times), len(NAMES), 3), np.nan)
    for side, sign, shift in (("left", 1.0, moved), ("right", -1.0, 0.0 * moved)):
        heel = centre + lateral * sign * 0.1 + up * 0.01 + lateral * np.asarray(shift)[:, None]
        world[:, _K[f"{side}_hip"]] = centre + up * 0.9 + lateral * sign * 0.09
        world[:, _K[f"{side}_heel"]] = heel
        world[:, _K[f"{side}_ankle"]] = heel + facing * 0.05 + up * 0.07
        world[:, _K[f"{side}_big_toe"]] = heel + facing * 0.2 - lateral * sign * 0.03
        world[:, _K[f"{side}_small_toe"]] = heel + facing * 0.2 + lateral * sign * 0.03
    rotation, camera_centre = camera_pose()
    return times, (world - camera_centre) @ rotation.T, np.ones((len(times), 2), bool)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_gliding_foot_is_held(fps):
    """A foot gliding along the floor at 0.15 m/s is held on all but a frame at each release (after 0.2 s, the heel's
    first speed); without the new rule it waited out `refractory` (0.2 s) after each, a third of the glide."""
    times, points, truth = glide(fps)
    decided = _decide(times, points)
    counted = times > 0.2
    assert decided[counted, 1].all()  # the planted foot
    gliding = counted & (times < 2.2)
    missed = gliding & ~decided[:, 0]
    assert missed.sum() <= 2, times[missed]
