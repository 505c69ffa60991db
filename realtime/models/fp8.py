"""FP8 (E4M3) for the backbone's linear layers: `sapiens-rt run --fp8`.

    check_fp8_device("cuda")           # a user error on a CPU or a GPU older than sm_89
    swapped = to_float8(model)         # after the model is on its device and dtype

`Float8Linear` keeps its weight in E4M3 with one fp32 scale per tensor (amax / 448, made
once) and quantises each input the same way per call (dynamic, per tensor, on the device:
no host sync); the product runs in `torch.nn.functional.scaled_mm` (tensor-wise recipe,
fp32 accumulation) and comes out in the input's dtype. The same kernel runs on a CPU, so
tests and `bench/fp8_error.py` measure exactly what a GPU computes, up to accumulation order.

Why our own 60 lines and not torchao or TensorRT: torchao's float8 path brings a tensor
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
ATTENTION = ("attn.wq", "attn.wk", "attn.wv", "attn.proj")
FFN = ("ffn.w12", "ffn.w3")
SCOPES = {"all": ATTENTION + FFN, "attention": ATTENTION}


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x -> (E4M3 tensor, fp32 scale) with x ~ q * scale; the scale maps amax|x| to 448."""
    scale = (x.detach().abs().amax().float() / E4M3_MAX).clamp(min=1e-12)
    return (x.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3), scale


class Float8Linear(nn.Module):
    """y = x W^T + b with W and x in E4M3 (per-tensor scales); (..., in) -> (..., out)."""

    def __init__(self, weight: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        self.register_buffer("weight", weight)  # (out, in) E4M3, row-major: .t() is the column-major operand scaled_mm wants
        self.register_buffer("weight_scale", weight_scale)
        self.register_buffer("bias", bias)

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> "Float8Linear":
        weight, scale = quantize(linear.weight)
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(weight, scale, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        q, scale = quantize(rows)
        fused = self.bias is not None and x.dtype in (torch.bfloat16, torch.float16)  # the bias dtypes scaled_mm fuses everywhere
        out = F.scaled_mm(q, self.weight.t(), scale, F.ScalingType.TensorWise, self.weight_scale, F.ScalingType.TensorWise,
                          bias=self.bias.to(x.dtype) if fused else None, output_dtype=x.dtype)
        if self.bias is not None and not fused:
            out = out + self.bias.to(x.dtype)
        return out.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, e4m3"


def check_fp8_device(device: str | torch.device) -> None:
    """A user error unless `device` is a CUDA GPU with FP8 tensor cores (compute capability >= 8.9)."""
    device = torch.device(device)
    if not hasattr(F, "scaled_mm"):
        raise UserError(f"--fp8 needs torch.nn.functional.scaled_mm, which torch {torch.__version__} lacks; upgrade torch or drop --fp8.")
    if device.type != "cuda" or not torch.cuda.is_available():
        raise UserError(f"--fp8 needs an NVIDIA GPU with FP8 tensor cores (Ada, Hopper or newer) and this run is on {device.type}; drop --fp8.")
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) < MIN_CAPABILITY:
        raise UserError(f"--fp8 needs compute capability 8.9 or newer (Ada, Hopper, Blackwell) and {torch.cuda.get_device_name(device)} "
                        f"is {major}.{minor}; drop --fp8 (bf16 is the fastest precision here).")


def to_float8(model: nn.Module, scope: str = "all") -> list[str]:
    """Replace the backbone blocks' nn.Linear layers named in SCOPES[scope] by Float8Linear,
    in place; returns the swapped module names. Layers whose sizes are not multiples of 16
    (scaled_mm's rule) stay as they are."""
    suffixes = SCOPES[scope]
    swapped = []
    for name, module in list(model.named_modules()):
        if not (isinstance(module, nn.Linear) and ".blocks." in f".{name}" and name.endswith(suffixes)):
            continue
        if "tokenizer." in name:  # the 4K tokenizer's blocks are few and small: left in bf16
            continue
        if module.in_features % 16 or module.out_features % 16:
            log.info("%s (%d -> %d) stays in %s: FP8 needs sizes that are multiples of 16", name, module.in_features, module.out_features, module.weight.dtype)
            continue
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, Float8Linear.from_linear(module))
        swapped.append(name)
    log.info("FP8 (E4M3) in %d linear layers (%s)", len(swapped), scope)
    return swapped
