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
