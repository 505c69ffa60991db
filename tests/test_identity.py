"""Identity association on synthetic scenes with ground truth."""

import numpy as np
import pytest

from synthetic.tracking import (
    body_template,
    count_errors,
    crossing_scene,
    leave_and_return_scene,
    occlusion_scene,
    person_box,
    person_keypoints,
    run_tracker,
)
from trackers.identity import TENTATIVE, IdentityTracker, box_iou, keypoint_similarity


@pytest.mark.parametrize("false_rate", [0.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_crossing_people_keep_their_ids(seed, false_rate):
    frames = crossing_scene(seed=seed, false_rate=false_rate)
    ids = run_tracker(IdentityTracker(), frames)
    errors = count_errors(frames, ids)
    assert errors.id_switches == 0
    assert errors.false_positives == 0  # one-frame false detections never get an ID
    assert errors.misses == 2 * 2  # each person waits confirm_hits - 1 = 2 frames for its ID
    assert {int(i) for frame_ids in ids for i in frame_ids if i >= 0} == {0, 1}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_occluded_person_keeps_its_id(seed):
    frames = occlusion_scene(seed=seed)
    hidden = [i for i, f in enumerate(frames) if len(f.truth) == 1]
    assert 4 <= len(hidden) <= 15  # the farther person really disappears for a few frames
    assert count_errors(frames, run_tracker(IdentityTracker(), frames)).id_switches == 0
    # Without coasting and re-identification the returning person gets a new ID.
    forgetful = IdentityTracker(max_misses=0, reid_seconds=0.05)
    assert count_errors(frames, run_tracker(forgetful, frames)).id_switches >= 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_person_leaving_and_returning_is_reidentified(seed):
    frames = leave_and_return_scene(seed=seed)
    absent = [i for i, f in enumerate(frames) if 0 not in f.truth.tolist()]
    assert 0.6 <= len(absent) / 25 <= 1.5  # out of view for about a second
    ids = run_tracker(IdentityTracker(), frames)
    errors = count_errors(frames, ids)
    assert errors.id_switches == 0 and errors.false_positives == 0
    assert count_errors(frames, run_tracker(IdentityTracker(reid_seconds=0.5), frames)).id_switches >= 1


def test_birth_after_k_hits_and_death_after_the_reid_window():
    tracker = IdentityTracker(confirm_hits=3, max_misses=2, reid_seconds=0.5)
    box = np.array([[100, 100, 160, 250]], np.float32)
    got = [int(tracker.update(box, None, None, t / 25)[0]) for t in range(5)]
    assert got == [TENTATIVE, TENTATIVE, 0, 0, 0]
    # A blip seen once is never confirmed.
    assert tracker.update(np.array([[400, 50, 430, 120]], np.float32), None, None, 5 / 25).tolist() == [TENTATIVE]
    # Back after 0.4 s (lost, within the window): same ID straight away.
    assert tracker.update(box, None, None, 15 / 25).tolist() == [0]
    # Back after 2 s: the track died; a new one is born with a new ID, never 0 again.
    later = [int(tracker.update(box, None, None, (65 + t) / 25)[0]) for t in range(3)]
    assert later == [TENTATIVE, TENTATIVE, 1]
    assert tracker.update(np.zeros((0, 4)), None, None, 70 / 25).shape == (0,)


def test_keypoints_tell_apart_people_with_the_same_box():
    # Two people share one box (e.g. one behind the other); only their poses differ.
    rng = np.random.default_rng(0)
    box = person_box(320, 240, 300)
    poses = [person_keypoints(box, body_template(seed=s)) for s in (1, 2)]
    tracker = IdentityTracker(confirm_hits=1, iou_weight=0.3)
    first = None
    for t in range(30):
        order = rng.permutation(2)
        kps = np.stack([poses[o] + rng.normal(0, 2, poses[o].shape) for o in order])
        scores = np.ones(kps.shape[:2])
        kps[:, :20] = np.nan  # unknown keypoints are ignored, not taken as (0, 0)
        ids = tracker.update(np.stack([box, box]), kps, scores, t / 25)
        by_pose = dict(zip(order.tolist(), ids.tolist()))
        first = first or by_pose
        assert by_pose == first


def test_oks_and_iou_helpers():
    a = np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float)
    iou = box_iou(a, np.array([[0, 0, 10, 10], [5, 0, 15, 10]], float))
    np.testing.assert_allclose(iou, [[1.0, 50 / 150], [0.0, 0.0]])
    pose = person_keypoints(person_box(100, 100, 200), body_template())[None]
    visible = np.ones((1, 308), bool)
    sigmas = np.full(308, 0.05)
    same, comparable = keypoint_similarity(pose, visible, pose, visible, np.array([8000.0]), sigmas)
    moved, _ = keypoint_similarity(pose, visible, pose + 10, visible, np.array([8000.0]), sigmas)
    assert same[0, 0] == pytest.approx(1.0) and comparable[0, 0]
    assert 0 < moved[0, 0] < 0.9
    _, none = keypoint_similarity(pose, visible, pose, np.zeros((1, 308), bool), np.array([8000.0]), sigmas)
    assert not none[0, 0]
