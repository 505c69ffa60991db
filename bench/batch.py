"""`sapiens-rt batch` throughput with 1 and 2 CPU workers, measured in one run.

    python bench/batch.py                          # 8 videos of 40-75 frames, local workers
    python bench/batch.py --engine ray             # the same on a local Ray (needs the cluster extra)

Makes synthetic videos (a moving bright 'person' on a textured background, lengths
varying so the longest-first balancing matters), then runs the same batch twice into
fresh folders: once with 1 worker, once with 2. The models are the tiny Sapiens2 pose
and seg of the golden fixtures (the official structure at fixture size: FIXTURE-SIZE
weights, much cheaper per frame than 0.4B, so start-up and I/O weigh more than they
would with real models). Wall time includes starting the workers and loading the models.
Prints videos/hour and frames/s for each, and the 2-worker / 1-worker ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pipeline import synthetic_video  # noqa: E402
from realtime.batch import BatchOptions, run_batch  # noqa: E402
from realtime.options import ModelOptions, PeopleOptions  # noqa: E402
from realtime.run import RunOptions  # noqa: E402


def fixtures_dir() -> Path:
    reference = Path(os.environ.get("SAPIENS_REFERENCE_DIR") or ROOT / "tests" / "reference")
    return reference / "fixtures"


def one_batch(videos: Path, out: Path, workers: int, engine: str, input_hw: tuple[int, int]) -> tuple[float, int, int, list[str]]:
    fixtures = fixtures_dir()
    checkpoints = {t: str(fixtures / f"{t}_weights.safetensors") for t in ("pose", "seg")}
    run = RunOptions(source="",
                     models=ModelOptions(tasks=("pose", "seg"), device="cpu", input_hw=input_hw, checkpoints=checkpoints),
                     people=PeopleOptions(boxes_from="frame"))
    options = BatchOptions(inputs=[str(videos)], output_dir=str(out), run=run, workers=workers, progress=False,
                           ray="" if engine == "ray" else None)
    start = time.perf_counter()
    result = run_batch(options)
    wall = time.perf_counter() - start
    assert result.exit_code == 0, result.lines
    done = [r for r in result.records if r["status"] == "done"]
    return wall, len(done), sum(r["frames"] for r in done), result.lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=8)
    parser.add_argument("--min-frames", type=int, default=40)
    parser.add_argument("--max-frames", type=int, default=75)
    parser.add_argument("--size", default="192x256", help="video HEIGHTxWIDTH")
    parser.add_argument("--input-size", default="256x192", help="network input HEIGHTxWIDTH")
    parser.add_argument("--engine", choices=["local", "ray"], default="local")
    args = parser.parse_args()
    height, width = (int(v) for v in args.size.split("x"))
    input_hw = tuple(int(v) for v in args.input_size.split("x"))

    print(f"device: CPU, {os.cpu_count()} cores ({torch.get_num_threads()} torch threads in this process); "
          f"engine: {args.engine}; models: fixture-size Sapiens2 pose + seg (golden-fixture weights), input {args.input_size}")
    with tempfile.TemporaryDirectory() as tmp:
        videos = Path(tmp) / "videos"
        videos.mkdir()
        step = (args.max_frames - args.min_frames) / max(args.videos - 1, 1)
        lengths = [round(args.min_frames + i * step) for i in range(args.videos)]
        for i, n in enumerate(lengths):
            synthetic_video(videos / f"clip{i:02d}.mp4", n, height, width)
        print(f"videos: {args.videos} of {height}x{width}, {min(lengths)}-{max(lengths)} frames, {sum(lengths)} frames in all")
        rates = {}
        for workers in (1, 2):
            wall, n, frames, lines = one_batch(videos, Path(tmp) / f"out{workers}", workers, args.engine, input_hw)
            rates[workers] = frames / wall
            print(f"\n{workers} worker{'s' if workers > 1 else ''}: {n} videos, {frames} frames in {wall:.1f} s: "
                  f"{n * 3600 / wall:.1f} videos/hour, {frames / wall:.2f} frames/s")
            print("\n".join("  " + line for line in lines[1:-1]))
        print(f"\nscaling 2 workers / 1 worker: {rates[2] / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
