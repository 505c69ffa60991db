"""FP8 (E4M3) for the backbone's linear layers: `sapiens-rt run --compile --fp8 [attention|ffn|attention+ffn]`.

    check_fp8_device("cuda")                # a user error on a CPU or a GPU older than sm_89
    swapped = to_float8(model)              # after the model is on its device and dtype
    calibrate(model, [x1, x2])              # static input scales, measured once

`Float8Linear` keeps its weight in E4M3 with one fp32 scale per tensor (amax / 448, made
once). Its input is quantised with a static per-layer scale (`input_scale`, a buffer: it
travels with the model's state) that `calibrate` sets once from the largest input each layer
met on calibration batches, with HEADROOM; values past it saturate at 448. Until calibrated
a layer scales each input by its own amax (dynamic, on the device, no host sync). The
product runs in `torch.nn.functional.scaled_mm` (tensor-wise recipe, fp32 accumulation,
`fast_accum` off: the error table below is for full accumulation) and comes out in the
input's dtype. The same kernel runs on a CPU, so tests and `bench/fp8_error.py` measure
exactly what a GPU computes, up to accumulation order.

What pays (issue 31): by default only the attention projections, where the error table
(bench/fp8_error.py) is small; q, k and v are one FP8 GEMM (`qkv`, as the bf16 path's fused
weight). Quantising costs a pass over the input; eager that is several ops per element and
more traffic than the FP8 GEMM saves, so `--fp8` runs only with `--compile`, which fuses the
static-scale quantisation into the op before it (the RMSNorm for q/k/v, the attention
output's layout copy for proj). bench/gpu_estimate.py counts both ways.

The FFN's layers (`--fp8 ffn`, issue 52: 77 % of the GEMM FLOPs) take row-wise scales instead: one per
output channel of the weight, one per token of the input measured at every call (no calibration; under
--compile the amax and the cast fuse into the RMSNorm or the SwiGLU product that makes the input), and
fast accumulation. On the golden fixtures their error is still far above the attention projections'
(bench/fp8_error.py: pose heatmaps 0.29 against 0.13, 64 % of keypoints on the same cell against 87 %),
so they are opt-in; bench/gpu_kernels.py times both recipes inside CUDA graphs.

Why our own code and not torchao or TensorRT: torchao's float8 path brings a tensor
subclass per weight and a release that tracks torch nightlies (our torch is unpinned), and
its subclasses get in the way of the CUDA-graph capture and the stand-in checks; TensorRT
is a separate runtime (use `sapiens-rt export-model --to onnx` for it, docs/deploy.md).
Attention itself (SDPA), norms, RoPE and the heads stay in bf16/fp16.
"""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch import nn

from realtime.errors import UserError

log = logging.getLogger(__name__)

E4M3 = torch.float8_e4m3fn
E4M3_MAX = torch.finfo(E4M3).max  # 448
MIN_CAPABILITY = (8, 9)  # Ada (sm_89), Hopper (sm_90), Blackwell: FP8 tensor cores
ATTENTION = ("attn.wq", "attn.wk", "attn.wv", "attn.proj")  # q/k/v swap as one layer, attn.qkv
FFN = ("ffn.w12", "ffn.w3")
# scope -> (the layers, the layers of those with row-wise scales)
SCOPES = {"all": (ATTENTION + FFN, ()), "attention": (ATTENTION, ()), "ffn": (FFN, FFN), "attention+ffn": (ATTENTION + FFN, FFN)}
CHOICES = ("attention", "ffn", "attention+ffn")  # what `--fp8 [SCOPE]` offers ("all": per-tensor everywhere, the error table's)


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x -> (E4M3 tensor, fp32 scale) with x ~ q * scale; the scale maps amax|x| to 448."""
    scale = (x.detach().abs().amax().float() / E4M3_MAX).clamp(min=1e-12)
    return (x.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3), scale


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (..., K) -> (E4M3 tensor, fp32 scales (..., 1)): one scale per row (a token of an input, an output
    channel of a weight), each mapping its row's amax to 448."""
    scale = (x.detach().abs().amax(dim=-1, keepdim=True).float() / E4M3_MAX).clamp(min=1e-12)
    return (x.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3), scale


HEADROOM = 2.0  # static scales leave this factor above the largest calibration input (E4M3 is a float: little is lost)


class Float8Linear(nn.Module):
    """y = x W^T + b with W and x in E4M3; (..., in) -> (..., out).

    Per-tensor scales (`rowwise=False`): input_scale None (dynamic: each input's amax / 448) or a static fp32 scale
    (`calibrate`). Row-wise (`rowwise=True`, the FFN's: `--fp8 ffn`): one scale per output channel of the weight and
    one per token of each input, measured on the device at every call (a token's amax; under --compile the
    reduction and the cast fuse into the op that makes the input), with fast accumulation."""

    def __init__(self, weight: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None,
                 input_scale: torch.Tensor | None = None, fast_accum: bool = False, rowwise: bool = False) -> None:
        super().__init__()
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        self.register_buffer("weight", weight)  # (out, in) E4M3, row-major: .t() is the column-major operand scaled_mm wants
        self.register_buffer("weight_scale", weight_scale)  # () per tensor, or (1, out) per channel
        self.register_buffer("bias", bias)
        self.register_buffer("input_scale", input_scale)
        self.fast_accum = fast_accum
        self.rowwise = rowwise
        self.observed: torch.Tensor | None = None  # running amax of the inputs while calibrating

    @classmethod
    def from_linear(cls, linear: nn.Linear, rowwise: bool = False) -> "Float8Linear":
        return cls.from_linears([linear], rowwise=rowwise)

    @classmethod
    def from_linears(cls, linears, rowwise: bool = False) -> "Float8Linear":
        """One layer for several of the same input (q, k, v): their outputs side by side."""
        weight = torch.cat([m.weight.detach() for m in linears])
        if rowwise:
            weight, scale = quantize_rows(weight)
            scale = scale.t().contiguous()  # (1, out): scaled_mm's row-wise scale of its second operand
        else:
            weight, scale = quantize(weight)
        biases = [m.bias for m in linears]
        bias = None if any(b is None for b in biases) else torch.cat([b.detach() for b in biases])
        return cls(weight, scale, bias, fast_accum=rowwise, rowwise=rowwise)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        if self.rowwise:
            q, scale = quantize_rows(rows)  # (M, 1): each token its own
            kind = F.ScalingType.RowWise
            out = F.scaled_mm(q, self.weight.t(), scale, kind, self.weight_scale, kind,
                              bias=None if self.bias is None else self.bias.to(x.dtype),
                              output_dtype=x.dtype, use_fast_accum=self.fast_accum)
            return out.reshape(*x.shape[:-1], self.out_features)
        if self.input_scale is None or self.observed is not None:
            if self.observed is not None:  # calibrating: remember the largest input (on the device)
                self.observed = torch.maximum(self.observed, rows.detach().abs().amax().float())
            q, scale = quantize(rows)
        else:  # static: one fused multiply-clamp-cast under torch.compile
            scale = self.input_scale
            q = (rows.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3)
        fused = self.bias is not None and x.dtype in (torch.bfloat16, torch.float16)  # the bias dtypes scaled_mm fuses everywhere
        out = F.scaled_mm(q, self.weight.t(), scale, F.ScalingType.TensorWise, self.weight_scale, F.ScalingType.TensorWise,
                          bias=self.bias.to(x.dtype) if fused else None, output_dtype=x.dtype,
                          use_fast_accum=self.fast_accum)
        if self.bias is not None and not fused:
            out = out + self.bias.to(x.dtype)
        return out.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        if self.rowwise:
            return f"in_features={self.in_features}, out_features={self.out_features}, e4m3, per-token x per-channel scales"
        scale = "dynamic" if self.input_scale is None else "static"
        return f"in_features={self.in_features}, out_features={self.out_features}, e4m3, {scale} input scale"


@torch.no_grad()
def calibrate(model: nn.Module, batches, headroom: float = HEADROOM) -> int:
    """Set every Float8Linear's static input scale from the largest input it meets in
    `model(x)` for x in `batches` (amax * headroom / 448); returns how many layers. Once, at
    load: the forward after it has fixed scales (what `--compile` fuses and a CUDA graph keeps)."""
    layers = [m for m in model.modules() if isinstance(m, Float8Linear) and not m.rowwise]  # row-wise: scales per token
    for layer in layers:
        layer.observed = torch.zeros((), device=layer.weight.device)
    try:
        for x in batches:
            model(x)
    finally:
        for layer in layers:
            amax, layer.observed = layer.observed, None
            layer.input_scale = (amax * headroom / E4M3_MAX).clamp(min=1e-12)
    return len(layers)


def calibration_batch(input_hw: tuple[int, int], device, dtype: torch.dtype, n: int = 2) -> torch.Tensor:
    """(n, 3, H, W) normalised images for `calibrate` when no real frames are at hand: smooth
    colour gradients with noise and a bright and a dark blob (deterministic). Real frames are
    better: pass some to `calibrate` instead (docs/deploy.md)."""
    g = torch.Generator().manual_seed(0)
    h, w = input_hw
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    images = []
    for i in range(n):
        base = torch.stack((xx, yy, xx * yy)) * (1.5 - i)
        blob = torch.exp(-((xx - 0.3 * (i - 0.5)) ** 2 + yy ** 2) * 8) * (2.0 if i % 2 else -2.0)
        images.append(base + blob + 0.5 * torch.randn(3, h, w, generator=g))
    return torch.stack(images).to(device=device, dtype=dtype)


def check_fp8_device(device: str | torch.device) -> None:
    """A user error unless `device` is a CUDA GPU with FP8 tensor cores (compute capability >= 8.9)."""
    device = torch.device(device)
    if not hasattr(F, "scaled_mm"):
        raise UserError(f"--fp8 needs torch.nn.functional.scaled_mm, which torch {torch.__version__} lacks; "
                        f"upgrade torch or drop --fp8.")
    if device.type != "cuda" or not torch.cuda.is_available():
        raise UserError(f"--fp8 needs an NVIDIA GPU with FP8 tensor cores (Ada, Hopper or newer) and this run is on "
                        f"{device.type}; drop --fp8.")
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) < MIN_CAPABILITY:
        raise UserError(f"--fp8 needs compute capability 8.9 or newer (Ada, Hopper, Blackwell) and "
                        f"{torch.cuda.get_device_name(device)} is {major}.{minor}; drop --fp8 "
                        f"(bf16 is the fastest precision here).")


def to_float8(model: nn.Module, scope: str = "attention", static_scale: float | None = None) -> list[str]:
    """Replace the backbone blocks' nn.Linear layers named in SCOPES[scope] by Float8Linear, in
    place; returns the swapped module names. Within attention, q, k and v become one layer
    (`attn.qkv`: one FP8 GEMM, as the bf16 path's fused weight). Layers whose sizes are not
    multiples of 16 (scaled_mm's rule) stay as they are. The FFN's layers in "ffn" and
    "attention+ffn" get row-wise scales ("all": per-tensor everywhere). `static_scale` sets every
    per-tensor input scale to that value (for counting ops); else they stay dynamic until `calibrate`."""
    from realtime.models.sapiens2 import GroupedQueryAttention

    if scope not in SCOPES:
        raise ValueError(f"the FP8 scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    suffixes, rowwise = SCOPES[scope]
    swapped = []
    for name, module in list(model.named_modules()):
        if ".blocks." not in f".{name}" or "tokenizer." in name:  # the 4K tokenizer's blocks are few and small
            continue
        if isinstance(module, GroupedQueryAttention) and all(f"attn.{w}" in suffixes for w in ("wq", "wk", "wv")):
            parts = [getattr(module, w, None) for w in ("wq", "wk", "wv")]
            if all(type(p) is nn.Linear and p.in_features % 16 == 0 and p.out_features % 16 == 0 for p in parts):
                module.qkv = Float8Linear.from_linears(parts)
                del module.wq, module.wk, module.wv
                module.tie_qkv()  # no fused bf16 copy is kept
                swapped.append(f"{name}.qkv")
            continue
        if not (isinstance(module, nn.Linear) and name.endswith(suffixes)) or (
                name.endswith((".wq", ".wk", ".wv")) and name.rpartition(".")[0] + ".qkv" in swapped):
            continue
        if module.in_features % 16 or module.out_features % 16:
            log.info("%s (%d -> %d) stays in %s: FP8 needs sizes that are multiples of 16", name, module.in_features,
                     module.out_features, module.weight.dtype)
            continue
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, Float8Linear.from_linear(module, rowwise=name.endswith(rowwise)))
        swapped.append(name)
    if static_scale is not None:
        for layer in model.modules():
            if isinstance(layer, Float8Linear) and not layer.rowwise:
                layer.input_scale = torch.full((), float(static_scale), device=layer.weight.device)
    log.info("FP8 (E4M3) in %d linear layers (%s)", len(swapped), scope)
    return swapped


def check_fp8_compiled(compiled: bool) -> None:
    """--fp8 without --compile is slower than bf16 (the quantisation runs as separate passes):
    a user error saying what to add."""
    if not compiled:
        raise UserError("--fp8 is only faster than bf16 under --compile (which fuses the FP8 quantisation into the "
                        "layer before it); add --compile, or drop --fp8.")
