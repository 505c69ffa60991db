"""Grounded body every frame on synthetic ground truth: lifting between depth frames, the floor,
foot contact and foot locking.

Ground truth: `tests/ground_synthetic.py`'s walker (exact foot plants) seen by a camera tilted
15 degrees down. Measurements: 2D keypoints every frame with NOISE_PX pixel noise; 3D keypoints
(the pointmap's) with NOISE_M metres of noise per point and SCALE_JITTER of per-frame scale
jitter, either every frame ("depth every frame") or every DEPTH_EVERY-th frame, lifted in
between (`realtime.rig.lift.Lifter`). Then, on the lifted stream, all causal, frame by frame:
the floor from the lowest foot points of the depth frames of the first FLOOR_SECONDS (`fit_floor`),
the sinks' live filter (one euro, smoothness 0.5), contacts (`ContactDetector`), foot locking (`FootLock`).

Reported: joint error (mean over the 24 body and foot points) of the lifted 3D against the
truth and against depth-every-frame, on the frames without depth; the floor normal's angle to
the true up; contact precision / recall against the planted frames; foot sliding during the
true contacts (the ankle's travel along the floor per frame, mm, and per contact, cm) before
and after locking.
Run: python bench/rig.py [--frames 300]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.rig.ground import ContactDetector, FootLock, fit_floor, lowest_foot_points  # noqa: E402
from realtime.rig.lift import Lifter  # noqa: E402
from realtime.sinks.osc import Filter3D  # noqa: E402
from tests.ground_synthetic import walk  # noqa: E402
from tests.mocap_synthetic import NAMES  # noqa: E402

DEPTH_EVERY = 5
NOISE_PX, NOISE_M, SCALE_JITTER = 1.0, 0.015, 0.02
FLOOR_SECONDS = 5.0


def evaluate(frames: int = 300, seed: int = 0) -> dict[str, float]:
    truth = walk(frames)
    rng = np.random.default_rng(seed)
    body = np.flatnonzero(np.isfinite(truth.camera[0]).all(axis=1))
    pixels = truth.pixels + rng.normal(0, NOISE_PX, truth.pixels.shape)
    scale = 1.0 + rng.normal(0, SCALE_JITTER, (frames, 1, 1))
    depth = truth.camera * scale + rng.normal(0, NOISE_M, truth.camera.shape)

    lifter = Lifter(NAMES)
    lifted = np.full_like(depth, np.nan)
    floor_frames = int(FLOOR_SECONDS * 30)
    floor = None
    for t in range(frames):
        if t == floor_frames:  # the floor from the depth frames seen so far
            floor = fit_floor(lowest_foot_points(lifted[:t:DEPTH_EVERY], NAMES))
        measured = depth[t] if t % DEPTH_EVERY == 0 else None
        out = lifter.update(pixels[t], measured)
        if out is not None:
            lifted[t] = out
    between = np.array([t % DEPTH_EVERY != 0 for t in range(frames)]) & np.isfinite(lifted[:, body]).all(axis=(1, 2))

    def joint_error(a, b):
        return float(np.linalg.norm(a[between][:, body] - b[between][:, body], axis=2).mean())

    cosine = float(np.clip(floor.normal @ truth.up, -1, 1))

    detector, lock = ContactDetector(floor, NAMES), FootLock(NAMES)
    live_filter = Filter3D("one_euro", 0.5, len(NAMES))  # what the VMC / OSC sinks run on the 3D keypoints
    contacts = np.zeros((frames, 2), bool)
    filtered = np.full_like(lifted, np.nan)
    locked = np.full_like(lifted, np.nan)
    for t in range(frames):
        if np.isfinite(lifted[t, body]).all():
            filtered[t] = live_filter(truth.times[t], 1, lifted[t], None)
            contacts[t] = detector.update(truth.times[t], filtered[t])
            locked[t] = lock.apply(filtered[t], contacts[t])
    truth_contacts = truth.contacts
    tp = (contacts & truth_contacts).sum()
    slide_before, per_contact_before = _sliding(filtered, truth_contacts, floor.normal)
    slide_after, per_contact_after = _sliding(locked, truth_contacts, floor.normal)
    return {
        "joint_error_lifted_mm": 1000 * joint_error(lifted, truth.camera),
        "joint_error_depth_every_frame_mm": 1000 * joint_error(depth, truth.camera),
        "lifted_vs_depth_every_frame_mm": 1000 * joint_error(lifted, depth),
        "floor_up_error_deg": float(np.degrees(np.arccos(cosine))),
        "contact_precision": float(tp / max(contacts.sum(), 1)),
        "contact_recall": float(tp / max(truth_contacts.sum(), 1)),
        "slide_before_mm_per_frame": slide_before,
        "slide_after_mm_per_frame": slide_after,
        "slide_before_cm_per_contact": per_contact_before,
        "slide_after_cm_per_contact": per_contact_after,
    }


def _sliding(points: np.ndarray, contacts: np.ndarray, up: np.ndarray) -> tuple[float, float]:
    """The ankle's travel along the floor during true contacts: mean mm per frame, mean cm per contact."""
    steps, per_contact = [], []
    for side, name in enumerate(("left_ankle", "right_ankle")):
        ankle = points[:, NAMES.index(name)]
        travel = 0.0
        for t in range(1, len(points)):
            if contacts[t, side] and contacts[t - 1, side] and np.isfinite(ankle[[t - 1, t]]).all():
                move = ankle[t] - ankle[t - 1]
                step = float(np.linalg.norm(move - (move @ up) * up))
                steps.append(step)
                travel += step
            elif contacts[t - 1, side] and not contacts[t, side]:
                per_contact.append(travel)
                travel = 0.0
    return 1000 * float(np.mean(steps)), 100 * float(np.mean(per_contact))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    args = parser.parse_args()
    for name, value in evaluate(args.frames).items():
        print(f"{name:36s} {value:8.2f}")


if __name__ == "__main__":
    main()
