"""Synthetic media made inside the tests: videos with known content, audio, timestamps."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Optional, Sequence

import av
import numpy as np


def write_video(path: Path, frames: Sequence[np.ndarray], *, times: Optional[Sequence[float]] = None, fps: float = 25.0,
                audio_seconds: float = 0.0, codec: str = "libx264", pix_fmt: str = "yuv420p") -> Path:
    """Encode RGB frames at `times` (seconds; default i / fps), optionally with a 440 Hz AAC tone."""
    times = [i / fps for i in range(len(frames))] if times is None else list(times)
    tb = Fraction(1, 90000)
    with av.open(str(path), "w") as out:
        v = out.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
        v.height, v.width = frames[0].shape[:2]
        v.pix_fmt = pix_fmt
        v.time_base = tb
        v.codec_context.time_base = tb
        a = None
        if audio_seconds > 0:
            a = out.add_stream("aac", rate=44100)
            a.layout = "mono"
        for img, t in zip(frames, times):
            f = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
            f.pts, f.time_base = int(round(t / tb)), tb
            for p in v.encode(f):
                out.mux(p)
        for p in v.encode():
            out.mux(p)
        if a is not None:
            n = int(audio_seconds * 44100)
            tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(n) / 44100)).astype(np.float32)
            for start in range(0, n, 1024):
                chunk = tone[None, start:start + 1024]
                af = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="mono")
                af.sample_rate, af.pts, af.time_base = 44100, start, Fraction(1, 44100)
                for p in a.encode(af):
                    out.mux(p)
            for p in a.encode():
                out.mux(p)
    return path


def read_video(path: Path) -> tuple[list[np.ndarray], list[float], bool]:
    """All frames (RGB), their times in seconds, and whether an audio stream is present."""
    with av.open(str(path)) as c:
        has_audio = bool(c.streams.audio)
        frames, times = [], []
        for f in c.decode(c.streams.video[0]):
            frames.append(f.to_ndarray(format="rgb24"))
            times.append(float(f.time))
    return frames, times, has_audio


def gaussian_marker(h: int, w: int, cx: float, cy: float, sigma: float, background: int = 20) -> np.ndarray:
    """A grey image with one bright Gaussian blob centred at (cx, cy) (sub-pixel)."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * sigma ** 2))
    img = background + (255 - background) * blob
    return np.repeat(img[:, :, None], 3, axis=2).round().astype(np.uint8)


def numbered_frames(n: int, h: int = 48, w: int = 64) -> list[np.ndarray]:
    """Frames whose mean brightness encodes their index (robust to lossy coding)."""
    return [np.full((h, w, 3), 10 + (i * 7) % 230, np.uint8) for i in range(n)]
