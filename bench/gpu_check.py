"""One command for anyone with an NVIDIA GPU: check the GPU path, time it, and record the run, in one call.

    python bench/gpu_check.py --no-tests --record-dir "$OUT" --commit HASH   # what a lent GPU runs: about 7.6 min on
                                    # an H100 (the plan printed first counts it), the record written as it goes
    python bench/gpu_check.py                 # the GPU tests first (5-6 min more)
    python bench/gpu_check.py --skip kernels profile           # leave parts out (PARTS)
    python bench/gpu_check.py --no-tests --modes default       # one mode's timing
    python bench/gpu_check.py --no-tests --input-size 768x576 --modes default   # the lighter preset
    python bench/gpu_check.py --dry-run --record-dir /tmp/x    # no GPU: every part's logic at tiny scale on the CPU

Needs only PyTorch, NumPy, safetensors and OpenCV (and pytest for the tests): no PyAV, pyqtgraph or
filterpy, no network. tests/test_gpu_standin.py runs its import path with those three made unimportable.

The parts (PARTS), in order; `--skip` leaves any out, `--budget` skips what would not fit and says so:
- **tests**: the GPU tests (GPU_TESTS, by file: collecting the whole tests folder would import modules that
  need PyAV), among them the ones that run `Predictor.predict` and the detector under
  `torch.cuda.set_sync_debug_mode("error")` and assert what was captured as CUDA graphs.
- **checks**: issue 52's new paths (`--sdpa triton`, `--fuse`, `--dual-backbone`) on the golden fixtures' tiny
  models, in fp32 (TF32 off) against the official outputs at the fixtures' tolerance, and in bf16 against fp32:
  what the CPU proves under Triton's interpreter, on the GPU's own kernels.
- **kernels**: bench/gpu_kernels.py, every case timed inside CUDA graphs: the four linear layers at
  M = 3,072 / 3,081 / 6,162 in bf16 and FP8 (per-tensor and per-token x per-channel scales), the two
  models' layers as one batched GEMM, every attention kernel and FlexAttention at (batch, tokens) =
  (1, 3,081), (1, 3,072), (2, 3,081), and the memory-bound passes eager and compiled.
- **fps**: pose + seg at 1024x768 network input (`--input-size`), 720p frames, random 0.4B weights (speed does
  not depend on weight values), per mode (MODES: the `sapiens-rt run` speed flags, "default" for none, built
  as `run` builds the Predictor): frames per second pipelined (frame N+1 launched before frame N is
  collected, as the run's stages do) with seg every frame and every other frame, and for the default also
  three people; host launches per frame, the CUDA graph keys captured in the warm-up against those that
  failed or came later, the warm-up, and bench/gpu_estimate.py's estimate beside each number.
- **launch**: the default's second launch: a fresh process whose inductor and Triton folders are empty, with
  only the compile cache the first launch saved (`--work-dir` holds it): its warm-up (the goal: 15 s) and fps.
- **profile**: a torch.profiler pass over one frame of the default, `--no-compile` and the compiled dual backbone
  (their graphs replayed): every kernel's name and time, summed by kind (GEMM, attention, convolution, fused
  memory passes, copies).
- **detector**: the RTMDet-m person detector per call on a 720p frame, eager and as a CUDA graph.

The record (bench/gpu_record.py's fields) is rewritten after every part, so a call cut short keeps what it
measured. Exits 1 if a test failed or a CUDA graph capture failed or happened after a warm-up.
Without a CUDA GPU (and without --dry-run) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

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
PARTS = ("tests", "checks", "kernels", "fps", "launch", "profile", "detector")


@dataclass(frozen=True)
class Mode:
    """A configuration as `sapiens-rt run` asks for it. options: what its flags change in the Predictor
    `run` builds (RUN_DEFAULTS); people: the person counts timed."""

    options: dict
    people: tuple = (1,)
    profile: bool = False  # a profiler pass over one frame
    compile_s: float = 0.0  # its warm-up's compiles on an H100 with a cold cache (the plan)
    planned: bool = True  # timed unless --modes names others

    @property
    def compiled(self) -> bool:
        return bool({**RUN_DEFAULTS, **self.options}["compile"])


# The Predictor on CUDA as `sapiens-rt run` builds it (realtime.run): CUDA graphs, compiled (where torch can:
# compile_cache.compiles_here, true on the lent machines) with the compile cache, every person bucket up to 16.
RUN_DEFAULTS = {"cuda_graphs": True, "compile": True, "sdpa": "default", "fp8": False, "dual": False, "fuse": False}
GRAPH_S = 36  # one 0.4B forward compiled from a cold cache on an H100 (61-77 s for two: bench/gpu_runs/)
# flags -> Mode. The modes marked `planned` are what a call times unless --modes says otherwise (the plan must fit
# the lent GPU's one call); each new option is timed on the graphed plain path (cheap: no compile) and its kernels
# inside graphs by gpu_kernels; of the compiled ones, the dual backbone (whether it becomes the default).
MODES = {
    "default": Mode({}, people=(1, 3), profile=True, compile_s=3 * GRAPH_S),  # pose bucket 1, pose's dynamic batch, seg
    "--no-compile": Mode({"compile": False}, profile=True),
    "--no-compile --sdpa triton": Mode({"compile": False, "sdpa": "triton"}),
    "--no-compile --dual-backbone": Mode({"compile": False, "dual": True}),
    "--no-compile --fuse": Mode({"compile": False, "fuse": True}),
    # the dual graph (both backbones: about twice one) and pose and seg alone (the default's, from the cache)
    "--dual-backbone": Mode({"dual": True}, profile=True, compile_s=2 * GRAPH_S + 2 * 8),
    "--no-compile --no-cuda-graphs": Mode({"compile": False, "cuda_graphs": False}, planned=False),  # host-bound
    "--sdpa triton": Mode({"sdpa": "triton"}, profile=True, compile_s=2 * GRAPH_S, planned=False),
    "--fuse": Mode({"fuse": True}, profile=True, compile_s=2 * GRAPH_S, planned=False),
    "--fp8 ffn": Mode({"fp8": "ffn"}, profile=True, compile_s=2 * GRAPH_S, planned=False),
    "--sdpa cudnn --fp8": Mode({"sdpa": "cudnn", "fp8": True}, compile_s=2 * GRAPH_S, planned=False),  # H200: +1 %
}
PLANNED_MODES = [name for name, mode in MODES.items() if mode.planned]
SECOND_LAUNCH_S = 45  # a fresh process: torch, the models, three graphs loaded from the compile cache, one timing
# Seconds each step takes on an H100 (a cold compile cache), for the plan printed first and `--budget`:
# measured on the lent H100 / H200s (bench/gpu_runs/): 61-77 s of warm-up for two compiled 0.4B graphs,
# 283-363 s of GPU tests, the detector and the modes' timing a few seconds each.
START_S = 15  # torch import, CUDA initialisation, the plan
TESTS_S = 330
CAPTURE_S = 0.5  # one CUDA graph captured (the warm-up's forward and the capture)
TIMING_S = 2.5  # one (people, seg rate) timed: 50 frames, plus building the models
PROFILE_S = 5
DETECTOR_S = 10
CHECKS_S = 20  # the new paths on the fixture models: a few Triton compiles
PLANNED_S = 480  # what the lent GPU's one call may take (about 8 minutes; the call's limit is 10)


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
    import bench.gpu_kernels  # noqa: F401
    import bench.gpu_record  # noqa: F401
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


def run_predictor_options(mode: str) -> dict:
    """The Predictor options `sapiens-rt run` passes on CUDA with `mode`'s flags (CUDA graphs on by default)."""
    return {**RUN_DEFAULTS, **MODES[mode].options}


def estimate_for(mode: str, gpu, seg_every: int = 1, input_hw: tuple[int, int] = (1024, 768), people: int = 1):
    from bench.gpu_estimate import Config, estimate

    opts = run_predictor_options(mode)
    fp8 = {False: "", True: "static", "attention": "static"}.get(opts["fp8"], opts["fp8"])
    config = Config(mode, input_hw=input_hw, graphs=opts["cuda_graphs"], compiled=bool(opts["compile"]), fp8=fp8,
                    sdpa=opts["sdpa"], seg_every=seg_every, people=people, dual=opts["dual"], fused=opts["fuse"])
    return estimate(config, gpu)


def person_boxes(people: int, width: int = 1280, height: int = 720) -> np.ndarray:
    """`people` side-by-side boxes across a 720p frame (one person: the centred 480x640 box)."""
    if people == 1:
        return np.array([[400, 60, 880, 700]], np.float32) * np.array([width / 1280, height / 720] * 2, np.float32)
    step = (width - 80 * width / 1280) / people
    left = 40 * width / 1280
    return np.array([[left + i * step, 60 * height / 720, left + (i + 1) * step, height - 20 * height / 720]
                     for i in range(people)], np.float32)


def pipelined_fps(predictor, image: np.ndarray, boxes: np.ndarray, frames: int, seg_every: int = 1) -> float:
    """Frames per second with frame N+1 launched before frame N is collected (as the run's
    stages do), seg on every `seg_every`th frame (as `realtime.stages.SegSchedule` with `every`)."""
    def tasks(i: int) -> set[str]:
        return {"pose", "seg"} if i % seg_every == 0 else {"pose"}

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    pending = predictor.launch(image, boxes, tasks(0))
    for i in range(1, frames):
        queued = predictor.launch(image, boxes, tasks(i))
        predictor.collect(pending)
        pending = queued
    predictor.collect(pending)
    return frames / (time.perf_counter() - start)


LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch",
                "cudaMemcpyAsync", "cudaMemsetAsync")


def host_launches(fn) -> int:
    """CUDA runtime launch and copy calls the host makes in `fn()` (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.name in LAUNCH_CALLS)


# ----------------------------------------------------------------------------- the plan


def plan(args) -> list[tuple[str, float]]:
    """(step, seconds on an H100 with a cold compile cache) of what this call will run, in order."""
    steps = [("start", START_S)]
    if "tests" not in args.skip:
        steps.append(("tests", TESTS_S))
    if "checks" not in args.skip:
        steps.append(("checks", CHECKS_S))
    if "kernels" not in args.skip:
        from bench.gpu_kernels import GPU_SHAPES, budget_s, cases

        steps.append(("kernels", budget_s(cases(shapes=GPU_SHAPES, device="meta"))))
    if "fps" not in args.skip:
        for name in args.modes:
            mode = MODES[name]
            if mode.compiled and args.skip_compiled:
                continue
            buckets = len(buckets_for(name, args.people))
            seconds = mode.compile_s + (buckets + 1) * CAPTURE_S + 2 * len(people_for(name, args.people)) * TIMING_S
            if mode.profile and "profile" not in args.skip:
                seconds += PROFILE_S
            steps.append((f"fps {name}", seconds))
            if name == "default" and mode.compiled and not args.skip_compiled and "launch" not in args.skip:
                steps.append(("second launch", SECOND_LAUNCH_S))
    if "detector" not in args.skip:
        steps.append(("detector", DETECTOR_S))
    return steps


def people_for(mode: str, people: int) -> tuple[int, ...]:
    """The person counts timed for `mode`: `--people` and, for the default at one person, also three."""
    return tuple(sorted({people, *MODES[mode].people})) if mode == "default" and people == 1 else (people,)


def buckets_for(mode: str, people: int) -> tuple[int, ...]:
    """The person buckets the mode's Predictor warms up: `run`'s own (every bucket up to 16) for the default,
    else the one the people timed need (a compiled mode then compiles one pose graph)."""
    from realtime.infer import BATCH_BUCKETS

    if mode == "default":
        return BATCH_BUCKETS
    need = min(b for b in BATCH_BUCKETS if b >= max(people_for(mode, people)))  # 5 people run as a bucket of 6
    return tuple(b for b in BATCH_BUCKETS if b <= need)


# ----------------------------------------------------------------------------- one mode


@dataclass
class Setting:
    """Where the check runs: the real GPU, or a dry run on the CPU at tiny scale."""

    device: str
    arch: str
    input_hw: tuple[int, int]
    frame_hw: tuple[int, int]
    dtype: torch.dtype
    frames: int
    dry: bool = False
    compile_cache: Optional[Path] = None  # where compiled modes keep their kernels (the second launch loads them)


def build_predictor(mode: str, setting: Setting, people: int):
    """`mode`'s Predictor as `run` builds it, on random weights: (predictor, its options, its person buckets)."""
    from realtime.infer import Predictor
    from realtime.models import build_model

    options = run_predictor_options(mode)
    if setting.dry:  # the CPU: no graphs, no cuDNN; compiling is proven elsewhere (inductor on two cores takes minutes)
        options = {**options, "compile": False, "fp8": False, "sdpa": "default", "fuse": False}  # what a CPU runs
    models = {task: build_model(task, setting.arch, device=setting.device, dtype=setting.dtype) for task in ("pose", "seg")}
    buckets = buckets_for(mode, people)
    predictor = Predictor(models, device=setting.device, dtype=setting.dtype, input_hw=setting.input_hw,
                          max_batch=max(buckets), compile_cache=setting.compile_cache, **options)
    return predictor, options, buckets


def time_mode(mode: str, setting: Setting, people: int, say: Callable[[str], None], profile: bool) -> dict:
    """Pose + seg with `mode`'s options: the warm-up, fps per (people, seg rate), launches per frame, graph keys,
    and a profile of one frame if asked."""
    predictor, options, buckets = build_predictor(mode, setting, people)
    h, w = setting.frame_hw
    image = np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)
    start = time.perf_counter()
    predictor.warm_up(image.shape[:2])  # compiles and captures every key here
    warm_s = time.perf_counter() - start
    rows = []
    for n in people_for(mode, people):
        boxes = person_boxes(n, w, h)
        for _ in range(3):
            predictor.predict(image, boxes)
        launches = host_launches(functools.partial(predictor.predict, image, boxes)) if setting.device == "cuda" else None
        for every in (1, 2):
            fps = pipelined_fps(predictor, image, boxes, setting.frames, seg_every=every)
            rows.append({"people": n, "seg_every": every, "fps": fps, "launches": launches})
    kernels = None
    if profile:
        from bench.gpu_kernels import profile_kernels

        kernels = profile_kernels(functools.partial(predictor.predict, image, person_boxes(1, w, h)), setting.device)
    graphs = predictor._graphs
    out = {"rows": rows, "warm_s": warm_s, "captured": len(graphs.captured()), "failed": dict(graphs.failed),
           "late": list(graphs.late), "max_batch": max(buckets), "options": options, "profile": kernels,
           "cache_loaded": predictor.compile_cache_loaded}
    del predictor
    if setting.device == "cuda":
        torch.cuda.empty_cache()
    return out


SECOND = "SECOND LAUNCH "  # the line a second launch prints its numbers on


def second_launch(setting: Setting, say: Callable[[str], None]) -> Optional[dict]:
    """The default mode's warm-up and fps (1 person, seg every frame) in a fresh process that finds only the compile
    cache the first launch saved: inductor's and Triton's own folders empty (as after a reboot empties /tmp), so
    what it does not load from the cache it compiles again. None (and said) when it fails."""
    import json
    import os

    fresh = setting.compile_cache.parent / "second-launch"  # empty folders of its own for inductor and Triton
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(fresh / "inductor"), "TRITON_CACHE_DIR": str(fresh / "triton"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    h, w = setting.input_hw
    argv = [sys.executable, str(Path(__file__).resolve()), "--second-launch", str(setting.compile_cache),
            "--input-size", f"{h}x{w}", "--frames", str(setting.frames)] + (["--dry-run"] if setting.dry else [])
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith(SECOND)]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        say(f"  second launch: FAILED (exit {done.returncode}): {tail}")
        return None
    got = json.loads(lines[-1][len(SECOND):])
    got["process_s"] = time.perf_counter() - started
    return got


def run_second_launch(args) -> int:
    """`--second-launch FOLDER`: build the default Predictor with that compile cache, warm it up, time it; print one
    SECOND line of JSON (what `second_launch` reads)."""
    import json

    setting = _setting(args)
    setting.compile_cache = Path(args.second_launch)
    began = time.perf_counter()
    predictor, _, _ = build_predictor("default", setting, 1)
    h, w = setting.frame_hw
    image = np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)
    start = time.perf_counter()
    predictor.warm_up(image.shape[:2])
    warm_s = time.perf_counter() - start
    boxes = person_boxes(1, w, h)
    for _ in range(3):
        predictor.predict(image, boxes)
    fps = pipelined_fps(predictor, image, boxes, setting.frames)
    print(SECOND + json.dumps({"warm_s": warm_s, "fps": fps, "loaded": predictor.compile_cache_loaded,
                               "build_s": start - began}), flush=True)
    return 0


def _setting(args) -> Setting:
    if args.dry_run:
        torch.set_num_threads(1)  # tiny models: a second thread only waits for the first on a shared CPU
        return Setting("cpu", "fixture_e32_h4_l18", (64, 48), (72, 128), torch.float32, min(args.frames, 4), dry=True)
    from realtime.infer import default_dtype

    return Setting("cuda", "sapiens2_0.4b", args.input_size, (720, 1280), default_dtype("cuda"), args.frames)


def time_detector(graphs: bool, calls: int, dtype: torch.dtype, device: str = "cuda", widen: float = 0.75,
                  frame_hw: tuple[int, int] = (720, 1280)) -> tuple[float, list[str]]:
    """Milliseconds per detector call (upload, network, decoding, the one wait, the host NMS)
    on a 720p frame, RTMDet-m with random weights, batch norms folded as at load; and its
    graph warnings."""
    from realtime.models.rtmdet import Detector, RTMDet, fold_batchnorm

    model = RTMDet(widen=widen).eval()
    fold_batchnorm(model)
    detector = Detector(model, device=device, dtype=dtype, cuda_graphs=graphs)
    image = np.random.default_rng(0).integers(0, 256, (*frame_hw, 3), dtype=np.uint8)
    detector.warm_up(image.shape[:2])
    for _ in range(3):
        detector(image, rgb=True)
    start = time.perf_counter()
    for _ in range(calls):
        detector(image, rgb=True)  # each waits for its rows: the call is done
    return 1e3 * (time.perf_counter() - start) / calls, detector.graph_report()


# ----------------------------------------------------------------------------- the call


FIXTURES = ROOT / "tests" / "reference" / "fixtures"


def check_new_paths(device: str, say: Callable[[str], None]) -> list[dict]:
    """Each new path on the fixture pose and seg models against the official outputs: fp32 (TF32 off) within the
    fixtures' head tolerance (max 1e-2, mean 5e-4), bf16 against the path's fp32 (reported). One row each:
    {path, task, dtype, max_abs, mean_abs, ok} or {path, error}."""
    from safetensors.torch import load_file

    from realtime.models import load_model
    from realtime.models.dual import DualTaskModel
    from realtime.models.sapiens2 import set_fused_kernels, set_sdpa_backend

    io = {task: load_file(str(FIXTURES / f"{task}_io.safetensors")) for task in ("pose", "seg")}
    keys = {"pose": "heatmaps", "seg": "seg_logits"}
    rows = []
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        for path in ("default", "sdpa triton", "fuse", "sdpa triton + fuse", "dual backbone"):
            outs = {}
            try:
                for dtype in (torch.float32, torch.bfloat16):
                    models = {t: load_model(t, FIXTURES / f"{t}_weights.safetensors", device=device, dtype=dtype)
                              for t in ("pose", "seg")}
                    for model in models.values():
                        if "triton" in path:
                            set_sdpa_backend(model, "triton")
                        if "fuse" in path:
                            set_fused_kernels(model)
                    x = {t: io[t]["input"].to(device, dtype) for t in models}
                    with torch.inference_mode():
                        if path == "dual backbone":
                            got = dict(zip(("pose", "seg"), DualTaskModel(models["pose"], models["seg"])(x["pose"], x["seg"])))
                        else:
                            got = {t: models[t](x[t]) for t in models}
                    outs[dtype] = {t: v.float().cpu() for t, v in got.items()}
            except Exception as error:  # a path this GPU or build cannot run: say why, go on
                rows.append({"path": path, "error": f"{type(error).__name__}: {str(error).strip().splitlines()[0][:160]}"})
                say(f"  {path:<22}: n/a ({rows[-1]['error']})")
                continue
            for task in ("pose", "seg"):
                d32 = (outs[torch.float32][task] - io[task][keys[task]]).abs()
                d16 = (outs[torch.bfloat16][task] - outs[torch.float32][task]).abs()
                ok = bool(d32.max() <= 1e-2 and d32.mean() <= 5e-4)
                rows.append({"path": path, "task": task, "fp32_max_abs": float(f"{d32.max():.3g}"),
                             "fp32_mean_abs": float(f"{d32.mean():.3g}"), "bf16_vs_fp32_max_abs": float(f"{d16.max():.3g}"),
                             "bf16_vs_fp32_mean_abs": float(f"{d16.mean():.3g}"), "ok": ok})
                say(f"  {path:<22} {task:<4}: fp32 against the official max {d32.max():.2e} mean {d32.mean():.2e} "
                    f"({'within' if ok else 'OUTSIDE'} the fixtures' tolerance); bf16 against fp32 max {d16.max():.2e} "
                    f"mean {d16.mean():.2e}")
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    return rows


def commit_of(root: Path = ROOT) -> str:
    """The code's commit (short), "-dirty" when tracked files differ from it; "unknown" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                               text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Recorder:
    """The run's record, rewritten (atomically) after every part; a folder it cannot write is said once, and
    the check goes on measuring."""

    def __init__(self, record: dict, folder: Optional[Path]) -> None:
        self.record, self.folder, self.path = record, folder, None

    def save(self) -> None:
        if self.folder is None:
            return
        from bench.gpu_record import write_record

        try:
            self.path = write_record(self.record, self.folder, path=self.path)
        except OSError as error:
            print(f"could not write the run's record in {self.folder} ({error.strerror or error}); the check goes on "
                  "without it: pass --record-dir with a folder you can write", flush=True)
            self.folder = None
        except ValueError as error:  # a value the record must not hold (a bug of the check): said, the check goes on
            print(f"the run's record was not written ({error}); the check goes on without it", flush=True)
            self.folder = None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--no-tests", action="store_true", help="skip the GPU tests (as --skip tests)")
    parser.add_argument("--skip-compiled", action="store_true", help="skip the compiled modes (the default among them)")
    parser.add_argument("--skip", nargs="+", choices=PARTS, default=[], metavar="PART",
                        help=f"parts to leave out, of {', '.join(PARTS)}")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=PLANNED_MODES, metavar="MODE",
                        help=f"the modes to time, of {', '.join(repr(m) for m in MODES)} (default: "
                             f"{', '.join(repr(m) for m in PLANNED_MODES)})")
    parser.add_argument("--input-size", type=parse_hw, default=(1024, 768), metavar="HxW",
                        help="the network input, as `run --input-size` (default 1024x768, the released size)")
    parser.add_argument("--people", type=int, default=1, help="people in the frame (pose crops per frame; default 1)")
    parser.add_argument("--budget", type=float, default=PLANNED_S + 60,
                        help=f"seconds the whole check may take (default {PLANNED_S + 60:g})")
    parser.add_argument("--peak-tflops", type=float, help="the GPU's dense bf16/fp16 peak (default: from a table by name)")
    parser.add_argument("--record-dir", type=Path, help="where the run's record goes (default bench/gpu_runs; a dry run "
                        "writes one only here)")
    parser.add_argument("--commit", help="the code's commit for the record (default: git's, or 'unknown')")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: every part's logic on the CPU at tiny scale "
                        "(tiny models, eager; not a measurement)")
    parser.add_argument("--work-dir", type=Path, help="a folder for the compile cache and the second launch's caches "
                        "(default: a temporary one, removed at the end)")
    parser.add_argument("--second-launch", metavar="FOLDER", help=argparse.SUPPRESS)  # the second launch's own process
    args = parser.parse_args(argv)
    if args.second_launch:
        return run_second_launch(args)
    if args.no_tests or args.dry_run:
        args.skip = sorted(set(args.skip) | {"tests"})
    if args.frames < 2 or args.people < 1:
        parser.error("--frames must be 2 or more and --people 1 or more")
    if args.commit is not None and not args.commit.strip():
        parser.error("--commit is empty; give the code's short hash, e.g. --commit $(git rev-parse --short HEAD)")
    began = time.perf_counter()
    if not torch.cuda.is_available() and not args.dry_run:
        print(f"No CUDA GPU here (torch {torch.__version__}, built with CUDA {torch.version.cuda}): nothing to check. "
              "Run this on a machine with an NVIDIA GPU and a CUDA build of torch (or pass --dry-run).")
        return 0
    imports()
    import tempfile

    if args.work_dir:
        return _check(args, argv, began, Path(args.work_dir))
    with tempfile.TemporaryDirectory(prefix="sapiens-gpu-check-") as work:
        return _check(args, argv, began, Path(work))


def _check(args, argv, began: float, work: Path) -> int:
    """The check's parts in order (`main` parsed the arguments); `work`: the compile caches' folder."""
    from bench import gpu_kernels
    from bench.gpu_record import RUNS, new_record, quote, result

    steps = plan(args)
    print("plan (seconds on an H100, cold compile cache): " + ", ".join(f"{name} {s:.0f}" for name, s in steps)
          + f"; {sum(s for _, s in steps):.0f} s in all", flush=True)
    setting = _setting(args)
    setting.compile_cache = work / "compile-cache"  # empty: the first launch's, then the second launch's to load
    dtype = setting.dtype
    if args.dry_run:
        name, folder = "CPU dry run (no GPU; not a measurement)", args.record_dir
    else:
        name, folder = torch.cuda.get_device_name(), args.record_dir or RUNS
    (h, w), people = setting.input_hw, args.people
    record = new_record(device=name, torch_version=torch.__version__, commit=args.commit or commit_of(),
                        input_size=f"{h}x{w}", people=people)
    record.update(dtype=str(dtype).removeprefix("torch."), cuda=torch.version.cuda or "none",
                  command=" ".join(["python bench/gpu_check.py", *(argv if argv is not None else sys.argv[1:])]))
    if args.dry_run:
        record["dry_run"] = True
    recorder = Recorder(record, folder)
    recorder.save()
    peak = args.peak_tflops or peak_tflops(name)
    gpu, note = estimate_gpu(name)
    print(f"GPU: {name}, torch {torch.__version__}, CUDA {torch.version.cuda}, dtype {record['dtype']}; "
          f"peak {'%g TFLOP/s dense half precision' % peak if peak else 'unknown'}; estimates: {gpu.name}{note}", flush=True)
    failed = 0
    if "tests" not in args.skip:
        failed = run_gpu_tests()
        record["tests"] = {"exit_code": failed}
        recorder.save()
    if "checks" not in args.skip:
        print("== the new paths on the fixture models (fp32 against the official outputs, bf16 against fp32)", flush=True)
        rows = check_new_paths(setting.device, lambda line: print(line, flush=True))
        record["checks"] = rows
        failed += sum(1 for row in rows if row.get("ok") is False) + (
            0 if args.dry_run else sum(1 for row in rows if "error" in row))
        recorder.save()
    if not args.dry_run:
        torch.backends.cudnn.benchmark = True

    def left() -> float:
        return args.budget - (time.perf_counter() - began)

    if "kernels" not in args.skip:
        print("== kernels inside CUDA graphs (bench/gpu_kernels.py): us per call" if not args.dry_run else
              "== kernels (dry run: tiny shapes, eager on the CPU)", flush=True)
        for part in gpu_kernels.PARTS:
            record["microbenchmarks"][part] = gpu_kernels.run((part,), dry=args.dry_run,
                                                              say=lambda line: print(line, flush=True))[part]
            recorder.save()
    bad_graphs = 0
    if "fps" not in args.skip:
        print(f"== pose + seg, {h}x{w} network input, 0.4B models, {setting.frame_hw[1]}x{setting.frame_hw[0]} frames, "
              f"{setting.frames} frames pipelined; seg every frame (--seg-every 1, files), then every other frame "
              "(--seg-every 2: what auto, the live default, does while behind)", flush=True)
        for mode in args.modes:
            spec = MODES[mode]
            opts = run_predictor_options(mode)
            if opts["fp8"] and not args.dry_run and torch.cuda.get_device_capability() < (8, 9):
                print(f"  {mode:<30}: skipped (no FP8 tensor cores on compute capability {torch.cuda.get_device_capability()})")
                continue
            cost = dict(steps).get(f"fps {mode}", 0.0)
            if spec.compiled and (args.skip_compiled or left() < cost):
                why = "--skip-compiled" if args.skip_compiled else f"{left():.0f} s of the budget left, about {cost:.0f} s needed"
                print(f"  {mode:<30}: skipped ({why})", flush=True)
                continue
            try:
                got = time_mode(mode, setting, people, print, profile=spec.profile and "profile" not in args.skip)
            except Exception as error:  # a mode this GPU or build cannot run: say so, go on
                print(f"  {mode:<30}: FAILED: {type(error).__name__}: {str(error).strip().splitlines()[0][:160]}", flush=True)
                failed += 1
                continue
            bad_graphs += len(got["failed"]) + len(got["late"])
            keys = (f"; graph keys {got['captured']} captured in warm-up / {len(got['failed'])} failed / "
                    f"{len(got['late'])} later") if opts["cuda_graphs"] and not args.dry_run else ""
            print(f"  {mode:<30}: warm-up {got['warm_s']:5.1f} s (buckets up to {got['max_batch']}){keys}", flush=True)
            for key, reason in got["failed"].items():
                print(f"      failed {key}: {reason}")
            for row in got["rows"]:
                want = estimate_for(mode, gpu, seg_every=row["seg_every"], input_hw=setting.input_hw if not args.dry_run
                                    else (1024, 768), people=row["people"])
                launches = f"; {row['launches']:5d} host launches per frame" if row["launches"] is not None else ""
                print(f"      {row['people']} {'person' if row['people'] == 1 else 'people'}, seg every "
                      f"{'frame' if row['seg_every'] == 1 else 'other frame'}: {row['fps']:7.1f} fps (estimate "
                      f"{want.fps:6.1f}){launches}", flush=True)
                extra = {"config": {**{k: v for k, v in got["options"].items()}, "max_batch": got["max_batch"]},
                         "estimate_fps": round(want.fps, 1), "estimate_gpu": gpu.name}
                if row["launches"] is not None:
                    extra["launches"] = row["launches"]
                if row["people"] != people:
                    extra["people"] = row["people"]
                if got["failed"] or got["late"]:
                    extra["graphs_failed_or_late"] = len(got["failed"]) + len(got["late"])
                record["results"].append(result(mode, seg_every=row["seg_every"], fps=round(row["fps"], 2),
                                                warmup_s=round(got["warm_s"], 2), **extra))
            if got["profile"] is not None:
                kinds, top = got["profile"]
                record["microbenchmarks"].setdefault("profile", []).extend(
                    [{"mode": mode, "kind": kind, **value} for kind, value in kinds.items()]
                    + [{"mode": mode, **row} for row in top])
                print("      profile of one frame, by kind: " + ", ".join(
                    f"{kind} {value['us'] / 1e3:.2f} ms ({value['kernels']})" for kind, value in kinds.items()), flush=True)
            recorder.save()
            if mode == "default" and spec.compiled and "launch" not in args.skip and not args.skip_compiled:
                again = second_launch(setting, print)
                if again is None:
                    failed += 1
                    continue
                print(f"  {'default, second launch':<30}: warm-up {again['warm_s']:5.1f} s (compile cache "
                      f"{'loaded' if again['loaded'] else 'NOT loaded'}; the process {again['process_s']:.0f} s in all); "
                      f"1 person, seg every frame: {again['fps']:7.1f} fps", flush=True)
                record["results"].append(result(
                    "default", seg_every=1, fps=round(again["fps"], 2), warmup_s=round(again["warm_s"], 2),
                    process="second launch", compile_cache_loaded=again["loaded"], process_s=round(again["process_s"], 1),
                    config={**got["options"], "max_batch": got["max_batch"]},
                    note="a fresh process whose inductor and Triton folders are empty: only the compile cache the first "
                         "launch saved"))
                recorder.save()
    if "detector" not in args.skip:
        calls = setting.frames
        print(f"== RTMDet-m person detector, 720p frame, fp16 (as `run` loads it), {calls} calls", flush=True)
        rows = []
        for graphs in ((False,) if args.dry_run else (False, True)):
            if args.dry_run:
                ms, report = time_detector(graphs, calls, torch.float32, "cpu", widen=0.25, frame_hw=setting.frame_hw)
            else:
                ms, report = time_detector(graphs, calls, torch.float16)
            bad_graphs += len(report)
            warnings = "".join(f"\n      {r}" for r in report)
            print(f"  {'CUDA graph' if graphs else 'eager':>10}: {ms:6.2f} ms per call{warnings}", flush=True)
            rows.append({"what": "RTMDet-m, 720p frame, fp16" if not args.dry_run else "RTMDet widen 0.25, CPU",
                         "mode": "CUDA graph" if graphs else "eager", "ms": round(ms, 3)})
        record["microbenchmarks"]["detector"] = rows
        recorder.save()
    record["elapsed_s"] = round(time.perf_counter() - began, 1)
    recorder.save()
    print(f"== done in {time.perf_counter() - began:.0f} s; {failed} failure(s), {bad_graphs} failed or late CUDA graph "
          "capture(s)")
    if recorder.path is not None:
        print(f"record: {recorder.path}\n{quote(recorder.path, record)}", flush=True)
    return 1 if failed or bad_graphs else 0


if __name__ == "__main__":
    sys.exit(main())
