"""Identity association on the synthetic scenes: CLEAR-MOT-style error counts.

    python bench/identity.py [--seeds 5] [--false-rate 0.3]

Ground truth = the people visible in each frame. Prints, per scene and per
tracker variant, the ID switches, misses (people without an ID: the birth delay
of confirm_hits - 1 frames each), false positives (false detections that got an
ID), MOTA, and the tracker's time per frame.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # synthetic/ is not installed

from synthetic.tracking import SCENES, TrackingErrors, count_errors, run_tracker  # noqa: E402
from trackers.identity import IdentityTracker  # noqa: E402

VARIANTS = {
    "iou+oks (default)": (dict(), True),
    "iou only": (dict(), False),
    "no coasting / re-id": (dict(max_misses=0, reid_seconds=0.05), True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5, help="noise seeds per scene")
    parser.add_argument("--false-rate", type=float, default=0.3, help="probability per frame of a false detection")
    args = parser.parse_args()
    print(f"synthetic scenes, 25 fps, {args.seeds} seeds, false detections on {args.false_rate:.0%} of frames")
    print(f"{'scene':<18} {'tracker':<20} {'truths':>6} {'IDsw':>5} {'miss':>5} {'FP':>4} {'MOTA':>7} {'ms/frame':>9}")
    for scene_name, scene in SCENES.items():
        scenes = [scene(seed=s, false_rate=args.false_rate) for s in range(args.seeds)]
        for name, (options, use_keypoints) in VARIANTS.items():
            total = TrackingErrors(0, 0, 0, 0)
            seconds, frames = 0.0, 0
            for frames_of_scene in scenes:
                start = time.perf_counter()
                ids = run_tracker(IdentityTracker(**options), frames_of_scene, use_keypoints=use_keypoints)
                seconds += time.perf_counter() - start
                frames += len(frames_of_scene)
                total = total + count_errors(frames_of_scene, ids)
            print(
                f"{scene_name:<18} {name:<20} {total.truths:>6} {total.id_switches:>5} {total.misses:>5} "
                f"{total.false_positives:>4} {total.mota:>7.4f} {1e3 * seconds / frames:>9.2f}"
            )


if __name__ == "__main__":
    main()
