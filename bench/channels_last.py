"""The 0.4B task heads on the CPU, contiguous (NCHW) against channels_last (NHWC) convolutions.

    python bench/channels_last.py [--input-size 256x192] [--rounds 3] [--threads N]

RANDOM WEIGHTS of the real 0.4B head shapes (speed does not depend on weight values), fed
the backbone's featmap for the given network input (1/16 of it, 1024 channels). Prints the
median time per head and layout over alternating rounds (so a load change on a shared machine
hits both alike) and the ratio. `realtime.infer.Predictor` turns channels_last on for CUDA
only; this says whether it would pay on this CPU too.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.models import heads  # noqa: E402
from realtime.models.registry import spec  # noqa: E402

TASKS = ("pose", "seg", "normal")


def _time(head: torch.nn.Module, x: torch.Tensor) -> float:
    start = time.perf_counter()
    with torch.inference_mode():
        head(x)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input-size", default="256x192", help="network input HxW (the featmap is 1/16 of it)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    h, w = (int(v) for v in args.input_size.lower().split("x"))
    torch.manual_seed(0)
    x = torch.randn(1, 1024, h // 16, w // 16)
    print(f"0.4B heads, RANDOM WEIGHTS, network input {h}x{w} (featmap 1x1024x{h // 16}x{w // 16}), fp32, CPU "
          f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores), torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; load average {os.getloadavg()[0]:.1f} (shared machine)")
    for task in TASKS:
        head = spec(task).head(1024, **spec(task).head_kwargs["sapiens2_0.4b"]).eval()
        fast = copy.deepcopy(head)
        heads.to_channels_last(fast)
        for model in (head, fast):  # warm-up (oneDNN primitive creation)
            _time(model, x)
        times: dict[str, list[float]] = {"contiguous": [], "channels_last": []}
        for _ in range(args.rounds):
            times["contiguous"].append(_time(head, x))
            times["channels_last"].append(_time(fast, x))
        a, b = (statistics.median(times[k]) for k in ("contiguous", "channels_last"))
        print(f"{task:<7} contiguous {1e3 * a:8.1f} ms   channels_last {1e3 * b:8.1f} ms   "
              f"channels_last / contiguous {b / a:5.2f}  (median of {args.rounds})")


if __name__ == "__main__":
    main()
