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
import os
import platform
import statistics
import time

import numpy as np
import torch

from realtime.models.rtmdet import Detector, RTMDet


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


if __name__ == "__main__":
    main()
