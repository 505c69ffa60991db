"""How fast this GPU runs the 0.4B backbone's GEMMs, bf16 and FP8, beside bench/gpu_estimate.py's rates.

    python bench/gpu_gemm.py                  # 1024x768 input (3081 tokens), one image
    python bench/gpu_gemm.py --tokens 1737    # another token count (768x576)

The estimate divides each kind of work by its own rate; bench/gpu_sdpa.py measures the
attention's, this the linear layers' (the bulk of a frame's FLOPs): q/k/v as one GEMM
(1024 -> 3072), the output projection (1024 -> 1024), the SwiGLU's w12 (1024 -> 8192) and w3
(4096 -> 1024), each as `nn.Linear` in bf16 and as the FP8 GEMM `--fp8` runs (E4M3, per-tensor
scales, `F.scaled_mm` on inputs quantised beforehand: the quantising pass is memory traffic,
counted apart). Prints TFLOP/s (2*M*K*N FLOP per call) per layer and for the mix a backbone
layer runs. Without CUDA it says so and exits 0; a kind this GPU cannot run prints why.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EMBED, HIDDEN = 1024, 4096  # Sapiens2 0.4B
LAYERS = {"qkv": (EMBED, 3 * EMBED), "proj": (EMBED, EMBED), "w12": (EMBED, 2 * HIDDEN), "w3": (HIDDEN, EMBED)}
TOKENS = 9 + 64 * 48  # 1024x768 input: 64 x 48 patches and the prefix tokens


def time_layer(kind: str, tokens: int, fan_in: int, fan_out: int) -> float:
    """TFLOP/s of one linear layer: `kind` "bf16" (nn.Linear) or "fp8" (the E4M3 GEMM of `--fp8`)."""
    from bench.gpu_sdpa import tflops
    from realtime.models.fp8 import quantize

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(tokens, fan_in, device="cuda", dtype=torch.bfloat16, generator=g)
    linear = torch.nn.Linear(fan_in, fan_out, device="cuda", dtype=torch.bfloat16)
    flop = 2.0 * tokens * fan_in * fan_out
    if kind == "bf16":
        return tflops(lambda: linear(x), flop)
    q, scale = quantize(x)
    weight, weight_scale = quantize(linear.weight.detach())
    bias = linear.bias.detach()
    return tflops(lambda: F.scaled_mm(q, weight.t(), scale, F.ScalingType.TensorWise, weight_scale,
                                      F.ScalingType.TensorWise, bias=bias, output_dtype=torch.bfloat16), flop)


def rates(tokens: int = TOKENS) -> list[str]:
    """One line per kind: each layer's TFLOP/s and the layer mix's (total FLOP / total time), or why it cannot run."""
    lines = []
    for kind in ("bf16", "fp8"):
        cells, seconds, flops = [], 0.0, 0.0
        for name, (fan_in, fan_out) in LAYERS.items():
            try:
                rate = time_layer(kind, tokens, fan_in, fan_out)
            except (RuntimeError, AttributeError, TypeError) as error:  # no FP8 GEMM on this GPU or build
                cells.append(f"{name} n/a ({str(error).strip().splitlines()[0][:60]})")
                continue
            flop = 2.0 * tokens * fan_in * fan_out
            seconds, flops = seconds + flop / rate / 1e12, flops + flop
            cells.append(f"{name} {rate:6.1f}")
        mix = f"; the layer's mix {flops / seconds / 1e12:6.1f}" if seconds else ""
        lines.append(f"  {kind:<4} ({tokens} tokens): " + ", ".join(cells) + f" TFLOP/s{mix}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=TOKENS, help=f"rows of each GEMM (default {TOKENS}: 1024x768)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("No CUDA GPU here: nothing to time. Run this on a machine with an NVIDIA GPU.")
        return 0
    from bench.gpu_estimate import GPUS

    h100 = GPUS["h100"]
    print(f"The 0.4B's linear layers on {torch.cuda.get_device_name()}; assumed by the estimate for an H100: "
          f"bf16 {h100.gemm_bf16:g}, fp8 {h100.gemm_fp8:g} TFLOP/s")
    print("\n".join(rates(args.tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
