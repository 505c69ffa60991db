"""Offline file formats: read a tracks file, write the formats other tools open.

    read_tracks                 the project's own tracks JSONL (jsonl.py; written live by
                                `realtime.sinks.tracks.TrackWriter`)
    export_tracks               CSV, NPZ, OpenPose JSON, COCO JSON, TRC, C3D, Blender, BVH, glTF,
                                FBX, VRM Animation (formats.py)
    FORMATS                     the format table (table.py): names, default file names, batch use
    smooth_tracks_file          offline smoothing of a tracks file (smoothing.py)

Bone rotations for BVH/glTF/FBX/VRMA come from the rig solver, `realtime.rig.solver`, on the
rig chosen with `realtime.rig.retarget`.
The names above load their module on first use, so importing `realtime.export.table`
(the CLI does, to build its parser) does not import numpy and the writers.
"""

from __future__ import annotations

import importlib

from realtime.export.table import FORMATS

_LAZY = {"export_tracks": "formats", "read_tracks": "jsonl", "smooth_tracks": "smoothing",
         "smooth_tracks_file": "smoothing", "PersonTrack": "tracks", "Tracks": "tracks"}

__all__ = ["FORMATS", "PersonTrack", "Tracks", "export_tracks", "read_tracks", "smooth_tracks", "smooth_tracks_file"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'realtime.export' has no attribute {name!r}")
    return getattr(importlib.import_module(f"realtime.export.{_LAZY[name]}"), name)
