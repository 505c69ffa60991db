"""The world floor's level where its band holds low swings as well as planted feet (issue 51). A walk's soles within
`FloorGates.level_band` of the floor are its planted feet and, 0-2.5 cm over them, feet swinging low or pitched on a
landing; their mean stands over the planted feet. Planted feet stay put between depth frames and the swings do not:
the level is the median of the band's feet that move slower than `FloorGates.still_speed`."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.floor import floor_level, foot_speeds
from tests.test_world_floor_sparse import DEPTH_PERIOD, _clip, _depth_frames, _level


@pytest.mark.parametrize("name", ["cmu_16_18", "cmu_131_03", "cmu_08_11"])
def test_a_walks_floor_stands_where_its_flat_feet_do_with_its_feet_speeds(name):
    """The project's turning walk and stylised walk (their soles' mean 0.5-0.7 cm over the flat feet) and the walk
    08_11 (0.6 cm under them) as the bench's warm-up takes their true joints (30 depth frames, 7 mm of noise, 8
    draws): with the feet's speeds the level is within 3 mm of the flat feet (median; every draw within 7 mm)."""
    joints, flat = _clip(name)
    frames = _depth_frames(joints)
    still = np.array([_level(frames, seed) for seed in range(8)]) - flat
    plain = np.array([_level(frames, seed, speeds=False) for seed in range(8)]) - flat
    assert abs(np.median(still)) < 0.003, still
    assert np.all(np.abs(still) < 0.007), still
    assert abs(np.median(plain)) > 0.004, plain  # the band's mean without the speeds: 4-7 mm off


def test_a_dense_band_with_low_swings_is_where_its_still_feet_stand():
    """60 soles: 36 of planted feet at 0 (5 mm of noise), still; 12 swinging 1-2.5 cm over them at 2 m/s; 12 higher.
    The level is where the planted feet stand; without the speeds the band's mean stands over them."""
    times = np.arange(30) * DEPTH_PERIOD
    for seed in range(8):
        rng = np.random.default_rng(seed)
        heights = np.concatenate([rng.normal(0.0, 0.005, 36), rng.uniform(0.01, 0.025, 12), rng.uniform(0.05, 0.4, 12)])
        order = rng.permutation(60)
        heights = heights[order].reshape(30, 2)
        moving = (order >= 36).reshape(30, 2)
        centres = np.zeros((30, 2, 3))
        centres[..., 0] = np.where(moving, rng.uniform(-1.0, 1.0, (30, 2)), 0.0)  # swings: 0.3 m between frames
        centres[..., 0] += np.array([0.0, 0.3])
        centres[..., 1] = heights + 0.03
        speeds = foot_speeds(centres, times, [1] * 30).ravel()
        planted = np.median(heights.ravel()[~moving.ravel()])
        assert abs(floor_level(heights.ravel(), speeds=speeds) - planted) < 0.002
        assert floor_level(heights.ravel()) - planted > 0.002  # the band's mean: over the planted feet
