"""The heads' instance norm over channels_last batches in two passes over the map (`var_mean`,
then one `addcmul` with float32 scale and shift) instead of four (`var_mean`, a subtraction and
a multiplication that each read and write it): outputs within the golden fixtures' tolerance,
half precision no worse than the two-op formula, the same under torch.compile, and the
traffic as bench/gpu_estimate.py counts it."""

import copy

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from realtime.models import heads, load_model

MAP = (4, 64, 128, 96)  # 4 people's 64-channel map


def _two_ops(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """What the norm computed before: var_mean, then (x - mean) * rsqrt(var + eps) as two ops."""
    var, mean = torch.var_mean(x, dim=(2, 3), keepdim=True, correction=0)
    return (x - mean) * torch.rsqrt(var + eps)


@pytest.mark.parametrize("task", ["pose", "seg"])
def test_a_batch_through_channels_last_heads_equals_the_fixture(fixtures_dir, task):
    model = copy.deepcopy(load_model(task, fixtures_dir / f"{task}_weights.safetensors"))
    io = load_file(str(fixtures_dir / f"{task}_io.safetensors"))
    heads.to_channels_last(model)
    with torch.no_grad():
        got = model(io["input"].repeat(3, 1, 1, 1))  # a batch: the var_mean + addcmul path
    want = io["heatmaps" if task == "pose" else "seg_logits"]
    for out in got:
        d = (out - want[0]).abs()
        assert d.max() <= 1e-2 and d.mean() <= 5e-4, (d.max().item(), d.mean().item())  # the fixture tolerance


@pytest.mark.parametrize("offset", [0.0, 5.0, 100.0])
def test_half_precision_is_no_worse_than_the_two_op_formula(offset):
    torch.manual_seed(0)
    x = (torch.randn(3, 16, 24, 20) + offset).bfloat16().contiguous(memory_format=torch.channels_last)
    exact = nn.functional.instance_norm(x.float())
    got, before = heads.InstanceNorm2d(16)(x), _two_ops(x)
    assert got.dtype == torch.bfloat16 and got.is_contiguous(memory_format=torch.channels_last)
    err, err_before = ((y.float() - exact).abs().mean().item() for y in (got, before))
    assert err <= 1.05 * err_before + 1e-4, (err, err_before)


def test_compiled_equals_eager():
    norm = nn.Sequential(heads.InstanceNorm2d(8), nn.SiLU(inplace=True))
    compiled = torch.compile(norm, fullgraph=True)  # no graph break: compiled, the plain formula fuses
    x = torch.randn(3, 8, 16, 12).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x.clone()), norm(x.clone()), atol=1e-5, rtol=1e-5)


def test_counted_traffic():
    """bench/gpu_estimate.py's counts of norm + SiLU on a bf16 map: eager, 2 reads and 1 write for
    the norm (was 3 reads and 2 writes) plus the SiLU's read and write; compiled, the
    statistics' read, then one kernel reading the map and writing it; one image (batch norm)
    is counted as CUDA runs it: a statistics kernel and a normalising kernel, 2 reads."""
    from bench.gpu_estimate import count

    x = torch.zeros(MAP, device="meta", dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    one_pass = x.numel() * 2
    layer = nn.Sequential(heads.InstanceNorm2d(64), nn.SiLU(inplace=True))
    now = count(layer, x)
    before = count(lambda t: nn.functional.silu(_two_ops(t), inplace=True), x)
    assert now.eager_bytes() == pytest.approx(5 * one_pass, rel=1e-3)
    assert before.eager_bytes() == pytest.approx(7 * one_pass, rel=1e-3)
    assert now.fused_bytes() == pytest.approx(3 * one_pass, rel=1e-3) == before.fused_bytes()
    assert now.fused_launches() == 2  # the reduction ends a kernel
    one = count(layer, x[:1])
    assert one.eager_bytes() == pytest.approx(5 * one_pass / 4, rel=1e-3)
    assert one.fused_bytes() == pytest.approx(3 * one_pass / 4, rel=1e-3)


def test_the_estimate_runs_the_heads_channels_last_and_counts_the_passes_saved(monkeypatch):
    """bench/gpu_estimate.py counts a 4-person 0.4B pose forward as a CUDA Predictor runs it (the
    meta device's convolutions would hand back NCHW maps and skip this norm): with the two-op
    formula, each of the head's 5 norms would move two more passes over its map."""
    from bench.gpu_estimate import count
    from realtime.models import build_model

    model = build_model("pose", "sapiens2_0.4b", device="meta", dtype=torch.bfloat16)
    heads.to_channels_last(model)
    maps = []
    for norm in (m for m in model.decode_head.modules() if isinstance(m, heads.InstanceNorm2d)):
        norm.register_forward_pre_hook(lambda m, a: maps.append(a[0]))
    x = torch.zeros(4, 3, 1024, 768, device="meta", dtype=torch.bfloat16)
    now = count(model, x)
    assert len(maps) == 5 and all(heads._is_channels_last(m) for m in maps)
    saved = 2 * sum(m.numel() * 2 for m in maps)  # two passes of bf16 over each norm's map
    monkeypatch.setattr(heads.InstanceNorm2d, "forward", lambda self, t: _two_ops(t, self.eps))
    before = count(model, x)
    assert before.eager_bytes() - now.eager_bytes() == pytest.approx(saved, rel=0.01)
    assert now.fused_bytes() == pytest.approx(before.fused_bytes(), rel=1e-3)  # compiled, inductor fuses either
