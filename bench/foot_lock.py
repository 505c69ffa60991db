"""Offline foot locking in the motion exports, measured in the exported BVH on synthetic ground truth.

Ground truth: `tests/ground_synthetic.py`'s walker (exact foot plants, 60 % of each 1.2 s gait
cycle per foot), written as a tracks file with noisy 3D keypoints (15 mm per point, 2 % per-frame
scale jitter, as bench/rig.py) and the true contacts (`tests/foot_lock_synthetic.py`). Each seed is
exported to BVH through `export_tracks` (default RTS smoothing) with and without foot locking and read
back by bvhio (its forward kinematics). Reported per seed: the ankles' slide during contacts (mean
travel per frame over consecutive contact frames, mm), the ratio after/before, the largest ankle step
of any frame (mm: a pop would show here), and the export's wall time with locking (s).
Run: python bench/foot_lock.py [--frames 300] [--seeds 0 1 2 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.export import export_tracks  # noqa: E402
from rig import print_per_seed  # noqa: E402  (bench/rig.py)
from tests.foot_lock_synthetic import bvh_ankles, slide, write_walk_tracks  # noqa: E402


def evaluate(frames: int, seed: int, folder: Path) -> dict[str, float]:
    tracks = folder / f"walk_{seed}.jsonl"
    contacts = write_walk_tracks(tracks, frames, seed)
    free = bvh_ankles(export_tracks(tracks, "bvh", folder / f"free_{seed}.bvh", foot_lock=False))
    start = time.perf_counter()
    path = export_tracks(tracks, "bvh", folder / f"locked_{seed}.bvh")
    seconds = time.perf_counter() - start
    locked = bvh_ankles(path)
    before, after = slide(free, contacts), slide(locked, contacts)

    def max_step(ankles: np.ndarray) -> float:
        return 1000.0 * float(np.linalg.norm(np.diff(ankles, axis=0), axis=-1).max())

    return {"slide_before_mm_per_frame": before, "slide_after_mm_per_frame": after, "ratio_after_before": after / before,
            "max_ankle_step_before_mm": max_step(free), "max_ankle_step_after_mm": max_step(locked), "export_locked_s": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        results = [evaluate(args.frames, seed, Path(folder)) for seed in args.seeds]
    print_per_seed(results, args.seeds, 30)


if __name__ == "__main__":
    main()
