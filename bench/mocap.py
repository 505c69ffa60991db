"""Skeleton solver: accuracy on the synthetic humanoid, and the cost of the live VMC / OSC sinks.

Accuracy: `tests/mocap_synthetic.py`'s 300-frame turning, bending person -> keypoints with
Gaussian noise (per coordinate) and random dropouts -> `solve` -> forward kinematics; joint
error against the truth (all bones, held ones included) and the largest frame-to-frame roll
of any bone (a flip would be ~180 degrees; the true motion's largest is printed too).
Cost: per frame, on this CPU, against the 33.3 ms budget of a 30 fps camera.
Run: python bench/mocap.py [--frames 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.export.to_bvh import write_bvh  # noqa: E402
from realtime.export.to_gltf import write_gltf  # noqa: E402
from realtime.frames import Frame, Person  # noqa: E402
from realtime.rig.solver import LiveSolver, forward_kinematics, solve  # noqa: E402
from tests.live_chain import osc, vmc  # noqa: E402
from tests.mocap_synthetic import NAMES, synthetic_clip  # noqa: E402

BUDGET_MS = 1000.0 / 30


def roll_steps(globals_: np.ndarray, bones) -> np.ndarray:
    p0 = np.array([b.rest_primary for b in bones])
    s0 = np.array([b.rest_secondary for b in bones])
    p = np.einsum("tbij,bj->tbi", globals_, p0)[1:]
    s = np.einsum("tbij,bj->tbi", globals_, s0)
    before = s[:-1] - np.sum(s[:-1] * p, axis=-1, keepdims=True) * p
    before /= np.linalg.norm(before, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.sum(before * s[1:], axis=-1), -1.0, 1.0)))


def accuracy(frames: int) -> None:
    skeleton, root, rotations, heads, camera = synthetic_clip(frames)
    _, true_globals = forward_kinematics(skeleton, root, rotations)
    print(f"true motion: largest roll step {roll_steps(true_globals, skeleton.bones).max():.1f} deg")
    print("| noise mm | dropped | fingers | median error mm | p95 error mm | held bones | largest roll step deg |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for noise, dropped in ((0, 0.0), (2, 0.0), (5, 0.0), (5, 0.05), (10, 0.05)):
        for fingers in (False, True):
            points = camera + rng.normal(0.0, noise / 1000, camera.shape)
            points[rng.random(camera.shape[:2]) < dropped] = np.nan
            motion = solve(points, NAMES, fingers=fingers)
            solved, globals_ = forward_kinematics(motion.skeleton, motion.root_position + motion.origin, motion.rotations)
            index = [skeleton.names.index(n) for n in motion.skeleton.names]
            error = np.linalg.norm(solved - heads[:, index], axis=-1) * 1000
            print(f"| {noise} | {dropped:.0%} | {'yes' if fingers else 'no'} | {np.median(error):.1f} | "
                  f"{np.percentile(error, 95):.1f} | {motion.held.mean():.1%} | "
                  f"{roll_steps(globals_, motion.skeleton.bones).max():.0f} |")


def cost(frames: int) -> None:
    _, _, _, _, camera = synthetic_clip(frames)
    image = np.zeros((2, 2, 3), np.uint8)
    video = [Frame(index=t, timestamp=t / 30, image=image, people=(Person(
        box=np.array([0, 0, 300, 400], np.float32), track_id=1, keypoints=np.zeros((len(NAMES), 2), np.float32),
        keypoint_scores=np.full(len(NAMES), 0.9, np.float32), keypoints3d=camera[t].astype(np.float32)),)) for t in range(frames)]

    def per_frame(step) -> float:
        start = time.perf_counter()
        for t in range(frames):
            step(t)
        return (time.perf_counter() - start) / frames * 1000

    rows = []
    for fingers in (False, True):
        tag = " + fingers" if fingers else ""
        start = time.perf_counter()
        motion = solve(camera, NAMES, fingers=fingers)
        rows.append((f"offline solve{tag}", (time.perf_counter() - start) / frames * 1000))
        live = LiveSolver(NAMES, fingers=fingers)
        rows.append((f"LiveSolver.update{tag}", per_frame(lambda t, live=live: live.update(camera[t]))))
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            write_bvh(motion, Path(folder) / "a.bvh", 30.0)
            rows.append((f"write BVH{tag}", (time.perf_counter() - start) / frames * 1000))
            start = time.perf_counter()
            write_gltf(motion, Path(folder) / "a.glb", 30.0)
            rows.append((f"write glTF{tag}", (time.perf_counter() - start) / frames * 1000))
    port = 9  # discard: nobody listens, the datagrams are dropped by the kernel
    for name, sink in (("face + motion stages + VMC (one_euro filter)", vmc("127.0.0.1", port, NAMES)),
                       ("face + motion stages + VMC, fingers", vmc("127.0.0.1", port, NAMES, fingers=True)),
                       ("face + motion stages + OSC, 1 person", osc("127.0.0.1", port, NAMES))):
        rows.append((name, per_frame(lambda t, sink=sink: sink.write(video[t]))))
        sink.close()
    print(f"\n| step ({frames} frames) | ms per frame | share of a 30 fps frame |")
    print("|---|---:|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} | {ms / BUDGET_MS:.1%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    args = parser.parse_args()
    print(f"CPU: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared machine)")
    accuracy(args.frames)
    cost(args.frames)


if __name__ == "__main__":
    main()
