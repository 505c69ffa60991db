"""The avatar's feet in a run (issue 51): the world's floor stands where a run's planted feet stand, though most of
its soles are in the air on the depth frames (`realtime.rig.floor.floor_level`), and the avatar's held feet
(`Person.bones` forward kinematics, `FootPin`) are never put below that floor."""

from __future__ import annotations

import numpy as np
import pytest

from bench import corpus
from bench import motion as motion_bench
from realtime.rig.floor import FloorGates, fit_floor, floor_level
from realtime.rig.world import transform_points

UP = np.array([0.0, 1.0, 0.0])


def test_the_floors_level_is_where_the_planted_feet_stand_however_many_are_in_the_air():
    rng = np.random.default_rng(0)
    planted = rng.normal(0.0, 0.01, 12)  # a run's depth frames: a fifth of the soles on the floor, 1 cm of noise
    flying = rng.uniform(0.03, 0.4, 48)
    heights = np.concatenate([planted, flying])
    assert abs(floor_level(heights)) < 0.005
    points = np.stack([rng.uniform(-1, 1, 60), heights, rng.uniform(3, 6, 60)], axis=1)
    assert abs(fit_floor(points, UP, normal=UP, planted_level=True).height(np.zeros(3))) < 0.005
    assert -fit_floor(points, UP, normal=UP).height(np.zeros(3)) > 0.02  # the band about them all: in the air
    walking = np.concatenate([rng.normal(0.0, 0.015, 45), rng.uniform(0.03, 0.2, 15)])  # most feet planted
    assert abs(floor_level(walking)) < 0.006
    assert abs(floor_level(walking + 1.0) - 1.0) < 0.006  # wherever the floor is
    assert floor_level(heights, FloorGates(level_band=0.5)) > 0.05  # a band as wide as the flights takes them in
    with pytest.raises(ValueError, match="finite"):
        floor_level(np.array([np.nan]))


@pytest.mark.parametrize("view, fps", [("side", 30.0), ("front", 60.0)])
def test_a_runs_held_feet_stand_on_the_worlds_floor_where_the_true_feet_do(view, fps):
    """The project's run (cmu_35_24, subject 35) through the run's stages as bench/motion.py sees it (seeds 0-3): the
    world's floor within 2 cm of the level the true planted feet stand at over the seeds (it stood 3-5 cm above
    them, fitted among the flying feet; one seed's 30 warm-up depth frames leave it -0.4 to +2.7 cm off), and on every
    frame a foot is held its ankle and toes are on or above that floor and at most 4 cm below where the true foot rests
    (they were 3-10 cm into it; a hold now reaches its measured resting heights within a run's stance, and those stand
    up to 3.6 cm under the true foot's here)."""
    motion = corpus.resample(corpus.project_motions(["cmu_35_24"])[0], fps)
    truth = corpus.true_contacts(motion)
    seen = motion_bench.seen(motion, view, truth)
    true_hips = seen.world[:, motion_bench.HIPS, 1].mean(axis=1) - motion_bench.planted_level(seen.world, truth)
    gaps = []
    for seed in range(4):
        record: dict = {}
        run = motion_bench.run_clip(motion, view, seed, truth, record=record)
        world_from_camera = record["frames"][-1].camera.world_from_camera
        hips = transform_points(world_from_camera, record["true_camera"][:, motion_bench.HIPS].mean(axis=1))[:, 1]
        gaps.append(np.median(true_hips - hips))
        held = run.decided & run.valid[:, None]
        assert held.sum() >= 8
        assert run.feet[..., 1].min(axis=2)[held].min() > -0.005  # on or above the floor (-0.0-1.9 cm)
        assert motion_bench.sinking(run.feet, run.rest, run.true_heights)[held].max() < 0.04  # 1.2-3.6 cm
    # 0.9 cm from the side at 30 fps, 1.0 -> 1.6 from the front at 60 once a still camera's metre is kept from its
    # first 10 depth frames (eighth stop): the true points placed in the world carry that metre's error, 0.5-1 % at
    # the camera's 1.5 m, which the measured feet, the avatar's and the floor share
    assert abs(np.mean(gaps)) < 0.02


@pytest.mark.parametrize("view", ["front", "45"])
def test_a_runs_held_feet_do_not_float_on_a_landings_one_frame_heights(view):
    """The project's run (cmu_35_24) at 24 fps as bench/motion.py sees it (seeds 0-2): its stances are 2-3 held frames
    and its clip too short to measure resting heights, so every hold rests the foot at one frame's heights, a landing's
    still coming down. Pooled over the held frames, the avatar's feet float at most 1 cm over where the true feet stand
    (95th percentile; 1.7-1.9 cm before, the ankle put 10 cm up over a true 7-9 cm; 0.0 now) and sink no further than
    before (2.3-2.4 cm, the world floor standing 1.5-3 cm over the true level on these seeds)."""
    motion = corpus.resample(corpus.project_motions(["cmu_35_24"])[0], 24.0)
    truth = corpus.true_contacts(motion)
    floated, sunk = [], []
    for seed in range(3):
        run = motion_bench.run_clip(motion, view, seed, truth)
        held = run.decided & run.valid[:, None] & np.isfinite(run.feet[..., 1]).all(axis=2)
        assert held.sum() >= 5
        floated.append(motion_bench.floating(run.feet, run.rest, run.true_heights)[held])
        sunk.append(motion_bench.sinking(run.feet, run.rest, run.true_heights)[held])
    assert np.percentile(np.concatenate(floated), 95) < 0.01
    assert np.percentile(np.concatenate(sunk), 95) < 0.026
