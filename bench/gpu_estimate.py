"""Frames per second of a configuration, from counts, per kind of work at its own rate.

    python bench/gpu_estimate.py              # the table for an H100 and an RTX 4090, then `best: ...`
    python bench/gpu_estimate.py --gpu h100   # one GPU

No GPU is needed: the models run on PyTorch's meta device (shapes, no numbers) under a
counter (`count`) that sees every op a frame launches, the heads channels_last as a CUDA
`Predictor` runs them (the meta device's convolutions would hand back NCHW; the counter keeps
their output NHWC, as cuDNN does):

- GEMMs (`mm`, `addmm`, `bmm`, `_scaled_mm`): 2*M*N*K FLOP, by operand dtype (bf16 or FP8);
- attention (`scaled_dot_product_attention`, counted as one fused kernel): 4*B*H*T*T*hd FLOP;
- convolutions and deconvolutions: 2 * MACs;
- every other op is memory-bound: the bytes it reads and writes. Eager, each op moves its
  inputs and outputs. Compiled (inductor), the memory-bound ops between two compute ops are
  one fused kernel: it moves only what enters from outside the region and what leaves it
  (`Counts.fused_bytes`), one launch per region; a large reduction (more than
  `PERSISTENT_REDUCTION` values per result, e.g. an instance norm's statistics over a map)
  must finish before its result is used, so it ends its kernel and what follows reads its
  input again;
- batch norm with batch statistics (the heads' instance norm of one image) is two kernels, as
  on CUDA: the statistics, then the normalising pass, each reading the input;
- launches: one per kernel op (eager) or per fused region plus compute op (compiled).

A frame's GPU time is the sum over kinds of (work / that kind's rate) plus a gap per launch;
eager, the host's Python dispatch per op runs alongside, and the frame takes the longer of
the two. With CUDA graphs the host cost is one replay. The rates (`GPUS`) are stated per
kind of work; they are assumptions from vendor peaks and published kernel benchmarks, not
measurements on this project: bench/gpu_check.py prints this estimate beside what it measures,
and bench/gpu_sdpa.py measures the attention rates on a GPU.

Only configurations the code implements are listed (`CONFIGS`): eager, `--cuda-graphs`,
`--compile --cuda-graphs`, `--sdpa cudnn` (explicit backend, KV heads expanded), `--fp8`
(attention projections, one q/k/v GEMM, static scales; needs --compile) and
`--input-size 768x576`, and seg every other frame (`--seg-every 2`, what `auto`, the live
default, does while the run is behind: the frame's cost is pose plus half a seg), one person,
plus two rows with 4 people. After the table: the floor at 1024x768 (the backbones' GEMMs and
attention alone), the best at 1024x768, and `best:` over the one-person rows where pose and
seg both run every frame.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

aten = torch.ops.aten
_GEMM = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default, aten._scaled_mm.default}
_GEMM_NAMES = ("aten._scaled_mm",)  # and its versions (_scaled_mm_v2 in newer PyTorch)
_CONV = {aten.convolution.default}
_BATCH_NORM = {aten.native_batch_norm.default, aten._native_batch_norm_legit.no_stats, aten._native_batch_norm_legit.default}
PERSISTENT_REDUCTION = 1024  # values per result that one fused kernel can reduce and then use (rows of a layer norm)
_NO_KERNEL = {aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default, aten.new_empty.default,
              aten.new_empty_strided.default, aten.lift_fresh.default, aten.detach.default, aten.alias.default,
              aten._unsafe_view.default, aten.resize_.default, aten.zeros.default, aten.scalar_tensor.default}


def _tensors(tree) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _is_channels_last(t: torch.Tensor) -> bool:
    return t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)


def _key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


@dataclass
class Counts:
    """What one forward (or one frame) launches. `ops` keeps, in order, each kernel op as
    (kind, reads, writes): kind "gemm-bf16", "gemm-fp8", "attention", "conv" or "mem";
    reads/writes as (storage key, bytes) pairs."""

    flops: dict[str, float] = field(default_factory=dict)  # kind -> FLOP
    ops: list[tuple[str, list, list]] = field(default_factory=list)
    attention_calls: list = field(default_factory=list)  # (FLOP, batch, heads, tokens, kernel) of each attention call
    reductions: set = field(default_factory=set)  # indices into `ops` of large reductions (they end a fused kernel)
    _keep: list = field(default_factory=list, repr=False)  # tensors alive, so storage keys stay unique

    def add(self, kind: str, flop: float, reads, writes, reduction: bool = False) -> None:
        if flop:
            self.flops[kind] = self.flops.get(kind, 0.0) + flop
        self._keep.extend(reads + writes)
        if reduction:
            self.reductions.add(len(self.ops))
        self.ops.append((kind, [(_key(t), _nbytes(t)) for t in reads], [(_key(t), _nbytes(t)) for t in writes]))

    def __iadd__(self, other: "Counts") -> "Counts":
        for kind, flop in other.flops.items():
            self.flops[kind] = self.flops.get(kind, 0.0) + flop
        self.reductions |= {i + len(self.ops) for i in other.reductions}
        self.ops += other.ops
        self.attention_calls += other.attention_calls
        self._keep += other._keep
        return self

    def scaled(self, times: float) -> dict:
        """The totals of `times` such forwards (e.g. 0.5: seg every other frame)."""
        return {"flops": {k: v * times for k, v in self.flops.items()},
                "attention_calls": [(flop * times, *rest) for flop, *rest in self.attention_calls],
                "eager_bytes": self.eager_bytes() * times,
                "fused_bytes": self.fused_bytes() * times, "eager_launches": self.eager_launches() * times,
                "fused_launches": self.fused_launches() * times}

    def eager_bytes(self) -> int:
        """Memory-bound ops run one by one: each reads its inputs and writes its outputs."""
        return sum(b for kind, reads, writes in self.ops if kind in ("mem", "kernel") for _, b in reads + writes)

    def kernel_bytes(self) -> int:
        """The memory-bound kernels of their own (the project's Triton passes): what they move, fused or not."""
        return sum(b for kind, reads, writes in self.ops if kind == "kernel" for _, b in reads + writes)

    def eager_launches(self) -> int:
        return len(self.ops)

    def _regions(self) -> list[list[int]]:
        """Runs of consecutive memory-bound ops (indices into `ops`), split by compute ops and
        after each large reduction: the fused kernels."""
        regions, current = [], []
        for i, (kind, _, _) in enumerate(self.ops):
            if kind == "mem":
                current.append(i)
            if (kind != "mem" or i in self.reductions) and current:
                regions.append(current)
                current = []
        if current:
            regions.append(current)
        return regions

    def fused_bytes(self) -> int:
        """Each region of memory-bound ops as one kernel (what inductor makes of them): it reads
        what was written before the region (once per storage) and writes what is read after it
        or never read again (the outputs)."""
        later_reads: dict[int, int] = {}  # storage -> index of its last read (not by an op writing it in place)
        for i, (_, reads, writes) in enumerate(self.ops):
            in_place = {key for key, _ in writes}
            for key, _ in reads:
                if key not in in_place:
                    later_reads[key] = i
        total = 0
        total = self.kernel_bytes()  # a kernel of its own: nothing fuses into it
        for region in self._regions():
            made, read_in, written = set(), {}, {}
            for i in region:
                _, reads, writes = self.ops[i]
                for key, b in reads:
                    if key not in made:
                        read_in[key] = max(read_in.get(key, 0), b)
                for key, b in writes:
                    made.add(key)
                    written[key] = max(written.get(key, 0), b)
            last = region[-1]
            total += sum(read_in.values())
            total += sum(b for key, b in written.items() if later_reads.get(key, -1) > last or key not in later_reads)
        return total

    def fused_launches(self) -> int:
        return len(self._regions()) + sum(kind != "mem" for kind, _, _ in self.ops)


class _Counter(TorchDispatchMode):
    def __init__(self, counts: Counts) -> None:
        super().__init__()
        self.counts = counts

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in _NO_KERNEL or func.is_view or func.overloadpacket in (aten.view, aten.reshape, aten.expand):
            return out
        given_out = _tensors(kwargs.get("out"))  # an out= tensor is written, not read
        ins = [t for t in _tensors((args, kwargs)) if all(t is not o for o in given_out)]
        outs = _tensors(out)
        written = [t for t in ins if any(_key(t) == _key(o) for o in outs)]  # in place (and read)
        reads = ins
        if str(func) == "sapiens_rt.swiglu_linear.default":  # w12's GEMM with silu(a) * b in its epilogue (--fuse)
            x, w = args[0], args[1]
            self.counts.add("gemm-bf16", 2.0 * x.shape[0] * x.shape[1] * w.shape[0], reads, outs)
        elif str(func) == "sapiens_rt.add_rms_norm.default":  # --fuse: one pass, a kernel of its own
            self.counts.add("kernel", 0.0, reads, outs)
        elif str(func) == "sapiens_rt.flash_attention.default":  # --sdpa triton
            q, k = args[0], args[1]
            B, H, T, hd = q.shape
            flop = 4.0 * B * H * T * k.shape[-2] * hd
            self.counts.add("attention", flop, reads, outs)
            self.counts.attention_calls.append((flop, B, H, T, "triton"))
        elif func in _GEMM or str(func).startswith(_GEMM_NAMES):
            a, b = (args[1], args[2]) if func in (aten.addmm.default, aten.baddbmm.default) else (args[0], args[1])
            m, k = a.shape[-2], a.shape[-1]
            n = b.shape[-1]
            batch = a.shape[0] if a.dim() == 3 else 1
            kind = "gemm-fp8" if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else "gemm-bf16"
            self.counts.add(kind, 2.0 * batch * m * n * k, reads, outs)
        elif func in _BATCH_NORM and (func != aten.native_batch_norm.default or args[5]):  # batch statistics
            x, (y, *stats) = args[0], outs
            self.counts.add("mem", 0.0, [x], stats, reduction=True)  # the statistics kernel
            self.counts.add("mem", 0.0, [x, *stats], [y])  # the normalising kernel
        elif func in _CONV:
            x, w = args[0], args[1]
            if _is_channels_last(x) and not _is_channels_last(out):  # the meta kernel says NCHW; cuDNN keeps NHWC
                out = out.contiguous(memory_format=torch.channels_last)  # on meta: no op, not counted
                outs = [out]
            transposed = args[6]
            if transposed:  # every input pixel scatters through the whole kernel
                macs = x.numel() * w.shape[1] * w.shape[2] * w.shape[3]
            else:
                macs = outs[0].numel() * (w.shape[1]) * w.shape[2] * w.shape[3]
            self.counts.add("conv", 2.0 * macs, reads, outs)
        else:
            big_in, big_out = max((t.numel() for t in ins), default=0), max((t.numel() for t in outs), default=0)
            self.counts.add("mem", 0.0, reads, [o for o in outs if all(_key(o) != _key(t) for t in written)] + written,
                            reduction=big_in > PERSISTENT_REDUCTION * max(big_out, 1))
        return out


class _FusedOps(TorchFunctionMode):
    """Ops that are one kernel on a GPU but that the meta device decomposes: attention (SDPA,
    one fused kernel) and RMSNorm (PyTorch's fused CUDA kernel: reads x and the weight once,
    writes once). Counted here as those kernels; their insides are not counted."""

    def __init__(self, counts: Counts) -> None:
        super().__init__()
        self.counts = counts

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in (F.scaled_dot_product_attention, F.rms_norm):
            return func(*args, **kwargs)
        from torch.utils._python_dispatch import _disable_current_modes

        with _disable_current_modes():
            out = func(*args, **kwargs)
        if func is F.scaled_dot_product_attention:
            q, k, v = args[:3]
            B, H, T, hd = q.shape
            flop = 4.0 * B * H * T * k.shape[-2] * hd
            self.counts.add("attention", flop, [q, k, v], [out])
            self.counts.attention_calls.append((flop, B, H, T, "sdpa"))
        else:
            weight = args[2] if len(args) > 2 else kwargs.get("weight")
            self.counts.add("mem", 0.0, [args[0]] + ([weight] if weight is not None else []), [out])
        return out


def count(fn, *args) -> Counts:
    """The ops `fn(*args)` launches (on meta tensors: no memory, no arithmetic). Under
    no_grad, not inference_mode, so composite ops reach the counter decomposed into the
    kernels they launch (inference_mode would hand over `aten.linear` whole)."""
    counts = Counts()
    with torch.no_grad(), _Counter(counts), _FusedOps(counts):
        fn(*args)
    return counts


# ----------------------------------------------------------------------------- the models


def _prepared(task: str, arch: str, sdpa: str, fp8: str, fused: bool, compiled: bool = True):
    """A bf16 task model on the meta device as a CUDA Predictor runs it: channels_last heads, the attention kernel,
    FP8 layers (`fp8`: "" none, "static"/"dynamic" the attention projections with calibrated / per-call scales,
    "ffn" the FFN's row-wise, "attention+ffn" both) and the fused Triton passes (set directly: their device check
    would refuse the meta device, whose ops they run as one op each)."""
    from realtime.models import build_model
    from realtime.models import fp8 as fp8_module
    from realtime.models.heads import to_channels_last
    from realtime.models.sapiens2 import GroupedQueryAttention, Sapiens2, set_sdpa_backend

    model = build_model(task, arch, device="meta", dtype=torch.bfloat16)
    to_channels_last(model)  # what a CUDA Predictor does
    set_sdpa_backend(model, "default" if sdpa == "triton" else sdpa)
    if sdpa == "triton":  # the kernel runs as one op on meta: counted as attention with its own tiles
        for layer in model.modules():
            if isinstance(layer, GroupedQueryAttention):
                layer.sdpa = "triton"
    if fp8:  # a scale's value changes no count
        scope = "attention" if fp8 in ("static", "dynamic") else fp8
        fp8_module.to_float8(model, scope=scope, static_scale=None if fp8 == "dynamic" else 1.0)
    if fused:  # as `Predictor(fuse=True)` sets them: the add + norm pass only when not compiled
        for backbone in model.modules():
            if isinstance(backbone, Sapiens2):
                backbone.fused = not compiled
                for block in backbone.blocks:
                    block.ffn.fused = True
    return model


@functools.lru_cache(maxsize=None)
def frame_counts(task: str, input_hw: tuple[int, int], fp8: str, map_hw: tuple[int, int] | None = None,
                 arch: str = "sapiens2_0.4b", sdpa: str = "default", full_logits: bool = False, batch: int = 1,
                 fused: bool = False, compiled: bool = True) -> Counts:
    """`batch` people's (pose) or one frame's (seg) forward in bf16 at `input_hw` as a CUDA
    `Predictor` runs it (channels_last heads), with the post-processing that stays on the
    device (heatmaps to fp32 for decoding; seg logits at `map_hw` from the head, then argmax).
    `full_logits=True` counts seg as it ran before: full-size logits, resized in fp32, argmax."""
    from realtime.transforms import seg_postprocess

    model = _prepared(task, arch, sdpa, fp8, fused, compiled)
    x = torch.zeros(batch, 3, *input_hw, device="meta", dtype=torch.bfloat16)

    def forward(x):
        if task == "seg" and map_hw is not None:
            return seg_postprocess((model(x) if full_logits else model(x, map_hw)).float(), map_hw)
        return model(x).float()

    return count(forward, x)


@functools.lru_cache(maxsize=None)
def dual_counts(input_hw: tuple[int, int], map_hw: tuple[int, int], arch: str = "sapiens2_0.4b", sdpa: str = "default") -> Counts:
    """One frame's pose (one crop) and seg as `--dual-backbone` runs them: one `DualTaskModel` forward (the layers'
    GEMMs batched over the two models, one attention call of batch 2), each head, the same post-processing."""
    from realtime.models.dual import DualTaskModel
    from realtime.transforms import seg_postprocess

    dual = DualTaskModel(_prepared("pose", arch, sdpa, "", False), _prepared("seg", arch, sdpa, "", False))
    x = torch.zeros(1, 3, *input_hw, device="meta", dtype=torch.bfloat16)

    def forward(x):
        heatmaps, logits = dual(x, x, map_hw)
        return heatmaps.float(), seg_postprocess(logits.float(), map_hw)

    return count(forward, x)


# ----------------------------------------------------------------------------- the GPUs


@dataclass(frozen=True)
class GPU:
    """Rates per kind of work, TFLOP/s or TB/s achieved (not peaks), and launch costs in µs. `measured`: where
    the rates come from (a bench/gpu_runs/ record) or what is assumed."""

    name: str
    gemm_bf16: float  # cuBLAS bf16 GEMM at M ~ 1.7k-3k tokens, K, N 1024-8192, fp32 accumulation
    gemm_fp8: float  # cuBLAS E4M3 scaled GEMM at the same sizes
    attention: dict  # kernel -> TFLOP/s at head_dim 64 at the reference shape (1 image, 16 heads, 3,081 tokens)
    conv: float  # cuDNN channels_last bf16 (de)convolutions of the heads
    bandwidth: float  # TB/s reached by memory-bound kernels
    gap_us: float  # GPU idle between two kernels launched back to back (eager)
    graph_gap_us: float  # the same inside a CUDA graph
    host_us: float  # host time per eager op (Python + dispatcher + launch)
    notes: str
    sms: int = 132  # streaming multiprocessors (the attention tiles' waves)
    ceilings: dict = field(default_factory=dict)  # rate -> what it would reach if the hypothesis of issue 52 holds


# The H100's rates are the lent H100 SXM's own (bench/gpu_runs/2026-11-28T0417Z-nvidia-h100-80gb-hbm3.json: SDPA's
# default 290-298 TFLOP/s on every 0.4B shape, cuDNN 291 with full heads, flash 218 on the H200s; the linear layers'
# mix 582 in bf16 and 590 in FP8, timed eagerly); convolutions, bandwidth and gaps stay assumed. The Triton
# kernel's rate is unmeasured: taken as the default's until bench/gpu_kernels.py times it.
GPUS = {
    "h100": GPU("H100 SXM", gemm_bf16=582, gemm_fp8=590,
                attention={"default": 291, "flash": 218, "cudnn": 291, "efficient": 115, "triton": 291},
                conv=350, bandwidth=2.6, gap_us=1.5, graph_gap_us=0.6, host_us=25.0, sms=132,
                notes="measured on the lent H100 SXM (GEMM, attention; eager ops cost the host 18-35 µs each) and "
                      "H200s; peaks 989 bf16 / 1979 FP8 TFLOP/s dense, 3.35 TB/s",
                ceilings={"gemm_fp8": 900}),  # the FP8 rate assumed before the runs: E4M3 at 1.55x bf16, if graphs show it
    "4090": GPU("RTX 4090", gemm_bf16=150, gemm_fp8=290,
                attention={"default": 120, "flash": 120, "cudnn": 120, "efficient": 60, "triton": 120},
                conv=110, bandwidth=0.9, gap_us=2.0, graph_gap_us=0.8, host_us=7.0, sms=128,
                notes="assumed (never measured here): peaks 165 bf16 / 330 FP8 TFLOP/s dense with fp32 accumulation, "
                      "1.0 TB/s"),
}
REFERENCE = (1, 16, 3081)  # (batch, heads, tokens) where the attention rates were measured


def wave_fill(batch: int, heads: int, tokens: int, kernel: str, sms: int) -> float:
    """How full an attention call's last wave of tiles is: tiles / (whole waves x slots). SDPA's kernels: 128 query
    rows a tile, one tile per SM (3,081 tokens and 16 heads: 400 tiles, 3.03 waves, 0.76); the Triton kernel: its
    own tiles (`triton_attention.blocks`: 64 rows, two per SM there)."""
    from realtime.models.triton_attention import blocks, waves

    rows, per_sm = (128, 1)
    if kernel == "triton":
        rows = blocks(batch, heads, tokens, sms)[0]
        per_sm = 2 if rows == 64 else 1
    return waves(batch * heads * math.ceil(tokens / rows), per_sm * sms)


# ----------------------------------------------------------------------------- configurations


@dataclass(frozen=True)
class Config:
    name: str  # how it is asked for (`sapiens-rt run` flags; "default": compiled, CUDA graphs)
    input_hw: tuple[int, int] = (1024, 768)
    graphs: bool = True
    compiled: bool = True
    fp8: str = ""  # "static" (attention, calibrated: --fp8), "dynamic" (per-call amax), "ffn", "attention+ffn"
    sdpa: str = "default"
    seg_every: int = 1  # seg on every Nth frame (`--seg-every`; auto on a live run: 2 while behind)
    people: int = 1  # pose crops per frame (a bucket size, so compiled and graphed runs pad none)
    dual: bool = False  # --dual-backbone: pose and seg as one forward on frames with both and one person
    fused: bool = False  # --fuse: SwiGLU in w12's GEMM epilogue, residual add + RMSNorm in one pass


EAGER = dict(graphs=False, compiled=False)
# issue 52's bf16 items together: the dual backbone runs its own layers (no fused passes in it yet), so the
# two combinations that compose
DUAL_TRITON = dict(dual=True, sdpa="triton")
TRITON_FUSE = dict(sdpa="triton", fused=True)
CONFIGS = (
    Config("--no-compile --no-cuda-graphs (eager)", **EAGER),
    Config("--no-compile (CUDA graphs)", compiled=False),
    Config("default (compiled, CUDA graphs)"),
    Config("--sdpa cudnn"),
    Config("--sdpa cudnn --fp8", sdpa="cudnn", fp8="static"),
    Config("--sdpa triton", sdpa="triton"),
    Config("--dual-backbone", dual=True),
    Config("--fuse", fused=True),
    Config("--fp8 ffn", fp8="ffn"),
    Config("--dual-backbone --sdpa triton", **DUAL_TRITON),
    Config("--sdpa triton --fuse", **TRITON_FUSE),
    Config("--sdpa triton --fuse --fp8 attention+ffn", fp8="attention+ffn", **TRITON_FUSE),
    Config("--seg-every 2", seg_every=2),
    Config("--sdpa cudnn --fp8 --seg-every 2", sdpa="cudnn", fp8="static", seg_every=2),
    Config("--sdpa triton --fuse --seg-every 2", seg_every=2, **TRITON_FUSE),
    Config("--input-size 768x576", input_hw=(768, 576)),
    Config("--input-size 768x576 --sdpa triton --fuse", input_hw=(768, 576), **TRITON_FUSE),
    Config("3 people, --seg-every 2", people=3, seg_every=2),
    Config("3 people, --seg-every 2 --sdpa triton --fuse", people=3, seg_every=2, sdpa="triton", fused=True),
    Config("4 people, --no-compile", people=4, compiled=False),
    Config("4 people", people=4),
)


def map_hw_of(frame_hw: tuple[int, int], max_side: int = 512) -> tuple[int, int]:
    s = min(1.0, max_side / max(frame_hw))
    return max(1, round(frame_hw[0] * s)), max(1, round(frame_hw[1] * s))


@dataclass
class Estimate:
    config: Config
    gpu: GPU
    ms: dict  # part -> milliseconds
    launches: float
    fps: float
    flops: dict = field(default_factory=dict)
    traffic_gb: float = 0.0


def _parts(config: Config, tasks, frame_hw) -> list[dict]:
    """The scaled counts a frame is made of: per task (seg on every `seg_every`th frame), or with the dual backbone
    the dual forward on frames with seg and pose alone on the others."""
    map_hw = map_hw_of(frame_hw)
    if config.dual and config.people == 1 and set(tasks) == {"pose", "seg"}:
        both = 1.0 / config.seg_every
        parts = [dual_counts(config.input_hw, map_hw, sdpa=config.sdpa).scaled(both)]
        if both < 1:
            parts.append(frame_counts("pose", config.input_hw, config.fp8, None, sdpa=config.sdpa,
                                      fused=config.fused, compiled=config.compiled).scaled(1 - both))
        return parts
    return [frame_counts(task, config.input_hw, config.fp8, map_hw if task == "seg" else None, sdpa=config.sdpa,
                         batch=config.people if task == "pose" else 1, fused=config.fused,
                         compiled=config.compiled if config.fused else True)
            .scaled(1.0 / config.seg_every if task == "seg" else 1.0) for task in tasks]


def estimate(config: Config, gpu: GPU, tasks=("pose", "seg"), frame_hw=(720, 1280), ceiling: bool = False) -> Estimate:
    """Milliseconds per frame (`config.people` people) by kind of work, and fps (pipelined: the
    longer of the GPU's time and the host's). `ceiling`: the rates issue 52 hopes for, not the measured ones: FP8
    at `gpu.ceilings`, and each attention call at its kernel's rate scaled by how full its last wave of tiles is
    against the reference shape's (`wave_fill`; the 768x576 runs, 1,737 tokens with fuller waves at the same
    rate, say it is not the whole story)."""
    flops: dict[str, float] = {}
    traffic, launches_total, eager_launches, attention_ms = 0.0, 0.0, 0.0, 0.0
    for c in _parts(config, tasks, frame_hw):
        for k, v in c["flops"].items():
            flops[k] = flops.get(k, 0.0) + v
        traffic += c["fused_bytes"] if config.compiled else c["eager_bytes"]
        launches_total += c["fused_launches"] if config.compiled else c["eager_launches"]
        eager_launches += c["eager_launches"]
        for flop, batch, heads, tokens, kind in c["attention_calls"]:
            kernel = "triton" if kind == "triton" else config.sdpa
            rate = gpu.attention[kernel]
            if ceiling:  # the rate per busy SM at the reference shape (the Triton kernel's: the default's), times the fill
                busy = gpu.attention["default" if kernel == "triton" else kernel] / wave_fill(*REFERENCE, "sdpa", gpu.sms)
                rate = busy * wave_fill(batch, heads, tokens, kernel, gpu.sms)
            attention_ms += flop / rate / 1e9
    fp8_rate = gpu.ceilings.get("gemm_fp8", gpu.gemm_fp8) if ceiling else gpu.gemm_fp8
    ms = {
        "gemm bf16": flops.get("gemm-bf16", 0.0) / gpu.gemm_bf16 / 1e9,
        "gemm fp8": flops.get("gemm-fp8", 0.0) / fp8_rate / 1e9,
        "attention": attention_ms,
        "conv": flops.get("conv", 0.0) / gpu.conv / 1e9,
        "memory": traffic / gpu.bandwidth / 1e9,
        "gaps": launches_total * (gpu.graph_gap_us if config.graphs else gpu.gap_us) / 1e3,
    }
    gpu_ms = sum(ms.values())
    # the host: eager, Python launches every op; compiled without graphs, one call per region;
    # with graphs, one replay per task and bucket plus the transfers (about 20 calls)
    host_ms = (20 if config.graphs else (launches_total if config.compiled else eager_launches)) * gpu.host_us / 1e3
    ms["host (overlapped)"] = host_ms
    return Estimate(config, gpu, ms, launches_total, 1e3 / max(gpu_ms, host_ms), flops, traffic / 1e9)


def floor_ms(gpu: GPU, input_hw: tuple[int, int] = (1024, 768), seg_every: int = 1) -> dict:
    """The backbones' GEMMs (bf16) and attention (the default kernel) of pose and seg at `gpu`'s measured rates, one
    person, seg on every `seg_every`th frame: what memory traffic, convolutions and gaps come on top of."""
    flops: dict[str, float] = {}
    for task in ("pose", "seg"):
        counted = frame_counts(task, input_hw, "", (288, 512) if task == "seg" else None)
        for kind, flop in counted.flops.items():
            flops[kind] = flops.get(kind, 0.0) + flop / (seg_every if task == "seg" else 1)
    return {"gemm": flops.get("gemm-bf16", 0.0) / gpu.gemm_bf16 / 1e9,
            "attention": flops.get("attention", 0.0) / gpu.attention["default"] / 1e9}


# What each of issue 52's items should gain over the default, one person, 1024x768, seg every frame
GAINS = (("--dual-backbone", Config("d", dual=True)), ("--sdpa triton", Config("t", sdpa="triton")),
         ("--fuse", Config("f", fused=True)), ("--fp8 ffn", Config("8", fp8="ffn")),
         ("--dual-backbone --sdpa triton", Config("dt", **DUAL_TRITON)), ("--sdpa triton --fuse", Config("tf", **TRITON_FUSE)),
         ("--sdpa triton --fuse --fp8 attention+ffn", Config("tf8", fp8="attention+ffn", **TRITON_FUSE)))


def gains(gpu: GPU) -> list[str]:
    """One line per item: ms saved and fps at the measured rates, and at the ceiling rates (`estimate(ceiling=True)`)."""
    base = {c: estimate(Config("default"), gpu, ceiling=c) for c in (False, True)}
    lines = [f"   what each item should gain over the default ({1e3 / base[False].fps:.2f} ms, {base[False].fps:.1f} fps; "
             f"at the ceiling rates {1e3 / base[True].fps:.2f} ms): measured rates | ceiling rates"]
    for name, config in GAINS:
        got = {c: estimate(config, gpu, ceiling=c) for c in (False, True)}
        saved = {c: 1e3 / base[c].fps - 1e3 / got[c].fps for c in (False, True)}
        lines.append(f"     {name:<44} {saved[False]:+6.2f} ms saved, {got[False].fps:5.1f} fps | {saved[True]:+6.2f} ms, "
                     f"{got[True].fps:5.1f} fps")
    return lines


def table(gpus=("h100", "4090")) -> tuple[list[str], dict]:
    lines, best = [], {}
    for key in gpus:
        gpu = GPUS[key]
        lines.append(f"== {gpu.name}: pose + seg, Sapiens2 0.4B, bf16, 1 person (unless said), 720p frames (seg map 512x288)")
        lines.append(f"   rates: GEMM bf16 {gpu.gemm_bf16:g}, FP8 {gpu.gemm_fp8:g}, attention "
                     f"{', '.join(f'{k} {v:g}' for k, v in gpu.attention.items())}, conv {gpu.conv:g} TFLOP/s; "
                     f"memory {gpu.bandwidth:g} TB/s; launch gap {gpu.gap_us:g} µs eager, {gpu.graph_gap_us:g} µs in a "
                     f"graph; host {gpu.host_us:g} µs per eager op")
        lines.append(f"   ({gpu.notes})")
        lines.append(f"   {'fps':>6} {'ms':>6} | {'gemm':>5} {'fp8':>5} {'attn':>5} {'conv':>5} {'mem':>5} {'gaps':>5} | "
                     f"{'host':>5} {'GB':>5} {'launch':>6} | configuration")
        for config in CONFIGS:
            e = estimate(config, gpu)
            m = e.ms
            lines.append(f"   {e.fps:6.1f} {1e3 / e.fps:6.2f} | {m['gemm bf16']:5.2f} {m['gemm fp8']:5.2f} {m['attention']:5.2f} "
                         f"{m['conv']:5.2f} {m['memory']:5.2f} {m['gaps']:5.2f} | {m['host (overlapped)']:5.2f} "
                         f"{e.traffic_gb:5.1f} {e.launches:6.0f} | {config.name}")
            if config.people == 1 and config.seg_every == 1 and e.fps > best.get(key, (0.0, None))[0]:
                best[key] = (e.fps, config.name)  # pose and seg both at this rate
        for every, what in ((1, "seg every frame"), (2, "seg every other frame")):
            floor = floor_ms(gpu, seg_every=every)
            lines.append(f"   floor at 1024x768, {what}: the backbones' GEMMs {floor['gemm']:.2f} ms (bf16) + attention "
                         f"{floor['attention']:.2f} ms = {sum(floor.values()):.2f} ms, {1e3 / sum(floor.values()):.0f} fps "
                         "before any memory traffic, convolution or gap")
        lines += gains(gpu)
    return lines, best


def short_name(key: str) -> str:
    return "H100" if key == "h100" else key


def at_full_size(key: str) -> str:
    """The best implemented configuration at the released 1024x768 input, with seg every frame
    and every other frame."""
    gpu = GPUS[key]
    rows = [c for c in CONFIGS if c.input_hw == (1024, 768) and c.people == 1]
    every = max((estimate(c, gpu) for c in rows if c.seg_every == 1), key=lambda e: e.fps)
    halved = max((estimate(c, gpu) for c in rows if c.seg_every == 2), key=lambda e: e.fps)
    return (f"{short_name(key)} {every.fps:.0f} fps ({every.config.name}), pose {halved.fps:.0f} fps with seg at half "
            f"that ({halved.config.name})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", choices=sorted(GPUS), action="append", help="default: h100 and 4090")
    args = parser.parse_args()
    gpus = tuple(args.gpu or ("h100", "4090"))
    lines, best = table(gpus)
    print("\n".join(lines))
    print("at the released 1024x768 input: " + "; ".join(at_full_size(k) for k in gpus))
    print("best: " + "; ".join(f"{short_name(k)} pose+seg {best[k][0]:.0f} fps ({best[k][1]})"
                               for k in gpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())
