"""Blender export: runs `blender_import.py` in a headless Blender to write a .blend scene."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from realtime.errors import UserError

log = logging.getLogger(__name__)

SCRIPT = Path(__file__).resolve().parent.parent / "blender_scripts" / "blender_import.py"  # runs inside Blender


def blender_command(tracks_path: Path, out: Path, *, person: Optional[int], subset: Optional[str],
                    blender: str = "blender") -> list[str]:
    """The command line that builds the scene (also printed for users who run Blender elsewhere)."""
    command = [blender, "-b", "--factory-startup", "--python-exit-code", "1", "--python", str(SCRIPT),
               "--", str(tracks_path), "--out", str(out)]
    if person is not None:
        command += ["--person", str(person)]
    if subset is not None:
        command += ["--subset", subset]
    return command


def check_blender_scene(tracks_path: str | Path, out: str | Path, *, person: Optional[int] = None,
                        subset: Optional[str] = None) -> str:
    """The `blender` executable, or one sentence with the install line and the command to run elsewhere."""
    blender = shutil.which("blender")
    if blender is None:
        command = blender_command(Path(tracks_path), Path(out), person=person, subset=subset)
        raise UserError("Blender is not installed or not on PATH; install it (apt-get install blender) or run: "
                        f"{' '.join(command)}.")
    return blender


def write_blend(tracks_path: str | Path, out: str | Path, *, person: Optional[int] = None, subset: Optional[str] = None) -> Path:
    """Build `out` (.blend) from a tracks JSONL with a headless Blender; returns the path written."""
    tracks_path, out = Path(tracks_path), Path(out)
    blender = check_blender_scene(tracks_path, out, person=person, subset=subset)
    command = blender_command(tracks_path, out, person=person, subset=subset, blender=blender)
    from realtime.export.to_fbx import blender_env

    result = subprocess.run(command, capture_output=True, text=True, env=blender_env(blender))
    if result.returncode != 0 or not out.is_file():
        last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise UserError(f"Blender failed to build {out} ({last[0]}); run the command yourself to see why: {' '.join(command)}.")
    log.info("wrote %s", out)
    return out
