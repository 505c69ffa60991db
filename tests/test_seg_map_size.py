"""Seg logits at the size they leave at: `SegHead(out_hw=...)` resizes its last features before
the 1x1 classifier instead of writing full-size logits and resizing those. Both are linear, so
the logits equal the official ones resized (the golden fixture's, at its tolerance), the labels
those of the official post-processing, and the estimate counts the bytes saved."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from realtime.infer import Predictor
from realtime.models import load_model
from realtime.models.heads import to_channels_last
from realtime.transforms import seg_postprocess, seg_preprocess

# map sizes from the fixture's 64x48 logits: a 16:9 frame's map (shrinks unevenly), an exact
# half, a little smaller; the same size and a larger one keep the logits at 64x48
SIZES = [(18, 32), (32, 24), (40, 30), (64, 48), (96, 72)]


@pytest.fixture(scope="module")
def seg_case(fixtures_dir):
    return load_model("seg", fixtures_dir / "seg_weights.safetensors"), load_file(str(fixtures_dir / "seg_io.safetensors"))


def _official(logits: torch.Tensor, out_hw) -> torch.Tensor:
    """The full-size logits resized to out_hw (what seg_postprocess did before the argmax)."""
    return F.interpolate(logits.float(), size=out_hw, mode="bilinear", align_corners=False)


@pytest.mark.parametrize("out_hw", SIZES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_logits_at_the_map_size_equal_the_official_logits_resized(seg_case, out_hw, channels_last):
    model, io = seg_case
    if channels_last:  # what a CUDA Predictor runs
        model = copy.deepcopy(model)
        to_channels_last(model)
    with torch.no_grad():
        got = model(io["input"], out_hw)
    shrinks = out_hw[0] * out_hw[1] < 64 * 48
    assert tuple(got.shape[-2:]) == (out_hw if shrinks else (64, 48)) and got.is_contiguous()
    want = _official(io["seg_logits"], out_hw)
    diff = (_official(got, out_hw) - want).abs()
    assert diff.max() <= 1e-2 and diff.mean() <= 5e-4, (diff.max().item(), diff.mean().item())  # the fixture tolerance
    labels, official = seg_postprocess(got, out_hw), want.argmax(1).to(torch.uint8)
    assert (labels == official).float().mean() >= 0.999


def test_the_same_labels_as_before_in_fp32_and_close_in_bf16(seg_case, fixtures_dir):
    model, io = seg_case
    half = load_model("seg", fixtures_dir / "seg_weights.safetensors", dtype=torch.bfloat16)
    out_hw = (18, 32)
    with torch.no_grad():
        before = seg_postprocess(model(io["input"]), out_hw)  # full logits, resized, argmax
        now = seg_postprocess(model(io["input"], out_hw), out_hw)
        before_bf16 = seg_postprocess(half(io["input"].bfloat16()).float(), out_hw)
        now_bf16 = seg_postprocess(half(io["input"].bfloat16(), out_hw).float(), out_hw)
    assert torch.equal(now, before)
    official = _official(io["seg_logits"], out_hw).argmax(1).to(torch.uint8)
    # bf16 rounds the resized features instead of the full-size logits: as close to fp32 as before
    agree_now, agree_before = ((x == official).float().mean().item() for x in (now_bf16, before_bf16))
    assert agree_now > 0.9 and agree_now >= agree_before - 0.02, (agree_now, agree_before)


def test_the_predictor_asks_for_the_map_size(seg_case):
    model, _ = seg_case
    image = np.random.default_rng(1).integers(0, 256, (72, 128, 3), dtype=np.uint8)
    predictor = Predictor({"seg": model}, input_hw=(64, 48), map_max_side=32)
    calls = []
    handle = model.decode_head.conv_seg.register_forward_hook(lambda m, i, o: calls.append(tuple(o.shape[-2:])))
    try:
        got = predictor.predict(image, np.zeros((0, 4), np.float32)).seg
    finally:
        handle.remove()
    assert calls == [(18, 32)] and got.shape == (18, 32)  # the classifier ran at the map's size
    x = seg_preprocess(torch.from_numpy(image).permute(2, 0, 1), (64, 48))
    with torch.no_grad():
        want = seg_postprocess(model(x), (18, 32))[0].numpy()
    assert (got == want).mean() >= 0.999


def test_the_estimate_counts_the_bytes_saved():
    """bench/gpu_estimate.py's seg forward at 1024x768 with the 720p frame's 512x288 map: fewer
    bytes moved than with full-size logits resized afterwards, eager and compiled."""
    from bench.gpu_estimate import frame_counts

    now = frame_counts("seg", (1024, 768), "", (288, 512))
    before = frame_counts("seg", (1024, 768), "", (288, 512), full_logits=True)
    saved_eager = before.eager_bytes() - now.eager_bytes()
    saved_fused = before.fused_bytes() - now.fused_bytes()
    # at least the full-size logits: 29 x 1024 x 768 in bf16, written once and read back
    assert saved_eager > 2 * 29 * 1024 * 768 * 2 and saved_fused > 2 * 29 * 1024 * 768 * 2, (saved_eager, saved_fused)
    assert now.flops["conv"] < before.flops["conv"]
