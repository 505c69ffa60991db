"""One batch worker: loads the models once, then runs whole videos through `run()`.

The same `UnitRunner` serves both engines (a local process per GPU, or a Ray
actor per GPU). A unit's outputs go to `DIR/<name>.partial/` and the folder is
renamed to `DIR/<name>/` only when the run and its exports are complete, so a
crash never leaves a folder that looks finished.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np

from realtime.errors import UserError
from realtime.options import RunOptions
from realtime.sources import Source, SourceInfo, open_source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unit:
    """One video (or image folder) to process.

    name:     output folder name under the batch's output dir (the stem, made unique).
    frames:   expected frame count (for balancing and progress; 0 when unknown).
    attempt:  1 for the first try, 2.. after the worker running it died.
    """

    video: str
    name: str
    frames: int
    attempt: int = 1


def unit_record(unit: Unit, status: str, *, frames: int = 0, seconds: float = 0.0, error: Optional[str] = None,
                worker: str = "") -> dict:
    """A manifest line: what `DIR/batch.jsonl` keeps per finished (or failed) unit."""
    return {"video": unit.video, "name": unit.name, "status": status, "frames": frames, "seconds": round(seconds, 3),
            "error": error, "worker": worker, "attempt": unit.attempt}


class UnitRunner:
    """Holds the loaded models of one worker (on `device`) and processes units with them."""

    def __init__(self, options: RunOptions, output_dir: str, exports: tuple[str, ...], device: str, worker: str):
        from realtime.build import Builder
        from realtime.mode import RunMode

        self.options = options.change(models={"device": device}, live_outputs={"view": False}, outputs={"progress": False})
        self.output_dir = Path(output_dir)
        self.exports = exports
        self.worker = worker
        self.builder = Builder(self.options)  # the batch checked the options as the caller wrote them
        self.models = self.builder.load_models()
        # The detector is loaded once; each video gets a fresh box finder (it keeps per-video state).
        self._detector = self.builder.box_finder(RunMode.FILE).detector

    def _box_finder(self):
        from realtime.mode import RunMode

        return self.builder.box_finder(RunMode.FILE, detector=self._detector)

    def process(self, unit: Unit, report: Callable[[int], None]) -> dict:
        """Run one unit to completion; never raises for a problem with the video itself."""
        from realtime.run import run

        started = time.monotonic()
        partial = self.output_dir / f"{unit.name}.partial"
        final = self.output_dir / unit.name
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        video = None if self.options.outputs.no_video else str(partial / "overlay.mp4")
        options = self.options.change(source=unit.video, outputs={"tracks": str(partial / "tracks.jsonl"), "out": video})
        source: Optional[CountingSource] = None

        def failed(reason: str) -> dict:
            return unit_record(unit, "failed", frames=source.count if source else 0, seconds=time.monotonic() - started,
                               error=reason, worker=self.worker)

        try:
            source = CountingSource(open_source(unit.video, fps=options.input.webcam_fps), report)
            summary = run(options, models=self.models, box_finder=self._box_finder(), source=source)
            if summary.result.reason == "interrupted":  # Ctrl+C: not finished, not failed
                return unit_record(unit, "interrupted", worker=self.worker)
            if summary.result.exit_code != 0:
                return failed(summary.result.message)
            self._export(partial / "tracks.jsonl")
        except UserError as err:
            return failed(str(err))
        except Exception as err:  # a bug or a device error: this unit fails, the batch goes on
            log.exception("unit %s failed", unit.video)
            return failed(f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}")
        report(source.count)
        if final.exists():  # an earlier, incomplete or outdated result
            shutil.rmtree(final)
        os.replace(partial, final)
        return unit_record(unit, "done", frames=summary.result.frames_out, seconds=time.monotonic() - started,
                           worker=self.worker)

    def _export(self, tracks: Path) -> None:
        from realtime.export.formats import export_tracks

        for fmt in self.exports:
            export_tracks(tracks, fmt)


class CountingSource(Source):
    """Wraps a source to report how many frames were read (at most every `interval` s)."""

    def __init__(self, inner: Source, report: Callable[[int], None], *, interval: float = 0.5):
        self.inner, self.report, self.interval = inner, report, interval
        self.count = 0

    def open(self) -> SourceInfo:
        self.info = self.inner.open()
        return self.info

    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        last = time.monotonic()
        for item in self.inner.frames():
            self.count += 1
            if time.monotonic() - last >= self.interval:
                self.report(self.count)
                last = time.monotonic()
            yield item

    @property
    def ended_early(self) -> Optional[str]:
        return self.inner.ended_early

    def close(self) -> None:
        self.inner.close()
