"""The Sapiens2 backbone against the official golden fixtures (docs/numerics.md, "Backbone"), plus
the size table against the one there and the real 0.4b key list."""

import json

import pytest
import torch
from safetensors.torch import load_file

from realtime.models import ARCHS, build_model, load_backbone
from realtime.models.archs import BackboneArch
from realtime.models.sapiens2 import Sapiens2, rope_periods, rope_tables

CASES = ["r256x192", "r320x240", "r64x48_b2", "r100x76"]


@pytest.fixture(scope="module")
def backbone(fixtures_dir):
    return load_backbone(fixtures_dir / "backbone_weights.safetensors")


@pytest.fixture(scope="module")
def backbone_io(fixtures_dir):
    return load_file(str(fixtures_dir / "backbone_io.safetensors"))


def test_backbone_fixture_loads_strictly_and_is_recognised(backbone):
    assert backbone.arch.name == "fixture_e64_h4_l18"
    assert backbone.rope_embed.periods.dtype == torch.bfloat16
    assert [b.attn.kv_heads for b in backbone.blocks] == [4] * 8 + [2] * 2 + [4] * 8


@pytest.mark.parametrize("case", CASES)
def test_featmap_matches_official(backbone, backbone_io, case):
    with torch.no_grad():
        out = backbone(backbone_io[f"{case}.input"])
    ref = backbone_io[f"{case}.featmap"]
    assert out.shape == ref.shape
    d = (out - ref).abs()
    assert d.max() <= 4e-3 and d.mean() <= 3e-4, (d.max().item(), d.mean().item())


@pytest.mark.parametrize("case", CASES)
def test_rope_tables_bit_exact_at_every_resolution(backbone, backbone_io, case):
    _, _, H, W = backbone_io[f"{case}.input"].shape
    sin, cos = rope_tables(backbone.rope_embed.periods, H // 16, W // 16)
    assert torch.equal(sin.float(), backbone_io[f"{case}.rope_sincos.sin"])
    assert torch.equal(cos.float(), backbone_io[f"{case}.rope_sincos.cos"])


def test_intermediates_match_official(backbone, backbone_io):
    got = {}
    hooks = [backbone.patch_embed.register_forward_hook(lambda m, i, o: got.__setitem__("patch_tokens", o[0]))]
    for b in (0, 8, 17):
        hooks.append(backbone.blocks[b].register_forward_hook(lambda m, i, o, b=b: got.__setitem__(f"block{b}_out", o)))
    hooks.append(backbone.ln1.register_forward_hook(lambda m, i, o: got.__setitem__("final_norm_out", o)))
    with torch.no_grad():
        backbone(backbone_io["r256x192.input"])
    for h in hooks:
        h.remove()
    assert set(got) == {"patch_tokens", "block0_out", "block8_out", "block17_out", "final_norm_out"}
    for name, value in got.items():
        ref = backbone_io[f"r256x192.{name}"]
        assert (value - ref).abs().max() <= 1e-3 * ref.abs().max(), name


def test_bf16_rope_is_what_makes_it_match(backbone, backbone_io):
    """The fixture's fp32-RoPE variant is ~1e-2 away; ours must be much closer to the official one."""
    with torch.no_grad():
        out = backbone(backbone_io["r256x192.input"])
    ours = (out - backbone_io["r256x192.featmap"]).abs().max()
    fp32_rope = (backbone_io["r256x192.featmap_rope_fp32"] - backbone_io["r256x192.featmap"]).abs().max()
    assert fp32_rope > 5e-3 and ours < fp32_rope / 5


def test_real_0p4b_rope_tables_and_periods_bit_exact(fixtures_dir):
    ref = load_file(str(fixtures_dir / "rope_tables.safetensors"))
    sin, cos = rope_tables(rope_periods(64), 64, 48)
    assert sin.dtype == torch.bfloat16
    assert torch.equal(sin, ref["sapiens2_0.4b.H64_W48.sin"]) and torch.equal(cos, ref["sapiens2_0.4b.H64_W48.cos"])
    for size in ("0.1b", "0.4b", "0.8b", "1b", "5b"):
        periods = rope_periods(ARCHS[f"sapiens2_{size}"].head_dim)
        assert torch.equal(periods.float(), ref[f"periods.sapiens2_{size}"]), size


def test_rope_stays_bf16_when_the_model_is_cast(backbone):
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        model = Sapiens2(ARCHS["fixture_e64_h4_l18"]).to(dtype)
        assert model.rope_embed.periods.dtype == torch.bfloat16
        assert torch.equal(model.rope_embed.periods, backbone.rope_embed.periods)


SPEC_PARAMS = {
    "sapiens2_0.1b": 113_993_488,
    "sapiens2_0.4b": 395_450_384,
    "sapiens2_0.8b": 814_283_540,
    "sapiens2_1b": 1_455_474_192,
    "sapiens2_5b": 5_066_902_995,
    "sapiens2_1b_4k": 1_606_588_944,
}


@pytest.mark.parametrize("name", list(SPEC_PARAMS))
def test_backbone_size_matches_spec(name):
    with torch.device("meta"):
        model = Sapiens2(ARCHS[name])
    assert sum(t.numel() for t in model.state_dict().values()) == SPEC_PARAMS[name]


@pytest.mark.parametrize("task", ["pose", "seg", "normal", "pointmap", "albedo"])
def test_0p4b_keys_and_shapes_equal_the_official_list(reference_dir, task):
    official = json.loads((reference_dir / "fixtures" / "state_dict_0.4b.json").read_text())
    expected = {f"backbone.{k}": tuple(v[0]) for k, v in official["backbone"].items()}
    expected.update({k: tuple(v[0]) for k, v in official["tasks"][task]["head"].items()})
    model = build_model(task, "sapiens2_0.4b", device="meta")
    got = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert got == expected
    assert len(got) == official["tasks"][task]["num_tensors"]


def test_4k_tokenizer_keys_and_forward():
    with torch.device("meta"):
        keys = set(Sapiens2(ARCHS["sapiens2_1b_4k"]).state_dict())
    for key in ("tokenizer.local_pos_embed", "tokenizer.w_cls", "tokenizer.blocks.3.attn.wq.weight",
                "tokenizer.blocks.0.ffn.w12.bias", "tokenizer.blocks.0.ln2.weight"):
        assert key in keys
    assert not any(k.startswith("tokenizer.blocks.4.") or "tokenizer.blocks.0.attn.q_norm" in k or
                   "tokenizer.blocks.0.attn.gamma" in k for k in keys)
    tiny = Sapiens2(BackboneArch("tiny_4k", 32, 2, 4, num_tokenizer_layers=1)).eval()
    with torch.no_grad():
        out = tiny(torch.randn(1, 3, 256, 128))
    assert out.shape == (1, 32, 4, 2) and torch.isfinite(out).all()


def test_window_tokenizer_sees_windows_row_major():
    """Changing one 4x4 window of patches changes only its own output token."""
    tiny = Sapiens2(BackboneArch("tiny_4k", 32, 1, 4, num_tokenizer_layers=1)).eval()
    tokens = torch.randn(1, 8 * 8, 32)
    with torch.no_grad():
        a, hw = tiny.tokenizer(tokens, (8, 8))
        grid = tokens.view(1, 8, 8, 32).clone()
        grid[0, 4:8, 0:4] += 1  # window (row 1, col 0) -> token 2
        b, _ = tiny.tokenizer(grid.view(1, 64, 32), (8, 8))
    changed = (a - b).abs().amax(dim=-1)[0] > 0
    assert hw == (2, 2) and changed.tolist() == [False, False, True, False]


def test_fp16_residual_stream_past_65504_stays_finite(backbone, backbone_io, monkeypatch):
    """fp16 (GPUs without native bf16) overflows where bf16/fp32 do not: a block whose output
    outgrows 65504 would turn the whole featmap to NaN. The guard clamps, and changes nothing
    in range (fp16 within 0.05 of fp32 on the fixture)."""
    import copy

    import realtime.models.sapiens2 as sapiens2

    x = backbone_io["r64x48_b2.input"]
    half = copy.deepcopy(backbone).half()
    with torch.no_grad():
        in_range = (half(x.half()).float() - backbone(x)).abs().max()
        half.blocks[4].ffn.w3.weight.mul_(6e4)  # this block's output now exceeds fp16's range
        guarded = half(x.half())
        monkeypatch.setattr(sapiens2, "finite_fp16", lambda t: t)
        unguarded = half(x.half())
    assert in_range < 0.05, in_range
    assert not torch.isfinite(unguarded).all()  # the overflow is real
    assert torch.isfinite(guarded).all()
