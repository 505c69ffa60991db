"""Output files of a run: never an input, never each other, one writer at a time.

`check_outputs` refuses outputs that are the same file as an input or as each
other (also through symlinks, `..` or hard links). `OutputLocks` takes an
exclusive `flock` on every output for the whole run, so a second run writing
the same file is refused instead of interleaving into a corrupt one; the lock
goes away with the process, whatever ends it. Files the locks had to create
are removed again if the run leaves them empty.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Iterable, Mapping

from realtime.errors import UserError

OPTION = {"video": "--out", "tracks": "--tracks"}  # output kind -> the option that names it


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)  # hard links
    except OSError:  # one of them does not exist yet
        return False


def check_outputs(outputs: Mapping[str, str], inputs: Iterable[str]) -> None:
    """Refuse, with one sentence, an output that would overwrite an input or another output."""
    inputs = list(inputs)
    for kind, path in outputs.items():
        for source in inputs:
            if _same_file(path, source):
                raise UserError(f"{OPTION.get(kind, kind)} {path} is the input {source} itself and would overwrite it; "
                                f"choose another output path.")
    kinds = list(outputs)
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            if _same_file(outputs[a], outputs[b]):
                raise UserError(f"{OPTION.get(a, a)} and {OPTION.get(b, b)} name the same file {outputs[a]}; "
                                f"give each output its own name.")


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
