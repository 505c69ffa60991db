"""Where a CPU forward of the 0.4B pose model goes, per op group, for ours, the official
backbone and transformers (same random weights, fp32): `torch.profiler` over one forward
after a warm-up.

    python -m bench.profile_models --official sapiens2.py [--before OLD/sapiens2.py] [--sizes 256x192,512x384] [--threads 1]

Groups: GEMM (addmm/mm outside the labelled parts: the linear layers), attention (inside
`scaled_dot_product_attention`), RoPE (inside each implementation's rotation function),
norms (inside every RMSNorm), heads (inside the pose head, when timed), copies (copy_,
cat, clone, contiguous, to, repeat_interleave outside the labelled parts), elementwise (the
rest: residual adds, SwiGLU, LayerScale, casts' arithmetic), patch embed (its conv).
Labels are `record_function` ranges put around those functions for the profile only; an op
counts in the innermost labelled range around it, else by its own name. Times are the
profiler's self CPU time of the calling thread (ms) and its share of the forward.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/models.py, run as a script or a module
from models import _loadavg, _parse_size, load_before, load_official, load_transformers  # noqa: E402
from realtime.models import build_model  # noqa: E402

GROUPS = ("GEMM", "attention", "RoPE", "norms", "copies", "elementwise", "patch embed", "heads")
_GEMM = {"aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"}
_COPIES = {"aten::copy_", "aten::cat", "aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to",
           "aten::repeat_interleave", "aten::index_select", "aten::empty_like", "aten::expand", "aten::reshape",
           "aten::_unsafe_view", "aten::view", "aten::transpose", "aten::permute", "aten::split", "aten::chunk",
           "aten::slice", "aten::select", "aten::unbind", "aten::as_strided", "aten::empty", "aten::empty_strided",
           "aten::resize_", "aten::t", "aten::detach", "aten::alias", "aten::unsqueeze", "aten::flatten",
           "aten::narrow", "aten::stack", "aten::repeat"}


def _labelled(fn: Callable, label: str) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with record_function(f"group::{label}"):
            return fn(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def labels(targets: list[tuple[object, str, str]]) -> Iterator[None]:
    """Wrap `owner.name` in a `group::label` range for the duration (owners: modules, classes)."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    try:
        for owner, name, label in targets:
            setattr(owner, name, _labelled(getattr(owner, name), label))
        yield
    finally:
        for owner, name, fn in reversed(saved):
            setattr(owner, name, fn)


def targets_for(impl: str, module) -> list[tuple[object, str, str]]:
    """What to label in each implementation: its RoPE function, norms, SDPA, patch embed, head."""
    common = [(F, "scaled_dot_product_attention", "attention"), (nn.RMSNorm, "forward", "norms"),
              (nn.InstanceNorm2d, "forward", "heads")]
    if impl in ("ours", "before"):
        from realtime.models import heads

        sapiens2 = sys.modules[type(module).__module__]  # ours, or the earlier file's module
        rope = [(sapiens2, name, "RoPE") for name in ("apply_rope", "rope_") if hasattr(sapiens2, name)]
        norms = [(sapiens2, name, "norms") for name in ("qk_norm",) if hasattr(sapiens2, name)]
        return common + rope + norms + [(sapiens2.PatchEmbed, "forward", "patch embed"),
                                        (heads.PoseHeatmapHead, "forward", "heads")]
    if impl == "official":
        cls = type(module.blocks[0].attn)
        sdpa = [(block.attn, "attn_op", "attention") for block in module.blocks]  # F.sdpa bound at init
        return common + sdpa + [(cls, "apply_rope", "RoPE"), (type(module.patch_embed), "forward", "patch embed")]
    from transformers.models.sapiens2 import modeling_sapiens2 as hf

    return common + [(hf, "apply_rotary_pos_emb", "RoPE"), (hf.Sapiens2RMSNorm, "forward", "norms"),
                     (hf.Sapiens2Embeddings, "forward", "patch embed"), (hf.Sapiens2Head, "forward", "heads")]


def group_times(prof) -> dict[str, float]:
    """Self CPU ms per group (see the module docstring)."""
    out: dict[str, float] = defaultdict(float)
    for e in prof.events():
        if e.name.startswith("group::") or e.name.startswith("forward"):
            continue
        label, parent = None, e.cpu_parent
        while parent is not None:
            if parent.name.startswith("group::"):
                label = parent.name.removeprefix("group::")
                break
            parent = parent.cpu_parent
        if label is None:
            label = "GEMM" if e.name in _GEMM else "copies" if e.name in _COPIES else "elementwise"
        out[label] += e.self_cpu_time_total / 1e3
    return out


def profile_one(impl: str, fn: Callable, module, x: torch.Tensor) -> tuple[dict[str, float], float]:
    with torch.inference_mode():
        fn(x)  # warm-up
        with labels(targets_for(impl, module)), profile(activities=[ProfilerActivity.CPU]) as prof:
            with record_function("forward"):
                fn(x)
    groups = group_times(prof)
    total = next(e.cpu_time_total for e in prof.events() if e.name == "forward") / 1e3
    return groups, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official", metavar="SAPIENS2_PY", help="the official standalone backbone file")
    parser.add_argument("--sizes", default="256x192,512x384")
    parser.add_argument("--before", metavar="SAPIENS2_PY",
                        help="realtime/models/sapiens2.py of an earlier checkout: profile that version of ours too")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--pose", action="store_true", help="the whole pose model (ours, transformers) instead of backbones")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    ours = build_model("pose", "sapiens2_0.4b")
    official = load_official(args.official, ours.backbone) if args.official and not args.pose else None
    before = load_before(args.before, ours.backbone) if args.before and not args.pose else None
    print(f"profile: {torch.get_num_threads()} threads, torch {torch.__version__}, fp32, 0.4B "
          f"{'pose model' if args.pose else 'backbone'}, random weights; load average {_loadavg()}")
    for size in args.sizes.split(","):
        h, w = _parse_size(size)
        x = torch.randn(1, 3, h, w)
        theirs = load_transformers(ours, h, w)
        impls: dict[str, tuple[Callable, object]] = {"ours": (ours if args.pose else ours.backbone, ours.backbone)}
        if before is not None:
            impls["before"] = (before, before)
        if official is not None:
            impls["official"] = (official, official)
        if theirs is not None:
            impls["transformers"] = ((lambda t, m=theirs: m(t).heatmaps) if args.pose
                                     else (lambda t, m=theirs.model: m(t).last_hidden_state), theirs.model)
        rows = {impl: profile_one(impl, fn, module, x) for impl, (fn, module) in impls.items()}
        print(f"\n{h}x{w}: self CPU ms (share of the forward); load average {_loadavg()}\n")
        print("| group | " + " | ".join(rows) + " |")
        print("|---|" + "---:|" * len(rows))
        for g in GROUPS:
            if any(groups.get(g) for groups, _ in rows.values()):
                print(f"| {g} | " + " | ".join(f"{groups.get(g, 0.0):.0f} ({groups.get(g, 0.0) / total:.0%})"
                                               for groups, total in rows.values()) + " |")
        print("| **forward** | " + " | ".join(f"**{total:.0f}**" for _, total in rows.values()) + " |")


if __name__ == "__main__":
    main()
