"""Keypoint tracks: the live JSONL writer/reader and exporters to the formats other tools open.

    TrackWriter / read_tracks   the project's own tracks JSONL (jsonl.py)
    export_tracks               CSV, NPZ, OpenPose JSON, COCO JSON, TRC, C3D, Blender, BVH, glTF (formats.py)
    skeleton.solve              3D keypoints -> bone rotations on a VRM-named humanoid (skeleton.py)
    smooth_tracks_file          offline smoothing of a tracks file (smoothing.py)
"""

from realtime.export.formats import FORMATS, export_tracks
from realtime.export.jsonl import TrackWriter, read_tracks
from realtime.export.smoothing import smooth_tracks, smooth_tracks_file
from realtime.export.tracks import PersonTrack, Tracks

__all__ = [
    "FORMATS", "PersonTrack", "TrackWriter", "Tracks",
    "export_tracks", "read_tracks", "smooth_tracks", "smooth_tracks_file",
]
