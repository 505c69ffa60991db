"""Drive the live viewer offscreen like a pipeline would; run by tests/test_viewer.py.

Run in its own process so that an abort at interpreter exit (seen with some Qt
versions) shows up as a non-zero exit code:

    QT_QPA_PLATFORM=offscreen python tests/viewer_scenario.py OUT_DIR {user-closes|pipeline-stops}

A worker thread renders frames with `compose` from the viewer's shared `Layers` and
submits them; the GUI thread grabs the window to PNGs and presses hot keys. Writes
OUT_DIR/result.json and OUT_DIR/*.png for the test to check.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
from pyqtgraph.Qt import QtCore, QtTest

from realtime.frames import DenseMaps, Frame, Person
from viz.compose import Layers, compose
from viz.viewer import Viewer

FRAME_RGB = (200, 30, 30)  # a distinctive background for the frame


def make_frame(index: int) -> Frame:
    image = np.full((240, 320, 3), FRAME_RGB, np.uint8)
    seg = np.zeros((120, 160), np.uint8)  # half-resolution body-part map
    seg[30:90, 100:150] = 22  # Torso: image rows 60..180, cols 200..300
    keypoints = np.full((308, 2), np.nan, np.float32)
    keypoints[11], keypoints[13] = (60, 60), (60, 200)  # left knee, left ankle
    person = Person(box=np.array([30, 40, 120, 220], np.float32), track_id=1,
                    keypoints=keypoints, keypoint_scores=np.ones(308, np.float32))
    return Frame(index, index / 25, image, people=(person,), dense=DenseMaps(seg=seg))


def main(out_dir: Path, mode: str) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    record_calls: list[bool] = []
    layers = Layers(depth=False, normal=False)
    viewer = Viewer("test viewer", "synthetic | tiny | cpu", layers,
                    screenshot_dir=out_dir / "shots", on_record_toggle=record_calls.append)
    stop = threading.Event()
    times: dict[str, float] = {}

    def render_stage() -> None:  # what the pipeline's render stage does
        index = 0
        while not stop.is_set():
            image = compose(make_frame(index), viewer.layers, caption=f"frame {index}")
            viewer.submit(image, {"fps": 20 + index % 7, "latency_ms": 40 + index % 11,
                                  "stage.detect_ms": 12.0, "stage.infer_ms": 25.0, "stage.infer_p95_ms": 30.0,
                                  "input_fps": 25.0, "dropped": index // 10})
            index += 1
            if mode == "pipeline-stops" and index == 30:
                times["stop_set"] = time.monotonic()
                stop.set()
            time.sleep(0.02)

    def grab(name: str) -> None:
        cv2.imwrite(str(out_dir / f"{name}.png"), cv2.cvtColor(viewer.grab(), cv2.COLOR_RGB2BGR))

    def key(k) -> None:
        QtTest.QTest.keyClick(viewer._window, k)

    def step_1() -> None:
        grab("before")
        key(QtCore.Qt.Key.Key_2)  # segmentation off
        key(QtCore.Qt.Key.Key_K)  # skeleton off

    def step_2() -> None:
        grab("after_toggles")
        key(QtCore.Qt.Key.Key_S)
        key(QtCore.Qt.Key.Key_R)
        key(QtCore.Qt.Key.Key_R)
        key(QtCore.Qt.Key.Key_Space)  # pause: the display freezes

    def step_3() -> None:
        times["closed"] = time.monotonic()
        viewer._window.close()  # as if the user closed the window

    worker = threading.Thread(target=render_stage)
    worker.start()
    if mode == "user-closes":
        QtCore.QTimer.singleShot(800, step_1)
        QtCore.QTimer.singleShot(1400, step_2)
        QtCore.QTimer.singleShot(1800, step_3)
    viewer.run(stop)
    returned = time.monotonic()
    worker.join(timeout=5)
    result = {
        "stop_set": stop.is_set(),
        "worker_alive": worker.is_alive(),
        "return_delay_s": returned - times.get("closed", times.get("stop_set", returned)),
        "record_calls": record_calls,
        "screenshots": sorted(p.name for p in (out_dir / "shots").glob("*.png")),
        "layers": {"skeleton": layers.skeleton, "seg": layers.seg},
        "paused": viewer.paused,
    }
    (out_dir / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
