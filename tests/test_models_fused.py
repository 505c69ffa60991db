"""The fused backbone (q/k/v in one GEMM, q/k norms and RoPE over one bf16 buffer, SwiGLU in
place) computes bit for bit what the official unfused recipe computes, and the fused weight
stays tied to the checkpoint's wq/wk/wv through loading, casting, copying and pickling."""

import copy
import io

import pytest
import torch
import torch.nn.functional as F

from realtime.models import build_model, sapiens2
from realtime.models.archs import ARCHS
from realtime.models.sapiens2 import GroupedQueryAttention, SwiGLUFFN

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def official_attention(attn: GroupedQueryAttention, x, sin, cos):
    """sapiens/backbones/standalone/sapiens2.py GroupedQueryAttention.forward, step by step:
    three projections, norms on the permuted views, K/V repeated, RoPE in bf16 with cat."""
    B, N, _ = x.shape
    H, KV, hd = attn.num_heads, attn.kv_heads, attn.head_dim
    q = attn.wq(x).view(B, N, H, hd).permute(0, 2, 1, 3)
    k = attn.wk(x).view(B, N, KV, hd).permute(0, 2, 1, 3)
    v = attn.wv(x).view(B, N, KV, hd).permute(0, 2, 1, 3)
    q, k = attn.q_norm(q), attn.k_norm(k)
    if KV != H:
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)

    def rope(t):
        dtype, t = t.dtype, t.to(sin.dtype)
        prefix = t.shape[-2] - sin.shape[-2]
        p = t[:, :, prefix:]
        a, b = p.chunk(2, dim=-1)
        p = (p * cos) + (torch.cat([-b, a], dim=-1) * sin)
        return torch.cat((t[:, :, :prefix], p), dim=-2).to(dtype)

    o = F.scaled_dot_product_attention(rope(q), rope(k), v)
    return attn.gamma(attn.proj(o.permute(0, 2, 1, 3).reshape(B, N, H * hd)))


def _random_attention(kv_heads: int, dtype) -> GroupedQueryAttention:
    torch.manual_seed(kv_heads)
    attn = GroupedQueryAttention(64, num_heads=4, kv_heads=kv_heads).eval()
    with torch.no_grad():
        for name, p in attn.named_parameters():  # norms and LayerScale away from 1 / 1e-4, so they matter
            p.uniform_(0.5, 1.5) if "norm" in name or "gamma" in name else p.normal_(0, 0.3)
    return attn.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kv_heads", [4, 2], ids=["mha", "gqa"])
def test_fused_attention_is_bit_identical_to_the_official_recipe(kv_heads, dtype):
    attn = _random_attention(kv_heads, dtype)
    sin, cos = sapiens2.rope_tables(sapiens2.rope_periods(16), 3, 4)
    x = torch.randn(2, sapiens2.NUM_PREFIX_TOKENS + 12, 64).to(dtype)
    with torch.no_grad():
        got, want = attn(x, sin, cos), official_attention(attn, x, sin, cos)
    assert got.dtype == dtype
    assert torch.equal(got, want), (got - want).abs().max().item()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_in_place_swiglu_is_bit_identical(dtype):
    torch.manual_seed(0)
    ffn = SwiGLUFFN(32, 128).eval().to(dtype)
    x = torch.randn(2, 21, 32).to(dtype)
    with torch.no_grad():
        a, b = ffn.w12(x).chunk(2, dim=-1)
        want = ffn.w3(sapiens2.finite_fp16(F.silu(a) * b))
        assert torch.equal(ffn(x), want)


def _wide_swiglu(ffn: SwiGLUFFN, x: torch.Tensor) -> torch.Tensor:
    """The official SwiGLU: one GEMM for [a | b], then w3(silu(a) * b)."""
    a, b = F.linear(x, ffn.w12.weight, ffn.w12.bias).chunk(2, dim=-1)
    return F.linear(F.silu(a) * b, ffn.w3.weight, ffn.w3.bias)


@pytest.fixture(params=["batched", "one-by-one"])
def block_path(request, monkeypatch):
    """Run the column blocks as one batched GEMM (as many blocks as threads, or more) or one
    GEMM after another (more threads than blocks, faked); count the GEMM calls of each kind."""
    threads = 2 if request.param == "batched" else 1024  # the dev machine's 2 cores: as many as w3's blocks
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    calls = {"baddbmm": 0, "addmm": 0}
    for name in calls:
        def counted(*args, _op=getattr(torch, name), _name=name, **kwargs):  # noqa: B008 (binds this name's op)
            calls[_name] += 1
            return _op(*args, **kwargs)
        monkeypatch.setattr(torch, name, counted)
    return request.param, calls


TOKENS = [sapiens2.NUM_PREFIX_TOKENS + 192, sapiens2.NUM_PREFIX_TOKENS + 768]  # a 256x192 and a 512x384 crop


@pytest.mark.parametrize("tokens", TOKENS)
@pytest.mark.parametrize("out_features, in_features", [(8192, 1024), (3072, 1024), (2048, 1024)],
                         ids=["w12", "qkv-mha", "qkv-gqa"])  # the 0.4B's wide layers
def test_linear_in_column_blocks_is_bit_identical_to_one_wide_gemm(block_path, tokens, out_features, in_features):
    path, calls = block_path
    torch.manual_seed(out_features + tokens)
    weight, bias = torch.randn(out_features, in_features) / 32, torch.randn(out_features)
    x = torch.randn(1, tokens, in_features)
    with torch.no_grad():
        got = sapiens2.linear(x, weight, bias)
        want = F.linear(x, weight, bias)
    if path == "batched":  # one batch per slice of at most 512 rows
        assert calls == {"baddbmm": -(-tokens // sapiens2.BATCHED_MAX_ROWS), "addmm": 0}
    else:  # more threads than blocks: 1024 columns at a time
        assert calls == {"baddbmm": 0, "addmm": out_features // sapiens2.SEQUENTIAL_COLUMNS}
    assert got.is_contiguous() and torch.equal(got, want), (got - want).abs().max().item()


@pytest.mark.parametrize("tokens", TOKENS)
def test_swiglu_in_column_blocks_is_bit_identical_to_one_wide_gemm(block_path, tokens):
    path, calls = block_path
    torch.manual_seed(tokens)
    ffn = SwiGLUFFN(1024, 4096).eval()  # the 0.4B's widths
    x = torch.randn(1, tokens, 1024)
    with torch.no_grad():
        got = ffn(x)
        counted = dict(calls)
        want = _wide_swiglu(ffn, x)
    if path == "batched":  # w12, then w3 (2 blocks, as many as the threads), per slice of at most 512 rows
        assert counted == {"baddbmm": 2 * -(-tokens // sapiens2.BATCHED_MAX_ROWS), "addmm": 0}
    else:  # w12 in 8 blocks one after another; w3 is not wide, so one plain GEMM
        assert counted == {"baddbmm": 0, "addmm": 8192 // sapiens2.SEQUENTIAL_COLUMNS}
    assert torch.equal(got, want), (got - want).abs().max().item()


@pytest.mark.parametrize("kv_heads", [16, 8], ids=["mha", "gqa"])
def test_attention_at_the_0_4b_widths_is_bit_identical_to_the_official_recipe(kv_heads):
    """q/k/v (3072 or 2048 output columns) go through `linear` in column blocks here."""
    torch.manual_seed(kv_heads)
    attn = GroupedQueryAttention(1024, num_heads=16, kv_heads=kv_heads).eval()
    with torch.no_grad():
        for name, p in attn.named_parameters():
            p.uniform_(0.5, 1.5) if "norm" in name or "gamma" in name else p.normal_(0, 0.05)
    sin, cos = sapiens2.rope_tables(sapiens2.rope_periods(64), 16, 12)
    x = torch.randn(1, sapiens2.NUM_PREFIX_TOKENS + 192, 1024)
    with torch.no_grad():
        got, want = attn(x, sin, cos), official_attention(attn, x, sin, cos)
    assert torch.equal(got, want), (got - want).abs().max().item()


@pytest.mark.parametrize("arch", [a for a in ARCHS if a.startswith("sapiens2_")])
def test_every_released_arch_splits_its_wide_layers(arch):
    """Each wide layer of every released size gets a block width that divides it."""
    a = ARCHS[arch]
    E, hd = a.embed_dim, a.head_dim
    widths = {(a.num_heads + 2 * a.kv_heads(i)) * hd for i in range(a.num_layers)} | {8 * E}
    for widest in (sapiens2.BATCHED_COLUMNS, sapiens2.SEQUENTIAL_COLUMNS):
        for width in widths:
            cols = sapiens2.block_columns(width, widest)
            assert cols is not None and width % cols == 0 and width // cols >= 2, (width, cols)
        assert sapiens2.block_columns(4 * E, widest) is not None  # SwiGLU's a and b halves, each in blocks


def test_no_rows_is_one_plain_gemm(block_path):
    """A batch of no crops (nobody in the frame) gives an empty output, not a division by zero."""
    _, calls = block_path
    ffn = SwiGLUFFN(1024, 4096).eval()
    with torch.no_grad():
        assert ffn(torch.empty(0, 201, 1024)).shape == (0, 201, 1024)
    assert calls == {"baddbmm": 0, "addmm": 0}


def test_a_width_no_block_divides_is_one_plain_gemm(block_path):
    _, calls = block_path
    weight, bias, x = torch.randn(1500, 64), torch.randn(1500), torch.randn(2, 37, 64)
    with torch.no_grad():
        assert torch.equal(sapiens2.linear(x, weight, bias), F.linear(x, weight, bias))
    assert calls == {"baddbmm": 0, "addmm": 0}


def test_swiglu_with_autograd_or_off_the_cpu_path_is_one_wide_gemm(monkeypatch):
    blocks = []
    monkeypatch.setattr(F, "linear", lambda x, w, b=None, _linear=F.linear: blocks.append(w.shape[0]) or _linear(x, w, b))
    ffn = SwiGLUFFN(32, 2048)
    x = torch.randn(1, 5, 32)
    ffn(x).sum().backward()  # training keeps the official graph
    with torch.no_grad():
        ffn.to(torch.bfloat16)(x.to(torch.bfloat16))  # other dtypes too
    assert blocks == [4096, 32, 4096, 32]


def _assert_tied(attn: GroupedQueryAttention) -> None:
    assert attn.qkv_tied()
    assert torch.equal(attn.qkv_weight, torch.cat((attn.wq.weight, attn.wk.weight, attn.wv.weight)))
    assert torch.equal(attn.qkv_bias, torch.cat((attn.wq.bias, attn.wk.bias, attn.wv.bias)))
    with torch.no_grad():  # a write through the checkpoint's parameter reaches the fused GEMM
        attn.wk.weight[0, 0] += 1
        assert attn.qkv_weight[attn.wq.out_features, 0] == attn.wk.weight[0, 0]
        attn.wk.weight[0, 0] -= 1


def _backbones():
    torch.manual_seed(0)
    a = build_model("pose", "fixture_e32_h4_l18").backbone
    torch.manual_seed(1)
    b = build_model("pose", "fixture_e32_h4_l18").backbone
    return a, b


def _same_output(a, b, dtype=torch.float32):
    x = torch.randn(1, 3, 64, 48).to(dtype)
    with torch.no_grad():
        return torch.equal(a(x), b(x))


def test_load_state_dict_copies_into_the_fused_weight():
    a, b = _backbones()
    assert not _same_output(a, b)
    a.load_state_dict(b.state_dict())
    for block in a.blocks:
        _assert_tied(block.attn)
    assert _same_output(a, b)


def test_assign_load_is_retied():
    a, b = _backbones()
    a.load_state_dict({k: v.clone() for k, v in b.state_dict().items()}, assign=True)
    for block in a.blocks:
        _assert_tied(block.attn)
    assert _same_output(a, b)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_casting_keeps_the_fused_weight_tied(dtype):
    a, b = _backbones()
    a.load_state_dict(b.state_dict())
    a.half() if dtype == torch.float16 else a.bfloat16()
    b.to(dtype)
    for block in a.blocks:
        assert block.attn.qkv_weight.dtype == dtype
        _assert_tied(block.attn)
    assert _same_output(a, b, dtype)


def test_deepcopy_and_pickle_keep_the_fused_weight_tied():
    a, _ = _backbones()
    buffer = io.BytesIO()
    torch.save(a, buffer)
    buffer.seek(0)
    for twin in (copy.deepcopy(a), torch.load(buffer, weights_only=False)):
        for block in twin.blocks:
            _assert_tied(block.attn)
        assert _same_output(a, twin)


def test_state_dict_keys_are_the_checkpoints():
    model = build_model("pose", "sapiens2_0.4b", device="meta").backbone
    keys = set(model.state_dict())
    assert not any("qkv" in k for k in keys)
    assert {f"blocks.3.attn.{w}.{p}" for w in ("wq", "wk", "wv") for p in ("weight", "bias")} <= keys
    assert model.blocks[9].attn.qkv_weight.shape == (1024 + 2 * 512, 1024)  # a GQA layer: 8 kv heads of 64
