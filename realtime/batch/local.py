"""The default batch engine: one worker process per local GPU (or `--workers` on the CPU).

The parent hands each worker one unit at a time through the worker's own inbox,
so it always knows which unit a worker holds: when a worker process dies, a new
one takes its place and the unit goes back to the front of the queue. Workers are
started with "spawn" (CUDA cannot be used in a forked child).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
from dataclasses import dataclass
from typing import Optional

from realtime.batch.worker import Unit
from realtime.errors import UserError

log = logging.getLogger(__name__)

STARTUP_DEATHS = 3  # a worker slot whose process keeps dying while loading the models is a setup problem


def local_devices(device: Optional[str], workers: Optional[int]) -> list[str]:
    """One device per worker: every GPU (or the one named by --device cuda:N), else the CPU."""
    import torch

    if device is not None and device.startswith("cuda:"):
        gpus = [device]
    elif device in (None, "cuda") and torch.cuda.is_available():
        gpus = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    elif device == "cuda":
        raise UserError("--device cuda was asked for but PyTorch sees no CUDA GPU; install a CUDA build of torch or use --device "
                        "cpu.")
    else:
        gpus = []
    if not gpus:
        return ["cpu"] * (workers or 1)
    return [gpus[i % len(gpus)] for i in range(workers or len(gpus))]  # more workers than GPUs share them


@dataclass
class _Slot:
    name: str
    device: str
    process: Optional[mp.Process] = None
    inbox: Optional[mp.Queue] = None
    ready: bool = False
    unit: Optional[Unit] = None
    stopping: bool = False
    startup_deaths: int = 0


class LocalEngine:
    def __init__(self, options, units: int):
        self.options = options
        devices = local_devices(options.run.models.device, options.workers)[:units]  # no idle workers
        cpu_workers = devices.count("cpu")
        # CPU workers split the cores rather than each taking all of them
        self.threads = max(1, (os.cpu_count() or 1) // cpu_workers) if cpu_workers else None
        self.slots = [_Slot(f"{d}#{i}" if devices.count(d) > 1 else d, d) for i, d in enumerate(devices)]
        self.ctx = mp.get_context("spawn")
        self.outbox = self.ctx.Queue()

    def run(self, book) -> None:
        try:
            for slot in self.slots:
                self._start(slot)
            while book.has_pending() or any(s.unit is not None for s in self.slots):
                try:
                    self._handle(self.outbox.get(timeout=0.2), book)
                except queue.Empty:
                    pass
                self._check_dead(book)
        finally:
            self._stop_all()

    def _start(self, slot: _Slot) -> None:
        slot.inbox = self.ctx.Queue()
        slot.ready, slot.unit, slot.stopping = False, None, False
        slot.process = self.ctx.Process(
            target=worker_main, name=f"sapiens-rt batch {slot.name}", daemon=True,
            args=(slot.name, slot.device, self.options.run, self.options.output_dir, self.options.exports,
                  self.threads if slot.device == "cpu" else None, slot.inbox, self.outbox))
        slot.process.start()

    def _slot(self, name: str) -> _Slot:
        return next(s for s in self.slots if s.name == name)

    def _handle(self, message: tuple, book) -> None:
        kind, name, *rest = message
        slot = self._slot(name)
        if kind == "fatal":
            raise UserError(rest[0])
        if kind == "progress":
            book.progress(*rest)
            return
        if kind == "done":
            book.finished(slot.unit, rest[0])
            slot.unit = None
        else:  # "ready": the models are loaded
            slot.ready, slot.startup_deaths = True, 0
        self._assign(slot, book)

    def _assign(self, slot: _Slot, book) -> None:
        unit = book.next_unit()
        if unit is None:
            slot.inbox.put(None)
            slot.stopping = True
        else:
            slot.unit = unit
            slot.inbox.put(unit)

    def _check_dead(self, book) -> None:
        for slot in self.slots:
            if slot.process.is_alive() or slot.stopping:
                continue
            self._drain(book)  # anything it said before dying counts
            code = slot.process.exitcode
            if slot.unit is not None:
                book.worker_died(slot.unit, f"the worker on {slot.device} died (exit code {code}) while processing "
                                 f"{slot.unit.video}")
                slot.unit = None
            elif not slot.ready:
                slot.startup_deaths += 1
                if slot.startup_deaths >= STARTUP_DEATHS:
                    raise UserError(f"The worker on {slot.device} died (exit code {code}) while loading the models, "
                                    f"{STARTUP_DEATHS} times; run `sapiens-rt run` on one video with the same options to see "
                                    "why.")
            if book.has_pending():
                log.warning("worker %s died (exit code %s); starting a new one", slot.name, code)
                self._start(slot)
            else:
                slot.stopping = True

    def _drain(self, book) -> None:
        while True:
            try:
                self._handle(self.outbox.get_nowait(), book)
            except queue.Empty:
                return

    def _stop_all(self) -> None:
        for slot in self.slots:
            if slot.process is not None and slot.process.is_alive():
                if not slot.stopping:
                    slot.inbox.put(None)
                if slot.unit is not None or not slot.ready:
                    slot.process.terminate()  # a run inside stops cleanly on SIGTERM; loading models just ends
        for slot in self.slots:
            if slot.process is not None:
                slot.process.join(timeout=30)
                if slot.process.is_alive():
                    slot.process.kill()
                    slot.process.join()


def worker_main(name: str, device: str, run_options, output_dir: str, exports: tuple[str, ...],
                threads: Optional[int], inbox: mp.Queue, outbox: mp.Queue) -> None:
    """A worker process: load the models, then process units from `inbox` until None."""
    import torch

    from realtime.batch.worker import UnitRunner

    if threads:
        torch.set_num_threads(threads)
    try:
        try:
            runner = UnitRunner(run_options, output_dir, exports, device, name)
        except UserError as err:
            outbox.put(("fatal", name, str(err)))
            return
        outbox.put(("ready", name))
        while (unit := _next_unit(inbox)) is not None:
            def report(frames: int, unit_name: str = unit.name) -> None:
                outbox.put(("progress", name, unit_name, frames))

            outbox.put(("done", name, runner.process(unit, report)))
    except KeyboardInterrupt:  # Ctrl+C reaches the whole process group; the parent reports it
        pass


def _next_unit(inbox: mp.Queue) -> Optional[Unit]:
    """The next unit, or None when told to stop or when the parent process is gone
    (killed hard: nobody would ever tell this worker to stop)."""
    while True:
        try:
            return inbox.get(timeout=1.0)
        except queue.Empty:
            if not mp.parent_process().is_alive():
                return None
