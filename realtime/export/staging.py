"""Writing export outputs so that a failure leaves nothing behind.

`staged(out, write, folder=...)` checks the output path first (one sentence if
it is a folder where a file belongs, or the other way round), lets `write`
fill a hidden temporary next to `out`, and moves it into place only when
`write` returned: an unwritable path, a full disk, Ctrl+C or any error leaves
neither a half-written output nor a `.partial` file.

`staged_together(writes, stale=...)` does the same for a file and its sidecars
(`walk.bvh` with `walk.bvh.marks.json`, `walk.camera.csv`, ...): every file is
written to its temporary in order, the main file first, and only when all of
them are written are they moved into place, together with the removal of the
sidecars an earlier export to the same name wrote and this one does not. A
Ctrl+C or SIGTERM while they are moved waits until the set is whole.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from realtime.errors import UserError, signals_held
from realtime.outputs import check_writable, remove_stale

Writer = Callable[[Path], object]


def check_output(out: Path, *, folder: bool = False, option: str = "-o", example: str = "") -> None:
    """One sentence when `out` cannot be the output: a folder for a file, a file for a folder, standard
    output, a pipe or a device (the output is moved into place whole: it would replace the pipe, not
    feed it)."""
    out = Path(out)
    example = example or (f"take{out.suffix}" if out.suffix else "take.jsonl")
    if str(out) == "-" or os.path.abspath(out).startswith("/dev/") or (out.exists() and not out.is_dir()
                                                                                     and not out.is_file()):
        raise UserError(f"{option} {out} is not a file or folder on disk (standard output, a pipe or a device), and this command "
                        f"writes whole files; give a path such as {example}.")
    if not folder and out.is_dir():
        raise UserError(f"{option} {out} is a folder; give a file name such as "
                        f"{out / ('output' + out.suffix if out.suffix else 'output')}.")
    if folder and out.exists() and not out.is_dir():
        raise UserError(f"{option} {out} is a file, but this format writes a folder of files; give a folder name.")


def check_file_name(out, option: str, example: str) -> None:
    """A file's name as given (a str) may not end in a slash: Path() would drop it and write a file named as the folder."""
    if isinstance(out, str) and out.endswith(("/", os.sep)):
        raise UserError(f"{option} {out} ends in {out[-1]}, a folder; give a file name inside it, such as {out}{example}.")


def staged(out: Path, write: Writer, *, folder: bool = False, option: str = "-o") -> Path:
    """Run `write(temporary)` and move the temporary to `out`; clean up on any failure."""
    out = Path(out)
    if not folder:
        staged_together([(out, write)], option=option)
        return out
    check_output(out, folder=True, option=option)
    check_writable(out, option=option)
    temporary = _temporary(out)
    try:
        write(temporary)
        with signals_held(), _as_user_error(out, option):
            out.mkdir(exist_ok=True)
            for item in temporary.iterdir():
                os.replace(item, out / item.name)
    finally:
        _remove(temporary)
    return out


def staged_together(writes: Sequence[tuple[Path, Writer]], *, stale: Mapping[Path, str] | None = None,
                    option: str = "-o") -> list[Path]:
    """Write each (path, write) of `writes` through a temporary, in order, then move them all into place
    and remove the files of `stale` ({path: why}) that exist and are not written now, one log line per
    why (sidecars an earlier export to the same name wrote); returns the paths written.

    Nothing is moved or removed until every `write` has returned: an error or a signal before that
    leaves the folder as it was (no output, no sidecar, no temporary)."""
    writes = [(Path(path), write) for path, write in writes]
    for n, (path, _) in enumerate(writes):
        if n and path.is_dir():  # a sidecar's name: the user named the main file only
            raise UserError(f"{path} is a folder where the export writes a file beside {writes[0][0]}; move the folder away "
                            f"or choose another {option}.")
        check_output(path, option=option)
        check_writable(path, option=option)
    temporaries = [_temporary(path) for path, _ in writes]
    try:
        for (path, write), temporary in zip(writes, temporaries):
            with _as_user_error(path, option):
                write(temporary)
        with signals_held():
            for (path, _), temporary in zip(writes, temporaries):
                with _as_user_error(path, option):
                    os.replace(temporary, path)
            written = {path for path, _ in writes}
            for why in dict.fromkeys((stale or {}).values()):
                remove_stale([path for path, reason in stale.items() if reason == why and path not in written], why)
    finally:
        for temporary in temporaries:
            _remove(temporary)
    return [path for path, _ in writes]


def _temporary(out: Path) -> Path:
    return out.with_name(f".{out.stem}.partial{out.suffix}")  # same suffix: some writers check it


@contextmanager
def _as_user_error(out: Path, option: str) -> Iterator[None]:
    try:
        yield
    except OSError as err:
        raise UserError(f"Cannot write {out} in the folder {out.parent} ({err.strerror or err}); "
                        f"choose a writable {option} path.") from None


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    except OSError:
        pass
