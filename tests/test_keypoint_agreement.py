"""The GPU tests compare keypoints with `tests.keypoint_agreement`; here, on the CPU, its
thresholds meet the fixture models' real fragility and still catch a wrong answer.

The tiny fixture models have random weights, so their heatmaps are nearly flat: a relative
change of 1e-4 in the heatmaps (far less than bf16's rounding) sends a few keypoints 100 px
away. Measured here with the decoder's input perturbed, as a GPU's other kernels would."""

from pathlib import Path

import numpy as np
import pytest
import torch

from realtime import codec
from realtime.infer import Predictor
from realtime.models import load_model
from tests.keypoint_agreement import assert_keypoints_agree, keypoint_agreement

IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95]], np.float32)


@pytest.fixture(scope="module")
def predictor(fixtures_dir: Path) -> Predictor:
    return Predictor({"pose": load_model("pose", fixtures_dir / "pose_weights.safetensors")}, input_hw=(128, 96))


def _with_heatmap_noise(predictor: Predictor, relative: float, monkeypatch):
    """The predictor's keypoints with every heatmap value scaled by (1 + relative * N(0, 1))."""
    decode = codec.decode_heatmaps

    def noisy(heatmaps, input_hw=None):
        noise = torch.randn(heatmaps.shape, generator=torch.Generator().manual_seed(1))
        return decode(heatmaps * (1 + relative * noise), input_hw)

    with monkeypatch.context() as patch:
        patch.setattr(codec, "decode_heatmaps", noisy)
        return predictor.predict(IMAGE, BOXES)


def test_the_fixture_models_heatmaps_are_fragile_and_the_thresholds_allow_it(predictor, monkeypatch):
    want = predictor.predict(IMAGE, BOXES)
    sure = want.keypoint_scores > 0.3
    assert sure.mean() > 0.9  # the mask keeps nearly all: it does not hide the fragile ones
    fp32 = _with_heatmap_noise(predictor, 1e-5, monkeypatch)  # another fp32 kernel's rounding, generously
    bf16 = _with_heatmap_noise(predictor, 4e-3, monkeypatch)  # bf16's rounding (2^-8) on every value
    far = np.linalg.norm(bf16.keypoints - want.keypoints, axis=-1)[sure].max()
    assert far > 100  # one flat map sends a keypoint far away: an all-keypoints bound would fail
    assert_keypoints_agree(fp32.keypoints, want.keypoints, sure)  # the fp32 thresholds
    assert_keypoints_agree(bf16.keypoints, want.keypoints, sure, share=0.85, median_px=0.1)  # the bf16 ones


def test_the_thresholds_catch_a_wrong_answer(predictor):
    want = predictor.predict(IMAGE, BOXES)
    sure = want.keypoint_scores > 0.3
    other_image = predictor.predict(np.ascontiguousarray(IMAGE[::-1]), BOXES)
    swapped = predictor.predict(IMAGE, BOXES[[1, 0, 2]]).keypoints[[1, 0, 2]]  # the same people, crops in another order
    assert keypoint_agreement(swapped, want.keypoints, sure, 1.0)[0] == 1.0
    assert keypoint_agreement(other_image.keypoints, want.keypoints, sure, 1.0)[0] < 0.5
    shifted = want.keypoints.copy()
    shifted[2] += 2.0  # one person of three off by 2 px (a wrong crop, a stale buffer)
    for wrong in (other_image.keypoints, shifted):
        with pytest.raises(AssertionError, match="keypoints within"):
            assert_keypoints_agree(wrong, want.keypoints, sure, share=0.85, median_px=0.1)
