"""Evaluate the keypoint smoothers on synthetic ground-truth motion.

    python -m bench.smoothing            # full table + live filtering cost (from the repo root)
    python -m bench.smoothing --quick    # shorter sequences

Motion: a 400 px tall person whose body moves in minimum-jerk strokes (moves
peaking near 0.5 g, then stops), arms (wrist, hand, half the elbow) with fast
gestures of their own (near 5 g), a head that turns, feet that step.
Observations add white noise that is larger on face and hand points than on the
body and grows as the keypoint score drops, plus 1 % outliers (20-60 px jumps)
that mostly, but not always, have a low score. Scenarios: 30 fps, 60 fps, and a
variable-rate 30 fps stream with timestamp jitter and 10 % dropped frames.

Metrics (pixels, over all 308 keypoints and frames): jitter = mean magnitude of
the second time derivative (px/s^2, finite differences on the real
timestamps; the "truth" row is the motion's own, the floor); error = distance
to the ground truth, mean and 95th percentile. Live methods run through
`LiveSmoother` frame by frame, offline ones through `smooth_track`.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np

from realtime.data import keypoint_groups, keypoint_names
from trackers.live import LiveSmoother
from trackers.offline import smooth_track

HEIGHT_PX = 400.0
# Noise std in px at the region's typical score (a 400 px person), and that typical score.
NOISE_PX = {"body": 1.5, "extra": 2.0, "foot": 2.0, "left_hand": 3.5, "right_hand": 3.5, "face": 2.5}
TYPICAL_SCORE = {"body": 0.9, "extra": 0.8, "foot": 0.8, "left_hand": 0.65, "right_hand": 0.65, "face": 0.8}
OUTLIER_RATE = 0.01
METHODS = ("raw", "one_euro", "kalman", "rts", "savgol", "butterworth")


@dataclass
class Sequence:
    """One synthetic recording of one person."""

    t: np.ndarray  # (T,) s
    truth: np.ndarray  # (T, K, 2) px
    observed: np.ndarray  # (T, K, 2) px
    scores: np.ndarray  # (T, K)
    sizes: np.ndarray  # (T,) measured box height, px


def _min_jerk_strokes(t: np.ndarray, rng: np.random.Generator, amplitude: float, move_s: tuple, stop_s: tuple) -> np.ndarray:
    """(T, 2) piecewise minimum-jerk path: moves of random length/direction separated by stops."""
    path = np.zeros((t.size, 2))
    start, pos = t[0] - rng.uniform(0, stop_s[1]), np.zeros(2)
    while start < t[-1]:
        duration = rng.uniform(*move_s)
        target = pos + rng.normal(0, amplitude, 2)
        target = np.clip(target, -2 * amplitude, 2 * amplitude)  # stay near home
        s = np.clip((t - start) / duration, 0, 1)[:, None]
        blend = 10 * s**3 - 15 * s**4 + 6 * s**5  # minimum-jerk profile
        moving = (t >= start)[:, None]
        path = np.where(moving, pos + blend * (target - pos), path)
        pos, start = target, start + duration + rng.uniform(*stop_s)
    return path


def make_sequence(fps: float = 30.0, seconds: float = 10.0, seed: int = 0, variable_rate: bool = False) -> Sequence:
    """A synthetic 308-keypoint track with ground truth; variable_rate adds jitter and 10 % dropped frames."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, seconds, 1.0 / fps)
    if variable_rate:
        t = t + rng.uniform(-0.003, 0.003, t.size)
        keep = rng.random(t.size) > 0.10
        keep[0] = True
        t = np.sort(t[keep])
    groups = keypoint_groups()
    K = 308
    offsets = np.zeros((K, 2))
    centres = {"body": (0, 0), "extra": (0, -0.25), "foot": (0, 0.48), "face": (0, -0.42), "left_hand": (0.2, 0.0),
               "right_hand": (-0.2, 0.0)}
    spreads = {"body": (0.15, 0.45), "extra": (0.1, 0.1), "foot": (0.08, 0.02), "face": (0.04, 0.05), "left_hand": (0.04, 0.04),
               "right_hand": (0.04, 0.04)}
    region_of = np.empty(K, dtype=object)
    for region, idx in groups.items():
        offsets[idx] = (np.array(centres[region]) + rng.uniform(-1, 1, (idx.size, 2)) * spreads[region]) * HEIGHT_PX
        region_of[idx] = region

    # Whole-body moves peak near 0.5 g (walking starts and stops); arm gestures near 5 g.
    root = _min_jerk_strokes(t, rng, 0.2 * HEIGHT_PX, move_s=(0.6, 1.5), stop_s=(0.3, 1.2))
    local = {
        "left_arm": _min_jerk_strokes(t, rng, 0.15 * HEIGHT_PX, move_s=(0.25, 0.6), stop_s=(0.2, 0.8)),
        "right_arm": _min_jerk_strokes(t, rng, 0.15 * HEIGHT_PX, move_s=(0.25, 0.6), stop_s=(0.2, 0.8)),
        "head": _min_jerk_strokes(t, rng, 0.03 * HEIGHT_PX, move_s=(0.2, 0.5), stop_s=(0.3, 1.0)),
        "feet": _min_jerk_strokes(t, rng, 0.05 * HEIGHT_PX, move_s=(0.3, 0.6), stop_s=(0.2, 0.8)),
    }
    names = keypoint_names()
    moved_by = {  # keypoints each local motion carries, with a weight (elbows move half as far as wrists)
        "left_arm": (np.r_[groups["left_hand"], names.index("left_wrist")], [names.index("left_elbow")]),
        "right_arm": (np.r_[groups["right_hand"], names.index("right_wrist")], [names.index("right_elbow")]),
        "head": (np.r_[groups["face"], [names.index(n) for n in ("nose", "left_eye", "right_eye", "left_ear", "right_ear")]], []),
        "feet": (np.r_[groups["foot"], [names.index(n) for n in ("left_ankle", "right_ankle")]], []),
    }
    truth = root[:, None, :] + offsets[None]
    for part, path in local.items():
        full, half = moved_by[part]
        truth[:, full] += path[:, None, :]
        truth[:, half] += 0.5 * path[:, None, :]

    noise_px = np.array([NOISE_PX[r] for r in region_of])
    typical = np.array([TYPICAL_SCORE[r] for r in region_of])
    scores = np.clip(typical + rng.normal(0, 0.1, (t.size, K)), 0.05, 1.0)
    sigma = noise_px * np.clip(typical / scores, 0.5, 3.0)  # less confident, noisier
    observed = truth + rng.normal(0, 1, truth.shape) * sigma[..., None]
    outlier = rng.random((t.size, K)) < OUTLIER_RATE
    angle = rng.uniform(0, 2 * np.pi, outlier.sum())
    jump = rng.uniform(20, 60, outlier.sum())[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    observed[outlier] += jump
    scores[outlier] = rng.uniform(0.05, 0.5, outlier.sum())  # about 40 % still pass a 0.3 threshold
    sizes = HEIGHT_PX * (1 + rng.normal(0, 0.02, t.size))
    return Sequence(t, truth, observed, scores.astype(np.float32), sizes)


def jitter(t: np.ndarray, x: np.ndarray) -> float:
    """Mean |d2x/dt2| (units/s^2) from 3-point differences on real timestamps; NaN triplets skipped."""
    h1 = (t[1:-1] - t[:-2])[:, None, None]
    h2 = (t[2:] - t[1:-1])[:, None, None]
    acc = 2 * ((x[2:] - x[1:-1]) / h2 - (x[1:-1] - x[:-2]) / h1) / (h1 + h2)
    mag = np.linalg.norm(acc, axis=-1)
    return float(np.nanmean(mag))


def position_error(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(mean, 95th percentile) distance to the truth over finite estimates."""
    err = np.linalg.norm(estimate - truth, axis=-1)
    err = err[np.isfinite(err)]
    return float(err.mean()), float(np.percentile(err, 95))


def run_live(seq: Sequence, method: str, smoothness: float = 0.5) -> np.ndarray:
    """Feed the sequence frame by frame through a LiveSmoother (one track, ID 7)."""
    smoother = LiveSmoother(method, smoothness=smoothness)
    out = np.empty_like(seq.observed)
    ids = np.array([7])
    for i, ti in enumerate(seq.t):
        out[i] = smoother.update(ti, ids, seq.observed[i][None], seq.scores[i][None], seq.sizes[i : i + 1])[0][0]
    return out


def smooth(seq: Sequence, method: str) -> np.ndarray:
    """The sequence's keypoints after `method` (one of METHODS)."""
    if method == "raw":
        return seq.observed
    if method in ("one_euro", "kalman"):
        return run_live(seq, method)
    return smooth_track(seq.t, seq.observed, seq.scores, method)


def evaluate(seq: Sequence, methods: tuple[str, ...] = METHODS) -> dict[str, dict[str, float]]:
    """method -> {"jitter", "mean_error", "p95_error"}; "truth" adds the ground truth's own jitter."""
    results = {"truth": {"jitter": jitter(seq.t, seq.truth), "mean_error": 0.0, "p95_error": 0.0}}
    for method in methods:
        est = smooth(seq, method)
        mean, p95 = position_error(est, seq.truth)
        results[method] = {"jitter": jitter(seq.t, est), "mean_error": mean, "p95_error": p95}
    return results


def live_cost_ms(method: str, persons: int = 1, frames: int = 300, repeats: int = 3, seed: int = 0) -> float:
    """CPU milliseconds per person per frame of LiveSmoother.update on 308 keypoints (best of `repeats` runs).

    CPU time of this process (`time.process_time`), so other programs on the
    machine do not inflate it; numpy runs these small operations on one thread.
    """
    seq = make_sequence(30.0, frames / 30.0, seed)
    ids = np.arange(persons)
    kp = np.repeat(seq.observed[:, None], persons, axis=1)
    sc = np.repeat(seq.scores[:, None], persons, axis=1)
    sz = np.repeat(seq.sizes[:, None], persons, axis=1)
    best = np.inf
    for _ in range(repeats):
        smoother = LiveSmoother(method)
        smoother.update(seq.t[0], ids, kp[0], sc[0], sz[0])  # first frame: allocation
        start = time.process_time()
        for i in range(1, len(seq.t)):
            smoother.update(seq.t[i], ids, kp[i], sc[i], sz[i])
        best = min(best, time.process_time() - start)
    return best * 1e3 / ((len(seq.t) - 1) * persons)


def offline_cost_ms(method: str, seconds: float = 20.0, seed: int = 0) -> float:
    """CPU milliseconds per frame of `smooth_track` on one person's 308-keypoint track at ~30 fps."""
    seq = make_sequence(30.0, seconds, seed, variable_rate=True)
    start = time.process_time()
    smooth_track(seq.t, seq.observed, seq.scores, method)
    return (time.process_time() - start) * 1e3 / len(seq.t)


SCENARIOS = {"30 fps": dict(fps=30.0), "60 fps": dict(fps=60.0),
             "variable ~30 fps, 10% dropped": dict(fps=30.0, variable_rate=True)}


def table(seconds: float, seed: int = 0) -> str:
    lines = []
    for name, kwargs in SCENARIOS.items():
        seq = make_sequence(seconds=seconds, seed=seed, **kwargs)
        res = evaluate(seq)
        raw_jitter = res["raw"]["jitter"]
        lines.append(f"\n{name}: {len(seq.t)} frames, 308 keypoints, seed {seed}")
        lines.append("| method | jitter px/s^2 | jitter cut | mean error px | p95 error px |")
        lines.append("|---|---:|---:|---:|---:|")
        for method, r in res.items():
            cut = raw_jitter / r["jitter"]
            lines.append(f"| {method} | {r['jitter']:.0f} | {cut:.1f}x | {r['mean_error']:.2f} | {r['p95_error']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 s sequences instead of 20 s")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(table(4.0 if args.quick else 20.0, args.seed))
    print(f"\nlive filtering cost, 308 keypoints (LiveSmoother.update), CPU ms per person per frame"
          f" ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}):")
    for method in ("one_euro", "kalman"):
        costs = ", ".join(f"{p} person(s): {live_cost_ms(method, p):.3f}" for p in (1, 4))
        print(f"  {method}: {costs}")
    print("offline smoothing cost (smooth_track, one person, 20 s at ~30 fps), CPU ms per frame:")
    print("  " + ", ".join(f"{method}: {offline_cost_ms(method):.2f}" for method in ("rts", "savgol", "butterworth")))
