"""The detect stage's box policy: detector every N frames, pose-derived boxes, seg and frame modes."""

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from realtime.detect import BoxFinder, boxes_from_label_map, make_box_finder
from realtime.errors import UserError
from realtime.frames import Person
from realtime.models.rtmdet import load_detector
from synthetic.tracking import body_template, person_box, person_keypoints
from trackers.identity import box_iou

IMAGE = np.zeros((480, 640, 3), np.uint8)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread for the real detector forward (see tests/test_rtmdet.py)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class FakeDetector:
    """Returns fixed boxes and remembers on which calls it ran."""

    def __init__(self, boxes, scores):
        self.boxes, self.scores, self.calls = boxes, scores, 0

    def __call__(self, image, *, rgb=False):
        assert rgb and image.shape == IMAGE.shape
        self.calls += 1
        return np.asarray(self.boxes, np.float32), np.asarray(self.scores, np.float32)


def _coverage(box, truth):
    """Fraction of the true box inside `box`."""
    w = max(0.0, min(box[2], truth[2]) - max(box[0], truth[0]))
    h = max(0.0, min(box[3], truth[3]) - max(box[1], truth[1]))
    return w * h / ((truth[2] - truth[0]) * (truth[3] - truth[1]))


def _person(box, keypoints=None, scores=None, box_score=0.9):
    return Person(box=np.asarray(box, np.float32), box_score=box_score, keypoints=keypoints, keypoint_scores=scores)


def test_detect_every_n_follows_a_moving_person_between_detections():
    template = body_template()
    rng = np.random.default_rng(0)

    def truth(i):  # walks right at 5 px/frame and a little down, growing slightly
        return person_box(100 + 5 * i, 220 + i, 250 + i)

    detector = FakeDetector([], [])
    finder = BoxFinder("detector", detector, detect_every=5)
    previous, sources, ious, covered = (), [], [], []
    for i in range(40):
        detector.boxes, detector.scores = [truth(i)], [0.9]
        boxes, scores, source = finder(IMAGE, i, previous)
        sources.append(source)
        ious.append(box_iou(boxes.astype(float), truth(i)[None])[0, 0])
        covered.append(_coverage(boxes[0], truth(i)))
        # The pose model finds the person's keypoints inside this frame's box (noisy, some unsure).
        kp = person_keypoints(truth(i), template) + rng.normal(0, 2.0, (308, 2))
        kp_scores = rng.uniform(0.4, 1.0, 308)
        kp_scores[rng.random(308) < 0.2] = 0.1
        previous = (_person(boxes[0], kp.astype(np.float32), kp_scores.astype(np.float32), float(scores[0])),)
    assert detector.calls == 8
    assert sources == (["detector"] + ["pose"] * 4) * 8
    # Pose boxes lag one frame and are padded by 1.25 around the keypoints, yet stay on the person.
    assert min(ious) > 0.7 and min(covered) > 0.97
    assert finder.sources == {"detector": 8, "pose": 32}


def test_detector_runs_again_when_tracking_confidence_drops():
    detector = FakeDetector([[10, 10, 110, 210]], [0.8])
    finder = BoxFinder("detector", detector, detect_every=100)
    kp = person_keypoints(np.array([10, 10, 110, 210], float), body_template()).astype(np.float32)
    good = np.full(308, 0.9, np.float32)
    finder(IMAGE, 0)
    assert finder(IMAGE, 1, [_person([10, 10, 110, 210], kp, good)])[2] == "pose"
    # Most keypoints unsure: the person is lost, detect again.
    weak = good.copy()
    weak[:280] = 0.1
    assert finder(IMAGE, 2, [_person([10, 10, 110, 210], kp, weak)])[2] == "detector"
    # The number of people differs from the last detection.
    two = [_person([10, 10, 110, 210], kp, good), _person([300, 10, 400, 210], kp + [290, 0], good)]
    assert finder(IMAGE, 3, two)[2] == "detector"
    # Two people followed onto the same spot.
    detector.boxes, detector.scores = [[10, 10, 110, 210], [300, 10, 400, 210]], [0.8, 0.7]
    finder(IMAGE, 4)
    assert finder(IMAGE, 5, two)[2] == "pose"
    assert finder(IMAGE, 6, [two[0], _person([12, 10, 112, 210], kp + [2, 0], good)])[2] == "detector"
    # No keypoints yet (infer did not run): detect.
    assert finder(IMAGE, 7, [_person([10, 10, 110, 210]), _person([300, 10, 400, 210])])[2] == "detector"
    assert detector.calls == 6


def test_detector_finding_nobody_gives_the_whole_frame():
    finder = BoxFinder("detector", FakeDetector(np.zeros((0, 4)), np.zeros(0)))
    boxes, scores, source = finder(IMAGE, 0)
    assert source == "frame" and boxes.tolist() == [[0, 0, 639, 479]] and scores.tolist() == [1.0]


def test_max_people_keeps_the_most_confident():
    boxes = [[0, 0, 50, 100], [100, 0, 150, 100], [200, 0, 260, 120], [300, 0, 350, 100]]
    finder = BoxFinder("detector", FakeDetector(boxes, [0.5, 0.9, 0.4, 0.7]), max_people=2)
    got, scores, _ = finder(IMAGE, 0)
    assert got.tolist() == [boxes[1], boxes[3]] and scores.tolist() == pytest.approx([0.9, 0.7])


def test_seg_mode_boxes_from_connected_components():
    seg = np.zeros((240, 320), np.uint8)  # half the image resolution
    seg[20:200, 30:90] = 3  # one person (two classes, touching: one blob)
    seg[100:200, 40:80] = 7
    seg[50:230, 200:270] = 12  # another person
    seg[5:7, 300:302] = 1  # a 4-pixel speck, ignored
    finder = BoxFinder("seg", max_people=5)
    boxes, scores, source = finder(IMAGE, 0, seg=seg)
    assert source == "seg" and scores.tolist() == [1.0, 1.0]
    np.testing.assert_allclose(boxes, [[400, 100, 539, 459], [60, 40, 179, 399]])  # largest first, image px
    assert finder(IMAGE, 1, seg=None)[2] == "frame"  # no seg yet
    assert finder(IMAGE, 2, seg=np.zeros_like(seg))[2] == "frame"  # nobody in the seg
    assert len(BoxFinder("seg", max_people=1)(IMAGE, 0, seg=seg)[0]) == 1
    assert boxes_from_label_map(seg, (240, 320)).tolist()[1] == [30, 20, 89, 199]


def test_frame_mode():
    boxes, scores, source = BoxFinder("frame")(IMAGE, 0)
    assert source == "frame" and boxes.tolist() == [[0, 0, 639, 479]] and scores.tolist() == [1.0]


def test_real_detector_through_the_box_finder_on_an_rgb_frame(rtmdet_fixtures_dir):
    case = load_file(str(rtmdet_fixtures_dir / "tiny_w025_case_b.safetensors"))
    detector = load_detector(rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors", widen=0.25)
    rgb = np.ascontiguousarray(case["image_bgr_uint8"].numpy()[..., ::-1])
    boxes, scores, source = BoxFinder("detector", detector)(rgb, 0)
    assert source == "detector" and (scores > 0.3).all()
    np.testing.assert_allclose(boxes, case["demo_person_bboxes"].numpy(), atol=1e-2)


def test_missing_detector_names_the_download_and_the_alternatives(tmp_path, monkeypatch):
    monkeypatch.setenv("SAPIENS_CHECKPOINT_ROOT", str(tmp_path))
    with pytest.raises(UserError) as err:
        make_box_finder("detector")
    message = str(err.value)
    assert "`sapiens-rt download --tasks detector`" in message
    assert "--boxes-from seg" in message and "--boxes-from frame" in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence
    assert make_box_finder("seg", max_people=2).mode == "seg"
    with pytest.raises(UserError, match="--boxes-from must be one of"):
        make_box_finder("yolo")
    with pytest.raises(UserError, match="--detect-every"):
        make_box_finder("frame", detect_every=0)
