"""bench/lift_depth.py: what the lift knows of a foot's motion along the line of sight between depth frames, on the
project's walk seen from the front (the walk along the line of sight)."""

from __future__ import annotations

import numpy as np

from bench import corpus
from bench import lift_depth as study
from realtime.rig import lift


def test_a_point_on_a_ray_at_a_distance_from_a_centre():
    """Of the two points of a ray at a distance from a centre, the one nearer the prior; where the ray passes
    further than that, its nearest approach."""
    centre = np.array([0.1, 0.2, 4.0])
    ray = np.array([0.05, 0.1, 1.0])
    far = ray * 4.3
    length = float(np.linalg.norm(far - centre))
    assert np.isclose(study.on_ray_at_distance(centre, ray, length, 4.4), 4.3)
    other = study.on_ray_at_distance(centre, ray, length, 3.0)
    assert other < 4.3 and np.isclose(np.linalg.norm(ray * other - centre), length)
    nearest = float(ray @ centre) / float(ray @ ray)
    assert np.isclose(study.on_ray_at_distance(centre, ray, 0.01, 4.4), nearest)


def test_a_held_stance_foot_keeps_its_depth_and_the_shin_tells_a_swinging_foots_from_a_known_knee():
    """cmu_07_04 from the front at 30 fps (the walk towards and away from the camera): a true stance the lifter holds
    moves along the line of sight between depth frames as the truth does (within 1 cm, median), where the same foot
    carried with the root would move with the hips; a swinging foot's ankle put at its shin's length from the true knee
    is nearer its true depth than the lift's (which carries it with the root); the lifter's methods are back after."""
    update, hold = lift.Lifter.update, lift.Lifter._hold_feet
    motion = corpus.project_motions(["cmu_07_04"])[0]
    at = corpus.resample(motion, 30.0)
    rows = np.array(study.study(at, "front", 0, corpus.true_contacts(motion).at(at.times)))
    assert lift.Lifter.update is update and lift.Lifter._hold_feet is hold
    error = np.abs(rows[:, 2:] - rows[:, 1:2])  # per estimate (study.ESTIMATES), against the true move
    stance, swing = rows[:, 0] == 0, rows[:, 0] == 3
    assert stance.sum() > 50 and swing.sum() > 20
    lifted, carried, true_knee = (study.ESTIMATES.index(name) for name in ("lift", "carried", "true knee"))
    assert np.median(error[stance, lifted]) < 0.01
    assert np.median(error[stance, carried]) > 3 * np.median(error[stance, lifted])
    assert np.median(error[swing, true_knee]) < 0.5 * np.median(error[swing, lifted])
