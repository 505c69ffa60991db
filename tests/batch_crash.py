"""Test-only: batch workers that die mid-video, as after a segfault or an OOM kill.

`install(monkeypatch)` swaps the worker entry points of both engines (the local
process target `realtime.batch.local.worker_main` and the Ray actor class
`realtime.batch.cluster.UnitActor`) for the ones below. They run in the worker
process (spawned, or a Ray worker; both import this module from tests/), wrap
`UnitRunner.process` there, and end the process with `os._exit(CRASH_EXIT_CODE)` when
the first attempt at unit `CRASH_UNIT` reads frame `CRASH_FRAME`. The retry gets a
healthy source. Nothing of this ships in the product.
"""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np

from realtime.batch import cluster, local, worker
from realtime.sources import Source, SourceInfo

CRASH_UNIT, CRASH_FRAME, CRASH_EXIT_CODE = "a", 3, 17
_real_worker_main = local.worker_main


class DyingSource(Source):
    """Passes the frames of `inner` through and ends the process on reading frame `at`."""

    def __init__(self, inner: Source, at: int):
        self.inner, self.at = inner, at

    def open(self) -> SourceInfo:
        self.info = self.inner.open()
        return self.info

    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        for index, item in enumerate(self.inner.frames()):
            if index == self.at:
                os._exit(CRASH_EXIT_CODE)
            yield item

    @property
    def ended_early(self):
        return self.inner.ended_early

    def close(self) -> None:
        self.inner.close()


def _arm_this_process() -> None:
    """In a worker process: the first attempt at `CRASH_UNIT` gets a dying source."""
    process = worker.UnitRunner.process
    if getattr(process, "armed", False):
        return
    real_open = worker.open_source

    def crashing_process(self, unit, report):
        if unit.name == CRASH_UNIT and unit.attempt == 1:
            worker.open_source = lambda *args, **kwargs: DyingSource(real_open(*args, **kwargs), CRASH_FRAME)
        return process(self, unit, report)

    crashing_process.armed = True
    worker.UnitRunner.process = crashing_process


def crashing_worker_main(*args) -> None:
    """`local.worker_main`, in a process armed to die (the local engine's target)."""
    _arm_this_process()
    _real_worker_main(*args)


class CrashingUnitActor(cluster.UnitActor):
    """`cluster.UnitActor`, in a Ray worker armed to die."""

    def __init__(self, *args, **kwargs):
        _arm_this_process()
        super().__init__(*args, **kwargs)


def install(monkeypatch) -> None:
    """Make the next batch in this test process start workers that die as described above."""
    monkeypatch.setattr(local, "worker_main", crashing_worker_main)
    monkeypatch.setattr(cluster, "UnitActor", CrashingUnitActor)
