"""What the crash-safe overlay video costs: the VideoWriter (a fragment flushed every
second, no encoder look-ahead) against the settings it replaced (x264's look-ahead, a
fragment per keyframe, written out through the muxer's 32 KB buffer).

Encodes the same synthetic overlay-like frames (a moving figure on a textured
background) both ways in one run and prints the encode time and file size of each, their
ratios, and the most frames that were encoded but not yet on disk at any moment (what a
hard kill would lose).

    python bench/video_writer.py [--frames 600] [--size 720x1280] [--fps 30]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from realtime.sinks.video import TIME_BASE, VideoWriter


def frames(n: int, h: int, w: int):
    rng = np.random.default_rng(0)
    background = (rng.integers(0, 60, (h, w, 3)) + np.linspace(0, 120, w)[None, :, None]).astype(np.uint8)
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(n):
        image = background.copy()
        cx, cy = w * (0.2 + 0.6 * (i % 200) / 200), h * 0.5 + h * 0.1 * np.sin(i / 10)
        figure = ((xx - cx) / (0.08 * w)) ** 2 + ((yy - cy) / (0.3 * h)) ** 2 < 1
        image[figure] = (200, 80, 40)
        yield i / 30.0, image


def old_writer(path: Path, fps: float, items, *, watch: bool = False) -> tuple[float, int]:
    """The settings before: fragments at x264's own keyframes, no explicit flushing. With
    `watch`, the file is decoded after every frame to count what a kill would lose (slow)."""
    at_risk = 0
    start = time.perf_counter()
    with av.open(str(path), "w", format="mp4", options={"movflags": "frag_keyframe+empty_moov+default_base_moof"}) as out:
        stream = None
        for i, (t, image) in enumerate(items):
            if stream is None:
                stream = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
                stream.height, stream.width = image.shape[:2]
                stream.pix_fmt, stream.time_base = "yuv420p", TIME_BASE
                stream.codec_context.time_base = TIME_BASE
                stream.options = {"crf": "20", "preset": "veryfast", "bf": "0"}
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = int(round(t / TIME_BASE)), TIME_BASE
            for packet in stream.encode(frame):
                out.mux(packet)
            if watch:
                at_risk = max(at_risk, i + 1 - _decodable(path))
        for packet in stream.encode():
            out.mux(packet)
    return time.perf_counter() - start, at_risk


def new_writer(path: Path, fps: float, items) -> tuple[float, int]:
    at_risk = 0
    start = time.perf_counter()
    writer = VideoWriter(path, fps=fps)
    for t, image in items:
        writer.write(image, t)
        at_risk = max(at_risk, writer.frames_written - writer.frames_on_disk)
    writer.close()
    return time.perf_counter() - start, at_risk


def _decodable(path: Path) -> int:
    """Frames a reader gets from the file as it is on disk now (what survives a kill)."""
    try:
        with av.open(str(path)) as container:
            count = 0
            try:
                for _ in container.decode(container.streams.video[0]):
                    count += 1
            except av.error.FFmpegError:
                pass
            return count
    except (av.error.FFmpegError, IndexError):
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--size", default="720x1280", help="HEIGHTxWIDTH")
    parser.add_argument("--fps", type=float, default=30.0)
    args = parser.parse_args()
    h, w = (int(v) for v in args.size.split("x"))
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"{args.frames} frames {h}x{w} at {args.fps:g} fps")
    with tempfile.TemporaryDirectory() as folder:
        old_path, new_path = Path(folder) / "old.mp4", Path(folder) / "new.mp4"
        # Watching the old file (decoding it after every frame) costs time: its encode time
        # comes from a second, unwatched pass.
        _, old_risk = old_writer(old_path, args.fps, frames(min(args.frames, 300), h, w), watch=True)
        old_time, _ = old_writer(old_path, args.fps, frames(args.frames, h, w))
        new_time, new_risk = new_writer(new_path, args.fps, frames(args.frames, h, w))
        old_size, new_size = old_path.stat().st_size, new_path.stat().st_size
    print(f"before: {1000 * old_time / args.frames:.2f} ms/frame, {old_size / 1e6:.2f} MB, "
          f"up to {old_risk} frames not yet on disk (first {min(args.frames, 300)} frames)")
    print(f"now:    {1000 * new_time / args.frames:.2f} ms/frame, {new_size / 1e6:.2f} MB, "
          f"up to {new_risk} frames not yet on disk")
    print(f"ratios now/before: time {new_time / old_time:.2f}x, size {new_size / old_size:.2f}x")


if __name__ == "__main__":
    main()
