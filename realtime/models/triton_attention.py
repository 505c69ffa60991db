"""A flash-attention kernel for the Sapiens2 backbone's shapes, in Triton: `--sdpa triton`.

    out = attention(q, k, v)   # q (B, H, T, hd), k and v (B, KV, T, hd), KV dividing H -> (B, H, T, hd)

softmax(q k^T / sqrt(hd)) v with the online softmax of FlashAttention (one pass over the keys per tile of
queries, running max and sum in fp32, exp2 with the scale folded into log2(e)), no mask, forward only.
Grouped-query attention by head index: query head h reads kv head h // (H / KV), the `repeat_interleave`
order of the official code, with nothing copied. The output is written straight into the (B, T, H, hd) layout the
output projection reads (returned as the (B, H, T, hd) view SDPA gives), so the transpose after it costs nothing.

Why our own (issue 52): 3,081 tokens (3,072 patches and 9 register tokens) and 16 heads make 25 query tiles of 128
per head, 400 tiles: 3.03 waves on an H100's 132 SMs, the last one almost empty. `blocks` sizes the tiles so the
waves fill (64-row tiles, two per SM: 784 tiles, 2.97 waves; batch 2: 5.94); bench/gpu_kernels.py times every
size beside SDPA's kernels and FlexAttention inside CUDA graphs, and the measurement picks.

Runs on CUDA GPUs; on a CPU only under Triton's interpreter (`TRITON_INTERPRET=1`, set before this module is first
used: the tests). Registered as a custom op (`torch.library.triton_op`) so `torch.compile` and CUDA graphs see
one kernel. Without the triton package `available()` says why in one sentence.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Optional

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # `missing()` says what to do
    triton = tl = None

LOG2E = 1.4426950408889634
BLOCKS = ((128, 64, 8, 3), (64, 64, 4, 3), (128, 128, 8, 3), (64, 128, 4, 2))  # (rows, keys, warps, stages) to sweep


def missing(option: str = "--sdpa triton", instead: str = "pick another --sdpa") -> Optional[str]:
    """None when the Triton kernels can run here; else one sentence saying what to do."""
    if triton is None:
        return (f"{option} needs the triton package (CUDA builds of torch bring it; else `pip install triton`); "
                f"install it or {instead}.")
    return None


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def check_device(device: torch.device, option: str = "--sdpa triton", instead: str = "pick another --sdpa") -> None:
    """ValueError unless the Triton kernels can run on `device` (CUDA, or the CPU under the interpreter)."""
    if device.type != "cuda" and not (device.type == "cpu" and interpreting()):
        raise ValueError(f"{option} runs on CUDA GPUs and this run is on {device.type} (a CPU runs it only under "
                         f"TRITON_INTERPRET=1, for tests); {instead}.")


def _attn_fwd(Q, K, V, Out, scale_log2,
              s_qb, s_qh, s_qt, s_kb, s_kh, s_kt, s_vb, s_vh, s_vt, s_ob, s_oh, s_ot,
              H, T, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, IEEE: tl.constexpr, UPCAST: tl.constexpr):
    tile = tl.program_id(0)  # query tiles vary fastest: the tiles of one head run together and share its K, V in L2
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    kvh = h // GROUP  # grouped-query attention by head index (repeat_interleave order)
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    dim_ok = dims < HEAD_DIM
    q = tl.load(Q + b * s_qb + h * s_qh + rows[:, None] * s_qt + dims[None, :],
                mask=(rows[:, None] < T) & dim_ok[None, :], other=0.0)
    if UPCAST:  # the interpreter cannot multiply bf16/fp16 (numpy has no bf16): the same values in fp32
        q = q.to(tl.float32)
    running_max = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    running_sum = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
    k_base = K + b * s_kb + kvh * s_kh
    v_base = V + b * s_vb + kvh * s_vh
    for start in range(0, T, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = keys < T
        k = tl.load(k_base + keys[None, :] * s_kt + dims[:, None], mask=key_ok[None, :] & dim_ok[:, None], other=0.0)
        if UPCAST:
            k = k.to(tl.float32)
        if IEEE or UPCAST:
            s = tl.dot(q, k, input_precision="ieee")
        else:
            s = tl.dot(q, k)
        s = tl.where(key_ok[None, :], s * scale_log2, float("-inf"))  # log2 units: exp2 below is exp
        new_max = tl.maximum(running_max, tl.max(s, 1))
        p = tl.math.exp2(s - new_max[:, None])
        correction = tl.math.exp2(running_max - new_max)
        running_sum = running_sum * correction + tl.sum(p, 1)
        v = tl.load(v_base + keys[:, None] * s_vt + dims[None, :], mask=key_ok[:, None] & dim_ok[None, :], other=0.0)
        if UPCAST:  # p rounded to the input dtype as on a GPU, then multiplied in fp32
            acc = acc * correction[:, None] + tl.dot(p.to(V.dtype.element_ty).to(tl.float32), v.to(tl.float32),
                                                     input_precision="ieee")
        elif IEEE:
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        else:
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        running_max = new_max
    out = acc / running_sum[:, None]
    tl.store(Out + b * s_ob + h * s_oh + rows[:, None] * s_ot + dims[None, :], out.to(Out.dtype.element_ty),
             mask=(rows[:, None] < T) & dim_ok[None, :])


@functools.lru_cache(maxsize=2)
def _kernel(interpret: bool):
    """The jitted kernel (or, under TRITON_INTERPRET=1, the interpreted one: triton.jit reads the variable when it
    wraps the function, so it is wrapped here, per setting, not at import)."""
    return triton.jit(_attn_fwd, do_not_specialize=["T"])  # 3,072 and 3,081 tokens: one compile


_SMS: dict[int, int] = {}  # CUDA device index -> SM count, noted by `prepare` (a dict lookup is all a traced call does)


def prepare(device: torch.device) -> None:
    """Check the kernel can run on `device` (ValueError saying why not) and note its SM count for `blocks`."""
    why = missing()
    if why:
        raise RuntimeError(why)
    check_device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count


def waves(tiles: int, slots: int) -> float:
    """How full the waves are: tiles / (whole waves x slots), 1.0 when the last wave is full."""
    return tiles / (math.ceil(tiles / slots) * slots)


def blocks(batch: int, heads: int, tokens: int, sms: int) -> tuple[int, int, int, int]:
    """(query rows, keys, warps, stages) per tile: of 128-row tiles (one per SM) and 64-row tiles (two per SM, with 4
    warps each), the one whose waves are fuller (ties: 128 rows, fewer reloads of K and V)."""
    wide = waves(batch * heads * math.ceil(tokens / 128), sms)
    narrow = waves(batch * heads * math.ceil(tokens / 64), 2 * sms)
    return (64, 64, 4, 3) if narrow > wide + 1e-9 else (128, 64, 8, 3)


def _register():
    from torch.library import triton_op, wrap_triton

    @triton_op("sapiens_rt::flash_attention", mutates_args=())
    def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_m: int, block_n: int, num_warps: int,
                        num_stages: int) -> torch.Tensor:
        B, H, T, hd = q.shape
        KV = k.shape[1]
        out = torch.empty(B, T, H, hd, dtype=q.dtype, device=q.device).transpose(1, 2)  # (B, H, T, hd) view of (B, T, H, hd)
        grid = (math.ceil(T / block_m), B * H)
        wrap_triton(_kernel(interpreting()))[grid](
            q, k, v, out, LOG2E / math.sqrt(hd),
            q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1),
            v.stride(2), out.stride(0), out.stride(1), out.stride(2),
            H, T, GROUP=H // KV, HEAD_DIM=hd, BLOCK_D=max(16, 1 << (hd - 1).bit_length()), BLOCK_M=block_m,
            BLOCK_N=block_n, IEEE=q.dtype == torch.float32,
            UPCAST=q.dtype != torch.float32 and interpreting(), num_warps=num_warps, num_stages=num_stages)
        return out

    return flash_attention


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              config: Optional[tuple[int, int, int, int]] = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(hd)) v: q (B, H, T, hd), k and v (B, KV, T, hd) with KV dividing H, one dtype, the last
    dim contiguous; -> (B, H, T, hd). `config`: (query rows, keys, warps, stages) per tile, default `blocks`'s.
    Call `prepare(device)` once first (`set_sdpa_backend` does): this runs in traced code, so it only computes."""
    if _op is None:
        raise RuntimeError(missing())
    B, H, T, hd = q.shape
    kv = k.shape[1]
    if kv == 0 or H % kv or k.shape != v.shape or k.shape[::2] != q.shape[::2] or not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"attention takes q (B, H, T, hd) and k, v (B, KV, T, hd) of one dtype with KV dividing H; "
                         f"got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    if config is None:
        config = blocks(B, H, T, _SMS.get(q.device.index if q.device.index is not None else 0, 132))
    return _op(q, k, v, *config)


_op = _register() if triton is not None else None
