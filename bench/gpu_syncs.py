"""Host syncs and launches per call of the CUDA code paths, counted on a stand-in GPU
(no CUDA needed).

    python bench/gpu_syncs.py [--launches]

Runs `Predictor.predict` (pose + seg, 1 and 3 people, flip test off and on) and the
detector with the tiny fixture models on the stand-in device of tests/gpu_standin.py and
prints how many times each call would make the host wait for the GPU, with the reasons.
Every sync stalls the host until the GPU drains, so streams cannot overlap across it.
It also checks every cross-stream read is ordered (a race raises).

The detector is counted eager and with `cuda_graphs` (launches per call: kernels and copies).

--launches also counts kernels and copies launched per predict (views and allocations
excluded), per task stream, eager with and without padded person batches, and per
transformer block; the fixture backbone has 18 blocks, the 0.4b one 24, so the 0.4b
count is the fixture's plus 6 blocks' worth (the heads have the same layers at any width).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gpu_standin import StandinGPU  # noqa: E402

FIXTURES = Path(os.environ.get("SAPIENS_REFERENCE_DIR") or ROOT / "tests" / "reference")


def _reasons(syncs) -> str:
    counts = collections.Counter(s.what for s in syncs)
    return "; ".join(f"{n}x {what}" for what, n in counts.most_common())


def predictor_syncs(reference: Path, verbose: bool) -> None:
    from realtime.infer import Predictor
    from realtime.models import load_model

    fixtures = reference / "fixtures"
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
    boxes = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95]], np.float32)
    with StandinGPU() as gpu:
        models = {task: load_model(task, fixtures / f"{task}_weights.safetensors", device="cuda") for task in ("pose", "seg")}
        for flip in (False, True):
            predictor = Predictor(models, device="cuda", dtype=torch.float32, input_hw=(128, 96), flip_test=flip)
            predictor.predict(image, boxes[:1])  # the first frame may make constants
            for n in (1, 3):
                gpu.rec.clear()
                predictor.predict(image, boxes[:n])
                syncs = gpu.rec.syncs()
                print(f"Predictor.predict pose+seg, {n} person{'s' if n > 1 else ''}, flip test {'on ' if flip else 'off'}: "
                      f"{len(syncs):2d} host syncs" + (f"  ({_reasons(syncs)})" if verbose else ""))


def predictor_launches(reference: Path) -> None:
    from realtime.infer import Predictor
    from realtime.models import load_model

    fixtures = reference / "fixtures"
    image = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
    x0 = np.arange(9, dtype=np.float32)[:, None] * 4
    boxes = np.hstack((x0, x0 * 0 + 5, x0 + 60, x0 * 0 + 90)).astype(np.float32)
    with StandinGPU() as gpu:
        models = {task: load_model(task, fixtures / f"{task}_weights.safetensors", device="cuda") for task in ("pose", "seg")}
        blocks = models["pose"].backbone.blocks
        depth = len(blocks)
        rows: list[int] = []
        hook = models["pose"].register_forward_hook(lambda m, a, o: rows.append(a[0].shape[0]))
        for label, padded in (("padded to 1/2/4/8/16 (eager CUDA before)", True), ("unpadded (eager now)", False)):
            predictor = Predictor(models, device="cuda", dtype=torch.float32, input_hw=(128, 96), pad_batches=padded)
            if padded:
                predictor.buckets = lambda: (1, 2, 4, 8, 16)  # the old buckets
            predictor.predict(image, boxes[:1])
            for n in (1, 3, 9):
                gpu.rec.clear()
                rows.clear()
                predictor.predict(image, boxes[:n])
                per = {task: gpu.rec.launches(predictor._streams[task].name) for task in ("pose", "seg")}
                print(f"pose+seg, {n} people, {label}: {sum(rows):2d} pose crops computed, {gpu.rec.launches():4d} launches "
                      f"(pose {per['pose']}, seg {per['seg']}, uploads/downloads {gpu.rec.launches() - sum(per.values())})")
        hook.remove()
        graphed = Predictor(models, device="cuda", dtype=torch.float32, input_hw=(128, 96), cuda_graphs=True)
        for n in (1, 3, 9):
            graphed.predict(image, boxes[:n])  # captures
            gpu.rec.clear()
            graphed.predict(image, boxes[:n])
            ops = [e.what for e in gpu.rec.log if e.kind == "op" and e.kernel]
            replays = sum(what.startswith("graph replay") for what in ops)
            print(f"pose+seg, {n} people, CUDA graphs (replayed): {len(ops):4d} launches ({replays} graph replays, "
                  f"{len(ops) - replays} copies: frame and boxes up, into and out of the static buffers, results down)")
        marks = []
        hooks = [blocks[1].register_forward_pre_hook(lambda m, a: marks.append(len(gpu.rec.log))),
                 blocks[1].register_forward_hook(lambda m, a, o: marks.append(len(gpu.rec.log)))]
        gpu.rec.clear()
        predictor.predict(image, boxes[:1], tasks={"pose"})
        for h in hooks:
            h.remove()
        block = sum(e.kind == "op" and e.kernel for e in gpu.rec.log[marks[0]:marks[1]])
        print(f"launches per transformer block: {block}; fixture backbone {depth} blocks, 0.4b 24: "
              f"a 0.4b predict launches about {24 - depth} x {block} = {(24 - depth) * block} more per task")


def detector_syncs(reference: Path, verbose: bool) -> None:
    from safetensors.torch import load_file

    from realtime.models.rtmdet import load_detector

    fixtures = reference / "rtmdet" / "fixtures"
    image = load_file(str(fixtures / "tiny_w025_case_a.safetensors"))["image_bgr_uint8"].numpy()
    with StandinGPU() as gpu:
        for graphs in (False, True):
            det = load_detector(fixtures / "tiny_w025_checkpoint.pth", widen=0.25, device="cuda", cuda_graphs=graphs)
            det(image)  # graphs: captured here
            gpu.rec.clear()
            det(image)
            syncs = gpu.rec.syncs()
            ops = [e.what for e in gpu.rec.log if e.kind == "op" and e.kernel]
            replays = sum(what.startswith("graph replay") for what in ops)
            label = "CUDA graph (replayed)" if graphs else "eager"
            print(f"Detector call, {label}: {len(syncs):2d} host syncs, {len(ops):4d} launches ({replays} graph replays)"
                  + (f"  ({_reasons(syncs)})" if verbose else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, default=FIXTURES, help="the golden fixture folder (tiny fixture models)")
    parser.add_argument("-v", "--verbose", action="store_true", help="say what each sync is")
    parser.add_argument("--launches", action="store_true", help="also count kernels and copies per predict")
    args = parser.parse_args()
    print("stand-in GPU (tests/gpu_standin.py): CPU tensors, recorded streams; counts, not times")
    predictor_syncs(args.reference, args.verbose)
    detector_syncs(args.reference, args.verbose)
    if args.launches:
        predictor_launches(args.reference)


if __name__ == "__main__":
    main()
