"""`sapiens-rt batch`: many videos through the single-video pipeline, one worker per GPU.

Each video is one unit of work run by `realtime.run.run()` in a worker that
holds the loaded models (tracking and smoothing need the frames in order, so a
video is never split). Units are handed out longest first to whichever worker is
free. Two engines run the workers: local processes (default, no cluster) or Ray
actors (`--ray`, `realtime.batch.cluster`). Both share the bookkeeping here:
the manifest, retries of units whose worker died, one progress bar, the summary.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from realtime.batch.plan import (
    PARTIAL,
    append_manifest,
    check_writable,
    expected_outputs,
    find_videos,
    is_complete,
    output_names,
    probe_frames,
    read_manifest,
)
from realtime.batch.worker import Unit, unit_record
from realtime.errors import UserError, stop_exit_code
from realtime.export.table import BATCH_FORMATS, FORMATS
from realtime.options import PYTHON, Caller, RunOptions
from realtime.outputs import check_outputs

log = logging.getLogger(__name__)


@dataclass
class BatchOptions:
    inputs: list[str]
    output_dir: str
    run: RunOptions  # per-video options (the `run` groups); source/out/tracks are set per unit
    exports: tuple[str, ...] = ()  # `sapiens-rt export` formats written next to each tracks.jsonl
    workers: Optional[int] = None  # default: one per GPU, else 1 on the CPU
    retries: int = 2  # times a unit is retried after its worker died
    ray: Optional[str] = None  # None: local processes; "" a local Ray; "auto" or "ray://host:10001" a cluster
    ray_timeout: float = 30.0  # seconds to reach the Ray cluster at `ray` before giving up with one sentence
    progress: bool = True


@dataclass
class BatchResult:
    exit_code: int  # 0 every unit done (or already done), 1 some failed, 130 interrupted, 143 terminated
    lines: list[str]  # the summary table
    records: list[dict] = field(default_factory=list)  # this run's finished units, as in the manifest
    skipped: list[str] = field(default_factory=list)  # videos finished by an earlier run


def run_batch(options: BatchOptions, *, caller: Caller = PYTHON) -> BatchResult:
    """Process every video of `options.inputs` into `output_dir/<name>/`; resumable. `caller`: how
    errors name the options (`realtime.options.CLI` from the command line)."""
    for fmt in options.exports:
        if fmt not in BATCH_FORMATS:
            hint = " (it needs one --person, so run `sapiens-rt export` per video)" if fmt in FORMATS else ""
            raise UserError(f"--export {fmt} is not available in a batch{hint}; choose from {', '.join(BATCH_FORMATS)}.")
    if options.retries < 0:
        raise UserError(f"--retries must be 0 or more, not {options.retries}.")
    if options.workers is not None and options.workers < 1:
        raise UserError(f"--workers must be at least 1, not {options.workers}.")
    options = replace(options, run=check_run_options(options, caller))  # as `run` checks them, before any folder or worker
    output_dir = Path(options.output_dir)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"Cannot create the output folder {output_dir} ({err.strerror}); choose a writable "
                        "--output-dir.") from None
    check_writable(output_dir)  # before any worker starts: one sentence, not a traceback per worker

    book = Book(output_dir, options)
    if book.has_pending():
        if options.ray is not None:
            from realtime.batch.cluster import RayEngine

            engine = RayEngine(options, len(book.pending))
        else:
            from realtime.batch.local import LocalEngine

            engine = LocalEngine(options, len(book.pending))
        if options.progress:
            book.show_progress()  # after the engine is up: an error there is one line, not a half-drawn bar
        try:
            engine.run(book)
        except KeyboardInterrupt as err:
            book.stopped_by = stop_exit_code(err)
        finally:
            book.close()
    return book.result()


def check_run_options(options: BatchOptions, caller: Caller = PYTHON) -> RunOptions:
    """`run`'s own option checks (`realtime.build.check_options`), here once for every video: a batch
    refuses what `run` refuses, with the same sentence and exit 2, before any worker starts. On Ray
    the workers' machines have the GPUs, so the device options are theirs to check. Returns the
    per-video options as checked (canonical tasks), the device as given."""
    from realtime.build import check_options

    run = options.run
    if options.ray is not None:
        run = run.change(models={"device": "cpu", "dtype": None, "fp8": False, "cuda_graphs": False})
    checked = check_options(run, caller)
    given = options.run.models
    if options.ray is not None:
        return checked.change(models={"device": given.device, "dtype": given.dtype, "fp8": given.fp8,
                                      "cuda_graphs": given.cuda_graphs})
    return checked.change(models={"device": given.device}) if given.device is None else checked  # None: every local GPU


class Book:
    """The batch's bookkeeping: pending units, the manifest, progress, per-worker totals."""

    def __init__(self, output_dir: Path, options: BatchOptions):
        self.output_dir = output_dir
        self.retries = options.retries
        self.started = time.monotonic()
        self.records: list[dict] = []
        self.skipped: list[str] = []
        self.stopped_by: Optional[int] = None  # 130 Ctrl+C, 143 SIGTERM
        self.pending: deque[Unit] = deque()
        self.done_frames: dict[str, int] = {}
        self.bar = None  # the progress bar, once `show_progress` made it

        videos = find_videos(options.inputs, output_dir)
        names = output_names(videos)
        # a unit folder (and its working folder) is replaced whole: it may hold no input (realtime.outputs)
        check_outputs({}, videos, folders={f"the unit folder {name} of --output-dir,": output_dir / name
                                           for video in videos for name in (names[video], names[video] + PARTIAL)})
        done = read_manifest(output_dir)
        expected = expected_outputs(options.run.outputs.no_video, options.exports)
        units = []
        for video in videos:
            name = names[video]
            if is_complete(done.get(str(video)), output_dir / name, expected):
                self.skipped.append(str(video))
                continue
            unit = Unit(str(video), name, 0)
            try:
                frames = probe_frames(video, options.run.input.webcam_fps)
                max_frames = options.run.input.max_frames
                if max_frames is not None:  # the bar's total is what the workers will read
                    frames = min(frames, max_frames) if frames else max_frames
                units.append(replace(unit, frames=frames))
            except UserError as err:  # unreadable: fails here, without a worker, and the summary says why
                self._record(unit_record(unit, "failed", error=str(err), worker="probe"))
        units.sort(key=lambda u: -u.frames)  # longest first: the last video to start is a short one
        self.pending.extend(units)

    def show_progress(self) -> None:
        """One bar for the whole batch: frames read of all queued videos, with the ETA."""
        from tqdm import tqdm

        self.bar = tqdm(total=sum(u.frames for u in self.pending), unit="frame", desc="batch", dynamic_ncols=True)
        self._postfix()

    def has_pending(self) -> bool:
        return bool(self.pending)

    def next_unit(self) -> Optional[Unit]:
        return self.pending.popleft() if self.pending else None

    def progress(self, name: str, frames: int) -> None:
        """Frames read so far by the worker running unit `name`."""
        delta = frames - self.done_frames.get(name, 0)
        self.done_frames[name] = frames
        if self.bar is not None and delta:
            self.bar.update(delta)

    def finished(self, unit: Unit, record: dict) -> None:
        if record["status"] == "interrupted":
            return  # not finished: redone by the next run
        self.progress(unit.name, record["frames"])
        if self.bar is not None and record["frames"] != unit.frames:  # the container's count was an estimate
            self.bar.total += record["frames"] - unit.frames
        self._record(record)

    def worker_died(self, unit: Unit, reason: str) -> None:
        """Retry the unit (first in line) unless it has used up its retries."""
        self.progress(unit.name, 0)
        if unit.attempt <= self.retries:
            log.warning("%s; retrying %s (attempt %d of %d)", reason, unit.video, unit.attempt + 1, self.retries + 1)
            self.pending.appendleft(replace(unit, attempt=unit.attempt + 1))
        else:
            tries = f"{unit.attempt} attempt{'s' if unit.attempt > 1 else ''}"
            self._record(unit_record(unit, "failed", error=f"{reason}, on every one of {tries}; try this video alone with "
                                     "`sapiens-rt run`.",
                                     worker="-"))

    def _record(self, record: dict) -> None:
        append_manifest(self.output_dir, record)
        self.records.append(record)
        self._postfix()

    def _postfix(self) -> None:
        if self.bar is not None:
            failed = sum(r["status"] == "failed" for r in self.records)
            self.bar.set_postfix_str(f"{len(self.records) - failed} done, {failed} failed, {len(self.pending)} queued")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def result(self) -> BatchResult:
        failed = [r for r in self.records if r["status"] == "failed"]
        done = [r for r in self.records if r["status"] == "done"]
        exit_code = self.stopped_by or (1 if failed else 0)
        return BatchResult(exit_code, summary_lines(done, failed, self.skipped, time.monotonic() - self.started,
                                                    self.output_dir, self.stopped_by is not None), self.records, self.skipped)


def summary_lines(done: list[dict], failed: list[dict], skipped: list[str], wall: float, output_dir: Path,
                  interrupted: bool) -> list[str]:
    """The table printed at the end: totals, then videos / frames / fps per worker, then failures."""
    frames = sum(r["frames"] for r in done)
    head = "interrupted" if interrupted else "batch finished"
    lines = [f"{head}: {len(done)} done, {len(failed)} failed, {len(skipped)} already done; "
             f"{frames} frames in {wall:.1f} s ({frames / wall if wall > 0 else 0:.2f} frames/s, "
             f"{len(done) * 3600 / wall if wall > 0 else 0:.1f} videos/hour)"]
    workers: dict[str, list[dict]] = {}
    for r in done:
        workers.setdefault(r["worker"], []).append(r)
    if workers:
        lines.append(f"{'worker':<16} {'videos':>6} {'frames':>8} {'busy s':>8} {'fps':>7}")
        for worker, rs in sorted(workers.items()):
            n, busy = sum(r["frames"] for r in rs), sum(r["seconds"] for r in rs)
            lines.append(f"{worker:<16} {len(rs):>6} {n:>8} {busy:>8.1f} {n / busy if busy > 0 else 0:>7.2f}")
    for r in failed:
        lines.append(f"failed: {r['video']}: {r['error']}")
    lines.append(f"manifest: {output_dir / 'batch.jsonl'}")
    return lines
