"""RTMDet-m person detector time for one 640x640 frame on the CPU.

    python bench/detector.py [--runs 10] [--threads N]

RANDOM WEIGHTS of the real m architecture (widen 0.75, deepen 0.67, 1 class):
speed does not depend on weight values (except post-processing, which here
sees more candidates above 0.05 than a trained model would, so it is an upper
bound). Prints the median and the fastest of `--runs` runs after two warm-up runs for the
network alone and for the whole call (letterbox + network + decoding + the
demo's NMS).
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import statistics
import time

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from realtime.models.rtmdet import Detector, RTMDet, fold_batchnorm


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def aten_ops(model: torch.nn.Module, x: torch.Tensor) -> collections.Counter:
    """The aten operators one forward runs, by name (on a GPU, about one kernel each)."""
    counter = _OpCounter()
    with torch.inference_mode(), counter:
        model(x)
    return counter.ops


def timing(fn, runs: int) -> str:
    """'median / fastest ms' of `runs` calls after two warm-up calls."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return f"{1e3 * statistics.median(times):8.1f} ms median, {1e3 * min(times):8.1f} ms fastest"


def calibrate_batchnorm(model: RTMDet) -> None:
    """Set every BatchNorm's statistics from one random image, so activations keep
    a trained network's scale (default init shrinks them towards denormal floats,
    which are many times slower on CPUs and would distort the timing)."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = 1.0  # running stats := this batch's stats
    model.train()
    with torch.no_grad():
        model(torch.randn(1, 3, 640, 640))
    model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = RTMDet(widen=0.75)
    calibrate_batchnorm(model)
    params = sum(p.numel() for p in model.parameters())
    detector = Detector(model, device="cpu")
    image = np.random.default_rng(0).integers(0, 256, (640, 640, 3), dtype=np.uint8)
    x, _, _ = detector.preprocess(image)

    def network() -> None:
        with torch.inference_mode():
            detector.model(x)

    print("RTMDet-m person detector, RANDOM WEIGHTS of the real architecture (widen 0.75, deepen 0.67)")
    print(f"device: CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores), "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, fp32, {params / 1e6:.2f} M parameters")
    print(f"load average at start: {os.getloadavg()[0]:.1f} (other processes share these cores)")
    print(f"{args.runs} runs each")
    print(f"network only, 1x3x640x640:                {timing(network, args.runs)}")
    print(f"whole call on a 640x640 frame, det(img):  {timing(lambda: detector(image), args.runs)}")
    before = aten_ops(detector.model, x)
    folded = fold_batchnorm(detector.model)
    after = aten_ops(detector.model, x)
    print(f"batch norms folded into convs: {folded}; aten ops per forward {sum(before.values())} -> {sum(after.values())} "
          f"(convolutions {before['conv2d']} -> {after['conv2d']}, batch norms "
          f"{sum(v for k, v in before.items() if 'batch_norm' in k)} -> {sum(v for k, v in after.items() if 'batch_norm' in k)})")
    print(f"network only, folded:                     {timing(network, args.runs)}")


if __name__ == "__main__":
    main()
