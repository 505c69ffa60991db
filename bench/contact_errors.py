"""Where the contact detector's errors lie on the everyday walks: bench/rig.py's `evaluate_walk` (the same
camera, noise and chain), each frame's detected contact against the truth, per foot.

False positives (detected, not true), by the detected contact they belong to: `early` before the true stance
it overlaps (an onset ahead of the truth), `late` after it (a release behind the truth), `blip` a detected
contact overlapping no true stance, `inside` between two true stances it spans. False negatives (true, not
detected), by the true stance they belong to: `late_on` before the first detected frame in it, `early_off`
after the last, `missed` a stance with no detected frame, `gap` between detected frames in it.
Also: the onsets' and releases' offsets from the truth (frames, detected minus true), and how many blips
start on a depth frame.
Run: python bench/contact_errors.py [--seeds 0 1 2 3] [--headings 0 45 90] [--walks cmu_07_04 ...]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import rig  # noqa: E402


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of True (end exclusive)."""
    edges = np.diff(np.r_[0, mask.astype(int), 0])
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def classify(detected: np.ndarray, truth: np.ndarray, depth_every: int) -> tuple[Counter, list, list]:
    """One foot's (T,) detected and true contacts -> counts per class, onset and release offsets."""
    counts, onsets, releases = Counter(), [], []
    true_runs = runs(truth)
    for start, end in runs(detected):
        overlap = [(a, b) for a, b in true_runs if a < end and b > start]
        fp = np.flatnonzero(~truth[start:end]) + start
        if not overlap:
            counts["fp_blip"] += len(fp)
            counts["blips"] += 1
            counts["blips_on_depth_frame"] += start % depth_every == 0
            continue
        first, last = overlap[0], overlap[-1]
        onsets.append(start - first[0])
        releases.append(end - last[1])
        for t in fp:
            counts["fp_early" if t < first[0] else "fp_late" if t >= last[1] else "fp_inside"] += 1
    for start, end in true_runs:
        hit = np.flatnonzero(detected[start:end]) + start
        fn = np.flatnonzero(~detected[start:end]) + start
        if not len(hit):
            counts["fn_missed"] += len(fn)
            counts["missed_stances"] += 1
            continue
        for t in fn:
            counts["fn_late_on" if t < hit[0] else "fn_early_off" if t > hit[-1] else "fn_gap"] += 1
    return counts, onsets, releases


def diagnose(clip, heading: float, seeds, depth_every: int = rig.DEPTH_EVERY) -> tuple[Counter, list, list]:
    """Counts summed over seeds and feet, with every onset and release offset."""
    counts, onsets, releases = Counter(), [], []
    for seed in seeds:
        record: dict = {}
        rig.evaluate_walk(clip, heading, [seed], depth_every=depth_every, record=record)
        grounded = record["grounded"]  # the frames the detector decided (the floor known)
        detected, truth = record["contacts"][grounded], record["truth_contacts"][grounded]
        for side in (0, 1):
            c, on, off = classify(detected[:, side], truth[:, side], depth_every)
            counts.update(c)
            onsets += on
            releases += off
        counts["detected"] += int(detected.sum())
        counts["true"] += int(truth.sum())
    return counts, onsets, releases


def main() -> None:
    from tests.mocap_clips import WALKS, load_clip

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--headings", type=float, nargs="+", default=[0.0, 45.0, 90.0])
    parser.add_argument("--walks", nargs="+", default=list(WALKS))
    args = parser.parse_args()
    columns = ("detected", "true", "fp_early", "fp_late", "fp_blip", "fp_inside", "blips", "blips_on_depth_frame",
               "fn_late_on", "fn_early_off", "fn_missed", "fn_gap")
    print(f"{'walk':18s} " + " ".join(f"{c:>8s}" for c in (
        "det", "true", "FPearly", "FPlate", "FPblip", "FPin", "blips", "blipD", "FNlateOn", "FNearlyOf", "FNmiss",
        "FNgap")) + "  onset offsets (frames: count)  release offsets")
    for name in args.walks:
        clip = load_clip(name)
        for heading in args.headings:
            counts, onsets, releases = diagnose(clip, heading, args.seeds)
            on, off = sorted(Counter(onsets).items()), sorted(Counter(releases).items())
            print(f"{name[4:]} {heading:4g} deg    " + " ".join(f"{counts[c]:8d}" for c in columns)
                  + "  " + " ".join(f"{k:+d}:{v}" for k, v in on) + "  |  " + " ".join(f"{k:+d}:{v}" for k, v in off))


if __name__ == "__main__":
    main()
