"""The 0.4B's kernels timed inside CUDA graphs, where the host's launch cost is gone.

    python bench/gpu_kernels.py                     # every part: linear layers, attention, fused passes
    python bench/gpu_kernels.py --parts attention   # one part
    python bench/gpu_kernels.py --dry-run           # no GPU: tiny shapes timed eagerly on the CPU (the logic, not the speed)

Eager, each op costs the host 18-35 us on the lent machines, as long as a small GEMM takes on the GPU, so
bench/gpu_gemm.py's and bench/gpu_sdpa.py's rates may be the host's. Here each case is run 3 times eagerly
on a side stream (lazy initialisation, cuBLAS and cuDNN choices), then CALLS calls are captured in one CUDA
graph, replayed once, and REPLAYS replays timed with CUDA events: microseconds per call, no host in it.

- **linear**: the backbone's linear layers (LINEARS: q/k/v of a full-head layer and of a GQA layer, the output
  projection, SwiGLU's w12 and w3) at M = 3,072 (the patch tokens), 3,081 (with the 9 prefix tokens, what runs)
  and 6,162 (two images: pose and seg stacked), in bf16 (`F.linear`), FP8 E4M3 with per-tensor scales (what
  `--fp8` runs) and with per-token x per-channel scales (row-wise), with and without fast accumulation; and
  the two models' layers stacked as one batched GEMM (`baddbmm`, the dual backbone) beside two GEMMs.
- **attention**: every `--sdpa` kernel and FlexAttention at (batch, tokens) = (1, 3,081), (1, 3,072) and
  (2, 3,081), full heads (16 kv heads) and GQA (8), with the error of each against the math kernel in fp32.
- **fused**: the memory-bound passes and their fused forms, eager beside compiled.

Rows are dicts (`bench/gpu_record.py` keeps them in a run's record under microbenchmarks): the case's
parameters, `us` per call, `tflops` or `gbps` where the work is counted, `in_graph`, or `error` (the first
line of why it could not run here).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CALLS, REPLAYS = 20, 10  # calls captured per graph, replays timed


@dataclass(frozen=True)
class Shapes:
    """The sizes the cases run at: the 0.4B's on a GPU, tiny ones for a dry run on the CPU."""

    embed: int = 1024
    hidden: int = 4096
    heads: int = 16
    head_dim: int = 64
    rows: tuple = (3072, 3081, 6162)  # M: patch tokens, with the prefix tokens, two images
    attention: tuple = ((1, 3081), (1, 3072), (2, 3081))  # (batch, tokens)
    dtype: torch.dtype = torch.bfloat16

    @property
    def linears(self) -> dict[str, tuple[int, int]]:
        """layer -> (in, out) features."""
        E, hd, H = self.embed, self.head_dim, self.heads
        return {"qkv": (E, 3 * E), "qkv_gqa": (E, (H + H) * hd), "proj": (E, E), "w12": (E, 2 * self.hidden),
                "w3": (self.hidden, E)}


GPU_SHAPES = Shapes()
DRY_SHAPES = Shapes(embed=64, hidden=256, heads=4, head_dim=16, rows=(48, 57, 114), attention=((1, 57), (1, 48), (2, 57)),
                    dtype=torch.float32)


@dataclass
class Case:
    """One thing to time: `build()` makes its tensors and returns the call (and, optionally, the error
    of its output against a reference, measured once outside the timing)."""

    part: str
    params: dict
    build: Callable[[], tuple[Callable[[], object], Optional[float]]]
    flop: float = 0.0
    bytes: float = 0.0
    needs_cuda: bool = False  # a kernel only CUDA runs (cuDNN attention, FP8 on the CPU is emulated: still runs)
    cost_s: float = 0.2  # budget: seconds on an H100 (a capture of CALLS calls, REPLAYS + 1 replays; compiles counted)
    extra: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- timers


def graph_us(call: Callable[[], object], calls: int = CALLS, replays: int = REPLAYS) -> float:
    """Microseconds per `call()`, `calls` of them captured in one CUDA graph, `replays` replays timed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            call()
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    del graph
    return start.elapsed_time(end) * 1e3 / (replays * calls)


def eager_us(call: Callable[[], object], calls: int = 3) -> float:
    """Microseconds per `call()` on the CPU (a dry run: the logic, not a GPU's speed)."""
    call()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) * 1e6 / calls


# ----------------------------------------------------------------------------- cases


def _randn(*shape, device, dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(*shape, device=device, generator=g, dtype=torch.float32).to(dtype)


def _fp8_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from realtime.models.fp8 import quantize_rows

    return quantize_rows(x)


def linear_cases(shapes: Shapes, device: str) -> list[Case]:
    from realtime.models.fp8 import quantize

    cases = []
    for m in shapes.rows:
        for layer, (k, n) in shapes.linears.items():
            flop = 2.0 * m * k * n

            def bf16(m=m, k=k, n=n):
                x = _randn(m, k, device=device, dtype=shapes.dtype)
                w = _randn(n, k, device=device, dtype=shapes.dtype, seed=1) / math.sqrt(k)
                b = _randn(n, device=device, dtype=shapes.dtype, seed=2)
                return (lambda: F.linear(x, w, b)), None

            cases.append(Case("linear", dict(layer=layer, m=m, k=k, n=n, kind="bf16"), bf16, flop=flop))
            for rows, fast in ((False, False), (False, True), (True, False), (True, True)):
                def fp8(m=m, k=k, n=n, rows=rows, fast=fast):
                    x = _randn(m, k, device=device, dtype=shapes.dtype)
                    w = _randn(n, k, device=device, dtype=shapes.dtype, seed=1) / math.sqrt(k)
                    b = _randn(n, device=device, dtype=shapes.dtype, seed=2)
                    if rows:  # per-token x per-channel scales
                        (q, sq), (qw, sw) = _fp8_rows(x), _fp8_rows(w)
                        kind, sw = F.ScalingType.RowWise, sw.t()
                    else:
                        (q, sq), (qw, sw) = quantize(x), quantize(w)
                        kind = F.ScalingType.TensorWise
                    def call():
                        return F.scaled_mm(q, qw.t(), sq, kind, sw, kind, bias=b, output_dtype=shapes.dtype,
                                           use_fast_accum=fast)

                    want = F.linear(x.float(), w.float(), b.float())
                    err = ((call().float() - want).norm() / want.norm()).item()
                    return call, err

                kind = f"fp8 {'row-wise' if rows else 'tensor-wise'}{', fast accumulation' if fast else ''}"
                cases.append(Case("linear", dict(layer=layer, m=m, k=k, n=n, kind=kind), fp8, flop=flop))
    m = shapes.rows[1]  # the dual backbone: both models' layer as one batched GEMM, against two GEMMs
    for layer, (k, n) in shapes.linears.items():
        def stacked(k=k, n=n):
            x = _randn(2, m, k, device=device, dtype=shapes.dtype)
            w = _randn(2, n, k, device=device, dtype=shapes.dtype, seed=1) / math.sqrt(k)
            b = _randn(2, 1, n, device=device, dtype=shapes.dtype, seed=2)
            return (lambda: torch.baddbmm(b, x, w.transpose(1, 2))), None

        def two(k=k, n=n):
            x = _randn(2, m, k, device=device, dtype=shapes.dtype)
            w = _randn(2, n, k, device=device, dtype=shapes.dtype, seed=1) / math.sqrt(k)
            b = _randn(2, n, device=device, dtype=shapes.dtype, seed=2)
            return (lambda: (F.linear(x[0], w[0], b[0]), F.linear(x[1], w[1], b[1]))), None

        flop = 2.0 * 2 * m * k * n
        cases.append(Case("linear", dict(layer=layer, m=m, k=k, n=n, kind="bf16, two models stacked (baddbmm)"), stacked,
                          flop=flop))
        cases.append(Case("linear", dict(layer=layer, m=m, k=k, n=n, kind="bf16, two models one after the other"), two,
                          flop=flop))
    return cases


def attention_backends() -> list[str]:
    """The `--sdpa` kernels worth timing (math is the reference), and FlexAttention."""
    from realtime.models.sapiens2 import SDPA_BACKENDS

    return [b for b in SDPA_BACKENDS if b != "math"] + ["flex"]


def _flex():
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False) if torch.cuda.is_available() else flex_attention


FLEX_SHAPES = ((1, 3081, 16), (1, 3081, 8), (2, 3081, 8))  # (batch, tokens, kv heads): each a compile of its own


def attention_cases(shapes: Shapes, device: str) -> list[Case]:
    """Every backend at every shape; the Triton kernel also at each tile size of its sweep (`BLOCKS`, beside the
    one `blocks` picks); FlexAttention compiled, at FLEX_SHAPES (the dry run: the smallest shapes)."""
    from realtime.models.sapiens2 import attention
    from realtime.models.triton_attention import BLOCKS

    cases, flex = [], None
    H, hd = shapes.heads, shapes.head_dim
    flex_at = FLEX_SHAPES if shapes is GPU_SHAPES else ((*shapes.attention[0], H), (*shapes.attention[0], H // 2))
    for batch, tokens in shapes.attention:
        for kv in (H, H // 2):
            flop = 4.0 * batch * H * tokens * tokens * hd
            variants = [(b, None) for b in attention_backends() if b != "flex" or (batch, tokens, kv) in flex_at]
            variants += [("triton", config) for config in BLOCKS]
            for backend, config in variants:
                def build(batch=batch, tokens=tokens, kv=kv, backend=backend, config=config):
                    nonlocal flex
                    q = _randn(batch, H, tokens, hd, device=device, dtype=shapes.dtype)
                    k = _randn(batch, kv, tokens, hd, device=device, dtype=shapes.dtype, seed=1)
                    v = _randn(batch, kv, tokens, hd, device=device, dtype=shapes.dtype, seed=2)
                    if backend == "flex":
                        flex = flex or _flex()
                    kernel = flex if backend == "flex" else None
                    if backend == "triton":
                        from realtime.models import triton_attention

                        triton_attention.prepare(q.device)

                    def call():
                        if kernel is not None:
                            return kernel(q, k, v, enable_gqa=kv != H)
                        if config is not None:
                            return triton_attention.attention(q, k, v, config)
                        return attention(q, k, v, backend, heads=(H, kv))

                    want = attention(q.float(), k.float(), v.float(), "math", heads=(H, kv))
                    return call, (call().float() - want).abs().max().item()

                cost = 8.0 if backend == "flex" else 1.0 if backend == "triton" else 0.4  # compiles
                params = dict(backend=backend, batch=batch, tokens=tokens, heads=H, kv_heads=kv)
                if config is not None:
                    params["tile"] = "x".join(map(str, config))  # rows x keys x warps x stages
                cases.append(Case("attention", params, build, flop=flop, needs_cuda=backend == "cudnn", cost_s=cost))
    return cases


def fused_cases(shapes: Shapes, device: str) -> list[Case]:
    """The memory-bound passes around the GEMMs, each eager (as `--no-compile` runs them), compiled (what inductor
    makes of them) and as the Triton kernel of `--fuse` (realtime/models/triton_fused.py): w12's GEMM with SiLU
    times the gate (the kernel: in the GEMM's epilogue, at each tile size of its sweep), and the residual add with
    the next RMSNorm."""
    from realtime.models import triton_fused

    cases = []
    size = torch.tensor([], dtype=shapes.dtype).element_size()
    E, hidden = shapes.embed, shapes.hidden
    for m in shapes.rows[1:]:
        ways = [("eager", None), ("compiled", None), ("triton", None)] + [("triton", c) for c in triton_fused.SWIGLU_BLOCKS]
        for way, config in ways:
            def swiglu(m=m, way=way, config=config):
                x = _randn(m, E, device=device, dtype=shapes.dtype)
                w = _randn(2 * hidden, E, device=device, dtype=shapes.dtype, seed=1) / math.sqrt(E)
                b = _randn(2 * hidden, device=device, dtype=shapes.dtype, seed=2)

                def eager():
                    a, gate = F.linear(x, w, b).chunk(2, dim=-1)
                    return F.silu(a) * gate

                if way == "triton":
                    from realtime.models.triton_attention import check_device

                    check_device(x.device)
                    call = (lambda: triton_fused.swiglu_linear(x, w, b, config))  # noqa: E731
                else:
                    call = _maybe_compiled(eager, way == "compiled")
                want = eager().float()
                return call, ((call().float() - want).norm() / want.norm()).item()

            params = dict(op="w12 GEMM + silu(a) * b", m=m, k=E, n=hidden, way=way)
            if config is not None:
                params["tile"] = "x".join(map(str, config))
            cases.append(Case("fused", params, swiglu, flop=2.0 * m * E * 2 * hidden,
                              cost_s=4.0 if way == "compiled" else 1.5 if way == "triton" else 0.2))
        for way in ("eager", "compiled", "triton"):
            def add_norm(m=m, way=way):
                x = _randn(m, E, device=device, dtype=shapes.dtype)
                r = _randn(m, E, device=device, dtype=shapes.dtype, seed=1)
                w = _randn(E, device=device, dtype=shapes.dtype, seed=2)

                def eager():
                    s = x + r
                    return s, F.rms_norm(s, (E,), w, 1e-6)

                if way == "triton":
                    from realtime.models.triton_attention import check_device

                    check_device(x.device)
                    call = (lambda: triton_fused.add_rms_norm(x, r, w))  # noqa: E731
                else:
                    call = _maybe_compiled(eager, way == "compiled")
                want = eager()[1].float()
                return call, ((call()[1].float() - want).norm() / want.norm()).item()

            cases.append(Case("fused", dict(op="x + r, rms_norm(x + r)", m=m, n=E, way=way), add_norm,
                              bytes=4.0 * m * E * size, cost_s=4.0 if way == "compiled" else 1.0 if way == "triton" else 0.2))
    return cases


def _maybe_compiled(fn, compiled: bool):
    return torch.compile(fn, dynamic=False) if compiled and torch.cuda.is_available() else fn


# ----------------------------------------------------------------------------- the profiler pass

# kernel name -> kind, first match wins: attention first (cuDNN's is "..._sdpa_..._flash_fprop_..."), then the
# convolutions (cuDNN's are implicit GEMMs: "..._fprop_implicit_gemm_..."), inductor's GEMM templates before its fused
# memory-bound kernels ("triton_poi_fused_...", "triton_red_fused_..."), then GEMMs and copies
KINDS = (("attention", ("flash", "fmha", "attention", "sdpa", "attn")),
         ("convolution", ("conv", "fprop", "dgrad", "wgrad", "winograd", "col2im", "im2col")),
         ("gemm", ("triton_tem", "gemm", "xmma", "cutlass", "nvjet", "cublas", "_mm", "::mm", "matmul", "bmm", "addmm")),
         ("fused (triton)", ("triton",)),
         ("copy", ("memcpy", "memset", "copy")))


def kernel_kind(name: str) -> str:
    lower = name.lower()
    for kind, words in KINDS:
        if any(word.lower() in lower for word in words):
            return kind
    return "other"


def profile_kernels(call: Callable[[], object], device: str = "cuda", top: int = 40) -> tuple[dict, list[dict]]:
    """One `call()` under torch.profiler: time by kind of kernel ({kind: {"us", "kernels"}}) and the `top`
    kernels by time ({"name", "kind", "calls", "us"}). On CUDA the GPU's kernels (replayed CUDA graphs
    included: CUPTI reports the kernels inside a graph launch); on the CPU (a dry run) the operators."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    cuda = device == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        call()
        if cuda:
            torch.cuda.synchronize()
    by_name: dict[str, list[float]] = {}
    for event in prof.events():
        if cuda and event.device_type != DeviceType.CUDA:
            continue
        if not cuda and (event.device_type != DeviceType.CPU or not event.name.startswith("aten::")):
            continue
        us = event.time_range.elapsed_us()
        entry = by_name.setdefault(event.name, [0, 0.0])
        entry[0] += 1
        entry[1] += us
    kinds: dict[str, dict] = {}
    for name, (calls, us) in by_name.items():
        kind = kinds.setdefault(kernel_kind(name), {"us": 0.0, "kernels": 0})
        kind["us"] = round(kind["us"] + us, 2)
        kind["kernels"] += calls
    rows = [{"name": name[:200], "kind": kernel_kind(name), "calls": calls, "us": round(us, 2)}
            for name, (calls, us) in sorted(by_name.items(), key=lambda item: -item[1][1])[:top]]
    return dict(sorted(kinds.items(), key=lambda item: -item[1]["us"])), rows


PARTS = {"linear": linear_cases, "attention": attention_cases, "fused": fused_cases}


def cases(parts=tuple(PARTS), shapes: Shapes = GPU_SHAPES, device: str = "cuda") -> list[Case]:
    return [case for part in parts for case in PARTS[part](shapes, device)]


def budget_s(planned: list[Case]) -> float:
    """Seconds the cases take on an H100 (counted from each case's cost; compiles dominate)."""
    return sum(case.cost_s for case in planned)


# ----------------------------------------------------------------------------- running


def run_case(case: Case, timer: Callable[[Callable[[], object]], float], cuda: bool) -> dict:
    """The case's row: its parameters, microseconds per call and rate, or why it could not run."""
    row = {"part": case.part, **case.params, "in_graph": cuda}
    if case.needs_cuda and not cuda:
        return {**row, "error": "needs CUDA"}
    try:
        call, err = case.build()
        us = timer(call)
    except Exception as error:  # a kernel this GPU, build or shape cannot run: say why, go on
        text = str(error).strip().splitlines()
        return {**row, "error": f"{type(error).__name__}: {text[0][:160] if text else ''}"}
    if not (us > 0 and math.isfinite(us)):
        return {**row, "error": f"the timer read {us} us"}
    row["us"] = round(us, 3)
    if case.flop:
        row["tflops"] = round(case.flop / us / 1e6, 2)
    if case.bytes:
        row["gbps"] = round(case.bytes / us / 1e3, 1)
    if err is not None and math.isfinite(err):
        row["error_vs_reference"] = float(f"{err:.3g}")
    return row


def run(parts=tuple(PARTS), dry: bool = False, say: Callable[[str], None] = print) -> dict[str, list[dict]]:
    """Every case of `parts`: rows by part. On a GPU inside CUDA graphs; `dry`: tiny shapes, eagerly on the CPU."""
    cuda = torch.cuda.is_available() and not dry
    shapes, device = (GPU_SHAPES, "cuda") if cuda else (DRY_SHAPES, "cpu")
    timer = graph_us if cuda else eager_us
    rows: dict[str, list[dict]] = {}
    with torch.inference_mode():
        for case in cases(parts, shapes, device):
            row = run_case(case, timer, cuda)
            rows.setdefault(case.part, []).append(row)
            say(format_row(row))
    return rows


def format_row(row: dict) -> str:
    skip = {"part", "in_graph", "us", "tflops", "gbps", "error", "error_vs_reference"}
    what = ", ".join(f"{k} {v}" for k, v in row.items() if k not in skip)
    if "error" in row:
        return f"  {row['part']:<9} {what}: n/a ({row['error']})"
    rate = f", {row['tflops']:7.1f} TFLOP/s" if "tflops" in row else f", {row['gbps']:7.1f} GB/s" if "gbps" in row else ""
    err = f", error {row['error_vs_reference']:.2g}" if "error_vs_reference" in row else ""
    return f"  {row['part']:<9} {what}: {row['us']:9.2f} us{rate}{err}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--dry-run", action="store_true", help="tiny shapes, timed eagerly on the CPU (no GPU needed)")
    args = parser.parse_args()
    if not torch.cuda.is_available() and not args.dry_run:
        print("No CUDA GPU here: nothing to time. Run this on a machine with an NVIDIA GPU, or pass --dry-run.")
        return 0
    planned = cases(args.parts, DRY_SHAPES if args.dry_run else GPU_SHAPES, "cpu" if args.dry_run else "cuda")
    print(f"{len(planned)} cases, about {budget_s(planned):.0f} s on an H100")
    run(args.parts, dry=args.dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
