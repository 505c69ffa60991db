"""Keypoint tracks: the live JSONL writer/reader and exporters to the formats other tools open.

    TrackWriter / read_tracks   the project's own tracks JSONL (jsonl.py)
    export_tracks               CSV, NPZ, OpenPose JSON, COCO JSON, TRC, C3D, Blender (formats.py)
    smooth_tracks_file          offline smoothing of a tracks file (smoothing.py)
    sample_keypoints_3d         3D keypoints from the metric pointmap (lift3d.py)
"""

from realtime.export.jsonl import TrackWriter, read_tracks
from realtime.export.tracks import PersonTrack, Tracks

__all__ = ["TrackWriter", "read_tracks", "Tracks", "PersonTrack"]
