"""Offline file formats: read a tracks file, write the formats other tools open.

    read_tracks                 the project's own tracks JSONL (jsonl.py; written live by
                                `realtime.sinks.tracks.TrackWriter`)
    export_tracks               CSV, NPZ, OpenPose JSON, COCO JSON, TRC, C3D, Blender, BVH, glTF (formats.py)
    smooth_tracks_file          offline smoothing of a tracks file (smoothing.py)

Bone rotations for BVH/glTF come from the rig solver, `realtime.rig.solver`.
"""

from realtime.export.formats import FORMATS, export_tracks
from realtime.export.jsonl import read_tracks
from realtime.export.smoothing import smooth_tracks, smooth_tracks_file
from realtime.export.tracks import PersonTrack, Tracks

__all__ = [
    "FORMATS", "PersonTrack", "Tracks",
    "export_tracks", "read_tracks", "smooth_tracks", "smooth_tracks_file",
]
