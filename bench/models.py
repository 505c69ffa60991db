"""Forward time of the Sapiens2 0.4B pose model (random weights: speed does not
depend on weight values).

    python bench/models.py            # CPU 512x384 fp32 + bf16; GPU 1024x768 fp16/bf16 if CUDA is there
    python bench/models.py --no-cpu   # GPU only
    python bench/models.py --emulated-bf16   # also time bf16 on a CPU without bf16 units (slow)
    python bench/models.py --official sapiens2.py   # also ours vs the official backbone, alternating
    python bench/models.py --before OLD/realtime/models/sapiens2.py   # and vs an earlier version of ours

Prints one line per setting: ms per forward, ms per image and the achieved
FLOP rate. FLOPs are counted (torch.utils.flop_counter on the meta device, one
multiply-add = 2 FLOP): 3.86 TFLOP per 1024x768 image for the 0.4B pose model
(2.43 backbone linear layers, 0.93 attention, 0.50 convolutions). The "1.26
TFLOP" often quoted is about the backbone's linear layers counted as
multiply-adds; the GPU lines also give the rate in that convention.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from realtime.models import build_model
from realtime.models.task_model import _cpu_has_bf16_units

QUOTED_TFLOP_PER_IMAGE_1024x768 = 1.26  # the figure for the 0.4B, see above


def count_flops(height: int, width: int) -> float:
    """FLOP of one forward of one image, counted on the meta device (no memory, no compute)."""
    from torch.utils.flop_counter import FlopCounterMode

    model = build_model("pose", "sapiens2_0.4b", device="meta")
    with FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, height, width, device="meta"))
    return float(counter.get_total_flops())


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cpu_bf16_support() -> str:
    """How this CPU does bf16 matrix maths, in words."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return "unknown (not Linux)"
    units = [name for flag, name in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16")) if flag in flags]
    return "native (" + ", ".join(units) + ")" if units else "emulated (no AVX512-BF16/AMX)"


def _time(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _module_from(path: str, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_official(path: str, ours) -> torch.nn.Module:
    """The official standalone backbone (sapiens/backbones/standalone/sapiens2.py of
    facebookresearch/sapiens2) with our backbone's weights, loaded strictly."""
    official = _module_from(path, "official_sapiens2").Sapiens2(arch="sapiens2_0.4b", img_size=(512, 384), out_type="featmap")
    official.load_state_dict(ours.state_dict(), strict=True)
    return official.eval().requires_grad_(False)


def load_before(path: str, ours) -> torch.nn.Module:
    """Our backbone as an earlier checkout's realtime/models/sapiens2.py has it, same weights."""
    from realtime.models.archs import ARCHS

    before = _module_from(path, "before_sapiens2").Sapiens2(ARCHS["sapiens2_0.4b"])
    before.load_state_dict(ours.state_dict(), strict=True)
    return before.eval().requires_grad_(False)


def bench_cpu(model, iters: int, emulated_bf16: bool, others: dict) -> None:
    x = torch.randn(1, 3, 512, 384)
    flops = count_flops(512, 384)
    native_bf16 = _cpu_has_bf16_units()
    print(f"CPU: {_cpu_name()}, {torch.get_num_threads()} threads, torch {torch.__version__}; bf16: {cpu_bf16_support()}; "
          f"{flops / 1e12:.2f} TFLOP per 512x384 image")
    for dtype in (torch.float32, torch.bfloat16):
        name = str(dtype).removeprefix("torch.")
        if dtype == torch.bfloat16 and not native_bf16 and not emulated_bf16:
            print(f"  0.4B pose, random weights, 1x3x512x384 {name:>8}: skipped, this CPU has no bf16 units "
                  f"(emulated bf16 takes minutes per forward; --emulated-bf16 times it)")
            continue
        model.to(dtype)
        inp = x.to(dtype)
        # Emulated bf16 is so slow that one cold run says enough.
        warm, runs = (True, iters) if dtype == torch.float32 or native_bf16 else (False, 1)
        with torch.inference_mode():
            if warm:
                model(inp)
            ms = statistics.median(_time(lambda: model(inp), runs))
        note = f"median of {runs} runs after a warm-up" if warm else "1 cold run; this CPU has no bf16 units, bf16 is emulated"
        print(
            f"  0.4B pose, random weights, 1x3x512x384 {name:>8}: "
            f"{ms:8.1f} ms/forward, {flops / (ms / 1e3) / 1e9:6.1f} GFLOP/s ({note})"
        )
        if others and warm:
            compare_backbones({"ours": model.backbone, **{k: m.to(dtype) for k, m in others.items()}}, inp, runs, name)


def compare_backbones(backbones: dict, x: torch.Tensor, runs: int, name: str) -> None:
    """The backbones, same weights and input, in alternating runs; ratios to "ours" per round."""
    with torch.inference_mode():
        for m in backbones.values():
            m(x)  # warm each
        times = {label: [] for label in backbones}
        for _ in range(runs):
            for label, m in backbones.items():
                times[label] += _time(lambda: m(x), 1)
    line = ", ".join(f"{label} {statistics.median(t):8.1f} ms" for label, t in times.items())
    print(f"  backbone only {name:>8}, medians of {runs} alternating rounds: {line}")
    for label, t in times.items():
        if label != "ours":
            ratios = ", ".join(f"{a / b:.2f}" for a, b in zip(times["ours"], t))
            print(f"    ours/{label} per round: {ratios}")


def bench_gpu(model, iters: int) -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    flops = count_flops(1024, 768)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}; "
          f"{flops / 1e12:.2f} TFLOP per 1024x768 image")
    model.cuda()
    for dtype in (torch.float16, torch.bfloat16):
        model.to(dtype)
        for batch in (1, 4):
            x = torch.randn(batch, 3, 1024, 768, device="cuda", dtype=dtype)
            with torch.inference_mode():
                for _ in range(3):
                    model(x)
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(iters):
                    model(x)
                end.record()
                torch.cuda.synchronize()
            ms = start.elapsed_time(end) / iters
            seconds = ms / 1e3
            print(
                f"  0.4B pose, random weights, {batch}x3x1024x768 {str(dtype).removeprefix('torch.'):>8}: "
                f"{ms:7.2f} ms/forward, {ms / batch:6.2f} ms/image, {flops * batch / seconds / 1e12:6.1f} TFLOP/s counted "
                f"({QUOTED_TFLOP_PER_IMAGE_1024x768 * batch / seconds:6.1f} at the quoted 1.26 TFLOP/image)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-iters", type=int, default=2)
    parser.add_argument("--gpu-iters", type=int, default=20)
    parser.add_argument("--no-cpu", action="store_true")
    parser.add_argument("--threads", type=int, help="CPU threads (default: torch's choice)")
    parser.add_argument("--emulated-bf16", action="store_true", help="time bf16 on a CPU without bf16 units too (minutes)")
    parser.add_argument("--official", metavar="SAPIENS2_PY",
                        help="the official standalone backbone file (sapiens/backbones/standalone/sapiens2.py of "
                             "facebookresearch/sapiens2): also time it against ours, alternating")
    parser.add_argument("--before", metavar="SAPIENS2_PY",
                        help="realtime/models/sapiens2.py of an earlier checkout: also time that version of ours")
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = build_model("pose", "sapiens2_0.4b")
    print(f"model: {model.arch} {model.task}, {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters, random weights")
    if not args.no_cpu:
        others = {}
        if args.before:
            others["before"] = load_before(args.before, model.backbone)
        if args.official:
            others["official"] = load_official(args.official, model.backbone)
        bench_cpu(model, args.cpu_iters, args.emulated_bf16, others)
    if torch.cuda.is_available():
        bench_gpu(model, args.gpu_iters)
    else:
        print("GPU: none (CUDA not available), GPU numbers skipped")


if __name__ == "__main__":
    main()
