"""The egomotion stage's cost per 640 x 480 frame on one CPU core, with its accuracy in the same run.

Scenes: `synthetic/world_scene.py`'s textured room along each camera path (static, pan, dolly,
handheld shake, follow shot) with two walkers, as the collect stage hands them on
(`tests/world_tracks.scene_frames`: the image, the seg every frame, the pointmap and 3D keypoints
every 5th frame). Every scene is rendered first; then `EgomotionStage` and `WorldStage` (camera "moving") run over its
frames with one OpenCV thread (`cv2.setNumThreads(1)`), and each frame's `process` calls are timed (wall
clock, `time.perf_counter`, and the thread's CPU time, `time.thread_time`: on a shared machine
the CPU time is what the stage costs, the wall clock adds what other processes took from it).
`CameraTracker.update` (inside it) is timed on its own too.

Accuracy, from the tracker's poses against the truth (as bench/world.py): camera rotation error
(deg, mean over frames, relative to the first frame) and translation error (% of the path, paths
shorter than 1 m count as 1 m).

Last line: `egomotion: stage p50 A ms, p95 B ms (CPU p50 C, p95 D), tracker p50 E, p95 F, pointmap
frames p95 G; camera rotation H deg, translation I %` (costs over all frames of all
scenes, accuracy the worst scene).
With `--baseline old.py` (another revision's realtime/rig/egomotion.py) its tracker runs on the
same frames too, alternating with the current one scene by scene, so both meet the same load of a
shared machine; `--repeat N` makes N passes of each and keeps each tracker's pass with the lowest
CPU median (the others met a neighbour's burst).
Run: python bench/egomotion.py [--seeds 0] [--frames 300] [--paths ...] [--max-features 150] [--window 15] [--levels 3]
     [--baseline old.py] [--repeat 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.data import keypoint_names  # noqa: E402
from realtime.rig.egomotion import CameraTracker  # noqa: E402
from realtime.stages import EgomotionStage, WorldStage  # noqa: E402
from synthetic.world_scene import CAMERA_PATHS  # noqa: E402
from tests.world_tracks import DEPTH_EVERY, scene_frames  # noqa: E402

NAMES = keypoint_names()


def render(path: str, frames: int, seed: int) -> tuple[list, np.ndarray]:
    """The scene's frames (as the collect stage hands them on) and the true world_from_camera (T, 4, 4)."""
    out, truth = [], None
    for truth, frame in scene_frames(path, frames, seed):  # noqa: B007 (the truth is the same object every frame)
        out.append(frame)
    return out, truth.world_from_camera


def measure(frames: list, world_from_camera: np.ndarray, make_tracker) -> dict:
    """One scene through fresh egomotion and world stages (camera 'moving'); per-frame costs (ms) of
    the two together, and accuracy."""
    tracker = make_tracker()
    egomotion, world = EgomotionStage(camera="moving", tracker=tracker), WorldStage(NAMES, camera="moving")
    poses, tracked, tracker_ms = [], [], []
    update = tracker.update

    def timed_update(*args, **kwargs):
        start = time.perf_counter()
        pose = update(*args, **kwargs)
        tracker_ms.append(1000 * (time.perf_counter() - start))
        poses.append(pose.world_from_camera)
        tracked.append(pose.tracked)
        return pose

    tracker.update = timed_update
    wall, cpu = [], []
    for frame in frames:
        start_wall, start_cpu = time.perf_counter(), time.thread_time()
        world.process(egomotion.process(frame))
        cpu.append(1000 * (time.thread_time() - start_cpu))
        wall.append(1000 * (time.perf_counter() - start_wall))
    poses = np.stack(poses)
    odometry = np.linalg.inv(world_from_camera[0]) @ world_from_camera
    rotation = [np.degrees(Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).magnitude()) for a, b in zip(poses, odometry)]
    path_length = max(float(np.linalg.norm(np.diff(odometry[:, :3, 3], axis=0), axis=1).sum()), 1.0)
    translation = np.linalg.norm(poses[:, :3, 3] - odometry[:, :3, 3], axis=1).mean() / path_length
    return {"wall": np.array(wall), "cpu": np.array(cpu), "tracker": np.array(tracker_ms),
            "depth": np.array([f.index % DEPTH_EVERY == 0 for f in frames]), "tracked": float(np.mean(tracked)),
            "rotation_deg": float(np.mean(rotation)), "translation_pct": 100 * float(translation)}


def load_tracker(path: Path):
    """The `CameraTracker` class of another copy of realtime/rig/egomotion.py (an older revision)."""
    spec = importlib.util.spec_from_file_location("egomotion_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.CameraTracker


def summary(label: str, rows: list[dict]) -> str:
    wall, cpu, tracker = (np.concatenate([r[k] for r in rows]) for k in ("wall", "cpu", "tracker"))
    depth = np.concatenate([r["wall"][r["depth"]] for r in rows])
    return (f"{label}: stage p50 {np.median(wall):.2f} ms, p95 {np.percentile(wall, 95):.2f} ms (CPU p50 "
            f"{np.median(cpu):.2f}, p95 {np.percentile(cpu, 95):.2f}), tracker p50 {np.median(tracker):.2f}, p95 "
            f"{np.percentile(tracker, 95):.2f}, pointmap frames p95 {np.percentile(depth, 95):.2f}; camera rotation "
            f"{max(r['rotation_deg'] for r in rows):.3f} deg, translation {max(r['translation_pct'] for r in rows):.2f} % "
            f"({len(wall)} frames, one OpenCV thread)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--paths", nargs="+", default=list(CAMERA_PATHS), choices=CAMERA_PATHS)
    parser.add_argument("--max-features", type=int, default=None, help="CameraTracker's (default: its own)")
    parser.add_argument("--window", type=int, default=None, help="CameraTracker's Lucas-Kanade window (px)")
    parser.add_argument("--levels", type=int, default=None, help="CameraTracker's Lucas-Kanade pyramid levels")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another egomotion.py (git show REV:realtime/rig/egomotion.py > old.py): its tracker runs on "
                             "the same frames, alternating with this one, so both meet the same machine load")
    parser.add_argument("--repeat", type=int, default=1,
                        help="passes over each scene per tracker; the pass with the lowest CPU median counts")
    args = parser.parse_args()
    cv2.setNumThreads(1)  # the cost on one core
    options = {k: v for k, v in (("max_features", args.max_features), ("window", args.window), ("levels", args.levels))
               if v is not None}
    trackers = {"egomotion": lambda: CameraTracker(**options)}
    if args.baseline is not None:
        if not args.baseline.is_file():
            print(f"--baseline {args.baseline} is not a file; write one with git show REV:realtime/rig/egomotion.py > old.py.",
                  file=sys.stderr)
            sys.exit(2)
        old = load_tracker(args.baseline)
        trackers["baseline"] = lambda: old(**options)
    rows: dict[str, list[dict]] = {label: [] for label in trackers}
    print(f"{'tracker':9s} {'path':9s} {'seed':>4s} {'rot deg':>8s} {'trans %':>8s} {'p50 ms':>7s} {'p95 ms':>7s} "
          f"{'cpu p50':>8s} {'cpu p95':>8s} {'depth p95':>9s}")
    for path in args.paths:
        for seed in args.seeds:
            frames, truth = render(path, args.frames, seed)
            best: dict[str, dict] = {}
            for _ in range(max(args.repeat, 1)):
                for label, make in trackers.items():  # alternating: a burst of load hits both alike
                    r = measure(frames, truth, make)
                    if label not in best or np.median(r["cpu"]) < np.median(best[label]["cpu"]):
                        best[label] = r
            for label, r in best.items():
                rows[label].append(r)
                print(f"{label:9s} {path:9s} {seed:4d} {r['rotation_deg']:8.3f} {r['translation_pct']:8.2f} "
                      f"{np.median(r['wall']):7.2f} {np.percentile(r['wall'], 95):7.2f} {np.median(r['cpu']):8.2f} "
                      f"{np.percentile(r['cpu'], 95):8.2f} {np.percentile(r['wall'][r['depth']], 95):9.2f}", flush=True)
    for label in reversed(list(trackers)):  # the current tracker's line last
        print(summary(label, rows[label]))


if __name__ == "__main__":
    main()
