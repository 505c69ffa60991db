"""Sapiens2 task models, the RTMDet person detector, and checkpoint loading.

    model = load_model("pose")                       # official 0.4b weights, found or downloaded
    model = load_model("seg", "path/to/file.safetensors", device="cuda", dtype=torch.bfloat16)
    model = build_model("pose", "sapiens2_0.4b")     # random weights (tests, benchmarks)
    detector = load_detector()                       # RTMDet-m person boxes: detector(image_bgr)
"""

from realtime.models.archs import ARCHS, DEFAULT_SIZE, SIZES
from realtime.models.loading import download, load_backbone, load_model
from realtime.models.rtmdet import load_detector
from realtime.models.task_model import Sapiens2TaskModel, build_model

__all__ = ["ARCHS", "DEFAULT_SIZE", "SIZES", "Sapiens2TaskModel", "build_model", "download", "load_backbone", "load_detector",
           "load_model"]
