"""Writing an export output so that a failure leaves nothing behind.

`staged(out, write, folder=...)` checks the output path first (one sentence if
it is a folder where a file belongs, or the other way round), lets `write`
fill a hidden temporary next to `out`, and moves it into place only when
`write` returned: an unwritable path, a full disk or any error leaves neither
a half-written output nor a `.partial` file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

from realtime.errors import UserError
from realtime.outputs import check_writable


def check_output(out: Path, *, folder: bool = False, option: str = "-o") -> None:
    """One sentence when `out` cannot be the output: a folder for a file, a file for a folder."""
    if not folder and out.is_dir():
        raise UserError(f"{option} {out} is a folder; give a file name such as "
                        f"{out / ('output' + out.suffix if out.suffix else 'output')}.")
    if folder and out.exists() and not out.is_dir():
        raise UserError(f"{option} {out} is a file, but this format writes a folder of files; give a folder name.")


def staged(out: Path, write: Callable[[Path], object], *, folder: bool = False, option: str = "-o") -> Path:
    """Run `write(temporary)` and move the temporary to `out`; clean up on any failure."""
    out = Path(out)
    check_output(out, folder=folder, option=option)
    check_writable(out, option=option)
    temporary = out.with_name(f".{out.stem}.partial{out.suffix}")  # same suffix: some writers check it
    try:
        write(temporary)
        if folder:
            out.mkdir(exist_ok=True)
            for item in temporary.iterdir():
                os.replace(item, out / item.name)
            temporary.rmdir()
        else:
            os.replace(temporary, out)
    except OSError as err:
        raise UserError(f"Cannot write {out} in the folder {out.parent} ({err.strerror or err}); "
                        f"choose a writable {option} path.") from None
    finally:
        _remove(temporary)
    return out


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    except OSError:
        pass
