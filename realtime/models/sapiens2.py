"""The Sapiens2 ViT backbone (docs/numerics.md, "Backbone"), with attribute paths equal to the
official state-dict keys so released files load with strict=True.

Numerics that matter (docs/numerics.md, "RoPE tables"): RoPE tables and the rotation itself are
computed in bfloat16 even in an fp32 model (once per patch grid, kept as buffers),
GQA kv heads serve query heads in `repeat_interleave` order (SDPA's `enable_gqa`),
all RMSNorms use eps 1e-6.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from realtime.models.archs import PATCH_SIZE, BackboneArch
from realtime.models.cpu_fp32 import cpu_fp32_inference

NUM_STORAGE_TOKENS = 8
NUM_PREFIX_TOKENS = 1 + NUM_STORAGE_TOKENS  # cls + storage ("register") tokens
ROPE_BASE = 100.0
ROPE_DTYPE = torch.bfloat16
# fp16 tops out at 65504: a residual stream that grows past it turns inf, then NaN after the
# next norm, and every output of the frame with it. Clamping just below (the T5 habit) keeps it finite.
FP16_LIMIT = torch.finfo(torch.float16).max - 1000


def finite_fp16(x: torch.Tensor) -> torch.Tensor:
    """`x` clamped into fp16's range when it is fp16 (no host sync); other dtypes untouched."""
    return x.clamp(-FP16_LIMIT, FP16_LIMIT) if x.dtype == torch.float16 else x


def rope_periods(head_dim: int, base: float = ROPE_BASE, device=None) -> torch.Tensor:
    """The `rope_embed.periods` buffer, (head_dim/4,) bf16, every step rounded to bf16."""
    exponent = 2 * torch.arange(head_dim // 4, dtype=ROPE_DTYPE, device=device) / (head_dim // 2)
    return base**exponent


def rope_tables(periods: torch.Tensor, h: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(sin, cos), each (h*w, head_dim) bf16, for a patch grid h x w (docs/numerics.md, "RoPE tables").

    Columns are [y-angles | x-angles] tiled twice; coordinates are patch centres
    normalised per axis to (-1, 1), so any resolution spans the same range."""
    periods = periods.to(ROPE_DTYPE)
    device = periods.device
    coords_h = torch.arange(0.5, h, dtype=ROPE_DTYPE, device=device) / h
    coords_w = torch.arange(0.5, w, dtype=ROPE_DTYPE, device=device) / w
    coords = torch.stack(torch.meshgrid(coords_h, coords_w, indexing="ij"), dim=-1).flatten(0, 1)
    coords = 2.0 * coords - 1.0
    angles = 2 * math.pi * coords[:, :, None] / periods[None, None, :]  # (N, 2, hd/4)
    angles = angles.flatten(1, 2).tile(2)
    return torch.sin(angles), torch.cos(angles)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """Rotate the patch tokens of x (B, heads, T, hd); the first T - N prefix tokens
    pass unrotated. All of x is rounded to the table dtype (bf16), as officially."""
    dtype = x.dtype
    x = x.to(cos.dtype)
    n = cos.shape[0]
    prefix, patches = x[..., :-n, :], x[..., -n:, :]
    patches = (patches * cos) + (_rotate_half(patches) * sin)
    return torch.cat((prefix, patches), dim=-2).to(dtype)


class RopePositionEmbedding(nn.Module):
    """Owns the bf16 `periods` buffer; it stays bf16 whatever dtype the model is cast to,
    so fp32, bf16 and fp16 models all rotate with the trained bf16 RoPE.

    The (sin, cos) tables of each patch grid are computed once, eagerly and in bf16 as
    officially, and kept as non-persistent buffers `sin_HxW` / `cos_HxW`: a forward only
    looks them up, so `torch.compile` never traces (and never re-rounds) their maths."""

    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.register_buffer("periods", rope_periods(head_dim), persistent=True)
        self._grids: set[tuple[int, int]] = set()  # grids whose tables are buffers

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        self.periods = self.periods.to(ROPE_DTYPE)  # values are bf16-exact, so this is lossless
        for h, w in self._grids:  # recomputed where they now live, never cast (fp16 would flush tiny sines)
            self._make_tables(h, w)
        return self

    def _load_from_state_dict(self, *args, **kwargs):
        super()._load_from_state_dict(*args, **kwargs)
        for h, w in self._grids:  # new periods: the tables follow
            self._make_tables(h, w)

    def _make_tables(self, h: int, w: int) -> None:
        if torch.compiler.is_compiling():  # always eager: the official bf16 rounding, step by step
            # outside the graph, as `@torch.compiler.disable` would have it; decorating the method
            # instead would import torch._dynamo (slow) in every process that never compiles
            return torch.compiler.disable(RopePositionEmbedding._make_tables)(self, h, w)
        with torch.inference_mode(False), torch.no_grad():
            sin, cos = rope_tables(self.periods.detach(), h, w)
        self.register_buffer(f"sin_{h}x{w}", sin, persistent=False)
        self.register_buffer(f"cos_{h}x{w}", cos, persistent=False)
        self._grids.add((h, w))

    def forward(self, h: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
        if (h, w) not in self._grids:
            self._make_tables(h, w)
        return getattr(self, f"sin_{h}x{w}"), getattr(self, f"cos_{h}x{w}")


class PatchEmbed(nn.Module):
    """16x16 non-overlapping patches -> tokens (B, h*w, E), row-major; ragged edges dropped."""

    def __init__(self, embed_dim: int, patch_size: int = PATCH_SIZE) -> None:
        super().__init__()
        self.projection = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[int, int]]:
        x = self.projection(x)
        h, w = x.shape[-2:]
        return x.flatten(2).transpose(1, 2), (h, w)


class LayerScale(nn.Module):
    def __init__(self, dim: int, init: float = 1e-4) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.full((dim,), init))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


def rope_(qk: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """Rotate, in place, the last N = len(cos) tokens of qk (B, T, heads, hd), q and k heads
    side by side, already in the table dtype (bf16). Bit for bit the official
    `x * cos + rotate_half(x) * sin`: every product and sum is rounded to bf16 as there, and
    `-x2 * s` is `-(x2 * s)` exactly, so the first half subtracts what the official adds."""
    n, half = cos.shape[0], qk.shape[-1] // 2
    x = qk[:, -n:]
    sin, cos = sin[:, None], cos[:, None]  # over heads
    x2_sin1 = x[..., half:] * sin[..., :half]
    x1_sin2 = x[..., :half] * sin[..., half:]
    x.mul_(cos)
    x[..., :half].sub_(x2_sin1)
    x[..., half:].add_(x1_sin2)
    return qk


class GroupedQueryAttention(nn.Module):
    """Multi-head attention with optional GQA, QK-norm, RoPE and LayerScale (docs/numerics.md, "Backbone").

    `qk_norm` / `layer_scale` are off in the 4K tokenizer blocks; without RoPE
    tables (`sin=None`) no rotation is applied.

    q, k and v come from one GEMM: `qkv_weight` / `qkv_bias` (non-persistent buffers) hold
    [wq; wk; wv] and the checkpoint's `wq`/`wk`/`wv` parameters are views into them, so the
    state dict keeps the official keys. The views are re-tied after anything that replaces
    parameters (`.to()`/`.half()`, `load_state_dict(assign=True)`, deepcopy, unpickling);
    assigning a new Parameter to `wq.weight` by hand unties them (call `tie_qkv()`)."""

    sdpa = "default"  # the attention kernel (SDPA_BACKENDS); `set_sdpa_backend` sets it per model

    def __init__(self, embed_dim: int, num_heads: int, kv_heads: int, *, qk_norm: bool = True, layer_scale: bool = True) -> None:
        super().__init__()
        self.num_heads, self.kv_heads = num_heads, kv_heads
        self.head_dim = embed_dim // num_heads
        self.wq = nn.Linear(embed_dim, embed_dim)
        self.wk = nn.Linear(embed_dim, kv_heads * self.head_dim)
        self.wv = nn.Linear(embed_dim, kv_heads * self.head_dim)
        if qk_norm:
            self.q_norm = nn.RMSNorm(self.head_dim, eps=1e-6)
            self.k_norm = nn.RMSNorm(self.head_dim, eps=1e-6)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.gamma = LayerScale(embed_dim) if layer_scale else nn.Identity()
        self.tie_qkv()
        self.register_load_state_dict_post_hook(_retie_after_load)

    def _fusable(self) -> bool:
        """wq/wk/wv are plain nn.Linear (not swapped for other layers, e.g. FP8)."""
        return all(type(getattr(self, n, None)) is nn.Linear for n in ("wq", "wk", "wv"))

    def qkv_tied(self) -> bool:
        """Whether wq/wk/wv are still views into `qkv_weight` / `qkv_bias` (always, once swapped:
        swapped layers run themselves)."""
        if not self._fusable():
            return True
        w, b = self.qkv_weight, self.qkv_bias
        return all(
            m.weight.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
            and m.bias.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
            and m.weight.dtype == w.dtype and m.weight.device == w.device
            for m in (self.wq, self.wk, self.wv)
        )

    def tie_qkv(self) -> None:
        """(Re)build the fused weight from wq/wk/wv and make those views into it."""
        if not self._fusable():  # swapped layers (FP8) run one by one: no fused copy to keep
            self.register_buffer("qkv_weight", None, persistent=False)
            self.register_buffer("qkv_bias", None, persistent=False)
            return
        parts = (self.wq, self.wk, self.wv)
        with torch.no_grad():
            weight = torch.cat([m.weight for m in parts])
            bias = torch.cat([m.bias for m in parts])
        self.register_buffer("qkv_weight", weight, persistent=False)
        self.register_buffer("qkv_bias", bias, persistent=False)
        start = 0
        for m in parts:
            stop = start + m.out_features
            m.weight = nn.Parameter(weight[start:stop], requires_grad=m.weight.requires_grad)
            m.bias = nn.Parameter(bias[start:stop], requires_grad=m.bias.requires_grad)
            start = stop

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        self.tie_qkv()  # the conversion made separate tensors of the views
        return self

    def __setstate__(self, state):
        super().__setstate__(state)
        if not self.qkv_tied():  # deepcopy clones each Parameter apart
            self.tie_qkv()

    def forward(self, x: torch.Tensor, sin: torch.Tensor | None = None, cos: torch.Tensor | None = None) -> torch.Tensor:
        B, T, _ = x.shape
        H, KV, hd = self.num_heads, self.kv_heads, self.head_dim
        if self._fusable():
            qkv = linear(x, self.qkv_weight, self.qkv_bias)  # (B, T, (H + 2 KV) hd): [q | k | v]
        elif hasattr(self, "qkv"):  # one swapped layer for all three (FP8: `fp8.to_float8`)
            qkv = self.qkv(x)
        else:  # swapped layers each run themselves
            qkv = torch.cat([self.wq(x), self.wk(x), self.wv(x)], dim=-1)
        qk = qkv[..., : (H + KV) * hd].view(B, T, H + KV, hd)
        v = qkv[..., (H + KV) * hd :].view(B, T, KV, hd).transpose(1, 2)
        if sin is not None and torch.jit.is_tracing():
            # A traced export (ONNX) cannot follow the in-place writes below: the official
            # out-of-place recipe, same numbers.
            q, k = qk[:, :, :H].transpose(1, 2), qk[:, :, H:].transpose(1, 2)
            if hasattr(self, "q_norm"):
                q, k = self.q_norm(q), self.k_norm(k)
            q, k = apply_rope(q, sin, cos), apply_rope(k, sin, cos)
        elif sin is not None:
            # q and k side by side in one bf16 buffer: the norms write into it (the official
            # casts to bf16 after the norm), RoPE rotates it in place, one cast back.
            rot = torch.empty(B, T, H + KV, hd, dtype=sin.dtype, device=x.device)
            if hasattr(self, "q_norm"):
                rot[:, :, :H].copy_(self.q_norm(qk[:, :, :H]))
                rot[:, :, H:].copy_(self.k_norm(qk[:, :, H:]))
            else:
                rot.copy_(qk)
            qk = rope_(rot, sin, cos).to(x.dtype)
            q, k = qk[:, :, :H].transpose(1, 2), qk[:, :, H:].transpose(1, 2)
        else:
            q, k = qk[:, :, :H].transpose(1, 2), qk[:, :, H:].transpose(1, 2)
            if hasattr(self, "q_norm"):
                q, k = self.q_norm(q), self.k_norm(k)
        # GQA: kv head j serves query heads j*r .. j*r+r-1 (repeat_interleave order), without
        # materialising the repeated K/V where the kernel supports it.
        o = attention(q, k, v, self.sdpa, heads=(H, KV))
        return self.gamma(self.proj(o.transpose(1, 2).reshape(B, T, -1)))


# Explicit attention kernels (`--sdpa`): PyTorch's default picks one by its own rules, and with
# `enable_gqa` (the GQA layers) that is FlashAttention-2 on a Hopper GPU. cuDNN's fused attention
# takes equal q and kv head counts, so the KV heads are expanded first (repeat_interleave: a copy
# of K and V, counted by bench/gpu_estimate.py). "triton" is the project's own kernel for these
# shapes (realtime/models/triton_attention.py; CUDA, needs the triton package). bench/gpu_kernels.py
# times each inside CUDA graphs.
SDPA_BACKENDS = ("default", "flash", "cudnn", "efficient", "math", "triton")
_EQUAL_HEADS = ("cudnn", "efficient")  # kernels that take no enable_gqa: K/V heads are expanded


def _sdpa_kernels(name: str):
    from torch.nn.attention import SDPBackend

    return {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[name]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, backend: str = "default", *,
              heads: tuple[int, int] | None = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(hd)) v for q (B, H, T, hd) and k, v (B, KV, T, hd), KV dividing H;
    `backend` one of SDPA_BACKENDS ("default": PyTorch's choice). heads: (H, KV) as Python
    ints, which the layers pass: a traced export (ONNX) sees shapes as tensors, and SDPA's
    `enable_gqa` must be a plain bool."""
    H, KV = heads if heads is not None else (q.shape[1], k.shape[1])
    if backend == "default":
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=KV != H)
    if backend == "triton":
        from realtime.models import triton_attention

        return triton_attention.attention(q, k, v)
    from torch.nn.attention import sdpa_kernel

    if KV != H and backend in _EQUAL_HEADS:
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        KV = H
    with sdpa_kernel(_sdpa_kernels(backend)):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=KV != H)


def set_sdpa_backend(model: nn.Module, backend: str) -> int:
    """Run every attention layer of `model` with the SDPA kernel `backend` (SDPA_BACKENDS);
    returns how many layers. A kernel the device cannot run fails at the first forward, with
    PyTorch's reason (the Predictor's warm-up, before any output exists); "triton" is checked here
    (the package installed, a CUDA device), a user error in one sentence when it cannot run."""
    if backend not in SDPA_BACKENDS:
        raise ValueError(f"SDPA backend must be one of {SDPA_BACKENDS}, got {backend!r}")
    layers = [m for m in model.modules() if isinstance(m, GroupedQueryAttention)]
    if backend == "triton" and layers:
        from realtime.errors import UserError
        from realtime.models import triton_attention

        try:
            triton_attention.prepare(next(model.parameters()).device)
        except (RuntimeError, ValueError) as error:  # no triton package, or not a CUDA device
            raise UserError(str(error)) from None
    for layer in layers:
        layer.sdpa = backend
    return len(layers)


def set_fused_kernels(model: nn.Module, on: bool = True, norms: bool = True) -> int:
    """Run every Sapiens2 backbone in `model` with the fused Triton passes (`realtime.models.triton_fused`: SwiGLU in
    w12's GEMM epilogue, and with `norms` each residual add + RMSNorm in one pass), or not; returns how many
    backbones. Compiled, leave `norms` off: inductor fuses the add and the norm with more of their neighbours than a
    kernel of their own can (bench/gpu_estimate.py counts 0.25 ms a frame for it on an H100). A user error in one
    sentence where they cannot run (no triton package, not a CUDA device)."""
    backbones = [m for m in model.modules() if isinstance(m, Sapiens2)]
    if on and backbones:
        from realtime.errors import UserError
        from realtime.models import triton_attention

        why = triton_attention.missing("fuse=True (--fuse)", "drop it")
        if why is None:
            try:
                triton_attention.check_device(next(model.parameters()).device, "fuse=True (--fuse)", "drop it")
            except ValueError as error:
                why = str(error)
        if why is not None:
            raise UserError(why)
        from realtime.models import triton_fused  # noqa: F401  (loaded now: a traced forward only looks it up)
    for backbone in backbones:
        backbone.fused = on and norms
        for block in backbone.blocks:
            block.ffn.fused = on
    return len(backbones)


def _retie_after_load(module: GroupedQueryAttention, incompatible_keys) -> None:
    if not module.qkv_tied():  # load_state_dict(assign=True) put new Parameters in
        module.tie_qkv()


# Linear layers in column blocks on a CPU (see column_blocks): columns and the most rows per
# GEMM of a batch, and columns per GEMM one after another.
BATCHED_COLUMNS, BATCHED_MAX_ROWS = 512, 512
SEQUENTIAL_COLUMNS = 1024  # outputs wider than this also run slower as one MKL sgemm


def block_columns(out_features: int, widest: int) -> int | None:
    """The widest block of `widest`, `widest`/2, /4 or /8 columns that divides `out_features`
    into two or more blocks (the 0.1B's, 0.8B's and 5B's q/k/v need the narrower ones); else None."""
    for cols in (widest, widest // 2, widest // 4, widest // 8):
        if out_features % cols == 0:
            return cols if out_features > cols else None
    return None


def column_plan(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, parts: int = 1) -> tuple[int, bool] | None:
    """(columns per block, batched?) when this linear layer runs in column blocks, else None:
    fp32 CPU inference only, where blocks are faster than one GEMM (see column_blocks).
    `parts`: the output is that many equal parts (SwiGLU's a and b), each split into blocks."""
    if not cpu_fp32_inference(x) or x.numel() == 0 or bias is None or not (weight.is_contiguous() and bias.is_contiguous()):
        return None
    out_features = weight.shape[0]
    cols = block_columns(out_features // parts, BATCHED_COLUMNS)
    if cols is not None and out_features // cols >= torch.get_num_threads():
        return cols, True
    cols = block_columns(out_features // parts, SEQUENTIAL_COLUMNS)
    if cols is not None and out_features > SEQUENTIAL_COLUMNS:
        return cols, False
    return None


def column_blocks(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, plan: tuple[int, bool]):
    """Yield (row slice, (n, rows in the slice, cols)): `F.linear(x, weight, bias)` of x's rows
    (leading dims flattened) in n = out_features / cols column blocks, block i from the
    weight's rows i*cols .. (i+1)*cols.

    Bit-identical to the one wide GEMM (each output element is the same dot product through
    the same sgemm kernel; tests/test_models_fused.py) and faster on a CPU (`column_plan`
    picks the way; docs/backbone-speed.md has the measurements):
    - **Batched**, with at least as many blocks as threads: one `baddbmm` per slice of at most
      BATCHED_MAX_ROWS rows, which MKL runs one whole GEMM per thread, so no thread splits a
      GEMM and waits for the other. Past that many rows one batch of all of them was slower
      than slices, hence the slices.
    - **One after another** otherwise, for outputs wider than SEQUENTIAL_COLUMNS, all rows at
      once: MKL's fp32 sgemm slows down as a GEMM's output gets wide (SwiGLU's w12)."""
    cols, batched = plan
    n, k = weight.shape[0] // cols, weight.shape[1]
    rows = x.reshape(-1, k)
    blocks_t = weight.view(n, cols, k).transpose(1, 2)  # (n, k, cols): views, no copy
    if not batched:
        out = rows.new_empty(n, rows.shape[0], cols)
        for i in range(n):
            torch.addmm(bias[i * cols : (i + 1) * cols], rows, blocks_t[i], out=out[i])
        yield slice(None), out
        return
    slices = -(-rows.shape[0] // BATCHED_MAX_ROWS)
    size = -(-rows.shape[0] // slices)  # balanced: 777 rows are 389 + 388, not 512 + 265
    for start in range(0, rows.shape[0], size):
        part = rows[start : start + size]
        yield slice(start, start + size), torch.baddbmm(bias.view(n, 1, cols).expand(n, part.shape[0], cols),
                                                        part.expand(n, -1, -1), blocks_t)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """`F.linear`; in fp32 CPU inference made in column blocks where that is faster
    (`column_blocks`, bit-identical) and laid out as one (..., out_features) tensor."""
    plan = column_plan(x, weight, bias)
    if plan is None:
        return F.linear(x, weight, bias)
    out = x.new_empty(*x.shape[:-1], weight.shape[0])
    out_rows = out.view(-1, weight.shape[0])
    for rows, blocks in column_blocks(x, weight, bias, plan):
        out_rows[rows].view(-1, blocks.shape[0], plan[0]).copy_(blocks.transpose(0, 1))
    return out


class SwiGLUFFN(nn.Module):
    """w3(silu(a) * b) with [a | b] = w12(x); hidden = 4E (docs/numerics.md, "Backbone").

    Without autograd silu runs in place in the a-half of w12's output: one temporary, not
    two, the same roundings. (The product stays a new contiguous tensor: w3's GEMM on the
    strided half rounds differently.) In fp32 CPU inference w12 and w3 run in column blocks
    (`column_blocks`), and silu(a) * b is written block by block straight into its place."""

    fused = False  # silu(a) * b in w12's GEMM epilogue (realtime/models/triton_fused.py); `set_fused_kernels` sets it

    def __init__(self, embed_dim: int, hidden: int) -> None:
        super().__init__()
        self.w12 = nn.Linear(embed_dim, 2 * hidden)
        self.w3 = nn.Linear(hidden, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused and type(self.w12) is nn.Linear:  # w12's output never reaches memory
            from realtime.models import triton_fused

            return self.w3(triton_fused.swiglu_linear(x, self.w12.weight, self.w12.bias))
        if type(self.w12) is nn.Linear and type(self.w3) is nn.Linear:
            plan = column_plan(x, self.w12.weight, self.w12.bias, parts=2)  # a and b split at a block edge
            if plan is not None:
                return linear(self._hidden_in_column_blocks(x, plan), self.w3.weight, self.w3.bias)
        a, b = self.w12(x).chunk(2, dim=-1)
        if torch.is_grad_enabled() and a.requires_grad:
            return self.w3(finite_fp16(F.silu(a) * b))
        return self.w3(finite_fp16(F.silu(a, inplace=True) * b))

    def _hidden_in_column_blocks(self, x: torch.Tensor, plan: tuple[int, bool]) -> torch.Tensor:
        """silu(a) * b (..., hidden), from w12's column blocks: the first half of the blocks
        are a's, the second half b's, so gate block i pairs with up block n + i."""
        out = x.new_empty(*x.shape[:-1], self.w3.in_features)
        out_rows = out.view(-1, self.w3.in_features)
        for rows, blocks in column_blocks(x, self.w12.weight, self.w12.bias, plan):
            n, cols = blocks.shape[0] // 2, plan[0]
            torch.mul(F.silu(blocks[:n], inplace=True), blocks[n:], out=out_rows[rows].view(-1, n, cols).transpose(0, 1))
        return out


class TransformerBlock(nn.Module):
    """x + attn(ln1(x)), then + ffn(ln2(x)); LayerScale lives inside attn."""

    def __init__(self, embed_dim: int, num_heads: int, kv_heads: int, *, qk_norm: bool = True, layer_scale: bool = True) -> None:
        super().__init__()
        self.ln1 = nn.RMSNorm(embed_dim, eps=1e-6)
        self.attn = GroupedQueryAttention(embed_dim, num_heads, kv_heads, qk_norm=qk_norm, layer_scale=layer_scale)
        self.ln2 = nn.RMSNorm(embed_dim, eps=1e-6)
        self.ffn = SwiGLUFFN(embed_dim, 4 * embed_dim)

    def forward(self, x: torch.Tensor, sin: torch.Tensor | None = None, cos: torch.Tensor | None = None) -> torch.Tensor:
        x = finite_fp16(x + self.attn(self.ln1(x), sin, cos))
        return finite_fp16(x + self.ffn(self.ln2(x)))


class WindowTokenizer(nn.Module):
    """4K variant (docs/numerics.md, "Backbone"): each 4x4 window of patch tokens -> one token, through
    `[w_cls, 16 tokens] + local_pos_embed` and a few plain MHSA blocks."""

    window = 4
    chunk = 1024  # windows per chunk, for memory only

    def __init__(self, embed_dim: int, num_heads: int, num_layers: int) -> None:
        super().__init__()
        n = self.window * self.window
        self.local_pos_embed = nn.Parameter(torch.zeros(1, n + 1, embed_dim))
        self.w_cls = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.blocks = nn.ModuleList(
            TransformerBlock(embed_dim, num_heads, num_heads, qk_norm=False, layer_scale=False) for _ in range(num_layers)
        )

    def forward(self, tokens: torch.Tensor, hw: tuple[int, int]) -> tuple[torch.Tensor, tuple[int, int]]:
        B, _, E = tokens.shape
        h, w, s = hw[0], hw[1], self.window
        grid = tokens.view(B, h // s, s, w // s, s, E).permute(0, 1, 3, 2, 4, 5)  # windows row-major
        windows = grid.reshape(-1, s * s, E)
        out = []
        for part in windows.split(self.chunk):
            x = torch.cat((self.w_cls.expand(part.shape[0], -1, -1), part), dim=1) + self.local_pos_embed
            for block in self.blocks:
                x = block(x)
            out.append(x[:, 0])
        return torch.cat(out).view(B, (h // s) * (w // s), E), (h // s, w // s)


class Sapiens2(nn.Module):
    """Sapiens2 backbone: (B, 3, H, W) normalised image -> featmap (B, E, H/16, W/16).

    Returns the tensor itself (the official module wraps it in a 1-tuple); only the
    `featmap` output of the last layer exists, the only one any released model uses."""

    def __init__(self, arch: BackboneArch) -> None:
        super().__init__()
        E = arch.embed_dim
        self.arch = arch
        self.patch_embed = PatchEmbed(E)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, E))
        self.storage_tokens = nn.Parameter(torch.zeros(1, NUM_STORAGE_TOKENS, E))
        if arch.num_tokenizer_layers:
            self.tokenizer = WindowTokenizer(E, arch.num_heads, arch.num_tokenizer_layers)
        self.rope_embed = RopePositionEmbedding(arch.head_dim)
        self.blocks = nn.ModuleList(
            TransformerBlock(E, arch.num_heads, arch.kv_heads(i)) for i in range(arch.num_layers)
        )
        self.ln1 = nn.RMSNorm(E, eps=1e-6)  # the final norm (top-level `ln1.weight`)

    fused = False  # residual add + the next RMSNorm as one pass (realtime/models/triton_fused.py): `set_fused_kernels`

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens, (h, w) = self.patch_embed(x)
        if hasattr(self, "tokenizer"):
            tokens, (h, w) = self.tokenizer(tokens, (h, w))
        B = tokens.shape[0]
        prefix = torch.cat((self.cls_token, self.storage_tokens), dim=1).expand(B, -1, -1)
        x = torch.cat((prefix.to(tokens.dtype), tokens), dim=1)
        sin, cos = self.rope_embed(h, w)
        if self.fused:
            x = self._blocks_fused(x, sin, cos)
        else:
            for block in self.blocks:
                x = block(x, sin, cos)
            x = self.ln1(x)
        # Contiguous (B, E, h, w): a channels-last view would make the heads' first deconv
        # reorder its weight on every call (on a GPU the channels_last heads then make their one
        # NHWC copy; a model whose heads are not channels_last gets the same floats on any device).
        return x[:, NUM_PREFIX_TOKENS:].reshape(B, h, w, -1).permute(0, 3, 1, 2).contiguous()

    def _blocks_fused(self, x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
        """The blocks and the final norm with each residual add and the norm after it as one pass: the same
        `TransformerBlock` steps, regrouped (block i's FFN add meets block i + 1's ln1, the last one the final norm)."""
        from realtime.models.triton_fused import add_rms_norm

        blocks = list(self.blocks)
        y = blocks[0].ln1(x)
        for i, block in enumerate(blocks):
            x, y = add_rms_norm(x, block.attn(y, sin, cos), block.ln2.weight, block.ln2.eps)
            after = blocks[i + 1].ln1 if i + 1 < len(blocks) else self.ln1
            x, y = add_rms_norm(x, block.ffn(y), after.weight, after.eps)
        return y

    def set_input_size(self, height: int, width: int) -> None:
        """Make the RoPE tables of an input size now, eagerly (a forward at a new size makes
        them itself; call this before `torch.compile` tracing so no graph ever builds them)."""
        h, w = height // PATCH_SIZE, width // PATCH_SIZE
        if hasattr(self, "tokenizer"):
            h, w = h // WindowTokenizer.window, w // WindowTokenizer.window
        self.rope_embed(h, w)
