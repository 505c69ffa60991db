"""When a forward may take the CPU-only fp32 fast paths of the backbone and heads.

Those paths (the backbone's column-blocked GEMMs, the heads' packed deconvolution weights)
give the same bits as the plain ops, but only in eager inference: autograd, tracing, export
and `torch.compile` see the plain ops.
"""

from __future__ import annotations

import torch


def cpu_fp32_inference(x: torch.Tensor) -> bool:
    """An eager fp32 forward on a CPU without autograd (not traced, exported or compiled)."""
    return (
        x.device.type == "cpu"
        and x.dtype == torch.float32
        and not torch.is_grad_enabled()
        and not torch.jit.is_tracing()
        and not torch.compiler.is_compiling()
    )
