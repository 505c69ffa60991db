"""Forward time of the Sapiens2 0.4B pose model (random weights: speed does not
depend on weight values).

    python bench/models.py            # CPU 512x384 fp32 + bf16; GPU 1024x768 fp16/bf16 if CUDA is there
    python bench/models.py --no-cpu   # GPU only
    python bench/models.py --emulated-bf16   # also time bf16 on a CPU without bf16 units (slow)
    python bench/models.py --official sapiens2.py   # also ours vs the official backbone, alternating
    python bench/models.py --before OLD/realtime/models/sapiens2.py   # and vs an earlier version of ours
    python bench/models.py --peers --official sapiens2.py   # ours vs official vs transformers, CPU fp32 only
    python bench/models.py --peers --official sapiens2.py --before OLD/realtime/models/sapiens2.py   # and vs earlier ours

`--peers` is what a user choosing an implementation would measure: in one process, fp32,
the same random weights (ours copied into each peer) and input, alternating rounds at
256x192 and 512x384 (every other round in reverse order), medians and ratios. The ratio to
read is the median of the per-round ratios: each round runs the pair back to back. Peers:
the official standalone backbone (a path to
sapiens/backbones/standalone/sapiens2.py of facebookresearch/sapiens2, kept outside this repo)
and Hugging Face transformers' `Sapiens2ForPoseEstimation` when transformers is installed
(benchmark-only, not a dependency of this project).

Prints one line per setting: ms per forward, ms per image and the achieved
FLOP rate. FLOPs are counted (torch.utils.flop_counter on the meta device, one
multiply-add = 2 FLOP): 3.86 TFLOP per 1024x768 image for the 0.4B pose model
(2.43 backbone linear layers, 0.93 attention, 0.50 convolutions). The "1.26
TFLOP" often quoted is about the backbone's linear layers counted as
multiply-adds; the GPU lines also give the rate in that convention.
"""

from __future__ import annotations

import argparse
import math
import platform
import re
import statistics
import sys
import time

try:
    import resource  # page faults per forward (Unix only)
except ImportError:
    resource = None

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
    sys.modules[name] = module  # the importlib recipe: findable by name (the profiler labels its functions)
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


def load_transformers(ours_pose, height: int, width: int) -> torch.nn.Module | None:
    """transformers' `Sapiens2ForPoseEstimation` (0.4B) with our pose model's weights, or None
    when transformers (or its Sapiens2) is not installed. Its `.model` is the backbone."""
    try:
        from transformers import Sapiens2Config, Sapiens2ForPoseEstimation
    except ImportError:
        return None
    head = ours_pose.decode_head
    config = Sapiens2Config(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
        num_key_value_attention_heads=8, layerscale_value=1e-4, image_size=(height, width), num_labels=308,
        key_bias=True,  # the official wk has a bias: keep it so the same weights compute the same thing
        head_config=dict(upsample_out_channels=[m.out_channels for m in head.deconv_layers
                                                if isinstance(m, torch.nn.ConvTranspose2d)],
                         conv_out_channels=[m.out_channels for m in head.conv_layers if isinstance(m, torch.nn.Conv2d)]),
    )
    config._attn_implementation = "sdpa"
    theirs = Sapiens2ForPoseEstimation(config).eval().requires_grad_(False)
    theirs.load_state_dict(transformers_state_dict(ours_pose.state_dict()), strict=True)
    return theirs


def transformers_state_dict(ours: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our (official) pose-model keys renamed to transformers' (the inverse of
    realtime.models.hf_naming for the backbone and the pose head); `ffn.w12` is split
    into `gate_proj` (first half) and `up_proj`."""
    rules = (
        (r"^backbone\.cls_token$", "model.embeddings.cls_token"),
        (r"^backbone\.storage_tokens$", "model.embeddings.register_tokens"),
        (r"^backbone\.patch_embed\.projection\.", "model.embeddings.patch_embeddings."),
        (r"^backbone\.rope_embed\.periods$", None),  # transformers recomputes its fp32 frequencies
        (r"^backbone\.blocks\.(\d+)\.ln1\.", r"model.model.layer.\1.norm1."),
        (r"^backbone\.blocks\.(\d+)\.ln2\.", r"model.model.layer.\1.norm2."),
        (r"^backbone\.blocks\.(\d+)\.attn\.wq\.", r"model.model.layer.\1.attention.q_proj."),
        (r"^backbone\.blocks\.(\d+)\.attn\.wk\.", r"model.model.layer.\1.attention.k_proj."),
        (r"^backbone\.blocks\.(\d+)\.attn\.wv\.", r"model.model.layer.\1.attention.v_proj."),
        (r"^backbone\.blocks\.(\d+)\.attn\.proj\.", r"model.model.layer.\1.attention.o_proj."),
        (r"^backbone\.blocks\.(\d+)\.attn\.(q_norm|k_norm)\.", r"model.model.layer.\1.attention.\2."),
        (r"^backbone\.blocks\.(\d+)\.attn\.gamma\.weight$", r"model.model.layer.\1.layer_scale1.lambda1"),
        (r"^backbone\.blocks\.(\d+)\.ffn\.w3\.", r"model.model.layer.\1.mlp.down_proj."),
        (r"^backbone\.ln1\.weight$", "model.norm.weight"),
        (r"^decode_head\.deconv_layers\.(\d+)\.", lambda m: f"decode_head.upsample_layers.{int(m[1]) // 3}.convolution."),
        (r"^decode_head\.conv_layers\.(\d+)\.", lambda m: f"decode_head.conv_layers.{int(m[1]) // 3}.convolution."),
        (r"^decode_head\.conv_pose\.", "decode_head.predictor."),
    )
    out: dict[str, torch.Tensor] = {}
    for key, value in ours.items():
        if m := re.match(r"^backbone\.blocks\.(\d+)\.ffn\.w12\.(weight|bias)$", key):
            gate, up = value.chunk(2)
            out[f"model.model.layer.{m[1]}.mlp.gate_proj.{m[2]}"] = gate
            out[f"model.model.layer.{m[1]}.mlp.up_proj.{m[2]}"] = up
            continue
        for pattern, repl in rules:
            if m := re.match(pattern, key):
                if repl is not None:
                    out[repl(m) + key[m.end():] if callable(repl) else re.sub(pattern, repl, key)] = value
                break
        else:
            raise KeyError(f"no transformers name for {key}")
    return out


def _loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def _parse_size(text: str) -> tuple[int, int]:
    h, w = text.lower().split("x")
    return int(h), int(w)


def bench_peers(official_path: str | None, sizes: list[tuple[int, int]], rounds: int, before_path: str | None = None) -> None:
    """Ours, the official backbone and transformers (and an earlier version of ours with
    `before_path`) in one process, fp32, the same random weights and input, alternating
    rounds; medians and ratios per size."""
    torch.manual_seed(0)
    ours = build_model("pose", "sapiens2_0.4b")
    print(f"peers: CPU {_cpu_name()}, {torch.get_num_threads()} threads, torch {torch.__version__}, fp32, "
          f"0.4B pose, random weights (ours copied into every peer), {rounds} alternating rounds after a warm-up; "
          f"load average {_loadavg()}")
    official = load_official(official_path, ours.backbone) if official_path else None
    if official is None:
        print("  official: skipped (no --official path)")
    before = load_before(before_path, ours.backbone) if before_path else None
    for height, width in sizes:
        theirs = load_transformers(ours, height, width)
        if theirs is None:
            print("  transformers: skipped (not installed, or without Sapiens2)")
        backbones = {"ours": ours.backbone}
        if official is not None:
            backbones["official"] = lambda x, m=official: m(x)[0]  # it returns a 1-tuple
        if theirs is not None:
            backbones["transformers"] = lambda x, m=theirs.model: m(x).last_hidden_state
        if before is not None:
            backbones["before"] = before
        poses = {"ours": ours}
        if theirs is not None:
            poses["transformers"] = lambda x, m=theirs: m(x).heatmaps
        x = torch.randn(1, 3, height, width)
        with torch.inference_mode():
            _check_same(backbones, poses, x)
        for what, group in (("backbone", backbones), ("pose model", poses)):
            if len(group) > 1:
                _alternate(group, x, rounds, f"{height}x{width} {what}")
        print(f"    load average after {height}x{width}: {_loadavg()}")


def _check_same(backbones: dict, poses: dict, x: torch.Tensor) -> None:
    """Say how far each peer's output is from ours (same weights): official is bit-identical,
    transformers rotates in fp32 instead of the official bf16."""
    ref = backbones["ours"](x)
    ref_tokens = ref.flatten(2).transpose(1, 2)
    for label, m in backbones.items():
        if label == "ours":
            continue
        out = m(x)
        out = out[:, 1 + 8:] if label == "transformers" else out.flatten(2).transpose(1, 2)
        diff = (out - ref_tokens).abs().max().item()
        print(f"  {label} backbone vs ours: max |diff| {diff:.3g} (features up to {ref_tokens.abs().max().item():.3g})")
    if "transformers" in poses:
        diff = (poses["transformers"](x) - poses["ours"](x)).abs().max().item()
        print(f"  transformers pose heatmaps vs ours: max |diff| {diff:.3g}")


def _page_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource is not None else 0


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free interval for the median of the population `values` were drawn from
    (the sign test's order statistics): the k-th smallest and k-th largest value, with the
    largest k that still covers the median with at least `confidence`; None for too few values
    (fewer than 6 at 95 %)."""
    n, ordered = len(values), sorted(values)
    k, tail = 0, 0.0  # tail: P(X < k) for X ~ Binomial(n, 1/2), the chance the median lies below the k-th
    while k < n // 2:
        p = math.comb(n, k) / 2**n
        if 2 * (tail + p) > 1 - confidence:
            break
        tail, k = tail + p, k + 1
    return (ordered[k - 1], ordered[n - k]) if k else None


def _alternate(models: dict, x: torch.Tensor, rounds: int, name: str) -> None:
    with torch.inference_mode():
        for m in models.values():
            m(x)  # warm each
        times = {label: [] for label in models}
        faults = {label: [] for label in models}
        for r in range(rounds):
            order = list(models.items())  # every other round backwards: a drift in the VM's
            for label, m in order if r % 2 == 0 else order[::-1]:  # speed favours nobody
                before = _page_faults()
                times[label] += _time(lambda m=m: m(x), 1)
                faults[label].append(_page_faults() - before)
    medians = {label: statistics.median(t) for label, t in times.items()}
    print(f"  {name:>20}: " + ", ".join(f"{label} {ms:8.1f} ms" for label, ms in medians.items()))
    # Fresh pages the allocator asked the kernel for (each zeroed on first touch): they cost
    # time too, and how many depends on the allocator's state as much as on the code.
    if resource is not None:
        print(f"  {'':>20}  page faults per forward (median): "
              + ", ".join(f"{label} {statistics.median(f):.0f}" for label, f in faults.items()))
    for label, t in times.items():
        if label != "ours":
            # Each round times the pair back to back, so its ratio is immune to the slow drift
            # of a shared VM's speed that moves the medians of times by 10-20 %.
            per_round = [a / b for a, b in zip(times["ours"], t)]
            interval = median_interval(per_round)
            spread = f", 95 % interval {interval[0]:.2f}-{interval[1]:.2f}" if interval else ""
            rounds = ", ".join(f"{r:.2f}" for r in per_round)
            print(f"  {'':>20}  ours/{label} {statistics.median(per_round):.2f} (median of per-round ratios{spread}; "
                  f"ratio of medians {medians['ours'] / medians[label]:.2f}; per round {rounds})")


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
            ms = statistics.median(_time(lambda inp=inp: model(inp), runs))
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
                times[label] += _time(lambda m=m: m(x), 1)
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
    parser.add_argument("--peers", action="store_true",
                        help="CPU fp32 only: ours vs the official backbone (--official) vs transformers, alternating")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds for --peers")
    parser.add_argument("--sizes", default="256x192,512x384", help="input sizes HxW for --peers")
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.peers:
        bench_peers(args.official, [_parse_size(s) for s in args.sizes.split(",")], args.rounds, args.before)
        return
    model = build_model("pose", "sapiens2_0.4b")
    millions = sum(p.numel() for p in model.parameters()) / 1e6
    print(f"model: {model.arch} {model.task}, {millions:.1f} M parameters, random weights")
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
