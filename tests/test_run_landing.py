"""A run's landing and the floor's level (issue 51): a hold that begins with the solve's foot above where it rests
comes down over its height at `PinGates.settle_speed`, counted from the frame before (a run's stance, 3-6 frames, is
about as long as the settle was), and `floor_level` passes over a level too few of the soles stand at."""

from __future__ import annotations

import numpy as np
import pytest

from bench import corpus
from bench import motion as motion_bench
from realtime.rig.floor import floor_level


def test_a_few_soles_measured_low_are_not_the_floors_level():
    rng = np.random.default_rng(1)
    low = rng.normal(-0.07, 0.005, 7)  # 7 of 60 soles 6-8 cm under the rest (frames played twice)
    planted = rng.normal(0.0, 0.008, 12)  # a run's depth frames: a fifth planted
    flying = rng.uniform(0.03, 0.3, 41)
    assert abs(floor_level(np.concatenate([low, planted, flying]))) < 0.006  # the share-less search: -7 cm
    assert abs(floor_level(np.concatenate([planted, flying]))) < 0.006
    assert abs(floor_level(np.concatenate([low, rng.normal(-0.07, 0.005, 5), planted, flying])) + 0.07) < 0.006
    assert abs(floor_level(np.array([0.5])) - 0.5) < 1e-9  # one height: its own level


@pytest.mark.parametrize("view", ["front", "45"])
def test_a_runs_held_feet_land_on_the_floor_without_a_jump(view):
    """The project's run (cmu_35_24) at 24 fps, seed 0, as bench/motion.py runs it: the held feet's height over where
    they rest (95th percentile of held frames) under 3 cm (main: 5.4 and 3.8 cm, a hold's first frames at the solve's
    foot), and a landing comes down no faster than the clip's own swinging feet do."""
    motion = corpus.resample(corpus.project_motions(["cmu_35_24"])[0], 24.0)
    truth = corpus.true_contacts(motion)
    run = motion_bench.run_clip(motion, view, 0, truth)
    held = run.decided & run.valid[:, None] & np.isfinite(run.feet[..., 1]).all(axis=2)
    assert held.sum() >= 6  # 7-11 over seeds 0-3 and both views: a 24 fps run's stances are a few frames each
    assert np.percentile(np.maximum(motion_bench.elevations(run.feet, run.rest)[held], 0), 95) < 0.03  # 2.0 cm
    speed = -np.diff(run.feet[..., 1], axis=0).min(axis=2) / np.diff(run.times)[:, None]  # down, m/s
    landing = held[1:] & ~held[:-1]
    free = ~held[1:] & ~held[:-1] & np.isfinite(speed)
    assert landing.any()
    assert speed[landing].max() < speed[free].max()
