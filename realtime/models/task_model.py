"""A Sapiens2 task model (`backbone` + `decode_head`, the official layout) and
building one from the size table with random weights."""

from __future__ import annotations

import functools
import logging
from typing import Optional

import torch
from torch import nn

from realtime.errors import UserError
from realtime.models import registry
from realtime.models.archs import ARCHS, BackboneArch, arch_name
from realtime.models.sapiens2 import Sapiens2

log = logging.getLogger(__name__)


class Sapiens2TaskModel(nn.Module):
    """Normalised image (B, 3, H, W) -> the official estimator's raw output:

    pose:     heatmaps (B, 308, H/4, W/4)
    seg:      logits (B, 29, H, W), or at `out_hw` when that is smaller (`SegHead`)
    normal:   raw normals (B, 3, H, W), not unit length
    pointmap: (canonical pointmap (B, 3, H, W), scale (B, 1)); metric = pointmap / scale
    albedo:   raw RGB (B, 3, H, W), clamp to [0, 1] to view
    """

    def __init__(self, task: str, arch: BackboneArch, head_kwargs: dict) -> None:
        super().__init__()
        self.task = task
        self.arch = arch.name
        self.backbone = Sapiens2(arch)
        self.decode_head = registry.spec(task).head(arch.embed_dim, **head_kwargs)

    def forward(self, x: torch.Tensor, out_hw: Optional[tuple[int, int]] = None):
        featmap = self.backbone(x.to(self.backbone.cls_token.dtype))
        return self.decode_head(featmap) if out_hw is None else self.decode_head(featmap, out_hw)


def check_task(task: str) -> None:
    """A user error naming the choices when no `ModelSpec` is registered for `task`."""
    registry.spec(task)


def lookup_arch(arch: str) -> BackboneArch:
    name = arch_name(arch)
    if name not in ARCHS:
        raise UserError(f"Unknown arch {arch!r}; choose one of {', '.join(ARCHS)}.")
    return ARCHS[name]


def head_kwargs_for(task: str, arch: BackboneArch) -> dict:
    shapes = registry.spec(task).head_kwargs
    kwargs = shapes.get(arch.name)
    if kwargs is None:
        raise UserError(f"No {task} head is defined for {arch.name}; pick one of {', '.join(shapes)}.")
    return dict(kwargs)


def build_model(
    task: str,
    arch: str,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    head_kwargs: Optional[dict] = None,
) -> Sapiens2TaskModel:
    """A task model of the given arch ("sapiens2_0.4b", "0.4b", "fixture_e32_h4_l18", ...)
    with random weights, in eval mode. `device="meta"` builds it without memory
    (for parameter counts). Speed does not depend on weight values, so this is
    what benchmarks use."""
    check_task(task)
    warn_if_slow_on_cpu(device, dtype)
    spec = lookup_arch(arch)
    kwargs = head_kwargs if head_kwargs is not None else head_kwargs_for(task, spec)
    with torch.device(device):
        model = Sapiens2TaskModel(task, spec, kwargs)
        if torch.device(device).type != "meta":
            _init_tokens(model)
    return model.to(dtype=dtype).eval().requires_grad_(False)


@functools.lru_cache(maxsize=1)
def _cpu_has_bf16_units() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return True  # not Linux: cannot tell, do not warn
    return "avx512_bf16" in flags or "amx_bf16" in flags


def warn_if_slow_on_cpu(device: str | torch.device, dtype: torch.dtype) -> None:
    """Half precision on a CPU without bf16 units is emulated: slower than fp32, not faster
    (bench/RESULTS.md, Models)."""
    if torch.device(device).type == "cpu" and dtype in (torch.bfloat16, torch.float16) and not _cpu_has_bf16_units():
        log.warning("%s on this CPU (no AVX512-BF16/AMX) is emulated and slower than float32; use dtype=torch.float32 here.",
                    str(dtype).removeprefix("torch."))


def _init_tokens(model: nn.Module) -> None:
    """Token parameters start at zero; give them the usual small random values."""
    for name, p in model.named_parameters():
        if name.endswith(("cls_token", "storage_tokens", "w_cls", "local_pos_embed")):
            nn.init.trunc_normal_(p, std=0.02)
