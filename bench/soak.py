"""Soak: a long run through every stage, watching memory, threads and file handles.

    python bench/soak.py --frames 10000          # the full soak (about 10-20 min on 2 cores)
    python bench/soak.py --frames 10000 --view   # with the viewer (offscreen unless a display is set)

Source: synthetic frames made in memory (a moving bright person-sized blob),
lossless (every frame goes through every stage). Models: the tiny Sapiens2
pose and seg models of the golden fixtures (official structure, 18 layers)
and the tiny RTMDet of the detector fixtures, detector every 5 frames with
pose-driven boxes in between, identity + One Euro smoothing, rendering, H.264
video and tracks JSONL. A 5-frame run comes first (one-time process state such as
Qt's application object); then resident memory is sampled every half second and,
after a warm-up (the first 10 % of frames), must stay within +-50 MB; Python
threads and open file handles must be back to their numbers before the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from realtime.options import LiveOutputOptions, ModelOptions, OutputOptions  # noqa: E402
from realtime.sources import Source, SourceInfo  # noqa: E402

REFERENCE = Path(os.environ.get("SAPIENS_REFERENCE_DIR") or ROOT / "tests" / "reference")


class SyntheticSource(Source):
    """`frames` frames of a blob moving across a noisy background, 30 fps timestamps."""

    def __init__(self, frames: int, height: int = 240, width: int = 320):
        self.n, self.h, self.w = frames, height, width
        self.progress = 0  # frames handed out so far (read by the memory sampler)

    def open(self) -> SourceInfo:
        self.info = SourceInfo(name="synthetic", uri="synthetic", live=False, width=self.w, height=self.h,
                               fps=30.0, frame_count=self.n)
        return self.info

    def frames(self):
        rng = np.random.default_rng(0)
        background = rng.integers(20, 60, (self.h, self.w, 3), dtype=np.uint8)
        yy, xx = np.mgrid[0:self.h, 0:self.w]
        for i in range(self.n):
            cx = self.w * (0.3 + 0.4 * (0.5 + 0.5 * np.sin(i / 40)))
            blob = ((xx - cx) / (0.1 * self.w)) ** 2 + ((yy - self.h / 2) / (0.35 * self.h)) ** 2 < 1
            image = background.copy()
            image[blob] = (210, 180, 160)
            self.progress = i + 1
            yield i / 30.0, image


def soak(frames: int, *, view: bool = False, out_dir: str | None = None) -> dict:
    """Run the soak and return its figures (also printed by `main`)."""
    import torch

    from realtime.detect import make_box_finder
    from realtime.models import load_model
    from realtime.run import RunOptions, run

    fixtures = REFERENCE / "fixtures"
    models = {task: load_model(task, fixtures / f"{task}_weights.safetensors") for task in ("pose", "seg")}
    finder = make_box_finder("detector", detector_checkpoint=str(REFERENCE / "rtmdet" / "fixtures" / "tiny_w025_checkpoint.pth"),
                             detect_every=5, max_people=3, widen=None)
    process = psutil.Process()
    source = SyntheticSource(frames)
    samples: list[tuple[int, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            samples.append((source.progress, process.memory_info().rss / 2**20))

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(out_dir or tmp)
        options = RunOptions(source="synthetic", models=ModelOptions(device="cpu", input_hw=(256, 192)),
                             outputs=OutputOptions(out=str(folder / "soak.mp4"), tracks=str(folder / "soak.jsonl"),
                                                   progress=sys.stderr.isatty()),
                             live_outputs=LiveOutputOptions(view=view))
        # A 5-frame run first: one-time process state (Qt's application object keeps three
        # eventfds for the life of the process once a window was shown) is not a leak.
        run(options, models=models, box_finder=finder, source=SyntheticSource(5))
        finder.reset()
        threads_before = threading.active_count()
        fds_before = process.num_fds()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.perf_counter()
        summary = run(options, models=models, box_finder=finder, source=source)
        elapsed = time.perf_counter() - start
        done.set()
        sampler.join()
        threads_after = threading.active_count()  # the sampler has ended too
        fds_after = process.num_fds()
    warm = [mb for n, mb in samples if n >= frames // 10]
    return {
        "frames": summary.result.frames_out,
        "exit": summary.result.message,
        "seconds": elapsed,
        "fps": summary.result.frames_out / elapsed,
        "rss_after_warmup_min_mb": min(warm) if warm else float("nan"),
        "rss_after_warmup_max_mb": max(warm) if warm else float("nan"),
        "rss_spread_mb": (max(warm) - min(warm)) if warm else float("nan"),
        "python_threads_before": threads_before,
        "python_threads_after": threads_after,
        "open_fds_before": fds_before,
        "open_fds_after": fds_after,
        "torch_threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--view", action="store_true", help="also run the viewer (offscreen without a display)")
    args = parser.parse_args()
    if args.view and not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    figures = soak(args.frames, view=args.view)
    print(f"soak on the CPU of this machine ({os.cpu_count()} cores), tiny fixture models, all stages"
          f"{' + offscreen viewer' if args.view else ''}:")
    for key, value in figures.items():
        print(f"  {key}: {value:.1f}" if isinstance(value, float) else f"  {key}: {value}")
    flat = figures["rss_spread_mb"] <= 100 and figures["python_threads_after"] == figures["python_threads_before"]
    print("memory flat within +-50 MB after warm-up, threads and file handles back: "
          + ("yes" if flat and figures["open_fds_after"] <= figures["open_fds_before"] else "NO"))


if __name__ == "__main__":
    main()
