"""One command for anyone with an NVIDIA GPU: check the GPU path, then time it, in one call.

    python bench/gpu_check.py                 # tests, SDPA rates, fps per mode, the detector (7-8 min on an H200)
    python bench/gpu_check.py --no-compile    # skip the compiled modes (their warm-up: 22 s on an H200)
    python bench/gpu_check.py --budget 300    # seconds: modes that would not fit are skipped, and said so
    python bench/gpu_check.py --no-tests --modes compile+graphs+cudnn+fp8   # one mode's timing alone
    python bench/gpu_check.py --no-tests --input-size 768x576 --modes graphs compile+graphs   # the lighter preset
    python bench/gpu_check.py --no-tests --people 3 --modes graphs   # three people in the frame

Needs only PyTorch, NumPy, safetensors and OpenCV (and pytest for step 1): no PyAV,
pyqtgraph or filterpy, no network. tests/test_gpu_standin.py runs its import path with those
three made unimportable.

1. Runs the GPU tests (GPU_TESTS, by file: collecting the whole tests folder would import
   modules that need PyAV), among them the ones that run `Predictor.predict` and the detector
   under `torch.cuda.set_sync_debug_mode("error")` and assert what was captured as CUDA graphs.
2. Times each attention kernel (`--sdpa`) on the 0.4B backbone's shapes (bench/gpu_sdpa.py), and
   its linear layers in bf16 and FP8 (bench/gpu_gemm.py): the rates the estimate assumes.
3. Pose + seg at 1024x768 network input (`--input-size`), 1 person (`--people`), random 0.4B weights (speed does not depend
   on weight values), per mode (MODES: eager, --cuda-graphs, --compile --cuda-graphs, and that
   with --sdpa cudnn --fp8): frames per second pipelined (frame N+1 launched before frame N is
   collected, as the run's stages do), host launches per frame (CUDA runtime launch and copy
   calls, counted by torch.profiler), the CUDA graph keys captured in the warm-up against
   those that fell back to eager or were captured after it, and bench/gpu_estimate.py's
   estimate for this GPU beside each measured number. Each mode is timed with seg on every
   frame (`--seg-every 1`, what files run) and then, on the same warmed-up models, with seg on
   every other frame (`--seg-every 2`, what `auto`, the live default, does while a run is behind).
4. Times the RTMDet-m person detector per call on a 720p frame, eager and as a CUDA graph.

Exits 1 if a test failed or a CUDA graph capture failed or happened after a warm-up.
Without a CUDA GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The GPU test files, by name: `pytest -m gpu tests` would import every test module, and 40 of
# them need packages a GPU machine may lack (PyAV, pyqtgraph, filterpy).
GPU_TESTS = ("tests/test_models_gpu.py", "tests/test_cuda_graphs_gpu.py", "tests/test_detector_graph_gpu.py")
# Dense (no sparsity) bf16/fp16 tensor-core peaks with fp32 accumulation, TFLOP/s, from the vendors'
# datasheets, by words in torch.cuda.get_device_name() (the H100 SXM calls itself "H100 80GB HBM3")
PEAK_TFLOPS = {("H100", "HBM3"): 989, ("H100", "SXM"): 989, ("H100", "NVL"): 835, ("H100", "PCIe"): 756,
               ("H200",): 989, ("GH200",): 989, ("B200",): 2250, ("A100",): 312, ("L40S",): 362, ("L40",): 181,
               ("L4",): 121, ("A10",): 125, ("RTX", "6000", "Ada"): 364, ("RTX", "4090"): 165, ("RTX", "4080"): 97,
               ("RTX", "3090"): 71}
# mode -> (Predictor options, is compiled); the estimate's Config is built from the same flags
MODES = {
    "eager": dict(),
    "graphs": dict(cuda_graphs=True),
    "compile+graphs": dict(compile=True, cuda_graphs=True),
    "compile+graphs+cudnn+fp8": dict(compile=True, cuda_graphs=True, sdpa="cudnn", fp8=True),
}
# What a compiled mode may take (two 0.4B models compiled, captured and timed): skipped when it would not fit.
# Measured on an H200 machine (16 cores), torch 2.11: 22 s of warm-up, about 28 s in all for the FP8 mode.
COMPILE_SECONDS = 60
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch",
                "cudaMemcpyAsync", "cudaMemsetAsync")


def peak_tflops(name: str) -> float | None:
    words = name.replace("-", " ").split()
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):  # most specific first ("H100 PCIe" before "L4")
        if all(part in words for part in key):
            return PEAK_TFLOPS[key]
    return None


def parse_hw(text: str) -> tuple[int, int]:
    """'768x576' -> (768, 576), as `run --input-size` takes it (multiples of 16)."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is not HEIGHTxWIDTH; write it like 1024x768 or 768x576") from None
    if h < 32 or w < 32 or h % 16 or w % 16:
        raise argparse.ArgumentTypeError(f"{text} must be at least 32x32 and a multiple of 16 on both sides")
    return h, w


def imports() -> None:
    """Import everything the check uses (what tests/test_gpu_standin.py runs with PyAV,
    pyqtgraph and filterpy blocked)."""
    import bench.gpu_estimate  # noqa: F401
    import bench.gpu_gemm  # noqa: F401
    import bench.gpu_sdpa  # noqa: F401
    import realtime.infer  # noqa: F401
    import realtime.models  # noqa: F401
    import realtime.models.fp8  # noqa: F401
    import realtime.models.rtmdet  # noqa: F401


def run_gpu_tests() -> int:
    print(f"== GPU tests: pytest -m gpu {' '.join(GPU_TESTS)}", flush=True)
    # no:logging: a failure would print every DEBUG record torch's compiler logged (9,000 lines on an H200)
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "-p", "no:logging",
                            *GPU_TESTS], cwd=ROOT)


def estimate_gpu(name: str):
    """bench/gpu_estimate.py's GPU closest to this one, and a note when it is not the same."""
    from bench.gpu_estimate import GPUS

    if "4090" in name:
        return GPUS["4090"], ""
    if "H100" in name:
        return GPUS["h100"], ""
    return GPUS["h100"], f" (estimate for an H100; this is {name})"


def estimate_for(mode: str, gpu, seg_every: int = 1, input_hw: tuple[int, int] = (1024, 768), people: int = 1):
    from bench.gpu_estimate import Config, estimate

    opts = MODES[mode]
    config = Config(mode, input_hw=input_hw, graphs=opts.get("cuda_graphs", False), compiled=opts.get("compile", False),
                    fp8="static" if opts.get("fp8") else "", sdpa=opts.get("sdpa", "default"), seg_every=seg_every,
                    people=people)
    return estimate(config, gpu)


def person_boxes(people: int, width: int = 1280, height: int = 720) -> np.ndarray:
    """`people` side-by-side boxes across a 720p frame (one person: the centred 480x640 box)."""
    if people == 1:
        return np.array([[400, 60, 880, 700]], np.float32)
    step = (width - 80) / people
    return np.array([[40 + i * step, 60, 40 + (i + 1) * step, height - 20] for i in range(people)], np.float32)


def pipelined_fps(predictor, image: np.ndarray, boxes: np.ndarray, frames: int, seg_every: int = 1) -> float:
    """Frames per second with frame N+1 launched before frame N is collected (as the run's
    stages do), seg on every `seg_every`th frame (as `realtime.stages.SegSchedule` with `every`)."""
    def tasks(i: int) -> set[str]:
        return {"pose", "seg"} if i % seg_every == 0 else {"pose"}

    torch.cuda.synchronize()
    start = time.perf_counter()
    pending = predictor.launch(image, boxes, tasks(0))
    for i in range(1, frames):
        queued = predictor.launch(image, boxes, tasks(i))
        predictor.collect(pending)
        pending = queued
    predictor.collect(pending)
    return frames / (time.perf_counter() - start)


def host_launches(fn) -> int:
    """CUDA runtime launch and copy calls the host makes in `fn()` (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.name in LAUNCH_CALLS)


def time_mode(mode: str, frames: int, dtype: torch.dtype, input_hw: tuple[int, int] = (1024, 768), people: int = 1) -> dict:
    """Pose + seg on a 720p frame with `people` people: fps pipelined, launches per frame and the graph keys."""
    from realtime.infer import BATCH_BUCKETS, Predictor
    from realtime.models import build_model

    tasks = ("pose", "seg")
    models = {task: build_model(task, "sapiens2_0.4b", device="cuda", dtype=dtype) for task in tasks}
    bucket = min(b for b in BATCH_BUCKETS if b >= people)  # the crops are padded to it, as in `run` (5 people: 6)
    predictor = Predictor(models, device="cuda", dtype=dtype, input_hw=input_hw, max_batch=bucket, **MODES[mode])
    image = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    boxes = person_boxes(people)
    start = time.perf_counter()
    predictor.warm_up(image.shape[:2])  # compiles and captures every key here
    warm_s = time.perf_counter() - start
    for _ in range(3):
        predictor.predict(image, boxes)
    launches = host_launches(functools.partial(predictor.predict, image, boxes))
    fps = pipelined_fps(predictor, image, boxes, frames)
    fps_seg2 = pipelined_fps(predictor, image, boxes, frames, seg_every=2)
    graphs = predictor._graphs
    out = {"fps": fps, "fps_seg2": fps_seg2, "launches": launches, "warm_s": warm_s, "captured": len(graphs.captured()),
           "failed": dict(graphs.failed), "late": list(graphs.late)}
    del predictor, models
    torch.cuda.empty_cache()
    return out


def time_detector(graphs: bool, calls: int, dtype: torch.dtype) -> tuple[float, list[str]]:
    """Milliseconds per detector call (upload, network, decoding, the one wait, the host NMS)
    on a 720p frame, RTMDet-m with random weights, batch norms folded as at load; and its
    graph warnings."""
    from realtime.models.rtmdet import Detector, RTMDet, fold_batchnorm

    model = RTMDet(widen=0.75).eval()
    fold_batchnorm(model)
    detector = Detector(model, device="cuda", dtype=dtype, cuda_graphs=graphs)
    image = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    detector.warm_up(image.shape[:2])
    for _ in range(3):
        detector(image, rgb=True)
    start = time.perf_counter()
    for _ in range(calls):
        detector(image, rgb=True)  # each waits for its rows: the call is done
    return 1e3 * (time.perf_counter() - start) / calls, detector.graph_report()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--no-tests", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES), metavar="MODE",
                        help=f"the modes to time, of {', '.join(MODES)} (default all)")
    parser.add_argument("--input-size", type=parse_hw, default=(1024, 768), metavar="HxW",
                        help="the network input, as `run --input-size` (default 1024x768, the released size)")
    parser.add_argument("--people", type=int, default=1, help="people in the frame (pose crops per frame; default 1)")
    parser.add_argument("--budget", type=float, default=450, help="seconds the whole check may take (default 450)")
    parser.add_argument("--peak-tflops", type=float, help="the GPU's dense bf16/fp16 peak (default: from a table by name)")
    args = parser.parse_args()
    began = time.perf_counter()
    if not torch.cuda.is_available():
        print(f"No CUDA GPU here (torch {torch.__version__}, built with CUDA {torch.version.cuda}): nothing to check. "
              "Run this on a machine with an NVIDIA GPU and a CUDA build of torch.")
        return 0
    imports()
    from bench import gpu_gemm, gpu_sdpa
    from realtime.infer import default_dtype

    name = torch.cuda.get_device_name()
    peak = args.peak_tflops or peak_tflops(name)
    dtype = default_dtype("cuda")
    gpu, note = estimate_gpu(name)
    print(f"GPU: {name}, torch {torch.__version__}, CUDA {torch.version.cuda}, dtype {str(dtype).removeprefix('torch.')}; "
          f"peak {'%g TFLOP/s dense half precision' % peak if peak else 'unknown'}; estimates: {gpu.name}{note}", flush=True)
    failed = 0 if args.no_tests else run_gpu_tests()
    torch.backends.cudnn.benchmark = True
    print(f"== SDPA backends (TFLOP/s measured; the estimate assumes {gpu.attention})", flush=True)
    print("\n".join(gpu_sdpa.rates()), flush=True)
    print(f"== the 0.4B's linear layers (TFLOP/s measured; the estimate assumes bf16 {gpu.gemm_bf16:g}, fp8 {gpu.gemm_fp8:g})",
          flush=True)
    print("\n".join(gpu_gemm.rates()), flush=True)
    (h, w), people = args.input_size, args.people
    print(f"== pose + seg, {h}x{w} network input, {people} {'person' if people == 1 else 'people'}, 0.4B models, "
          f"720p frames, {args.frames} frames pipelined; "
          f"seg schedule: every frame (--seg-every 1, files), then every other frame (--seg-every 2: what auto, the "
          f"live default, does while behind)")
    bad_graphs = 0
    for mode, opts in MODES.items():
        if mode not in args.modes:
            continue
        left = args.budget - (time.perf_counter() - began)
        if opts.get("fp8") and torch.cuda.get_device_capability() < (8, 9):
            print(f"  {mode:<25}: skipped (no FP8 tensor cores on compute capability {torch.cuda.get_device_capability()})")
            continue
        if opts.get("compile") and (args.no_compile or left < COMPILE_SECONDS):
            why = "--no-compile" if args.no_compile else f"{left:.0f} s of the budget left"
            print(f"  {mode:<25}: skipped ({why})", flush=True)
            continue
        try:
            got = time_mode(mode, args.frames, dtype, args.input_size, people)
        except Exception as error:  # a mode this GPU or build cannot run (e.g. FP8 before sm_89): say so, go on
            print(f"  {mode:<25}: FAILED: {type(error).__name__}: {str(error).strip().splitlines()[0][:160]}", flush=True)
            failed += 1
            continue
        want = estimate_for(mode, gpu, input_hw=args.input_size, people=people)
        bad_graphs += len(got["failed"]) + len(got["late"])
        keys = ""
        if opts.get("cuda_graphs"):
            keys = (f", graph keys {got['captured']} captured in warm-up / {len(got['failed'])} eager (failed) / "
                    f"{len(got['late'])} captured later")
            keys += "".join(f"\n      failed {key}: {reason}" for key, reason in got["failed"].items())
        halved = estimate_for(mode, gpu, seg_every=2, input_hw=args.input_size, people=people)
        print(f"  {mode:<25}: {got['fps']:7.1f} fps (estimate {want.fps:6.1f}); seg every other frame {got['fps_seg2']:7.1f} "
              f"(estimate {halved.fps:6.1f}); {got['launches']:5d} host launches per frame (estimate {want.launches:5.0f} "
              f"kernels), warm-up {got['warm_s']:5.1f} s{keys}", flush=True)
    print(f"== RTMDet-m person detector, 720p frame, fp16 (as `run` loads it), {args.frames} calls", flush=True)
    for graphs in (False, True):
        ms, report = time_detector(graphs, args.frames, torch.float16)
        bad_graphs += len(report)
        warnings = "".join(f"\n      {r}" for r in report)
        print(f"  {'CUDA graph' if graphs else 'eager':>10}: {ms:6.2f} ms per call{warnings}", flush=True)
    print(f"== done in {time.perf_counter() - began:.0f} s; {failed} failure(s), {bad_graphs} failed or late CUDA graph "
          "capture(s)")
    return 1 if failed or bad_graphs else 0


if __name__ == "__main__":
    sys.exit(main())
