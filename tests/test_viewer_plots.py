"""The viewer's plots: the per-stage times on their own axis, every legend below its plot
(never covering a curve or clipped by the plot), offscreen in a subprocess."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r'''
import json, sys, threading
import numpy as np
from pyqtgraph.Qt import QtWidgets
from viz.compose import Layers
from viz.viewer import Viewer

viewer = Viewer(title="t", status="s", layers=Layers(skeleton=True, seg=True, panes=("overlay",)))
viewer._window.resize(1280, 900)
viewer._window.show()
image = np.zeros((240, 320, 3), np.uint8)
for i in range(40):
    metrics = {"fps": 20 + i % 3, "latency_ms": 400 + 10 * (i % 5), "latency_p95_ms": 520,
               "stage.detect_ms": 2.0, "stage.infer_ms": 35.0 + i % 4, "stage.smooth_ms": 0.8,
               "stage.render_ms": 6.0, "stage.write_ms": 3.0}
    for key in list(metrics):
        if key.startswith("stage."):
            metrics[key.replace("_ms", "_p95_ms")] = metrics[key] * 1.5
    viewer.submit(image, metrics)
    viewer._last_plot = -1.0
    viewer._tick()
    QtWidgets.QApplication.processEvents()
viewer._window.grab().save(sys.argv[1])
plots = {"fps": viewer._fps_plot, "latency": viewer._latency_plot, "stage": viewer._stage_plot}
names = {k: [label.text for _, label in viewer._legends[p].items] for k, p in plots.items()}
boxes = [p.vb.sceneBoundingRect() for p in plots.values()]
scene = viewer._graphics.mapToScene(viewer._graphics.viewport().rect()).boundingRect()
legends_ok = all(
    scene.contains(viewer._legends[p].sceneBoundingRect())
    and not any(viewer._legends[p].sceneBoundingRect().intersects(b) for b in boxes)
    for p in plots.values())
stage_max = max(max(c.yData) for c in viewer._stage_plot.listDataItems())
print(json.dumps({"names": names, "legends_ok": legends_ok, "stage_max": float(stage_max),
                  "stage_range": viewer._stage_plot.vb.viewRange()[1]}))
'''


def test_stage_times_have_their_own_axis_and_legends_sit_below_the_plots(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "viewer.png")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["names"]["latency"] == ["median", "p95"]
    assert sorted(result["names"]["stage"]) == ["detect", "infer", "render", "smooth", "write"]
    assert result["names"]["fps"] == ["output"]
    assert result["legends_ok"]  # inside the window, clear of every plot area
    low, high = result["stage_range"]
    assert high < 100 and result["stage_max"] <= high  # scaled to the stages (~40 ms), not to the 500 ms total
