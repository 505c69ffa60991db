"""Dense-task pre/post-processing: against the official transforms' fixtures and on
synthetic maps with known answers."""

import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from realtime.transforms import (
    albedo_postprocess,
    normal_postprocess,
    normalize,
    pointmap_postprocess,
    resize_pad,
    seg_postprocess,
    seg_preprocess,
)


@pytest.fixture(scope="module")
def pre(fixtures_dir):
    path = str(fixtures_dir / "preprocess.safetensors")
    with safe_open(path, "pt") as f:
        meta = f.metadata()
    return load_file(path), meta


def _rgb_chw(hwc_bgr):
    return hwc_bgr.flip(-1).permute(2, 0, 1).contiguous()


def _grey_levels(x_norm, ref_hwc_bgr):
    """Difference in 0-255 grey levels between two normalised images."""
    std = torch.tensor([58.395, 57.12, 57.375]).view(1, 3, 1, 1)
    return ((x_norm - normalize(_rgb_chw(ref_hwc_bgr)[None])) * std).abs()


def test_seg_shrink_is_exact(pre):
    data, _ = pre
    x = seg_preprocess(_rgb_chw(data["image_bgr"]), (64, 48))
    assert x.shape == (1, 3, 64, 48)
    assert torch.allclose(x, data["seg_resized_64x48_normalized"], atol=1e-6)


def test_seg_enlarge_within_one_grey_level(pre):
    """Torch bicubic vs OpenCV's fixed-point INTER_CUBIC: <= 1 level at < 0.1 % of values."""
    data, _ = pre
    d = _grey_levels(seg_preprocess(_rgb_chw(data["image_bgr"]), (128, 96)), data["seg_resized_128x96"])
    assert d.max() <= 1.01 and (d > 0.01).float().mean() < 1e-3


@pytest.mark.parametrize("size", [(64, 48), (160, 96)])
def test_resize_pad_matches_official(pre, size):
    """Exact at 64x48; at 160x96 one grey level at < 0.5 % of values (OpenCV's scalar tail)."""
    data, meta = pre
    key = f"dense_resize_pad_{size[0]}x{size[1]}"
    x, pad = resize_pad(_rgb_chw(data["image_bgr"]), size)
    assert list(pad) == json.loads(meta[f"{key}.padding_lrtb"])
    d = _grey_levels(x, data[key])
    assert d.max() <= 1.01 and (d > 0.01).float().mean() < 5e-3
    if size == (64, 48):
        assert d.max() < 0.01


def test_resize_pad_pads_black_before_normalising():
    image = torch.full((3, 50, 100), 200, dtype=torch.uint8)  # wide: padded top and bottom
    x, (left, right, top, bottom) = resize_pad(image, (64, 48))
    assert (left, right) == (0, 0) and top + bottom == 64 - 24
    black = normalize(torch.zeros(1, 3, 1, 1))
    assert torch.allclose(x[:, :, :top], black.expand(1, 3, top, 48))
    assert torch.allclose(x[:, :, top:64 - bottom], normalize(torch.full((1, 3, 1, 1), 200.0)).expand(1, 3, 24, 48))


def test_seg_postprocess_labels_at_any_size():
    labels = torch.tensor([[0, 1], [2, 28]])
    logits = torch.nn.functional.one_hot(labels, 29).permute(2, 0, 1)[None].float() * 10
    out = seg_postprocess(logits, (4, 4))
    assert out.shape == (1, 4, 4) and out.dtype == torch.uint8
    assert out[0, 0, 0] == 0 and out[0, 0, 3] == 1 and out[0, 3, 0] == 2 and out[0, 3, 3] == 28
    assert seg_postprocess(logits.repeat(3, 1, 1, 1), (1, 1)).shape == (3, 1, 1)


def test_normal_postprocess_normalises_then_crops_the_padding():
    raw = torch.zeros(2, 3, 32, 24)
    raw[:, 2] = 5.0  # padding region points along z
    raw[:, 0, 4:28, :], raw[:, 2, 4:28, :] = 3.0, 4.0  # content: (3, 0, 4) -> (0.6, 0, 0.8)
    out = normal_postprocess(raw, (0, 0, 4, 4), (48, 36))
    assert out.shape == (2, 3, 48, 36)
    assert torch.allclose(out[:, 0], torch.full((2, 48, 36), 0.6)) and torch.allclose(out[:, 2], torch.full((2, 48, 36), 0.8))


def test_pointmap_postprocess_uses_each_images_scale():
    torch.manual_seed(0)
    pm = torch.rand(2, 3, 32, 24) + 1
    scale = torch.tensor([[0.5], [2.0]])
    pad = (2, 2, 4, 4)
    same = pointmap_postprocess(pm, scale, pad, (24, 20))  # the crop size: no blur, no resampling
    assert torch.allclose(same[0], pm[0, :, 4:28, 2:22] / 0.5) and torch.allclose(same[1], pm[1, :, 4:28, 2:22] / 2.0)
    small = pointmap_postprocess(pm, scale, pad, (12, 10))
    assert small.shape == (2, 3, 12, 10)
    const = torch.full((1, 3, 32, 24), 3.0)
    big = pointmap_postprocess(const, torch.tensor([[1.5]]), pad, (48, 40))  # enlarging: blurred first
    assert big.shape == (1, 3, 48, 40) and torch.allclose(big, torch.full_like(big, 2.0))
    noisy = pointmap_postprocess(pm[:1], scale[:1], pad, (48, 40))
    plain = torch.nn.functional.interpolate(pm[:1, :, 4:28, 2:22] / 0.5, size=(48, 40), mode="bilinear", align_corners=False)
    assert noisy.std() < plain.std()  # the blur smooths before upsampling


def test_albedo_postprocess_clamps():
    raw = torch.tensor([-1.0, 0.5, 2.0]).view(1, 3, 1, 1).expand(1, 3, 8, 8)
    out = albedo_postprocess(raw, (0, 0, 0, 0), (4, 4))
    assert torch.allclose(out[0, :, 0, 0], torch.tensor([0.0, 0.5, 1.0]))


@pytest.mark.parametrize(
    "size_hw",
    # width shrinks & height grows (720p landscape -> 1024x768), both shrink, both grow
    [(102, 77), (40, 77), (150, 200), (72, 64)],
)
def test_seg_resize_matches_opencv_in_every_aspect_case(size_hw):
    """The seg stretch-resize against cv2.resize itself on a smooth random image:
    within one grey level at < 0.5 % of values (exact in the mixed INTER_AREA case)."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(0)
    bgr = cv2.GaussianBlur((rng.random((72, 128, 3)) * 255).astype(np.uint8), (5, 5), 0)
    interpolation = cv2.INTER_AREA if size_hw[1] < 128 else cv2.INTER_CUBIC
    ref = cv2.resize(bgr, (size_hw[1], size_hw[0]), interpolation=interpolation)
    d = _grey_levels(seg_preprocess(_rgb_chw(torch.from_numpy(bgr)), size_hw), torch.from_numpy(ref))
    assert d.max() <= 1.01 and (d > 0.01).float().mean() < 5e-3
    if size_hw == (102, 77):
        assert d.max() < 0.01
