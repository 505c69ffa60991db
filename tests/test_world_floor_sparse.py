"""The world floor's level where few soles stand near it (issue 51). On a run most soles near the floor are feet in the
air just over it (low swings, landings, take-offs), and its planted feet are the band's lowest; a sparse band of
planted feet alone (a person getting up from a chair, a dance on one foot) is where those feet stand. What tells the
two apart is how the band's feet move between depth frames: a run's at metres per second, planted feet alone hardly."""

from __future__ import annotations

import numpy as np
import pytest

from bench import corpus
from realtime.rig.floor import floor_level, foot_centres, foot_indices, foot_speeds
from realtime.rig.world import WorldAnchor
from tests.mocap_synthetic import NAMES

SOLES = [NAMES.index(f"{side}_{point}") for side in ("left", "right") for point in ("heel", "big_toe", "small_toe")]
FEET = foot_indices(NAMES)
DEPTH_PERIOD = 1 / 6  # s: the depth frames' period as bench/motion.py plays them
SAMPLES = 30  # the world floor's settled samples (`WorldAnchor`'s min_samples)


def _clip(name: str) -> tuple[np.ndarray, float]:
    """The project clip's (T, K, 3) joints (y up, m) and where its truly flat feet stand (the median of their lowest
    heel or toe: heel and toes down)."""
    motion = corpus.load_motion(corpus.PROJECT_FOLDER / f"{name}.bvh", corpus.PROJECT.get(name), False)
    truth = corpus.true_contacts(motion).at(motion.times)
    lowest = motion.joints[:, SOLES, 1].reshape(len(motion.joints), 2, 3).min(axis=2)
    return motion.joints, float(np.median(lowest[truth.heel & truth.toes]))


def _depth_frames(joints: np.ndarray, samples: int = SAMPLES, fps: float = 30.0) -> np.ndarray:
    """`samples` depth frames' joints, one every DEPTH_PERIOD, the clip played forward and back (the bench's warm-up)."""
    count, every = len(joints), int(round(DEPTH_PERIOD * fps))
    index = np.arange(samples) * every % (2 * count - 2)
    return joints[np.where(index < count, index, 2 * count - 2 - index)]


def _level(frames: np.ndarray, seed: int, speeds: bool = True) -> float:
    """floor_level of the frames' soles measured with 7 mm of noise (on every joint), with the feet's speeds between
    the frames or without."""
    measured = frames + np.random.default_rng(seed).normal(0, 0.007, frames.shape)
    soles = measured[:, SOLES, 1].reshape(len(frames), 2, 3).min(axis=2).ravel()
    if not speeds:
        return floor_level(soles)
    centres = np.array([foot_centres(points, FEET) for points in measured])
    return floor_level(soles, speeds=foot_speeds(centres, np.arange(len(frames)) * DEPTH_PERIOD, [1] * len(frames)).ravel())


def test_a_runs_floor_stands_where_its_planted_feet_do():
    """The tuning run (cmu_35_24): 6 of its 76 soles flat; the feet near the floor move at 1.2-1.7 m/s (their median)."""
    joints, flat = _clip("cmu_35_24")
    frames = _depth_frames(joints)
    levels = np.array([_level(frames, seed) for seed in range(8)])
    assert np.abs(np.median(levels) - flat) < 0.006, levels - flat
    assert np.all(np.abs(levels - flat) < 0.015), levels - flat
    heights = np.array([_level(frames, seed, speeds=False) for seed in range(8)])
    assert np.median(heights - flat) > 0.01  # the level of the soles alone: among the flights (1.2-1.8 cm over)


@pytest.mark.parametrize("name", ["cmu_07_04", "cmu_07_06"])
def test_a_walks_floor_stands_where_its_flat_feet_do_its_feet_moving_or_not(name):
    joints, flat = _clip(name)
    frames = _depth_frames(joints)
    for seed in range(8):
        level = _level(frames, seed)
        assert abs(level - flat) < 0.006, level - flat
        plain = _level(frames, seed, speeds=False)  # a walk's level holds most soles: not a run's, its speeds aside
        assert abs(plain - flat) < 0.006, plain - flat


def _standing_then_lifted(pace: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """30 samples of two feet: both planted at height 0 on the first 6 (1 cm of noise; a fifth of the soles), then
    in the air 3-40 cm up; the feet's centres move `pace` m/s along the floor all along (0: still where planted)."""
    rng = np.random.default_rng(seed)
    heights = np.concatenate([rng.normal(0.0, 0.01, (6, 2)), rng.uniform(0.03, 0.4, (24, 2))])
    times = np.arange(SAMPLES) * DEPTH_PERIOD
    centres = np.zeros((SAMPLES, 2, 3))
    centres[..., 0] = pace * times[:, None] + np.array([0.0, 0.3])
    centres[..., 1] = heights + 0.03
    centres[..., 2] = 4.0 + rng.normal(0.0, 0.01, (SAMPLES, 2))  # along the line of sight: the depth's noise
    return heights.ravel(), foot_speeds(centres, times, [1] * SAMPLES).ravel(), times


def test_a_sparse_band_of_still_planted_feet_is_where_they_stand_and_one_moving_at_a_runs_pace_is_its_lowest():
    lower = []
    for seed in range(8):
        heights, still, _ = _standing_then_lifted(0.0, seed)
        assert abs(floor_level(heights, speeds=still) - np.median(heights[:12])) < 0.005
        assert abs(floor_level(heights, speeds=still) - floor_level(heights)) < 0.005  # the still feet's median
        _, running, _ = _standing_then_lifted(3.0, seed)
        lower.append(floor_level(heights) - floor_level(heights, speeds=running))
    assert min(lower) > 0.003 and np.median(lower) > 0.006, lower  # under the band's middle (0.4-1.0 cm)


def test_foot_speeds_are_each_feet_mean_speed_to_the_same_persons_samples_before_and_after():
    centres = np.zeros((5, 2, 3))
    centres[:, 0, 0] = [0.0, 5.0, 0.1, 5.2, 0.3]  # person 1's left foot at 0, 0.1, 0.3 m; person 2's at 5, 5.2
    times = [0.0, 0.0, 0.5, 0.5, 1.0]
    speeds = foot_speeds(centres, times, [1, 2, 1, 2, 1])
    assert speeds[:, 0] == pytest.approx([0.2, 0.4, 0.3, 0.4, 0.4])
    assert speeds[:, 1] == pytest.approx(np.zeros(5))
    assert np.isnan(foot_speeds(centres, [None] * 5, [1] * 5)).all()  # no times: unknown


def test_the_world_anchor_levels_a_runs_floor_with_its_feet_speeds():
    """WorldAnchor fed the run's depth frames (7 mm of noise, camera = odometry, y down; 10 before the scale settles,
    then 30) with their times: its floor's level is where the flat feet stand; without times as before, among the
    flights."""
    joints, flat = _clip("cmu_35_24")
    frames = _depth_frames(joints, 10 + SAMPLES)
    camera = frames * np.array([1.0, -1.0, -1.0]) + np.array([0.0, 1.5, 6.0])  # y down, in front of the camera
    gaps = {}
    for timed in (True, False):
        levels = []
        for seed in range(4):
            anchor = WorldAnchor(NAMES, min_samples=SAMPLES)
            measured = camera + np.random.default_rng(seed).normal(0, 0.007, camera.shape)
            for k, points in enumerate(measured):
                anchor.add(np.eye(4), points, np.array([0.0, -1.0, 0.0]), settled=k >= 10,
                           time=k * DEPTH_PERIOD if timed else None, track=1)
            assert anchor.final
            up = anchor.frame.world_from_odometry[1]
            levels.append(up[:3] @ np.array([0.0, 1.5 - flat, 6.0]) + up[3])  # the flat soles over the floor
        gaps[timed] = np.median(levels)
    assert abs(gaps[True]) < 0.006, gaps
    assert gaps[False] < -0.01, gaps  # the floor over the flat soles
