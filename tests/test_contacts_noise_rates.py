"""A planted foot's measurement noise at every frame rate (issue 51, walks' recall at 24 fps): the heel's speed is the
slope of a line through its positions over `ContactGates.speed_window` (67 ms). At 30 and 60 fps that is three and
five frames; at 24 fps (42 ms apart) only two frames lie inside 67 ms, and their slope's noise alone (8-10 mm a point,
each frame its own) reads 0.3-0.6 m/s on a heel standing still: past the release's `off_speed`, so a planted foot is
let go and kept off for the refractory. The release judges the speed over the window to the nearest frame (three
frames at 24 fps).

Synthetic motion with known truth, noisy keypoints into the rule-based `ContactDetector`: the walker of
tests/test_contacts_toes.py coming towards the camera (the front view), and two feet standing still across the view
(tests/ground_synthetic.py's `feet_across_the_view`)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ground_synthetic import feet_across_the_view
from tests.test_contacts_toes import _decide, _near_change, walk

SEEDS = range(5)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_noisy_walk_is_held_at_every_rate(fps):
    """A walk towards the camera, every keypoint 8 mm off each frame: the true contacts held on 0.9 of the frames
    more than 67 ms from a touchdown or lift-off (as bench/motion.py counts them), over five noise seeds; nothing held
    in the swing."""
    held, false = [], 0
    for seed in SEEDS:
        times, points, truth, _ = walk(fps, 6.0)
        points = points + np.random.default_rng([seed, int(fps)]).normal(0.0, 0.008, points.shape)
        decided = _decide(times, points)
        counted = ~_near_change(truth, times) & (times > 0.5)[:, None]
        held.append(decided[truth & counted].mean())
        false += int((decided & ~truth & counted).sum())
    assert np.mean(held) >= 0.9, held
    assert false == 0


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_feet_standing_with_noise_are_held(fps):
    """Two feet standing still for 3 s, every point 8 mm off each frame: held on 0.95 of the frames from 0.2 s on,
    at each of five noise seeds."""
    for seed in SEEDS:
        times, decided = feet_across_the_view(fps, seed, lambda t: ((0.0, 0.0), (0.0, 0.0), 0.0), 3.0, noise=0.008)
        assert decided[times >= 0.2].mean() >= 0.95, (seed, decided[times >= 0.2].mean(axis=0))
