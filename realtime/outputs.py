"""Output files of a command: never an input, never each other, one writer at a time.

The one rule every subcommand follows (`run`, `batch`, `export`, `smooth`, `stream`,
`export-model`): before anything is written, every file the command will write, sidecars
included, is resolved (symlinks, `..`, hard links) and compared with every input and with
each other by `check_outputs`; a collision is one `UserError` sentence (exit 2). Outputs
that are folders (an OpenPose export, a batch's unit folder) collide with any input inside
them. `remove_stale` deletes the sidecars an earlier export of the same name wrote that
this one no longer writes. `OutputLocks` takes an exclusive `flock` on every output for
the whole run, so a second run writing the same file is refused instead of interleaving
into a corrupt one; the lock goes away with the process, whatever ends it. Files the
locks had to create are removed again if the run leaves them empty.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path
from typing import Iterable, Mapping, Union

from realtime.errors import UserError

log = logging.getLogger(__name__)

OPTION = {"video": "--out", "tracks": "--tracks"}  # output kind -> the option that names it
PathLike = Union[str, os.PathLike]


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether two paths name one file: the same resolved path (symlinks, `..`), or the same
    inode (hard links; only when both exist)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def inside(path: PathLike, folder: PathLike) -> bool:
    """Whether `path` is `folder` or lies anywhere under it, once both are resolved."""
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return real == top or top in real.parents


def check_outputs(outputs: Mapping[str, PathLike], inputs: Iterable[PathLike], *,
                  folders: Mapping[str, PathLike] | None = None) -> None:
    """Refuse, with one sentence, an output that would overwrite an input or another output.

    outputs: what names each file -> the file (`"video"`/`"tracks"` print as `--out`/`--tracks`;
             any other key is printed as it is, e.g. `"-o"` or `"the curves sidecar of -o walk.bvh"`).
    folders: what names each output folder -> the folder; an input inside it collides.
    """
    inputs = [str(source) for source in inputs]
    outputs = {kind: str(path) for kind, path in outputs.items()}
    for kind, path in outputs.items():
        for source in inputs:
            if same_file(path, source):
                raise UserError(f"{OPTION.get(kind, kind)} {path} is the input {source} itself and would overwrite it; "
                                f"choose another output path.")
    for kind, folder in (folders or {}).items():
        for source in inputs:
            if inside(source, folder):
                raise UserError(f"{OPTION.get(kind, kind)} {folder} holds the input {source}, which writing it could "
                                f"overwrite or remove; choose another output path.")
    kinds = list(outputs)
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            if same_file(outputs[a], outputs[b]):
                raise UserError(f"{OPTION.get(a, a)} and {OPTION.get(b, b)} name the same file {outputs[a]}; "
                                f"give each output its own name.")


def check_writable(out: PathLike, *, option: str = "-o") -> None:
    """One sentence naming the folder and the system's reason when nothing can be written
    beside `out` (a read-only folder, a parent that cannot be made): checked before the
    work, so no converter (Blender for FBX, the ONNX exporter) is blamed for it later."""
    folder = Path(out).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".sapiens-rt-write-test-{os.getpid()}"
        with open(probe, "wb"):
            pass
        probe.unlink()
    except OSError as err:
        raise UserError(f"Cannot write {out}: the folder {folder} is not writable ({err.strerror or err}); "
                        f"choose another {option} path.") from None


def remove_stale(paths: Iterable[PathLike], why: str) -> list[Path]:
    """Remove the files of `paths` that exist (sidecars an earlier export of the same name wrote
    and this one does not): they would describe a file that is no longer there. Logs one line."""
    removed = []
    for path in map(Path, paths):
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(path)
    if removed:
        log.warning("removed %s (%s)", ", ".join(str(p) for p in removed), why)
    return removed


class OutputLocks:
    """Exclusive locks on output files, held until `release()` (or the process ends)."""

    def __init__(self) -> None:
        self._held: list[tuple[int, Path, bool]] = []  # (fd, path, created by us)

    def acquire(self, outputs: Mapping[str, str]) -> "OutputLocks":
        try:
            for kind, path in outputs.items():
                self._lock(kind, Path(path))
        except BaseException:
            self.release(remove_empty=True)
            raise
        return self

    def _lock(self, kind: str, path: Path) -> None:
        existed = path.exists()
        try:
            # no O_TRUNC: a file another run is writing must stay untouched
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
        except OSError as err:
            raise UserError(f"Cannot open {path} for writing ({err.strerror}); choose a writable output path.") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UserError(f"{OPTION.get(kind, kind)} {path} is being written by another sapiens-rt run; "
                            f"wait for it to finish or choose another output path.") from None
        self._held.append((fd, path, not existed))

    def release(self, *, remove_empty: bool = True) -> None:
        """Unlock; files the locks created that are still empty are removed (nothing half-made)."""
        held, self._held = self._held, []
        for fd, path, created in reversed(held):
            try:
                if remove_empty and created and os.fstat(fd).st_size == 0 and path.is_file():
                    path.unlink()
            except OSError:
                pass
            os.close(fd)

    def __enter__(self) -> "OutputLocks":
        return self

    def __exit__(self, *exc) -> None:
        self.release()
