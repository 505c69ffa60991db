"""sapiens-realtime: Sapiens2 pose, segmentation, normals and depth on live video."""

__version__ = "0.1.0"
