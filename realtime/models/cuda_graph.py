"""CUDA graphs captured on first use and replayed after: the one mechanism behind
`--cuda-graphs`, for the task models (`realtime.infer.Predictor`) and the detector
(`realtime.models.rtmdet.Detector`).

A piece of work is a function of device tensors whose shapes are fixed by a key (task and
person bucket; the detector's frame size). The first call with a key runs the work once
eagerly on the caller's current stream (a side stream, never the default one: lazy
constants, cuDNN's kernel choice and the allocator's growth happen there), then captures it
on that same stream into the memory pool of its `pool` name. Later calls, from any thread,
on that same stream, copy the inputs into the graph's static input buffers, replay, and
clone the static output.

Every capture synchronises the device, so the owners capture every key a run can meet in
their warm-up (`Predictor.warm_up`, `Detector.warm_up`) and then `seal()` the cache: a
capture after that is a stall mid-run, logged as a warning and counted in `late`. If a
capture fails (work that cannot be captured, e.g. a host sync inside it), that key runs
eagerly from then on; its reason is kept in `failed` for the run summary and
bench/gpu_check.py (`report()`).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

import torch

log = logging.getLogger(__name__)

Work = Callable[..., "torch.Tensor | tuple[torch.Tensor, ...]"]  # one output tensor, or a tuple of them

# One capture at a time in the process: a capture begins with a device-wide synchronize and
# empty_cache, which must not fall inside another thread's capture (the detector captures on
# the detect thread, the task models on the infer thread).
_CAPTURING = threading.Lock()


class CapturedGraph:
    """One piece of work captured as a CUDA graph: static input buffers, one capture, and a
    replay per call. The constructor runs the work eagerly once (the warm-up), then captures
    it on the current stream into `pool` (one pool per stream: replays on one stream never
    overlap, so they may share memory)."""

    def __init__(self, work: Work, inputs: tuple[torch.Tensor, ...], pool) -> None:
        self.inputs = tuple(x.clone() for x in inputs)  # the static inputs, holding real values
        work(*self.inputs)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, pool=pool, stream=torch.cuda.current_stream(), capture_error_mode="thread_local"):
            self.output = work(*self.inputs)

    def __call__(self, *inputs: torch.Tensor):
        for static, x in zip(self.inputs, inputs):
            static.copy_(x)
        self.graph.replay()
        if isinstance(self.output, tuple):
            return tuple(out.clone() for out in self.output)
        return self.output.clone()  # the next replay overwrites the static output


class GraphCache:
    """Graphs by key, each captured on its first call (see the module doc); `None` marks a
    key whose capture failed and which runs eagerly (its reason in `failed`). After `seal()`
    (the owner's warm-up is over) a new key is still captured, but counted in `late`."""

    def __init__(self) -> None:
        self.graphs: dict[tuple, Optional[CapturedGraph]] = {}
        self.failed: dict[tuple, str] = {}  # key -> why its capture failed (it runs eagerly)
        self.late: list[tuple] = []  # keys first met after seal(): each capture stalled the run
        self.sealed = False
        self._pools: dict[str, object] = {}  # pool name (one per stream) -> CUDA graph memory pool

    def __len__(self) -> int:
        return len(self.graphs)

    def captured(self) -> list[tuple]:
        """The keys replayed as graphs (not those that fell back to eager)."""
        return [key for key, graph in self.graphs.items() if graph is not None]

    def seal(self) -> None:
        """The warm-up has met every key it knows of: any capture from now on is counted as late."""
        self.sealed = True

    def report(self, what: str) -> list[str]:
        """Warnings for a run summary (none when every key was captured in the warm-up):
        the captures that failed with their reasons, and those made mid-run."""
        lines = [f"{what}: no CUDA graph for {key} (runs eagerly): {reason}" for key, reason in self.failed.items()]
        if self.late:
            lines.append(f"{what}: {len(self.late)} CUDA graph(s) captured mid-run (each stalled the run), "
                         f"for keys the warm-up did not meet: {', '.join(map(str, self.late))}")
        return lines

    def run(self, key: tuple, pool: str, work: Work, *inputs: torch.Tensor) -> torch.Tensor:
        """`work(*inputs)` through the graph of `key`, captured now if this is its first call."""
        if key not in self.graphs:
            if self.sealed:
                self.late.append(key)
                log.warning("capturing a CUDA graph mid-run for %s, which the warm-up did not meet: the run stalls meanwhile",
                            key)
            try:
                with _CAPTURING:
                    self.graphs[key] = CapturedGraph(work, inputs, self._pools.setdefault(pool, torch.cuda.graph_pool_handle()))
                log.info("captured a CUDA graph for %s", key)
            except torch.cuda.OutOfMemoryError:
                raise  # the caller's out-of-memory handling (smaller batches) decides
            except RuntimeError as error:
                self.graphs[key] = None
                self.failed[key] = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                log.warning("could not capture a CUDA graph for %s, running it eagerly: %s", key, error)
        graph = self.graphs[key]
        return work(*inputs) if graph is None else graph(*inputs)
