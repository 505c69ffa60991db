"""Foot contacts, floor and foot locking on real everyday walking: CMU 07_04 and 07_06 (tests/data/mocap)
through bench/rig.py's evaluation (a camera 1.5 m up tilted 15 degrees, noisy 2D every frame and noisy, scale-
jittered 3D every 5th, the ground stage, the live filter and FootLock), four seeds each."""

from __future__ import annotations

import numpy as np
import pytest

from bench import rig as bench
from tests.mocap_clips import NAMES, WALKS, load_clip

SEEDS = (0, 1, 2, 3)
# the goals on real motion, static camera
PRECISION, RECALL, SLIDE_MM, FLOOR_DEG = 0.90, 0.90, 2.0, 1.0


@pytest.fixture(scope="module")
def walk():
    return load_clip(WALKS[0])


def _mean(results, key):
    return float(np.mean([r[key] for r in results]))


def test_the_walk_is_level_and_its_heels_plant(walk):
    assert walk.fps == pytest.approx(30.0, rel=1e-3) and len(walk.joints) == 113
    for side in (0, 1):
        heel = walk.joints[:, NAMES.index(("left_heel", "right_heel")[side])]
        planted = heel[walk.contacts[:, side]]
        assert walk.contacts[:, side].mean() > 0.3  # about half of each foot's frames
        assert np.abs(planted[:, 1]).max() < 0.035  # on the floor (y = 0) all along the 3.5 m walk
        slope = np.polyfit(planted[:, 2], planted[:, 1], 1)[0]
        assert abs(np.degrees(np.arctan(slope))) < 0.3  # the capture's 0.8 degree tilt levelled out
    hips = walk.joints[:, [NAMES.index("left_hip"), NAMES.index("right_hip")]].mean(axis=1)
    assert np.linalg.norm(hips[-1, [0, 2]] - hips[0, [0, 2]]) > 3.0


@pytest.mark.parametrize("heading", [45.0, 90.0])
def test_contacts_floor_and_locking_meet_the_goals_on_a_real_walk(walk, heading):
    results = bench.evaluate_walk(walk, heading, SEEDS)
    # measured (bench/RESULTS.md, "Contacts on real walks"): 45 deg 0.91 / 0.97 / 1.66 mm / 0.90 deg,
    # 90 deg 0.91 / 0.96 / 1.21 mm / 0.91 deg (means over these seeds)
    assert _mean(results, "contact_precision") >= PRECISION
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG
    assert _mean(results, "slide_after_mm_per_frame") < 0.1 * _mean(results, "slide_before_mm_per_frame")


def test_walking_straight_away_from_the_camera_is_the_hard_case(walk):
    """As captured the walk heads straight away from the camera: between depth frames the lifted feet
    move along the line of sight with the body, so a late swing descending along it looks planted."""
    results = bench.evaluate_walk(walk, 0.0, SEEDS)
    # measured: precision 0.76, recall 0.94, slide 3.15 mm/frame, floor 1.00 deg
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "contact_precision") >= 0.7
    assert _mean(results, "slide_after_mm_per_frame") <= 4.5
    assert _mean(results, "floor_up_error_end_deg") <= 1.1


def test_a_second_walk_not_tuned_on_holds_recall_but_misses_the_goals():
    """CMU 07_06 (same subject, added after the tuning on 07_04): recall holds, precision and slide do
    not reach the goals. Its right heel rises slowly from initial contact (8-frame heel stances against
    13-15 on the left) and the detector releases it about 4 frames after the truth's heel-off."""
    results = bench.evaluate_walk(load_clip(WALKS[1]), 45.0, SEEDS)
    # measured: precision 0.83, recall 0.95, slide 3.9 mm/frame, floor 1.34 deg
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "contact_precision") >= 0.78
    assert _mean(results, "slide_after_mm_per_frame") <= 4.5
    assert _mean(results, "floor_up_error_end_deg") <= 1.6
