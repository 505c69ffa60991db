"""One command for anyone with an NVIDIA GPU: check the GPU path, then time it.

    python bench/gpu_check.py                 # tests, then fps eager, compiled and with CUDA graphs
    python bench/gpu_check.py --no-compile    # skip torch.compile (its first frames take minutes)
    python bench/gpu_check.py --no-graphs     # skip the CUDA graph runs
    python bench/gpu_check.py --peak-tflops 989   # your GPU's dense bf16/fp16 peak, if not in the table

1. Runs the GPU tests (`pytest -m gpu`), among them the one that runs `Predictor.predict`
   and the detector under `torch.cuda.set_sync_debug_mode("error")`: any hidden host sync
   in the hot path fails it.
2. Prints frames per second at 1024x768 network input (the released models' size) for
   pose only (1 person), pose + seg, and all four tasks, with random 0.4B weights (speed
   does not depend on weight values), eager, compiled and with `cuda_graphs`, with the
   achieved TFLOP/s and MFU (achieved / the GPU's dense half-precision peak). Each is timed
   twice: one frame at a time (`predict`), and pipelined as the run's infer and collect
   stages do it (frame N+1 launched before frame N is collected); their ratio is the
   overlap figure (1.00: the GPU waited for Python between frames as long as ever).
3. Times the RTMDet-m person detector (random weights, batch norms folded) per call on a
   720p frame, eager and replayed as a CUDA graph (`cuda_graphs=True`: a call is 5 launches
   instead of about 350, counted on the stand-in by `bench/gpu_syncs.py`).

Without a CUDA GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# FLOP per image at 1024x768 for the 0.4B models (torch.utils.flop_counter, 1 multiply-add = 2 FLOP)
TFLOP_PER_IMAGE = {"pose": 3.87, "seg": 3.59, "normal": 5.03, "pointmap": 8.34}
# Dense (no sparsity) bf16/fp16 tensor-core peaks with fp32 accumulation, TFLOP/s, from the vendors'
# datasheets, by words in torch.cuda.get_device_name() (the H100 SXM calls itself "H100 80GB HBM3")
PEAK_TFLOPS = {("H100", "HBM3"): 989, ("H100", "SXM"): 989, ("H100", "NVL"): 835, ("H100", "PCIe"): 756,
               ("H200",): 989, ("GH200",): 989, ("B200",): 2250, ("A100",): 312, ("L40S",): 362, ("L40",): 181,
               ("L4",): 121, ("A10",): 125, ("RTX", "6000", "Ada"): 364, ("RTX", "4090"): 165, ("RTX", "4080"): 97,
               ("RTX", "3090"): 71}
SETS = (("pose only", ("pose",)), ("pose + seg", ("pose", "seg")), ("all tasks", ("pose", "seg", "normal", "pointmap")))


def peak_tflops(name: str) -> float | None:
    words = name.replace("-", " ").split()
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):  # most specific first ("H100 PCIe" before "L4")
        if all(part in words for part in key):
            return PEAK_TFLOPS[key]
    return None


def run_gpu_tests() -> int:
    print("== GPU tests (pytest -m gpu), the hot path under torch.cuda.set_sync_debug_mode('error')", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests"], cwd=ROOT)


def time_predictor(tasks, mode: str, frames: int, dtype: torch.dtype) -> tuple[float, float]:
    """Frames per second of one frame at a time and of pipelined frames (launch N+1, then
    collect N) on a 720p frame with one person, models random. mode: eager, compiled, graphs."""
    from realtime.infer import Predictor
    from realtime.models import build_model

    models = {task: build_model(task, "sapiens2_0.4b", device="cuda", dtype=dtype) for task in tasks}
    predictor = Predictor(models, device="cuda", dtype=dtype, input_hw=(1024, 768), compile=mode == "compiled",
                          cuda_graphs=mode == "graphs")
    image = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    boxes = np.array([[400, 60, 880, 700]], np.float32)
    predictor.warm_up(image.shape[:2])  # compiled: every person-count bucket (minutes)
    for _ in range(3):
        predictor.predict(image, boxes)  # graphs: captured here
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(frames):
        predictor.predict(image, boxes)  # each returns numpy: the frame is done
    serial = frames / (time.perf_counter() - start)
    start = time.perf_counter()
    pending = predictor.launch(image, boxes)
    for _ in range(frames - 1):
        queued = predictor.launch(image, boxes)
        predictor.collect(pending)
        pending = queued
    predictor.collect(pending)
    pipelined = frames / (time.perf_counter() - start)
    del predictor, models
    torch.cuda.empty_cache()
    return serial, pipelined


def time_detector(graphs: bool, calls: int, dtype: torch.dtype) -> float:
    """Milliseconds per detector call (upload, network, decoding, the one wait, the host NMS)
    on a 720p frame; RTMDet-m with random weights, batch norms folded as at load."""
    from realtime.models.rtmdet import Detector, RTMDet, fold_batchnorm

    model = RTMDet(widen=0.75).eval()
    fold_batchnorm(model)
    detector = Detector(model, device="cuda", dtype=dtype, cuda_graphs=graphs)
    image = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    for _ in range(3):
        detector(image, rgb=True)  # graphs: captured here
    start = time.perf_counter()
    for _ in range(calls):
        detector(image, rgb=True)  # each waits for its rows: the call is done
    return 1e3 * (time.perf_counter() - start) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--no-tests", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--no-graphs", action="store_true")
    parser.add_argument("--peak-tflops", type=float, help="the GPU's dense bf16/fp16 peak (default: from a table by name)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(f"No CUDA GPU here (torch {torch.__version__}, built with CUDA {torch.version.cuda}): nothing to check. "
              "Run this on a machine with an NVIDIA GPU and a CUDA build of torch.")
        return 0
    from realtime.infer import default_dtype

    name = torch.cuda.get_device_name()
    peak = args.peak_tflops or peak_tflops(name)
    dtype = default_dtype("cuda")
    print(f"GPU: {name}, torch {torch.__version__}, CUDA {torch.version.cuda}, dtype {str(dtype).removeprefix('torch.')}; "
          f"peak {'%g TFLOP/s dense half precision' % peak if peak else 'unknown (pass --peak-tflops for MFU)'}")
    failed = 0 if args.no_tests else run_gpu_tests()
    torch.backends.cudnn.benchmark = True
    print(f"== Predictor.predict, 1024x768 network input, 1 person, 0.4B models, {args.frames} frames")
    for label, tasks in SETS:
        tflop = sum(TFLOP_PER_IMAGE[t] for t in tasks)
        ceiling = f", ceiling {peak / tflop:6.1f} fps" if peak else ""
        modes = ["eager"] + ([] if args.no_compile else ["compiled"]) + ([] if args.no_graphs else ["graphs"])
        for mode in modes:
            serial, fps = time_predictor(tasks, mode, args.frames, dtype)
            rate = fps * tflop
            mfu = f", MFU {rate / peak:5.1%}" if peak else ""
            print(f"  {label:<10} {mode:>8}: {fps:7.1f} fps pipelined ({serial:7.1f} one at a time, overlap "
                  f"x{fps / serial:4.2f}), {rate:6.1f} TFLOP/s ({tflop:.2f} TFLOP/frame){mfu}{ceiling}", flush=True)
    print(f"== RTMDet-m person detector, 720p frame, fp16 (as `run` loads it), {args.frames} calls")
    for graphs in (False,) + (() if args.no_graphs else (True,)):
        print(f"  {'CUDA graph' if graphs else 'eager':>10}: {time_detector(graphs, args.frames, torch.float16):6.2f} ms per call", flush=True)
    if failed:
        print("Some GPU tests FAILED (see above).")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
