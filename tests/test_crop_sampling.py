"""Person crops' interpolation picked on the host (`transforms.crop_sampling`): bilinear for a
crop that shrinks the image, bicubic for one that enlarges it (a small person), as the official
demo. The host's rule agrees exactly with the device's, a batch the rule samples one way runs
one grid_sample (a mixed batch two, as before), the crops and keypoints stay those of the golden
fixtures, and the host choice adds no host sync on the stand-in GPU."""

import copy

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from realtime import transforms
from realtime.infer import Predictor
from tests.gpu_standin import StandinGPU

IMAGE = np.random.default_rng(1).integers(0, 256, (96, 128, 3), dtype=np.uint8)
SMALL = np.array([[5, 5, 50, 50], [20, 30, 90, 80]], np.float32)  # crops enlarge at 128x96: bicubic
LARGE = np.array([[40, 5, 120, 95], [0, 0, 127, 95]], np.float32)  # crops shrink: bilinear


def _device_rule(scale: np.ndarray, input_hw) -> np.ndarray:
    """What crop_persons decides on the device (the UDP matrix's diagonal below 1)."""
    scale = torch.from_numpy(scale)
    matrix = transforms.udp_warp_matrix(torch.zeros_like(scale), scale, input_hw)
    return (torch.minimum(matrix[:, 0, 0].abs(), matrix[:, 1, 1].abs()) < 1).numpy()


def test_the_host_rule_is_the_device_rule_to_the_last_bit():
    rng = np.random.default_rng(0)
    for input_hw in ((1024, 768), (128, 96), (64, 48)):
        h, w = input_hw
        at_edge = np.float32([w - 1, h - 1])  # exactly one crop pixel per image pixel: not shrinking
        near = np.stack([np.nextafter(at_edge, np.float32(0)), at_edge, np.nextafter(at_edge, np.float32(1e9))])
        scale = np.concatenate([rng.uniform(5, 4000, (5000, 2)).astype(np.float32), near,
                                (at_edge * rng.uniform(0.999, 1.001, (2000, 1))).astype(np.float32)])
        host = transforms.crop_shrinks_np(scale, input_hw)
        np.testing.assert_array_equal(host, _device_rule(scale, input_hw))
        assert host.any() and not host.all()
        assert not transforms.crop_shrinks_np(near[:1], input_hw).any() and transforms.crop_shrinks_np(near[2:], input_hw).all()


def test_the_rule_picks_per_batch_as_documented():
    def pick(boxes, policy="official"):
        _, scale = transforms.box_to_center_scale_np(boxes, (128, 96))
        return transforms.crop_sampling(scale, (128, 96), policy)

    assert pick(SMALL) == pick(SMALL[:1]) == "bicubic"  # small people: enlarged, bicubic
    assert pick(LARGE) == pick(LARGE[:1]) == "bilinear"  # large people: shrunk, bilinear
    assert pick(np.concatenate([SMALL, LARGE])) is None  # mixed: per crop on the device
    for policy in ("bilinear", "bicubic"):
        assert pick(SMALL, policy) == pick(LARGE, policy) == pick(np.concatenate([SMALL, LARGE]), policy) == policy
    with pytest.raises(ValueError, match="one of"):
        pick(SMALL, "nearest")


@pytest.mark.parametrize("box, input_hw, want", [("pose_crop_bbox_xyxy", (64, 48), "bilinear"),
                                                  ("pose_crop2_bbox_xyxy", (128, 96), "bicubic")])
def test_the_host_choice_keeps_the_golden_crops(fixtures_dir, box, input_hw, want):
    """The fixture's two official crops (one shrinking, one enlarging): the host picks what the
    official demo used, and the crop is bit for bit the one the per-crop path makes (which
    tests/test_codec.py checks against the official crops)."""
    io = load_file(str(fixtures_dir / "preprocess.safetensors"))
    image = io["image_bgr"].flip(-1).permute(2, 0, 1).contiguous()
    center, scale = transforms.box_to_center_scale_np(io[box][None].numpy(), input_hw)
    sampling = transforms.crop_sampling(scale, input_hw)
    assert sampling == want
    center, scale = torch.from_numpy(center), torch.from_numpy(scale)
    chosen = transforms.crop_persons(image, center, scale, input_hw, sampling)
    assert torch.equal(chosen, transforms.crop_persons(image, center, scale, input_hw))
    other = "bicubic" if want == "bilinear" else "bilinear"  # and the choice matters
    assert not torch.equal(chosen, transforms.crop_persons(image, center, scale, input_hw, other))


@pytest.fixture(scope="module")
def pose_model(fixtures_dir):
    from realtime.models import load_model

    return {"pose": load_model("pose", fixtures_dir / "pose_weights.safetensors")}


def test_one_sampling_per_batch_on_the_standin_with_no_extra_sync(pose_model):
    cpu = Predictor(pose_model, input_hw=(128, 96))
    cases = {"small": SMALL, "large": LARGE, "mixed": np.concatenate([SMALL, LARGE])}
    want = {name: cpu.predict(IMAGE, boxes) for name, boxes in cases.items()}
    with StandinGPU() as gpu:
        models = {"pose": copy.deepcopy(pose_model["pose"]).to("cuda")}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), channels_last=False)
        predictor.predict(IMAGE, SMALL[:1])  # the first frame may make constants
        samples, syncs, got = {}, {}, {}
        for name, boxes in cases.items():
            gpu.rec.clear()
            got[name] = predictor.predict(IMAGE, boxes)
            samples[name] = sum(e.kind == "op" and "grid_sampler" in e.what for e in gpu.rec.log)
            syncs[name] = len(gpu.rec.syncs())
        assert not gpu.rec.races
    assert samples == {"small": 1, "large": 1, "mixed": 2}
    assert syncs == {"small": 1, "large": 1, "mixed": 1}  # the frame's one wait, as before
    for name in cases:
        np.testing.assert_array_equal(got[name].keypoints, want[name].keypoints)
        np.testing.assert_array_equal(got[name].keypoint_scores, want[name].keypoint_scores)


def test_a_policy_other_than_official_is_an_option_and_changes_small_people(pose_model):
    official = Predictor(pose_model, input_hw=(128, 96)).predict(IMAGE, SMALL)
    bilinear = Predictor(pose_model, input_hw=(128, 96), crop_sampling="bilinear").predict(IMAGE, SMALL)
    assert not np.array_equal(official.keypoints, bilinear.keypoints)
    large = Predictor(pose_model, input_hw=(128, 96), crop_sampling="bilinear").predict(IMAGE, LARGE)
    np.testing.assert_array_equal(large.keypoints, Predictor(pose_model, input_hw=(128, 96)).predict(IMAGE, LARGE).keypoints)
    with pytest.raises(ValueError, match="crop_sampling"):
        Predictor(pose_model, crop_sampling="area")
