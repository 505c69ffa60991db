"""Which attention kernel is fastest here: each SDPA backend on the 0.4B backbone's shapes.

    python bench/gpu_sdpa.py                  # 1024x768 and 768x576 inputs, bf16
    python bench/gpu_sdpa.py --tokens 3081    # one token count

Timed eagerly, so the host's launch cost can hide in small kernels: bench/gpu_kernels.py times the same inside
CUDA graphs. For each backend `realtime.models.sapiens2.attention` can pick (`--sdpa`, the Triton kernel
included) and FlexAttention (compiled), times one layer's
attention (16 query heads of 64, 1 image) for the full-head layers (16 KV heads) and the GQA
layers (8 KV heads: "default" and "flash" take them as they are, with `enable_gqa`; "cudnn"
and "efficient" get them expanded by repeat_interleave, whose copy is inside the timing),
and prints TFLOP/s (4*H*T*T*hd FLOP per call) beside bench/gpu_estimate.py's assumed rate.
A backend this GPU or build cannot run prints why. Without CUDA it says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEADS, HEAD_DIM = 16, 64  # Sapiens2 0.4B
TOKENS = {"1024x768": 9 + 64 * 48, "768x576": 9 + 48 * 36}


def tflops(call, flop: float, calls: int = 50) -> float:
    """TFLOP/s of `call()` doing `flop` FLOP (CUDA events, after 5 warm-up calls)."""
    with torch.inference_mode():
        for _ in range(5):
            call()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            call()
        end.record()
        end.synchronize()
    return flop / (start.elapsed_time(end) / 1e3 / calls) / 1e12


def time_backend(backend: str, tokens: int, kv_heads: int, dtype=torch.bfloat16) -> float:
    """TFLOP/s of `attention(q, k, v, backend)` at these shapes ("flex": FlexAttention, compiled)."""
    from realtime.models.sapiens2 import attention

    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, HEADS, tokens, HEAD_DIM, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(1, kv_heads, tokens, HEAD_DIM, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(1, kv_heads, tokens, HEAD_DIM, device="cuda", dtype=dtype, generator=g)
    flop = 4.0 * HEADS * tokens * tokens * HEAD_DIM
    if backend == "flex":
        from bench.gpu_kernels import _flex

        flex = _flex()
        return tflops(lambda: flex(q, k, v, enable_gqa=kv_heads != HEADS), flop)
    if backend == "triton":
        from realtime.models import triton_attention

        triton_attention.prepare(q.device)
    return tflops(lambda: attention(q, k, v, backend), flop)


def rates(tokens_by_name: dict[str, int] = TOKENS) -> list[str]:
    """One line per (input size, layer kind, backend): TFLOP/s or why it cannot run."""
    from realtime.models.sapiens2 import SDPA_BACKENDS

    lines = []
    for size, tokens in tokens_by_name.items():
        for kv in (HEADS, HEADS // 2):
            cells = []
            for backend in (*SDPA_BACKENDS, "flex"):
                if backend == "math":
                    continue  # the unfused reference: never the fast choice
                try:
                    cells.append(f"{backend} {time_backend(backend, tokens, kv):6.1f}")
                except (RuntimeError, ValueError) as error:  # no kernel for this GPU / build / shape
                    cells.append(f"{backend} n/a ({str(error).strip().splitlines()[0][:60]})")
            kind = "full heads" if kv == HEADS else "GQA (8 kv)"
            lines.append(f"  {size} ({tokens} tokens), {kind:<10}: " + ", ".join(cells) + " TFLOP/s")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, help="one token count instead of the two input sizes")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("No CUDA GPU here: nothing to time. Run this on a machine with an NVIDIA GPU.")
        return 0
    from bench.gpu_estimate import GPUS

    print(f"SDPA backends on {torch.cuda.get_device_name()}, bf16, {HEADS} heads of {HEAD_DIM}; assumed by "
          f"bench/gpu_estimate.py: {GPUS['h100'].attention} (H100), {GPUS['4090'].attention} (4090)")
    print("\n".join(rates({f"{args.tokens} tokens": args.tokens} if args.tokens else TOKENS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
