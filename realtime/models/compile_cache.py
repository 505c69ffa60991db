"""`torch.compile`'s work kept between launches: the compiled kernels of a run's models, saved under the user's cache
folder after the first launch's warm-up and loaded before the next one's.

    path = artifacts_path(default_folder(), settings)   # one file per GPU, torch, models and settings
    loaded = load(path)          # before compiling: False on a first launch (or an unreadable file, logged)
    ...                          # compile: from the loaded kernels, dynamo's tracing is all that is left
    save(path)                   # after the warm-up of a first launch (atomic; an unwritable folder is logged)

The artifacts are torch.compiler's portable cache (`save_cache_artifacts` / `load_cache_artifacts`: inductor's
compiled graphs, AOTAutograd's, the Triton kernels), independent of inductor's own folder in /tmp, which a reboot
empties. A file that does not load (another torch, a cut-short write before this module's atomic ones) is
ignored and replaced.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Optional

import torch

log = logging.getLogger(__name__)


def compiles_here() -> bool:
    """Whether torch.compile can make GPU kernels here: a CUDA build of torch with Triton (inductor's GPU code; CUDA
    builds of torch on Linux bring it)."""
    import importlib.util

    return torch.version.cuda is not None and importlib.util.find_spec("triton") is not None


def default_folder() -> Path:
    """$XDG_CACHE_HOME/sapiens-realtime/compile, else ~/.cache/sapiens-realtime/compile."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sapiens-realtime" / "compile"


def artifacts_path(folder: Path, settings: dict) -> Path:
    """The file of these settings (what makes the compiled graphs differ): torch, the GPU, the models, sizes, options.
    Values are turned to text; the name is a hash of them, with a readable head."""
    everything = {"torch": torch.__version__, "cuda": torch.version.cuda, **settings}
    text = json.dumps(everything, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return Path(folder) / f"torch-{torch.__version__.split('+')[0]}-{digest}.bin"


def load(path: Path) -> bool:
    """Load the compiled kernels saved at `path` into torch.compile's caches; False when there are none (a first
    launch) or they do not load (logged, and the file is then replaced by `save`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError as error:
        log.warning("could not read the compile cache %s (%s); compiling from scratch", path, error.strerror or error)
        return False
    try:
        return torch.compiler.load_cache_artifacts(data) is not None
    except Exception as error:  # another torch's format, a damaged file: compile, then replace it
        log.warning("the compile cache %s did not load (%s: %s); compiling from scratch and replacing it", path,
                    type(error).__name__, str(error).strip().splitlines()[0][:120] if str(error).strip() else "")
        return False


def save(path: Path) -> Optional[Path]:
    """Write what torch.compile made in this process to `path`, atomically (a temporary file renamed over: a reader,
    a crash or Ctrl+C mid-write sees the old file or the new one whole). None when there was nothing to save or the
    folder cannot be written (logged: the run goes on, the next launch compiles again)."""
    artifacts = torch.compiler.save_cache_artifacts()
    if not artifacts or not artifacts[0]:
        return None
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(artifacts[0])
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as error:
        log.warning("could not save the compile cache in %s (%s); the next launch compiles again", path.parent,
                    error.strerror or error)
        return None
    return path
