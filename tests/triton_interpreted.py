"""The Triton kernels under Triton's interpreter (TRITON_INTERPRET=1), on the CPU: run by
tests/test_triton_attention.py in a process of their own, since the variable must be set before triton is
first imported (triton.language's own helpers are wrapped for the interpreter at that import)."""

import os

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from realtime.models import load_model, triton_attention
from realtime.models.sapiens2 import attention, set_sdpa_backend

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs TRITON_INTERPRET=1 from the start")


def _qkv(batch, heads, kv, tokens, hd, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, n, tokens, hd, generator=g).to(dtype) for n in (heads, kv, kv)]


@pytest.mark.parametrize("batch, heads, kv, tokens, hd, config", [
    (1, 4, 4, 21, 8, None),  # one tile: the fixture backbones' attention
    (2, 4, 2, 57, 16, (16, 16, 4, 1)),  # GQA, batch 2, ragged last tiles of queries and keys
    (1, 4, 1, 40, 16, (32, 16, 4, 1)),  # one kv head for four query heads
    (1, 2, 1, 33, 76, (16, 16, 4, 1)),  # the 5B's head size (76: not a power of two)
])
def test_the_kernel_equals_sdpa_under_the_interpreter(batch, heads, kv, tokens, hd, config):
    q, k, v = _qkv(batch, heads, kv, tokens, hd)
    got = triton_attention.attention(q, k, v, config)
    want = attention(q, k, v, "math", heads=(heads, kv))  # repeat_interleave order of the kv heads
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=2e-6)
    assert got.transpose(1, 2).is_contiguous()  # written as (B, T, H, hd): the output projection reads it without a copy


def test_half_precision_rounds_as_half_precision():
    q, k, v = _qkv(1, 4, 2, 57, 16, torch.bfloat16)
    got = triton_attention.attention(q, k, v, (32, 16, 4, 1)).float()
    want = attention(q.float(), k.float(), v.float(), "math", heads=(4, 2))
    assert (got - want).abs().max() < 2e-2  # bf16's step at these magnitudes
    wrong = attention(q.float(), k.float().repeat(1, 2, 1, 1), v.float().repeat(1, 2, 1, 1), "math")  # kv heads tiled
    assert (got - wrong).abs().max() > 0.1


def test_a_fixture_model_with_the_kernel_meets_the_fixtures(fixtures_dir):
    io = load_file(str(fixtures_dir / "pose_io.safetensors"))
    model = load_model("pose", fixtures_dir / "pose_weights.safetensors")
    with torch.inference_mode():
        default = model(io["input"])
        assert set_sdpa_backend(model, "triton") == 18
        got = model(io["input"])
    d = (got - io["heatmaps"]).abs()
    assert d.max() <= 1e-2 and d.mean() <= 5e-4  # the fixtures' head tolerance
    # another attention kernel moves the bf16 RoPE roundings a little (fixtures README: the math kernel against the
    # default one, up to 6.9e-4 on the task outputs)
    assert (got - default).abs().max() < 2e-3 and (got - default).abs().mean() < 5e-5


def test_shapes_it_does_not_take_are_refused():
    q, k, v = _qkv(1, 4, 3, 21, 8)
    with pytest.raises(ValueError, match="KV dividing H"):
        triton_attention.attention(q, k, v)
    q, k, v = _qkv(1, 4, 2, 21, 8)
    with pytest.raises(ValueError, match="one dtype"):
        triton_attention.attention(q, k.double(), v)
    assert np.isfinite(triton_attention.attention(q, k, v).numpy()).all()


# -- realtime/models/triton_fused.py


@pytest.mark.parametrize("rows, fan_in, hidden, config", [(21, 32, 128, None), (57, 40, 72, (16, 32, 16, 4, 1))])
def test_swiglu_in_the_gemm_epilogue_equals_eager(rows, fan_in, hidden, config):
    import torch.nn.functional as F

    from realtime.models.triton_fused import swiglu_linear

    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(2, rows, fan_in, generator=g), torch.randn(2 * hidden, fan_in, generator=g) / fan_in**0.5, \
        torch.randn(2 * hidden, generator=g)
    a, gate = F.linear(x, w, b).chunk(2, dim=-1)
    got = swiglu_linear(x, w, b, config)
    assert got.shape == (2, rows, hidden)
    torch.testing.assert_close(got, F.silu(a) * gate, rtol=1e-5, atol=1e-5)
    swapped = F.silu(gate) * a  # the halves the other way round: what a wrong epilogue gives
    assert (got - swapped).abs().max() > 0.1


def test_fused_passes_in_bf16_round_once():
    import torch.nn.functional as F

    from realtime.models.triton_fused import add_rms_norm, swiglu_linear

    g = torch.Generator().manual_seed(1)
    x = torch.randn(57, 64, generator=g).bfloat16()
    w, b = (torch.randn(256, 64, generator=g) / 8).bfloat16(), torch.randn(256, generator=g).bfloat16()
    a, gate = F.linear(x.float(), w.float(), b.float()).chunk(2, dim=-1)
    want = F.silu(a) * gate
    got = swiglu_linear(x, w, b, (32, 32, 32, 4, 1)).float()
    assert ((got - want).abs() <= want.abs() * 2**-7 + 1e-6).all()  # within one bf16 step of the fp32 result
    r, weight = torch.randn(57, 64, generator=g).bfloat16(), (1 + 0.2 * torch.randn(64, generator=g)).bfloat16()
    s, y = add_rms_norm(x, r, weight)
    step = (x + r).float().abs() * 2**-7  # the interpreter's bf16 conversion may round the other way: one step
    assert ((s.float() - (x + r).float()).abs() <= step).all()
    ref = F.rms_norm(s.float(), (64,), weight.float(), 1e-6)
    assert ((y.float() - ref).abs() <= ref.abs() * 2**-7 + 1e-6).all()


def test_add_rms_norm_equals_eager():
    import torch.nn.functional as F

    from realtime.models.triton_fused import add_rms_norm

    g = torch.Generator().manual_seed(2)
    for rows, width in ((21, 32), (5, 1000)):
        x, r, w = torch.randn(rows, width, generator=g), torch.randn(rows, width, generator=g), torch.randn(width, generator=g)
        s, y = add_rms_norm(x, r, w)
        torch.testing.assert_close(s, x + r, rtol=0, atol=0)
        torch.testing.assert_close(y, F.rms_norm(x + r, (width,), w, 1e-6), rtol=1e-5, atol=1e-6)
    x16, r16 = (torch.full((2, 32), 60000.0, dtype=torch.float16), torch.full((2, 32), 60000.0, dtype=torch.float16))
    s, _ = add_rms_norm(x16, r16, torch.ones(32, dtype=torch.float16))
    assert torch.isfinite(s).all()  # fp16's residual stream stays in range (sapiens2.finite_fp16)


def test_a_fixture_model_with_the_fused_passes_meets_the_fixtures(fixtures_dir):
    from realtime.models.sapiens2 import set_fused_kernels

    for task, key, sdpa in (("pose", "heatmaps", "triton"), ("seg", "seg_logits", "default")):
        io = load_file(str(fixtures_dir / f"{task}_io.safetensors"))
        model = load_model(task, fixtures_dir / f"{task}_weights.safetensors")
        with torch.inference_mode():
            plain = model(io["input"])
            assert set_fused_kernels(model) == 1
            fused = model(io["input"])
            set_sdpa_backend(model, sdpa)
            both = model(io["input"])
        for got in (fused, both):
            d = (got - io[key]).abs()
            assert d.max() <= 1e-2 and d.mean() <= 5e-4, (task, d.max(), d.mean())  # the fixtures' head tolerance
        assert (fused - plain).abs().max() < 2e-3
