"""What FP8 (E4M3) costs in accuracy, on the golden fixtures, on the CPU.

    python bench/fp8_error.py            # prints a markdown table for bench/RESULTS.md

Runs the fixture pose and seg models (official weights layout, values of order one so
that every path matters: a harsher test than trained weights) in bf16, then in bf16 with
the backbone's linear layers in E4M3 (`realtime.models.fp8`: all of them with per-tensor scales, the
attention projections only, the FFN's with per-token x per-channel scales, or both), and compares each
with the official fp32 outputs. The E4M3 products run in the same `scaled_mm` kernel family a GPU
uses (tensor-wise and row-wise scales), here on the CPU, so this is the FP8 numerics without a GPU
(accumulation order aside; fast accumulation, which the FFN's layers ask for, is the GPU's alone).

pose: heatmap error relative to the fp32 heatmaps (||d|| / ||ref||), the share of the 308
keypoints whose heatmap argmax stays on the same cell, and the mean shift in heatmap cells.
seg: the share of pixels whose class (argmax of the 29 logits) stays the same.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from safetensors.torch import load_file

from realtime.models import load_model
from realtime.models.fp8 import calibrate, calibration_batch, to_float8

FIXTURES = (Path(os.environ.get("SAPIENS_REFERENCE_DIR") or Path(__file__).resolve().parents[1] / "tests" / "reference")
            / "fixtures")
VARIANTS = (("bf16", None), ("bf16 + FP8 all linears, per-call scales", "all"),
            ("bf16 + FP8 attention projections, per-call scales", "attention"),
            ("bf16 + FP8 attention projections, static calibrated scales (--fp8)", "attention static"),
            ("bf16 + FP8 FFN, per-token x per-channel scales (--fp8 ffn)", "ffn"),
            ("bf16 + FP8 attention (static) and FFN (per-token x per-channel) (--fp8 attention+ffn)", "attention+ffn static"))


def variant_output(task: str, scope: str | None, x: torch.Tensor) -> torch.Tensor:
    """The fixture model's output in bf16 with FP8 in `scope` ("all", "attention", or
    "attention static": scales calibrated once on `fp8.calibration_batch`, as `--fp8` does,
    not on the evaluated input)."""
    model = load_model(task, FIXTURES / f"{task}_weights.safetensors", dtype=torch.bfloat16)
    if scope is not None:
        to_float8(model, scope.split()[0])
        if scope.endswith("static"):
            calibrate(model, [calibration_batch(tuple(x.shape[-2:]), x.device, torch.bfloat16)])
    with torch.no_grad():
        return model(x).float()


def pose_errors(got: torch.Tensor, ref: torch.Tensor) -> dict[str, float]:
    """Relative heatmap error, argmax agreement and mean argmax shift (heatmap cells)."""
    w = ref.shape[-1]
    a, b = got.flatten(2).argmax(-1), ref.flatten(2).argmax(-1)
    shift = torch.stack(((a // w - b // w).float(), (a % w - b % w).float()), -1).norm(dim=-1)
    return {"rel": ((got - ref).norm() / ref.norm()).item(), "same": (a == b).float().mean().item(), "shift": shift.mean().item()}


def seg_agreement(got: torch.Tensor, ref: torch.Tensor) -> float:
    return (got.argmax(1) == ref.argmax(1)).float().mean().item()


def table() -> str:
    pose_io = load_file(str(FIXTURES / "pose_io.safetensors"))
    seg_io = load_file(str(FIXTURES / "seg_io.safetensors"))
    rows = ["| variant (vs official fp32) | pose heatmap rel. error | pose keypoints on the same cell | mean shift (cells) | seg "
            "pixels same class |",
            "|---|---|---|---|---|"]
    for name, scope in VARIANTS:
        pose = pose_errors(variant_output("pose", scope, pose_io["input"]), pose_io["heatmaps"])
        seg = seg_agreement(variant_output("seg", scope, seg_io["input"]), seg_io["seg_logits"])
        rows.append(f"| {name} | {pose['rel']:.3f} | {100 * pose['same']:.1f} % | {pose['shift']:.2f} | {100 * seg:.1f} % |")
    return "\n".join(rows)


if __name__ == "__main__":
    torch.manual_seed(0)
    print(table())
