"""Fewer memory passes in the backbone, as Triton kernels: `Predictor(fuse=True)` / `--fuse`.

    h = swiglu_linear(x, w12.weight, w12.bias)   # silu(x Wa^T + ba) * (x Wb^T + bb), [Wa; Wb] = w12: (M, hidden)
    s, y = add_rms_norm(x, r, weight)             # s = x + r (the residual stream), y = rms_norm(s) * weight

- **SwiGLU in its GEMM's epilogue.** Eager, w12's output (M x 8,192 for the 0.4B) is written, read back by SiLU
  (in place), read again with the gate by the product and the product written: about 5 passes over M x 4,096
  values per layer, 1.2 ms a frame on an H100 (issue 52). Here each tile of the product keeps the two
  accumulators (a and the gate) in registers and writes only silu(a) * b: w12's output never reaches memory.
- **The residual add and the next RMSNorm in one pass**: one row per program reads x and r once, writes the
  sum (the residual stream, rounded as the eager add rounds it) and the normed row (computed from that rounded
  sum, as eager does). The last block's sum meets the final norm the same way.

Both compute in fp32 and round once; the eager path rounds SiLU's output and the product separately, so bf16
results differ in the last bits (tests/triton_interpreted.py bounds it). Compiled, inductor already fuses the
memory-bound parts (not the epilogue into cuBLAS's GEMM): bench/gpu_kernels.py times each form inside CUDA
graphs, and the option stays off until that says it pays. CUDA only (the CPU under TRITON_INTERPRET=1 for tests).
"""

from __future__ import annotations

import math

import torch

from realtime.models.triton_attention import interpreting, missing

try:
    import triton
    import triton.language as tl
except ImportError:  # `missing()` says what to do
    triton = tl = None

SWIGLU_BLOCKS = ((128, 128, 64, 8, 3), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4))  # (rows, cols, depth, warps, stages)


def _swiglu_gemm_kernel(X, W, B, Out, M, N, K, s_xm, s_wn, s_om,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                        IEEE: tl.constexpr, UPCAST: tl.constexpr):
    # tiles grouped GROUP_M rows at a time, so the weight columns a group reads stay in L2 while its rows go by
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(tl.cdiv(M, BLOCK_M) - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    depth = tl.arange(0, BLOCK_K)
    acc_a = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    acc_b = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + depth
        x = tl.load(X + rows[:, None] * s_xm + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w_mask = (ks[:, None] < K) & (cols[None, :] < N)
        wa = tl.load(W + cols[None, :] * s_wn + ks[:, None], mask=w_mask, other=0.0)  # (K, N): rows n of w12, transposed
        wb = tl.load(W + (cols[None, :] + N) * s_wn + ks[:, None], mask=w_mask, other=0.0)  # the gate: rows N + n
        if UPCAST:  # the interpreter cannot multiply bf16/fp16: the same values in fp32
            x = x.to(tl.float32)
            wa = wa.to(tl.float32)
            wb = wb.to(tl.float32)
        if IEEE or UPCAST:
            acc_a += tl.dot(x, wa, input_precision="ieee")
            acc_b += tl.dot(x, wb, input_precision="ieee")
        else:
            acc_a += tl.dot(x, wa)
            acc_b += tl.dot(x, wb)
    col_ok = cols < N
    a = acc_a + tl.load(B + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    b = acc_b + tl.load(B + N + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    out = a / (1.0 + tl.math.exp2(-a * 1.4426950408889634)) * b  # silu(a) * b
    tl.store(Out + rows[:, None] * s_om + cols[None, :], out.to(Out.dtype.element_ty), mask=(rows[:, None] < M) & col_ok[None, :])


def _add_rms_norm_kernel(X, R, W, S, Y, M, N, s_x, s_r, s_s, s_y, eps, limit,
                         BLOCK: tl.constexpr, ROWS: tl.constexpr, CLAMP: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    ok = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * s_x + cols[None, :], mask=ok, other=0.0).to(tl.float32)
    r = tl.load(R + rows[:, None] * s_r + cols[None, :], mask=ok, other=0.0).to(tl.float32)
    s = x + r
    if CLAMP:  # fp16: the residual stream kept inside its range (sapiens2.finite_fp16)
        s = tl.minimum(tl.maximum(s, -limit), limit)
    s = s.to(S.dtype.element_ty)
    tl.store(S + rows[:, None] * s_s + cols[None, :], s, mask=ok)
    s = s.to(tl.float32)  # the norm reads the rounded sum, as the eager norm reads the stored one
    inv = 1.0 / tl.sqrt(tl.sum(s * s, 1) / N + eps)
    w = tl.load(W + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(Y + rows[:, None] * s_y + cols[None, :], (s * inv[:, None] * w[None, :]).to(Y.dtype.element_ty), mask=ok)


_KERNELS: dict = {}


def _kernel(fn, interpret: bool, rows_vary: bool = False):
    """`fn` jitted (interpreted under TRITON_INTERPRET=1: triton.jit reads it when it wraps, so it wraps here, per
    setting); `rows_vary`: one compile for every row count (M is not specialised)."""
    key = (fn.__name__, interpret)
    if key not in _KERNELS:
        _KERNELS[key] = triton.jit(fn, do_not_specialize=["M"] if rows_vary else ())
    return _KERNELS[key]


def _register():
    from torch.library import triton_op, wrap_triton

    @triton_op("sapiens_rt::swiglu_linear", mutates_args=())
    def swiglu_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, block_m: int, block_n: int, block_k: int,
                  num_warps: int, num_stages: int) -> torch.Tensor:
        M, K = x.shape
        N = weight.shape[0] // 2
        out = torch.empty(M, N, dtype=x.dtype, device=x.device)
        grid = (math.ceil(M / block_m) * math.ceil(N / block_n),)
        wrap_triton(_kernel(_swiglu_gemm_kernel, interpreting(), rows_vary=True))[grid](
            x, weight, bias, out, M, N, K, x.stride(0), weight.stride(0), out.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, IEEE=x.dtype == torch.float32,
            UPCAST=x.dtype != torch.float32 and interpreting(), num_warps=num_warps, num_stages=num_stages)
        return out

    @triton_op("sapiens_rt::add_rms_norm", mutates_args=())
    def add_rms_norm_op(x: torch.Tensor, r: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        M, N = x.shape
        s, y = torch.empty_like(x), torch.empty_like(x)
        block = max(16, 1 << (N - 1).bit_length())
        rows = max(1, min(16, 4096 // block))  # 4 rows of the 0.4B's 1,024 per program
        limit = torch.finfo(torch.float16).max - 1000
        wrap_triton(_kernel(_add_rms_norm_kernel, interpreting(), rows_vary=True))[(math.ceil(M / rows),)](
            x, r, weight, s, y, M, N, x.stride(0), r.stride(0), s.stride(0), y.stride(0), eps, limit,
            BLOCK=block, ROWS=rows, CLAMP=x.dtype == torch.float16, num_warps=4 if block * rows <= 4096 else 8)
        return s, y

    return swiglu_op, add_rms_norm_op


def _fit(n: int, most: int) -> int:
    """The power of two at least n (and 16), at most `most`."""
    return max(16, min(most, 1 << (n - 1).bit_length()))


def swiglu_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                  config: tuple[int, int, int, int, int] | None = None) -> torch.Tensor:
    """silu(a) * b with [a | b] = F.linear(x, weight, bias): x (..., K), weight (2N, K), bias (2N,) -> (..., N).
    `config`: (rows, cols, depth, warps, stages) per tile (default SWIGLU_BLOCKS[0]; small inputs get small tiles)."""
    if _ops is None:
        raise RuntimeError(missing())
    rows = x.reshape(-1, x.shape[-1])
    rows = rows if rows.stride(-1) == 1 else rows.contiguous()
    if config is None:  # small inputs (tests, tiny models): one tile as large as the input, up to 64 x 128
        M, K, N = rows.shape[0], rows.shape[1], weight.shape[0] // 2
        config = SWIGLU_BLOCKS[0] if M >= 128 else (_fit(M, 64), _fit(N, 128), _fit(K, 64), 4, 2)
    out = _ops[0](rows, weight.contiguous(), bias.contiguous(), *config)
    return out.view(*x.shape[:-1], weight.shape[0] // 2)


def add_rms_norm(x: torch.Tensor, r: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(x + r, rms_norm(x + r) * weight) over the last dim, in one pass; x and r (..., N) of one dtype."""
    if _ops is None:
        raise RuntimeError(missing())
    shape = x.shape
    xs, rs = x.reshape(-1, shape[-1]), r.reshape(-1, shape[-1])
    xs, rs = (t if t.stride(-1) == 1 else t.contiguous() for t in (xs, rs))
    s, y = _ops[1](xs, rs, weight.contiguous(), eps)
    return s.view(shape), y.view(shape)


_ops = _register() if triton is not None else None
