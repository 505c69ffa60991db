"""Where the avatar's feet go wrong: each link of the chain from the true feet to `Person.bones`, measured alike.

bench/motion.py measures the avatar's feet (forward kinematics of `Person.bones` in the world) against the truth.
This bench runs the same clips through the same stages (`bench.motion.run_clip`) and measures, by the same rules,
every point on the way, so the first link that goes wrong shows:

- truth:    the clean motion's ankle and toes (the toes' midpoint), in the world stage's world;
- measured: `Person.keypoints3d` out of the ground stage (noise, depth frames every 1/6 s, the lift between them);
- filtered: `Person.keypoints3d_smoothed`, the motion stage's live filter;
- locked:   the foot lock's output (`realtime.rig.lock.FootLock.apply`, recorded as the stage calls it), what the
            skeleton is solved from;
- avatar:   forward kinematics of `Person.bones` (as bench/motion.py places it).

Per link, on the frames of true contact (the ankle while the heel is down, the toes while the toes are): the slide
along the floor (mm per 1/30 s), and the error against the truth there, along the floor and in height (mm, mean;
the height's spread too); on the frames a foot is held (`Person.contacts`): the float and penetration (cm, 95th
percentile, bench/motion.py's `elevations` and `sinking`). Then the avatar against the locked points on held frames (how far the
bones' ankle is from the point it was solved to reach, and how much that gap moves per 1/30 s), and the root: the
avatar's root and the filtered hips against the true hips (RMS jitter off a 0.2 s quadratic, and the mean offset,
mm; along the line of sight too).

Run: python bench/avatar_chain.py --corpus DIR [--extra DIR ...] [--clips NAME ...] [--categories NAME ...] [--held-out-only]
     [--fps 30] [--views side] [--seeds 0] [--fast]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus  # noqa: E402
from bench import motion as motion_bench  # noqa: E402
from bench.corpus import NAMES  # noqa: E402
from realtime.rig import lock as lock_module  # noqa: E402
from realtime.rig.world import RIG_FROM_CAMERA, transform_points  # noqa: E402

ANKLES = [NAMES.index("left_ankle"), NAMES.index("right_ankle")]
TOES = [[NAMES.index(f"{s}_big_toe"), NAMES.index(f"{s}_small_toe")] for s in ("left", "right")]
LINKS = ("truth", "measured", "filtered", "locked", "avatar")


def feet_of(points: np.ndarray) -> np.ndarray:
    """(T, K, 3) -> (T, 2, 2, 3): left/right, ankle/toes (the midpoint of the big and small toe)."""
    ankles = points[:, ANKLES]
    toes = np.stack([points[:, TOES[s]].mean(axis=1) for s in range(2)], axis=1)
    return np.stack([ankles, toes], axis=2)


class LockRecorder:
    """Records what every `FootLock.apply` returns, by timestamp (the motion stage's frame of points)."""

    def __init__(self):
        self.out: dict[float, np.ndarray] = {}
        self._original = lock_module.FootLock.apply

    def __enter__(self):
        recorder = self

        def apply(lock, timestamp, points3d, contacts, *rest):
            result = recorder._original(lock, timestamp, points3d, contacts, *rest)
            recorder.out[round(float(timestamp), 6)] = np.array(result)
            return result

        lock_module.FootLock.apply = apply
        return self

    def __exit__(self, *exc):
        lock_module.FootLock.apply = self._original


def chain(motion, view: str, seed: int, truth) -> dict:
    """One run: per link (T, 2, 2, 3) world feet, plus the run (bench.motion.Run) and the root tracks."""
    record: dict = {}
    with LockRecorder() as recorder:
        run = motion_bench.run_clip(motion, view, seed, truth, record=record)
    frames, true_camera = record["frames"], record["true_camera"]
    count = len(frames)
    links = {name: np.full((count, 2, 2, 3), np.nan) for name in LINKS}
    filtered_hips = np.full((count, 3), np.nan)
    cameras = np.full((count, 3), np.nan)  # the camera's centre in the world
    for t, frame in enumerate(frames):
        person, camera = frame.people[0], frame.camera
        if camera is None or not camera.grounded or person.bones is None:
            continue
        world = camera.world_from_camera
        cameras[t] = world[:3, 3]
        links["truth"][t] = feet_of(transform_points(world, true_camera[t])[None])[0]
        if person.keypoints3d is not None:
            links["measured"][t] = feet_of(transform_points(world, np.asarray(person.keypoints3d, np.float64))[None])[0]
        if person.keypoints3d_smoothed is not None:
            smoothed = transform_points(world, np.asarray(person.keypoints3d_smoothed, np.float64))
            links["filtered"][t] = feet_of(smoothed[None])[0]
            filtered_hips[t] = smoothed[motion_bench.HIPS].mean(axis=0)
        locked = recorder.out.get(round(float(frame.timestamp), 6))
        if locked is not None:
            if not camera.world:  # the stage's points are camera-relative: into the world
                locked = transform_points(world, locked)
            else:  # in the world, in camera axes (x, -y, -z of the world)
                locked = locked @ RIG_FROM_CAMERA.T
            links["locked"][t] = feet_of(locked[None])[0]
    links["avatar"] = run.feet
    return {"links": links, "run": run, "filtered_hips": filtered_hips, "cameras": cameras}


def _mean(values: list) -> float:
    values = np.concatenate([np.ravel(v) for v in values]) if values else np.zeros(0)
    values = values[np.isfinite(values)]
    return float(values.mean()) if len(values) else float("nan")


def summarise(results: list[dict]) -> list[str]:
    """The table: one row per link, then the avatar against the locked points, then the root."""
    lines = [f"{'link':9s} {'slide':>6s} {'xz err':>7s} {'y err':>6s} {'y sd':>5s} {'float':>6s} {'pen':>5s}",
             f"{'':9s} {'mm/30':>6s} {'mm':>7s} {'mm':>6s} {'mm':>5s} {'cm p95':>6s} {'cm':>5s}"]
    for name in LINKS:
        slides, horizontal, vertical, heights, sunk = [], [], [], [], []
        for result in results:
            run, feet, truth_feet = result["run"], result["links"][name], result["links"]["truth"]
            for side in range(2):
                for p, down in enumerate((run.truth.heel[:, side], run.truth.toes[:, side])):
                    slides.append(motion_bench.slide_steps(feet[:, side, p], down, run.times))
                    error = feet[down, side, p] - truth_feet[down, side, p]
                    horizontal.append(np.linalg.norm(error[:, [0, 2]], axis=-1))
                    vertical.append(error[:, 1])
            held = run.decided & run.valid[:, None] & np.isfinite(feet[..., 1]).all(axis=2)
            heights.append(motion_bench.elevations(feet, run.rest)[held])
            sunk.append(motion_bench.sinking(feet, run.rest, run.true_heights)[held])
        heights_all = np.concatenate(heights) if heights else np.zeros(0)
        vertical_all = np.concatenate(vertical)
        vertical_all = vertical_all[np.isfinite(vertical_all)]
        floating = 100 * np.percentile(np.maximum(heights_all, 0), 95) if len(heights_all) else float("nan")
        sunk_all = np.concatenate(sunk) if sunk else np.zeros(0)
        sinking = 100 * np.percentile(sunk_all, 95) if len(sunk_all) else float("nan")
        lines.append(f"{name:9s} {_mean(slides):6.2f} {1000 * _mean(horizontal):7.1f} {1000 * _mean(vertical):6.1f} "
                     f"{1000 * (vertical_all.std() if len(vertical_all) else np.nan):5.1f} {floating:6.2f} {sinking:5.2f}")
    gaps, moves = [], []
    for result in results:
        run, avatar, locked = result["run"], result["links"]["avatar"], result["links"]["locked"]
        held = run.decided & run.valid[:, None]
        gap = avatar - locked  # (T, 2, 2, 3)
        for side in range(2):
            rows = held[:, side]
            gaps.append(np.linalg.norm(gap[rows, side, 0], axis=-1))
            both = rows[1:] & rows[:-1]
            step = np.linalg.norm(np.diff(gap[:, side, 0], axis=0)[both][:, [0, 2]], axis=-1)
            moves.append(1000 * step * motion_bench.SLIDE_PER / np.diff(run.times)[both])
    lines.append(f"avatar ankle vs locked ankle on held frames: {1000 * _mean(gaps):.1f} mm apart, the gap moving "
                 f"{_mean(moves):.2f} mm per 1/30 s along the floor")
    for label, key in (("avatar root", None), ("filtered hips", "filtered_hips")):
        jitters, offsets, sight = [], [], []
        for result in results:
            run = result["run"]
            track = run.root if key is None else result[key]
            error = track - run.true_root
            jitters.append(motion_bench.root_jitter(error, run.fps))
            offsets.append(np.linalg.norm(error, axis=-1))
            look = run.true_root - result["cameras"]
            along = np.sum(error * look, axis=-1) / np.linalg.norm(look, axis=-1)  # along the line of sight
            along = along[np.isfinite(along)]
            if len(along):
                sight.append(np.abs(along - np.median(along)))
        lines.append(f"{label}: jitter {np.sqrt(np.nanmean(np.square(jitters))):.1f} mm RMS, "
                     f"{1000 * _mean(offsets):.0f} mm from the true hips on average, along the line of sight "
                     f"{1000 * np.percentile(np.concatenate(sight), 95) if sight else np.nan:.0f} mm off its median "
                     "(95th percentile)")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None, action=motion_bench._Once,
                        help="a folder of BVH files by category (default: $SAPIENS_MOCAP_DIR)")
    parser.add_argument("--extra", type=Path, action="append", metavar="DIR",
                        help="a folder of extra clips, every one held out (again for more folders)")
    parser.add_argument("--fps", type=float, nargs="+", default=[30.0])
    parser.add_argument("--views", nargs="+", choices=list(motion_bench.VIEWS), default=["side"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--clips", nargs="+")
    parser.add_argument("--categories", nargs="+")
    parser.add_argument("--held-out-only", action="store_true")
    parser.add_argument("--fast", action="store_true", help="the first 2 s of each clip")
    args = parser.parse_args(argv)
    bad = [f for f in args.fps if not (np.isfinite(f) and 1.0 <= f <= 240.0)]
    if bad:
        parser.error(f"--fps {bad[0]:g}: give frame rates between 1 and 240, e.g. --fps 30 60")
    try:
        motions = motion_bench.select(args)
    except corpus.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    by_category: dict[str, list] = {}
    for motion in motions:
        if args.fast:
            motion = corpus.Motion(motion.name, motion.category, motion.joints[: int(2 * motion.fps) + 1], motion.fps)
        truth = corpus.true_contacts(motion)
        for fps in args.fps:
            at_rate = corpus.resample(motion, fps)
            for view in args.views:
                for seed in args.seeds:
                    by_category.setdefault(motion.category, []).append(chain(at_rate, view, seed, truth.at(at_rate.times)))
    for category, results in sorted(by_category.items()):
        print(f"\n{category} ({len(results)} runs; {', '.join(args.views)}; {', '.join(f'{f:g}' for f in args.fps)} fps)")
        for line in summarise(results):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
