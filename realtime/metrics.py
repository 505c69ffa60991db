"""Run metrics: per-stage latency percentiles, input and processed rates,
dropped frames, end-to-end latency and GPU memory. Thread-safe; memory is
bounded (a ring of recent samples per stage), so hour-long runs stay flat."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Optional

import numpy as np

WINDOW = 512  # recent samples kept per series for percentiles and rates


class Metrics:
    def __init__(self, window: int = WINDOW):
        self._lock = threading.Lock()
        self._stage: dict[str, deque] = defaultdict(lambda: deque(maxlen=window))
        self._latency: deque = deque(maxlen=window)
        self._read_times: deque = deque(maxlen=window)
        self._out_times: deque = deque(maxlen=window)
        self.frames_in = 0
        self.frames_out = 0
        self.dropped = 0
        self.started = time.perf_counter()
        self.finished: Optional[float] = None

    def frame_read(self) -> None:
        with self._lock:
            self.frames_in += 1
            self._read_times.append(time.perf_counter())

    def frame_dropped(self, count: int = 1) -> None:
        with self._lock:
            self.dropped += count

    def stage_time(self, stage: str, seconds: float) -> None:
        with self._lock:
            self._stage[stage].append(seconds)

    def frame_done(self, read_at: float) -> None:
        now = time.perf_counter()
        with self._lock:
            self.frames_out += 1
            self._out_times.append(now)
            if read_at:
                self._latency.append(now - read_at)

    def stop_clock(self) -> None:
        self.finished = time.perf_counter()

    def snapshot(self) -> dict[str, float]:
        """Current numbers: rates over the recent window, latencies in ms (p50/p95)."""
        with self._lock:
            out = {
                "fps": _rate(self._out_times),
                "input_fps": _rate(self._read_times),
                "frames_in": float(self.frames_in),
                "frames_out": float(self.frames_out),
                "dropped": float(self.dropped),
            }
            if self._latency:
                out["latency_ms"], out["latency_p95_ms"] = _p50_p95(self._latency)
            for name, samples in self._stage.items():
                out[f"stage.{name}_ms"], out[f"stage.{name}_p95_ms"] = _p50_p95(samples)
        peak = gpu_memory_peak_mb()
        if peak is not None:
            out["gpu_peak_mb"] = peak
        return out

    def summary(self) -> list[str]:
        """A few lines for the end of a run."""
        snap = self.snapshot()
        elapsed = (self.finished or time.perf_counter()) - self.started
        lines = [
            f"frames: {self.frames_in} read, {self.frames_out} processed, {self.dropped} dropped in {elapsed:.1f} s "
            f"({self.frames_out / elapsed if elapsed > 0 else 0:.2f} fps overall)",
        ]
        if "latency_ms" in snap:
            lines.append(f"latency read->output: p50 {snap['latency_ms']:.1f} ms, p95 {snap['latency_p95_ms']:.1f} ms")
        stages = [k[len("stage."):-len("_ms")] for k in snap if k.startswith("stage.") and not k.endswith("_p95_ms")]
        if stages:
            lines.append("per stage (p50 / p95 ms): " + ", ".join(
                f"{s} {snap[f'stage.{s}_ms']:.1f}/{snap[f'stage.{s}_p95_ms']:.1f}" for s in stages))
            slowest = max(stages, key=lambda s: snap[f"stage.{s}_ms"])
            lines.append(f"slowest stage: {slowest}")
        if "gpu_peak_mb" in snap:
            lines.append(f"GPU memory peak: {snap['gpu_peak_mb']:.0f} MB")
        return lines


def _rate(times: deque) -> float:
    if len(times) < 2 or times[-1] <= times[0]:
        return 0.0
    return (len(times) - 1) / (times[-1] - times[0])


def _p50_p95(samples) -> tuple[float, float]:
    arr = np.fromiter(samples, dtype=np.float64) * 1000.0
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def gpu_memory_peak_mb() -> Optional[float]:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return torch.cuda.max_memory_allocated() / 2**20
