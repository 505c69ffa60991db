"""The shipped CMU clips (tests/data/mocap): they load into the keypoint layout with a floor at y = 0
and plausible bodies, and run through bench/rig.py's grounded-body evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from tests.mocap_clips import CLIPS, NAMES, clip_walk, load_clip, read_bvh


@pytest.mark.parametrize("name", CLIPS)
def test_a_clip_loads_as_a_body_on_the_floor(name):
    clip = load_clip(name)
    assert clip.fps == pytest.approx(30.0, rel=1e-3) and len(clip.joints) >= 240
    j = {n: clip.joints[:, NAMES.index(n)]
         for n in ("left_hip", "right_hip", "left_knee", "left_ankle", "left_heel", "neck", "left_eye")}
    thigh = np.linalg.norm(j["left_knee"] - j["left_hip"], axis=1)
    assert np.ptp(thigh) < 1e-6 and 0.35 < thigh[0] < 0.5  # rigid bones, adult lengths
    hip_width = np.linalg.norm(j["left_hip"] - j["right_hip"], axis=1)
    assert 0.1 < hip_width.mean() < 0.2
    toe = clip.joints[:, NAMES.index("left_big_toe"), 1]
    assert abs(np.percentile(np.minimum(j["left_heel"][:, 1], toe), 1)) < 0.05  # the foot reaches the floor
    assert (j["neck"][:, 1] > j["left_hip"][:, 1]).all() and (j["left_eye"][:, 1] > j["neck"][:, 1]).all()
    assert 0.05 < clip.contacts.mean() < 0.9  # some, not all, frames planted
    hips = (j["left_hip"] + j["right_hip"]) / 2
    assert np.linalg.norm(np.diff(hips[:, [0, 2]], axis=0), axis=1).sum() > 1.5  # they travel


def test_the_reader_keeps_the_hierarchy():
    bvh = read_bvh(__import__("tests.mocap_clips", fromlist=["FOLDER"]).FOLDER / "cmu_131_01.bvh")
    assert bvh.names[0] == "Hips" and bvh.parents[0] == -1 and len(bvh.names) == 31
    assert bvh.motion.shape == (249, sum(len(c) for c in bvh.channels))


def test_real_motion_runs_through_the_grounded_body_bench():
    from bench import rig as bench

    clip = load_clip("cmu_131_03")
    result = bench.evaluate(seed=0, truth=clip_walk(clip, 300))
    # measured (bench/RESULTS.md, "World frame"): floor 0.66 deg at the end; recall 0.93; slide 11.5 -> 7.2 mm/frame
    assert result["floor_up_error_end_deg"] < 1.5
    assert result["contact_recall"] > 0.8
    assert result["slide_after_mm_per_frame"] < 0.8 * result["slide_before_mm_per_frame"]


def test_a_clip_too_short_for_the_floor_measures_nothing_rather_than_failing():
    """CMU 35_24 alone (1.2 s, 8 depth frames, no warm-up) never gets the floor's first fit: the bench reports the
    floor and slide measures as unknown (NaN) and holds no foot, where it used to raise."""
    from bench import rig as bench

    result = bench.evaluate(seed=0, truth=clip_walk(load_clip("cmu_35_24"), 300))
    assert np.isnan(result["floor_up_error_end_deg"]) and np.isnan(result["slide_after_mm_per_frame"])
    assert result["held_foot_up_cm"] == 0.0 and result["contact_precision"] == 0.0
    assert np.isfinite(result["joint_error_lifted_mm"])  # the lifted body is measured all the same
