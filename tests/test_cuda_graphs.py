"""Predictor(cuda_graphs=True) on the stand-in GPU (tests/gpu_standin.py): one graph per
(task, person bucket), captured on first use by the launching thread, replayed after;
outputs equal eager's; a handful of launches per predict; no races with frames in flight."""

import copy

import numpy as np
import pytest

from realtime.infer import Predictor
from tests.gpu_standin import StandinGPU

IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95], [20, 30, 90, 80], [5, 5, 50, 50]], np.float32)


@pytest.fixture(scope="module")
def task_models(fixtures_dir):
    from realtime.models import load_model

    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "seg")}


def test_graphed_predictions_equal_eager_with_few_launches(task_models):
    eager = Predictor(task_models, input_hw=(128, 96), pad_batches=True)  # the same padded batches
    people = (1, 3, 5, 3, 1)
    wants = [eager.predict(IMAGE, BOXES[:n]) for n in people]
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), cuda_graphs=True)
        assert predictor.padded and predictor.buckets() == (1, 2, 3, 4, 6, 8, 12, 16)
        predictor.warm_up(IMAGE.shape[:2])
        assert not predictor._graphs  # the warm-up runs eagerly: the launching thread captures
        got, launches, syncs = [], [], []
        for n in people:
            gpu.rec.clear()
            got.append(predictor.predict(IMAGE, BOXES[:n]))
            launches.append(gpu.rec.launches())
            syncs.append(len(gpu.rec.syncs()))
        assert sorted(predictor._graphs) == [("pose", 1, (3, 96, 128)), ("pose", 3, (3, 96, 128)),
                                             ("pose", 6, (3, 96, 128)), ("seg", (3, 96, 128), (96, 128))]
        assert not gpu.rec.races
    # each capture synchronizes first (frame 1: pose and seg; then pose for 3 and for 5
    # people); a frame of known shapes only replays, with the frame's one wait
    assert syncs == [3, 2, 2, 1, 1]
    # replayed: per task a graph launch, its input copies and the output's clone, plus the transfers
    assert launches[3] == launches[4] <= 16, launches
    for g, w in zip(got, wants):
        np.testing.assert_array_equal(g.keypoints, w.keypoints)
        np.testing.assert_array_equal(g.keypoint_scores, w.keypoint_scores)
        np.testing.assert_array_equal(g.seg, w.seg)


def test_graphed_frames_in_flight_keep_their_own_outputs(task_models):
    eager = Predictor(task_models, input_hw=(128, 96), pad_batches=True)
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), cuda_graphs=True)
        predictor.predict(IMAGE, BOXES[:2])  # captured
        other = np.ascontiguousarray(IMAGE[::-1])
        first = predictor.launch(IMAGE, BOXES[:2])
        second = predictor.launch(other, BOXES[1:3])  # replays the same graphs before the first is collected
        a, b = predictor.collect(first), predictor.collect(second)
        assert not gpu.rec.races
    np.testing.assert_array_equal(a.keypoints, eager.predict(IMAGE, BOXES[:2]).keypoints)
    np.testing.assert_array_equal(b.keypoints, eager.predict(other, BOXES[1:3]).keypoints)
    np.testing.assert_array_equal(b.seg, eager.predict(other, BOXES[1:3]).seg)


def test_cuda_graphs_are_ignored_on_the_cpu(task_models):
    predictor = Predictor(task_models, input_hw=(128, 96), cuda_graphs=True)
    assert not predictor.cuda_graphs and not predictor.padded
