"""sapiens-realtime: Sapiens2 pose, segmentation, normals and depth on live video.

    from realtime import Session
    with Session(tasks=("pose", "depth")) as session:
        frame = session.process(image_rgb, timestamp)   # people with ids, keypoints, face, bones

`Session` (one frame at a time), `run` / `RunOptions` (a whole source, as `sapiens-rt run`),
`Builder` (what both build from the options: models, box finder, stages; realtime.build),
the data (`Frame`, `Person`, `Bones`, `DenseMaps`) and the models (`load_model`,
`build_model`, `load_detector`). Names load on first use, so `import realtime` stays light.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Session": "realtime.session",
    "run": "realtime.run",
    "RunOptions": "realtime.options",
    "Builder": "realtime.build",
    "Frame": "realtime.frames",
    "Person": "realtime.frames",
    "Bones": "realtime.frames",
    "DenseMaps": "realtime.frames",
    "load_model": "realtime.models",
    "build_model": "realtime.models",
    "load_detector": "realtime.models",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'realtime' has no attribute {name!r}")
