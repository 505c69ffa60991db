"""Cost of the tracks JSONL on the pipeline's hot path, and of reading / exporting.

Prints the time of `TrackWriter.write` per frame (1 and 4 persons, 308
keypoints, with and without 3D), of `read_tracks`, and of each exporter, on
synthetic keypoints. Run: python bench/bench_export.py [--frames 300]
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
from realtime.frames import Frame, Person
from realtime.sinks.tracks import TrackWriter


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    args = parser.parse_args()
    names = keypoint_names()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for persons, with_3d in ((1, False), (1, True), (4, False), (4, True)):
            frames = make_frames(args.frames, persons, with_3d)
            path = folder / f"p{persons}_{int(with_3d)}.jsonl"
            with TrackWriter(path, keypoint_names=names, image_wh=(1920, 1080), fps=30, source="bench", model={}) as writer:
                start = time.perf_counter()
                for frame in frames:
                    writer.write(frame)
                per_frame = (time.perf_counter() - start) / len(frames)
            size = path.stat().st_size / len(frames) / 1024
            print(f"write  {persons} person(s), 3D={with_3d!s:5}: {per_frame * 1e3:6.3f} ms/frame, {size:6.1f} KiB/frame")
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
