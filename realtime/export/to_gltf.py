"""glTF export (.glb binary, or .gltf JSON with the buffer embedded) and VRM Animation (.vrma): the solved skeleton as a node
hierarchy with one animation.

One node per bone (named as the bone: VRM humanoid names, or a rig's from
`realtime.rig.retarget`), under a top node `sapiens_person`; the nodes hold the rest
pose (`translation` = the bone's rest offset, hips at the rest hip height, no rotation).
The animation `motion` has a rotation channel per bone and a translation channel for
the root, LINEAR samplers over the clip's times (s, from 0). Units and axes are glTF's
own: metres, Y up, the character facing +Z, +X its left (camera x, -y, -z). No mesh or
skin: importers show the nodes as empties / bones that a character can be constrained
or retargeted to. `animations[0].extras.sapiens` holds the held marks
(`realtime.export.mocap.held_marks`).

VRM Animation (`vrm_animation=True`): the same glTF plus the `VRMC_vrm_animation` 1.0
extension mapping each VRM humanoid bone to its node (the rest pose is the T-pose
facing +Z that the extension asks for). Both pass the Khronos glTF-Validator with no
errors and no warnings (tests/test_motion_clients.py).
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Optional

import numpy as np
import pygltflib as gl

from realtime.errors import UserError
from realtime.export.mocap import held_marks
from realtime.rig.solver import Motion

log = logging.getLogger(__name__)

ROOT_NODE = "sapiens_person"
ANIMATION = "motion"


class _Blob:
    """The binary buffer, one bufferView + accessor per array."""

    def __init__(self, gltf: gl.GLTF2):
        self.gltf = gltf
        self.data = bytearray()

    def add(self, array: np.ndarray, kind: str, *, with_bounds: bool = False) -> int:
        with np.errstate(over="ignore"):
            array = np.ascontiguousarray(array, dtype=np.float32)
        if not np.isfinite(array).all():  # nothing non-finite in a file, also not a finite float64 beyond float32
            raise UserError("glTF holds 32-bit floats (up to 3.4e38), and the solved motion or the camera path has numbers "
                            "beyond that or not numbers at all; pass the tracks a sapiens-rt run wrote.")
        while len(self.data) % 4:
            self.data.append(0)
        self.gltf.bufferViews.append(gl.BufferView(buffer=0, byteOffset=len(self.data), byteLength=array.nbytes))
        self.data += array.tobytes()
        accessor = gl.Accessor(bufferView=len(self.gltf.bufferViews) - 1, componentType=gl.FLOAT, count=len(array), type=kind)
        if with_bounds:  # required for animation inputs
            accessor.min = np.atleast_1d(array.min(axis=0)).astype(float).tolist()
            accessor.max = np.atleast_1d(array.max(axis=0)).astype(float).tolist()
        self.gltf.accessors.append(accessor)
        return len(self.gltf.accessors) - 1


VRMA_EXTENSION = "VRMC_vrm_animation"


def write_gltf(motion: Motion, path: str | Path, fps: float, *, vrm_animation: bool = False,
               camera: Optional[dict] = None) -> Path:
    """camera: the camera path (`realtime.export.world.camera_on_grid`), written as a node "camera"
    with a perspective camera and its translation / rotation animation on the motion's times."""
    path = Path(path)
    skeleton = motion.skeleton
    parents = skeleton.parents
    gltf = gl.GLTF2(asset=gl.Asset(generator="sapiens-realtime", version="2.0"))
    # node 0: the top node; bone b is node b + 1
    gltf.nodes.append(gl.Node(name=ROOT_NODE, children=[]))
    for b, bone in enumerate(skeleton.bones):
        translation = (0.0, skeleton.floor_height(), 0.0) if parents[b] < 0 else skeleton.offsets[b]
        gltf.nodes.append(gl.Node(name=bone.name, translation=[float(v) for v in translation]))
        parent = gltf.nodes[0] if parents[b] < 0 else gltf.nodes[parents[b] + 1]
        parent.children = (parent.children or []) + [b + 1]
    gltf.scenes.append(gl.Scene(name="sapiens", nodes=[0]))
    gltf.scene = 0

    blob = _Blob(gltf)
    times = blob.add(motion.times - motion.times[0], gl.SCALAR, with_bounds=True)
    animation = gl.Animation(name=ANIMATION, samplers=[], channels=[])

    def channel(node: int, target: str, values: np.ndarray, kind: str) -> None:
        animation.samplers.append(gl.AnimationSampler(input=times, output=blob.add(values, kind), interpolation=gl.ANIM_LINEAR))
        animation.channels.append(gl.AnimationChannel(sampler=len(animation.samplers) - 1,
                                                      target=gl.AnimationChannelTarget(node=node, path=target)))

    channel(1, gl.TRANSLATION, motion.root_position, gl.VEC3)
    for b in range(len(skeleton.bones)):
        channel(b + 1, gl.ROTATION, motion.rotations[:, b], gl.VEC4)
    if camera is not None:
        gltf.cameras.append(gl.Camera(type="perspective", name="camera", perspective=gl.Perspective(
            yfov=camera["yfov"], aspectRatio=camera["aspect"], znear=0.01)))
        gltf.nodes.append(gl.Node(name="camera", camera=0, translation=[float(v) for v in camera["translation"][0]],
                                  rotation=[float(v) for v in camera["rotation"][0]]))
        gltf.scenes[0].nodes.append(len(gltf.nodes) - 1)
        channel(len(gltf.nodes) - 1, gl.TRANSLATION, camera["translation"], gl.VEC3)
        channel(len(gltf.nodes) - 1, gl.ROTATION, camera["rotation"], gl.VEC4)
    animation.extras = {"sapiens": held_marks(motion, fps)}
    gltf.animations.append(animation)
    if vrm_animation:
        bones = {bone.name: b + 1 for b, bone in enumerate(skeleton.bones)}
        gltf.extensionsUsed = [VRMA_EXTENSION]
        gltf.extensions = {VRMA_EXTENSION: {"specVersion": "1.0",
                                            "humanoid": {"humanBones": {name: {"node": node} for name, node in bones.items()}}}}
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gltf":  # the JSON form, its buffer embedded (one file, as importers expect of .gltf)
        uri = "data:application/octet-stream;base64," + base64.b64encode(bytes(blob.data)).decode("ascii")
        gltf.buffers.append(gl.Buffer(byteLength=len(blob.data), uri=uri))
        path.write_text(gltf.to_json(separators=(",", ":")), encoding="utf-8")
    else:  # .glb / .vrma: the binary container
        gltf.buffers.append(gl.Buffer(byteLength=len(blob.data)))
        gltf.set_binary_blob(bytes(blob.data))
        gltf.save_binary(str(path))
    log.info("wrote %s: %d nodes, %d frames", path, len(gltf.nodes), len(motion.times))
    return path
