"""A held foot's toes where its stance rests them (issue 51): the project's stylised walk (cmu_131_03, subject 131)
rests its toes 1 cm up on its first stances and 3-5 cm up on later ones, its heel down. The avatar's held foot
(`realtime.rig.lock.FootPin`) rested them flat at its measured heights, centimetres under the true toes, unless the
foot stood toes-up by a gate's 4 cm; a still foot's toes now rest as far over its ankle as the latest look at it
shows them, never under its measured heights."""

from __future__ import annotations

import numpy as np

from bench import corpus
from bench import motion as motion_bench


def test_a_stylised_walks_held_toes_rest_where_its_stances_hold_them_not_flat_under_them():
    """From the front at 30 fps as bench/motion.py sees it (seeds 0-2), pooled over the frames a foot is held: the
    avatar's feet at most 2.5 cm under where the true feet stand (95th percentile; 2.7-3.1 cm before, all of it the
    toes; 2.0-2.3 now), and no higher over them than 0.5 cm (0.0 before and now: the ankle stays where it rests)."""
    motion = corpus.resample(corpus.project_motions(["cmu_131_03"])[0], 30.0)
    truth = corpus.true_contacts(motion)
    sunk, floated = [], []
    for seed in range(3):
        run = motion_bench.run_clip(motion, "front", seed, truth)
        held = run.decided & run.valid[:, None] & np.isfinite(run.feet[..., 1]).all(axis=2)
        assert held.sum() > 200
        sunk.append(motion_bench.sinking(run.feet, run.rest, run.true_heights)[held])
        floated.append(motion_bench.floating(run.feet, run.rest, run.true_heights)[held])
    assert np.percentile(np.concatenate(sunk), 95) < 0.025
    assert np.percentile(np.concatenate(floated), 95) < 0.005
