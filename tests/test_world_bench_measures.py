"""bench/world.py's two root measures: the issue's (the first frame aligned) and WHAM's and GVHMR's RTE (the
whole track rigidly aligned, no scale), on tracks whose errors are known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bench.world import aligned_error, root_translation_error, scene_up
from realtime.rig.floor_scene import ScenePlanes
from synthetic.world_scene import SceneRenderer, scene_truth, walkers


@pytest.fixture
def walk() -> np.ndarray:
    """8 m walked along a gentle curve over 300 frames."""
    s = np.linspace(0.0, 1.0, 300)
    return np.stack([8.0 * s, np.full_like(s, 0.9), 1.5 * np.sin(np.pi * s)], axis=1)


def test_a_track_turned_and_moved_has_no_root_translation_error(walk):
    moved = Rotation.from_euler("y", 25, degrees=True).apply(walk) + [3.0, 0.2, -1.0]
    assert root_translation_error(moved, walk) < 1e-9
    assert aligned_error(moved, walk) > 0.1  # the first frame aligned keeps the turn


def test_a_first_frame_off_costs_the_first_frame_measure_not_the_rte(walk):
    """What frame 0's own pointmap scale does to the roots: that frame 20 cm out, the rest right."""
    first_off = walk.copy()
    first_off[0] += [0.0, 0.0, 0.2]
    travelled = np.linalg.norm(np.diff(walk, axis=0), axis=1).sum()
    assert aligned_error(first_off, walk) == pytest.approx(0.2 * 299 / 300 / travelled, rel=1e-6)
    assert root_translation_error(first_off, walk) < 0.02 * aligned_error(first_off, walk)


def test_a_scale_error_is_not_aligned_away(walk):
    """No scale in the alignment: a track 2 % long keeps an error of its own."""
    rte = root_translation_error(1.02 * walk, walk)
    assert 0.002 < rte < 0.02
    assert rte < aligned_error(1.02 * walk, walk)


def test_frames_without_a_root_are_left_out(walk):
    gaps = walk.copy()
    gaps[100:120] = np.nan
    assert root_translation_error(gaps, walk) < 1e-9


def test_the_bench_chain_takes_the_world_up_from_the_background_as_the_ground_stage_does():
    """bench/world.py's chain hands the world anchor the background's floor (`scene_up`, what the ground stage puts in
    `Frame.floor_up`): a panning camera's frames, each normal turned through the camera's rotation, give the true up
    in the current camera to a tenth of a degree (the feet's own tilt read 0.4-3.1 degrees off on the stylised clips)."""

    truth = scene_truth(walkers(2, 30, 0), "pan", seed=0)
    renderer, rng, scene = SceneRenderer(0), np.random.default_rng(0), ScenePlanes()
    odometry = np.linalg.inv(truth.world_from_camera[0]) @ truth.world_from_camera
    ups = []
    for t in range(0, 30, 5):
        seen = renderer.observe(truth, t, rng, depth_frame=True)
        up = scene_up(scene, seen, odometry[t][:3, :3])
        if up is not None:
            true_up = truth.world_from_camera[t][:3, :3].T @ np.array([0.0, 1.0, 0.0])  # world y in this camera
            ups.append(np.degrees(np.arccos(np.clip(up @ true_up, -1.0, 1.0))))
    assert len(ups) >= 3  # it speaks once three backgrounds showed the floor
    assert max(ups) < 0.2
