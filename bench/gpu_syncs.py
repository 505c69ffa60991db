"""Host syncs per call of the CUDA code paths, counted on a stand-in GPU (no CUDA needed).

    python bench/gpu_syncs.py

Runs `Predictor.predict` (pose + seg, 1 and 3 people, flip test off and on) and the
detector with the tiny fixture models on the stand-in device of tests/gpu_standin.py and
prints how many times each call would make the host wait for the GPU, with the reasons.
Every sync stalls the host until the GPU drains, so streams cannot overlap across it.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gpu_standin import StandinGPU  # noqa: E402

FIXTURES = ROOT / "tests" / "reference"


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


def detector_syncs(reference: Path, verbose: bool) -> None:
    from safetensors.torch import load_file

    from realtime.models.rtmdet import load_detector

    fixtures = reference / "rtmdet" / "fixtures"
    image = load_file(str(fixtures / "tiny_w025_case_a.safetensors"))["image_bgr_uint8"].numpy()
    with StandinGPU() as gpu:
        det = load_detector(fixtures / "tiny_w025_checkpoint.pth", widen=0.25, device="cuda")
        det(image)
        gpu.rec.clear()
        det(image)
        syncs = gpu.rec.syncs()
        print(f"Detector call: {len(syncs):2d} host syncs" + (f"  ({_reasons(syncs)})" if verbose else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, default=FIXTURES, help="the golden fixture folder (tiny fixture models)")
    parser.add_argument("-v", "--verbose", action="store_true", help="say what each sync is")
    args = parser.parse_args()
    print("stand-in GPU (tests/gpu_standin.py): CPU tensors, recorded streams; counts, not times")
    predictor_syncs(args.reference, args.verbose)
    detector_syncs(args.reference, args.verbose)


if __name__ == "__main__":
    main()
