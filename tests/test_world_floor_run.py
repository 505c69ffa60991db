"""The world floor's level on a run (issue 51): most soles on a run's depth frames are feet in the air, and the lowest
of them (low swings, landings, take-offs) stand 0-4 cm over the planted ones, as many as those near the floor: the
level is the planted feet's, not the middle of the two. A walk's level, its soles mostly planted, stays where it was."""

from __future__ import annotations

import numpy as np
import pytest

from bench import corpus
from realtime.rig.floor import floor_level
from tests.mocap_synthetic import NAMES

SOLES = [NAMES.index(f"{side}_{point}") for side in ("left", "right") for point in ("heel", "big_toe", "small_toe")]


def _soles(name: str) -> tuple[np.ndarray, float]:
    """The clip's (T, 2) lowest heel or toe height per foot (y up, m) and where its truly flat feet stand (their
    median: heel and toes down)."""
    motion = corpus.load_motion(corpus.PROJECT_FOLDER / f"{name}.bvh", corpus.PROJECT.get(name), False)
    truth = corpus.true_contacts(motion).at(motion.times)
    lowest = motion.joints[:, SOLES, 1].reshape(len(motion.joints), 2, 3).min(axis=2)
    return lowest, float(np.median(lowest[truth.heel & truth.toes]))


def _levels(lowest: np.ndarray, seeds: int = 8) -> np.ndarray:
    """floor_level of 30 depth frames' soles (every 5th frame, the clip played forward and back) measured with 7 mm
    of noise, one level per noise draw."""
    count = len(lowest)
    index = np.arange(30) * 5 % (2 * count - 2)
    index = np.where(index < count, index, 2 * count - 2 - index)
    soles = lowest[index].ravel()
    return np.array([floor_level(soles + np.random.default_rng(seed).normal(0, 0.007, soles.shape))
                     for seed in range(seeds)])


def test_a_runs_floor_stands_where_its_planted_feet_do():
    lowest, flat = _soles("cmu_35_24")
    assert np.mean(np.abs(lowest - flat) < 0.025) < 0.45  # most soles in the air: 38 frames, 6 of 76 soles flat
    levels = _levels(lowest)
    assert np.abs(np.median(levels) - flat) < 0.005, levels - flat
    assert np.all(np.abs(levels - flat) < 0.015), levels - flat  # main: 1.2-1.8 cm over, median 1.7


@pytest.mark.parametrize("name", ["cmu_07_04", "cmu_07_06"])
def test_a_walks_floor_stands_where_its_flat_feet_do(name):
    lowest, flat = _soles(name)
    levels = _levels(lowest)
    assert np.all(np.abs(levels - flat) < 0.006), levels - flat
