"""Cost of the tracks JSONL on the pipeline's hot path, and of reading / exporting.

Prints the time of `TrackWriter.write` per frame (1 and 4 persons, 308
keypoints, with and without 3D, and 2 persons with every field a run writes:
3D, face, bones, contacts, height, the camera), of `read_tracks`, and of each
exporter, on synthetic keypoints. Writes are timed in the thread's CPU time, the
best of `--repeat` passes (a shared machine's load does not count). Run:
python bench/bench_export.py [--frames 300] [--repeat 5]; to compare with
another revision, run this file with PYTHONPATH pointing at that checkout.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from realtime.data import keypoint_names
from realtime.export.formats import export_tracks
from realtime.export.jsonl import read_tracks
from realtime.frames import Frame, Person, rounded_bones, rounded_camera
from realtime.sinks.tracks import TrackWriter

FACE_NAMES = 27  # realtime.expressions.ARKIT_NAMES


def make_frames(count: int, persons: int, with_3d: bool) -> list[Frame]:
    rng = np.random.default_rng(0)
    image = np.zeros((2, 2, 3), np.uint8)
    frames = []
    for index in range(count):
        people = tuple(
            Person(
                box=np.array([10, 20, 300, 400], np.float32), box_score=0.9, track_id=p,
                keypoints=rng.uniform(0, 1920, (308, 2)).astype(np.float32),
                keypoint_scores=rng.uniform(0, 1, 308).astype(np.float32),
                keypoints3d=rng.uniform(-2, 4, (308, 3)).astype(np.float32) if with_3d else None,
            )
            for p in range(persons)
        )
        frames.append(Frame(index=index, timestamp=index / 30, image=image, people=people))
    return frames


def full_frames(count: int, bone_names: list[str]) -> list[Frame]:
    """Two people with every field a run with pose and depth writes, and the world camera."""
    rng = np.random.default_rng(1)
    image = np.zeros((2, 2, 3), np.uint8)
    bones = len(bone_names)
    frames = []
    for index in range(count):
        people = []
        for p in range(2):
            points = rng.uniform(0, 1920, (308, 2)).astype(np.float32)
            points[::17] = np.nan  # no peak: written null
            rotations = rng.normal(size=(bones, 4))
            people.append(Person(
                box=np.array([10, 20, 300, 400], np.float32), box_score=0.9, track_id=p, keypoints=points,
                keypoint_scores=rng.uniform(0, 1, 308).astype(np.float32), keypoints_smoothed=points,
                predicted=rng.uniform(0, 1, 308) < 0.1, keypoints3d=rng.uniform(-2, 4, (308, 3)).astype(np.float32),
                face=rng.uniform(0, 1, FACE_NAMES).astype(np.float32), lips_open=0.25,
                head_rotation=np.array([0, 0, 0, 1], np.float32), contacts=np.array([True, False]),
                bones=rounded_bones(bone_names, rng.normal(size=(bones, 3)), rng.normal(size=3),
                                    rotations / np.linalg.norm(rotations, axis=1, keepdims=True), np.zeros(bones, bool), False),
                height=(1.75, 0.8)))
        camera = rounded_camera(np.eye(4), np.array([1000.0, 1000.0, 959.5, 539.5]), "tracking", True, True, 1.01)
        frames.append(Frame(index=index, timestamp=index / 30, image=image, people=tuple(people), camera=camera,
                            floor_up=np.array([0.0, -1.0, 0.0])))
    return frames


def time_writes(path: Path, frames: list[Frame], repeat: int, **header) -> float:
    """Seconds of thread CPU time per frame, the best of `repeat` passes."""
    best = float("inf")
    for _ in range(repeat):
        with TrackWriter(path, image_wh=(1920, 1080), fps=30, source="bench", model={}, **header) as writer:
            start = time.thread_time()
            for frame in frames:
                writer.write(frame)
            best = min(best, (time.thread_time() - start) / len(frames))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5, help="passes per case; the best is reported (default 5)")
    args = parser.parse_args()
    names = keypoint_names()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for persons, with_3d in ((1, False), (1, True), (4, False), (4, True)):
            frames = make_frames(args.frames, persons, with_3d)
            path = folder / f"p{persons}_{int(with_3d)}.jsonl"
            per_frame = time_writes(path, frames, args.repeat, keypoint_names=names)
            size = path.stat().st_size / len(frames) / 1024
            print(f"write  {persons} person(s), 3D={with_3d!s:5}: {per_frame * 1e3:6.3f} ms/frame, {size:6.1f} KiB/frame")
        from realtime.rig.bones import bone_table

        bone_names = [b.name for b in bone_table(False)]
        path = folder / "full.jsonl"
        per_frame = time_writes(path, full_frames(args.frames, bone_names), args.repeat, keypoint_names=names, tracked=True,
                                bone_names=bone_names)
        size = path.stat().st_size / args.frames / 1024
        print(f"write  2 person(s), every field: {per_frame * 1e3:6.3f} ms/frame, {size:6.1f} KiB/frame")
        path = folder / "p1_1.jsonl"
        start = time.perf_counter()
        read_tracks(path)
        print(f"read_tracks  {args.frames} frames, 1 person with 3D: {(time.perf_counter() - start) * 1e3:7.1f} ms")
        for fmt in ("csv", "npz", "openpose", "coco", "trc", "c3d"):
            start = time.perf_counter()
            export_tracks(path, fmt, folder / f"out_{fmt}")
            print(f"export {fmt:9} {args.frames} frames, 1 person: {(time.perf_counter() - start) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
