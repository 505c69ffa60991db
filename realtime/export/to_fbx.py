"""FBX export: the solved motion as a skinned skeleton, converted by a headless Blender.

Why Blender: FBX is a closed format with no maintained open writer on PyPI; Autodesk's
SDK is not redistributable and `bpy` wheels are large and tied to one Python version.
Blender's own FBX exporter is what most Unity / Unreal / Maya users already rely on, is
free on every OS (`apt-get install blender`, blender.org) and its files are read by all
of them. So we write the BVH (`to_bvh.py`, exact to 1e-6 degree), and
`blender_fbx.py` imports it in Blender, adds a simple skinned mesh and exports:

- binary FBX 7.4 (Blender's exporter), one armature `sapiens_person` with the bones
  named as the rig's (`--rig`), plus a mesh `sapiens_body` (a box along each bone,
  fully weighted to it) so importers make a skinned character, not bare nodes;
- the rest pose (T-pose, or the rig's A-pose) is the bind pose; one take, every frame
  keyed (no curve simplification), at the tracks' frame rate;
- units: METRES (UnitScaleFactor 100, i.e. 1 file unit = 1 m, which Unity, Unreal and
  Maya convert to their own units on import); axes: Y up, the character facing +Z,
  +X its left, as in our BVH / glTF;
- with a moving camera (`--root world`): a perspective camera node `camera` keyed every
  frame on the camera's path in the world (`realtime.export.world.camera_on_grid`), its
  field of view and the video's size as the render size, so the shot can be re-filmed.
  The path goes to Blender as JSON in Blender's axes (Z up: (x, -z, y)); Blender's exporter
  turns it back to Y up and, as FBX cameras look down +X, turns the node by 90 degrees
  about Y (the position is untouched).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.errors import UserError
from realtime.export.to_bvh import write_bvh
from realtime.rig.solver import Motion

log = logging.getLogger(__name__)

SCRIPT = Path(__file__).resolve().parent.parent / "blender_scripts" / "blender_fbx.py"  # runs inside Blender
INSTALL = "apt-get install blender (Debian/Ubuntu) or https://www.blender.org/download/"
SENSOR_MM = 36.0  # the film's width (Blender's default); its height follows the video's aspect
Y_UP_TO_BLENDER = Rotation.from_euler("x", 90, degrees=True)  # (x, y, z) Y up -> (x, -z, y) Z up, as the BVH import


def check_blender() -> str:
    """The `blender` executable, or one sentence saying how to install it."""
    blender = shutil.which("blender")
    if blender is None:
        raise UserError(f"FBX export runs Blender as its converter and `blender` is not on PATH; install it ({INSTALL}) and "
                        "export again.")
    return blender


def blender_env(blender: str) -> dict[str, str]:
    """The environment to run `blender` in: its own folder first on PATH. Debian's Blender uses the
    first `python3` on PATH; behind pyenv / a virtualenv that is not the system Python with the
    python3-numpy that Blender's glTF add-on needs."""
    folder = str(Path(blender).resolve().parent)
    return {**os.environ, "PATH": os.pathsep.join([folder, os.environ.get("PATH", "")])}


def blender_camera(camera: dict, fps: float) -> dict:
    """`camera_on_grid`'s path (glTF camera convention, Y up) as the Blender script keys it: a frame
    per sample, location and rotation (w, x, y, z) in Blender's Z-up axes, the lens and film (mm)
    giving its vertical field of view, and the render size."""
    width, height = camera["image_wh"]
    sensor = (SENSOR_MM, SENSOR_MM / camera["aspect"])  # the film has the picture's shape
    rotation = (Y_UP_TO_BLENDER * Rotation.from_quat(camera["rotation"])).as_quat()  # x, y, z, w
    return {"frames": np.round(np.asarray(camera["times"]) * fps).astype(int).tolist(),
            "location": Y_UP_TO_BLENDER.apply(np.asarray(camera["translation"], np.float64)).tolist(),
            "quaternion": rotation[:, [3, 0, 1, 2]].tolist(),
            "lens": sensor[1] / (2 * np.tan(camera["yfov"] / 2)), "sensor": sensor, "resolution": [width, height]}


def write_fbx(motion: Motion, path: str | Path, fps: float, camera: Optional[dict] = None) -> Path:
    """camera: the camera path (`realtime.export.world.camera_on_grid`), written as an animated camera
    node "camera" (see the module's docstring); None: the skeleton only."""
    path = Path(path)
    blender = check_blender()
    with tempfile.TemporaryDirectory(prefix="sapiens-fbx-") as folder:
        bvh = write_bvh(motion, Path(folder) / "motion.bvh", fps)
        command = [blender, "-b", "--factory-startup", "--python-exit-code", "1", "--python", str(SCRIPT),
                   "--", str(bvh), str(path.resolve()), repr(float(fps))]
        if camera is not None:
            spec = Path(folder) / "camera.json"
            spec.write_text(json.dumps(blender_camera(camera, fps)), encoding="utf-8")
            command.append(str(spec))
        result = subprocess.run(command, capture_output=True, text=True, env=blender_env(blender))
    if result.returncode != 0 or not path.is_file():
        lines = [line for line in (result.stderr + result.stdout).splitlines() if line.strip()]
        raise UserError(f"Blender could not write the FBX file ({lines[-1] if lines else 'no output'}); "
                        f"check that `blender -b --python-expr pass` runs on this machine, then export again.")
    log.info("wrote %s: %d bones, %d frames at %.3f fps%s", path, len(motion.skeleton.bones), len(motion.times), fps,
             ", the camera's path" if camera is not None else "")
    return path
