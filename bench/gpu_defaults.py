"""CUDA graphs at `run`'s own defaults, against eager: warm-up, fps, GPU memory (CUDA GPU only).

    python bench/gpu_defaults.py

Pose + seg, the 0.4B models with random weights (speed does not depend on weight values), the
Predictor as `run` builds it (1024x768 input, every person bucket up to 16 crops warmed up),
720p frames, 30 frames pipelined with 1 and with 3 people. Prints per mode the warm-up, the fps,
the GPU memory PyTorch reserved and the peak allocated above the weights (eager: with a 16-crop
frame, the largest bucket), and the graph keys captured, failed and captured late.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.gpu_check import person_boxes, pipelined_fps  # noqa: E402


def main() -> int:
    if not torch.cuda.is_available():
        print("No CUDA GPU here: nothing to measure. Run this on a machine with an NVIDIA GPU.")
        return 0
    from realtime.infer import Predictor, default_dtype
    from realtime.models import build_model

    dtype = default_dtype("cuda")
    models = {task: build_model(task, "sapiens2_0.4b", device="cuda", dtype=dtype) for task in ("pose", "seg")}
    image = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    weights = torch.cuda.memory_allocated()
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, {str(dtype).removeprefix('torch.')}")
    for graphs in (False, True):
        torch.cuda.reset_peak_memory_stats()
        predictor = Predictor(models, device="cuda", dtype=dtype, cuda_graphs=graphs)
        start = time.perf_counter()
        predictor.warm_up(image.shape[:2])
        warm_s = time.perf_counter() - start
        rates = []
        for people in (1, 3):
            boxes = person_boxes(people)
            for _ in range(3):
                predictor.predict(image, boxes)
            rates.append(f"{people} {'person' if people == 1 else 'people'} {pipelined_fps(predictor, image, boxes, 30):.1f} fps")
        if not graphs:
            predictor.predict(image, np.repeat(person_boxes(1), 16, axis=0))  # the largest bucket's memory
        cache = predictor._graphs
        keys = (f", graph keys {len(cache.captured())} captured / {len(cache.failed)} failed / {len(cache.late)} late"
                if graphs else "")
        print(f"{'CUDA graphs' if graphs else 'eager':>11}: warm-up {warm_s:.1f} s, {', '.join(rates)}; reserved "
              f"{torch.cuda.memory_reserved() / 2**30:.2f} GiB, peak {(torch.cuda.max_memory_allocated() - weights) / 2**30:.2f} "
              f"GiB above the weights{keys}", flush=True)
        del predictor
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
