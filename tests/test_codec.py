"""Top-down crop geometry and UDP/DARK heatmap decoding against the official
codec's fixtures (`heatmap_decode.safetensors`, `preprocess.safetensors`)."""

import pytest
import torch
from safetensors.torch import load_file

from realtime.codec import decode_heatmaps
from realtime.transforms import box_to_center_scale, crop_persons, keypoints_to_image, normalize, udp_warp_matrix


@pytest.fixture(scope="module")
def decode_io(fixtures_dir):
    return load_file(str(fixtures_dir / "heatmap_decode.safetensors"))


@pytest.fixture(scope="module")
def pre_io(fixtures_dir):
    return load_file(str(fixtures_dir / "preprocess.safetensors"))


def _rgb_chw(hwc_bgr: torch.Tensor) -> torch.Tensor:
    return hwc_bgr.flip(-1).permute(2, 0, 1).contiguous()


def test_decode_matches_official(decode_io):
    keypoints, scores = decode_heatmaps(decode_io["heatmaps"][None])
    assert keypoints.shape == (1, 8, 2) and scores.shape == (1, 8)
    assert torch.equal(scores[0], decode_io["scores"])
    valid = scores[0] > 0
    assert valid.sum() == 7  # the all-negative case is masked by its score
    err = (keypoints[0] - decode_io["keypoints_crop"]).abs()[valid]
    assert err.max() <= 1e-3, err.max()
    # the DARK step matters: plain argmax is off by far more
    argmax_only = (decode_io["heatmaps"].flatten(1).argmax(1) % 192).float() * 768 / 191
    assert (argmax_only - decode_io["keypoints_crop"][:, 0])[valid].abs().max() > 0.5


def test_decode_is_batched(decode_io):
    hm = decode_io["heatmaps"]
    batch = torch.stack((hm[:4], hm[4:]))  # (2, 4, 256, 192)
    keypoints, scores = decode_heatmaps(batch)
    single, _ = decode_heatmaps(hm[None])
    assert torch.allclose(keypoints.reshape(8, 2), single[0], atol=1e-4)
    assert torch.equal(scores.reshape(8), decode_io["scores"])


@pytest.mark.parametrize("case", ["bbox1", "fullframe"])
def test_box_geometry_matches_official(decode_io, case):
    center, scale = box_to_center_scale(decode_io[f"{case}_bbox_xyxy" if case == "fullframe" else "bbox1_xyxy"][None])
    assert torch.allclose(center[0], decode_io[f"{case}_center"])
    assert torch.allclose(scale[0], decode_io[f"{case}_scale_aspect_fixed"])
    assert torch.allclose(udp_warp_matrix(center, scale)[0], decode_io[f"{case}_udp_warp"], atol=1e-4, rtol=1e-6)
    keypoints, _ = decode_heatmaps(decode_io["heatmaps"][None])
    image_kpts = keypoints_to_image(keypoints, center, scale)[0]
    valid = decode_io["scores"] > 0
    assert (image_kpts - decode_io[f"keypoints_image_{case}"]).abs()[valid].max() <= 1e-3


def test_padding_before_aspect_fix(decode_io):
    _, scale = box_to_center_scale(decode_io["bbox1_xyxy"][None], padding=1.25)
    box = decode_io["bbox1_xyxy"]
    padded = (box[2:] - box[:2]) * 1.25
    assert torch.allclose(padded, decode_io["bbox1_scale_padded"])
    assert (scale[0] >= padded - 1e-4).all()
    assert abs(scale[0, 0] / scale[0, 1] - 0.75) < 1e-6


def test_crop_shrinking_is_bilinear_and_exact(pre_io):
    center, scale = box_to_center_scale(pre_io["pose_crop_bbox_xyxy"][None], (64, 48))
    assert torch.allclose(center[0], pre_io["pose_crop_center"]) and torch.allclose(scale[0], pre_io["pose_crop_scale"])
    assert torch.allclose(udp_warp_matrix(center, scale, (64, 48))[0], pre_io["pose_crop_warp"], atol=1e-5)
    crop = crop_persons(_rgb_chw(pre_io["image_bgr"]), center, scale, (64, 48))
    assert crop.shape == (1, 3, 64, 48) and crop.dtype == torch.float32
    assert torch.equal(crop[0], _rgb_chw(pre_io["pose_crop_48x64"]).float())


def test_crop_enlarging_is_bicubic_within_one_grey_level(pre_io):
    """Tolerance of the torch path: OpenCV's fixed-point bicubic differs by 1 at < 0.1 % of pixels."""
    center, scale = box_to_center_scale(pre_io["pose_crop2_bbox_xyxy"][None], (128, 96))
    crop = crop_persons(_rgb_chw(pre_io["image_bgr"]), center, scale, (128, 96))[0]
    d = (crop - _rgb_chw(pre_io["pose_crop_96x128"]).float()).abs()
    assert d.max() <= 1 and (d > 0).float().mean() < 1e-3


def test_crops_are_batched_and_mix_modes(pre_io):
    image = _rgb_chw(pre_io["image_bgr"])
    boxes = torch.stack((pre_io["pose_crop_bbox_xyxy"], pre_io["pose_crop2_bbox_xyxy"], torch.tensor([-20.0, -10.0, 30.0, 50.0])))
    center, scale = box_to_center_scale(boxes, (128, 96))
    together = crop_persons(image, center, scale, (128, 96))
    for i in range(3):
        assert torch.equal(together[i], crop_persons(image, center[i : i + 1], scale[i : i + 1], (128, 96))[0])
    # a box hanging off the image gets a black border
    assert together[2, :, :, 0].eq(0).all()
    assert crop_persons(image, center[:0], scale[:0], (128, 96)).shape == (0, 3, 128, 96)


def test_crop_of_float_image_is_not_rounded(pre_io):
    image = _rgb_chw(pre_io["image_bgr"]).float() + 0.25
    center, scale = box_to_center_scale(pre_io["pose_crop_bbox_xyxy"][None], (64, 48))
    crop = crop_persons(image, center, scale, (64, 48))
    assert (crop.frac() != 0).any()


def test_normalize_matches_official_preprocessor(pre_io):
    x = normalize(_rgb_chw(pre_io["seg_resized_64x48"])[None])
    assert torch.allclose(x, pre_io["seg_resized_64x48_normalized"], atol=1e-6)
