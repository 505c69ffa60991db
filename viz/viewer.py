"""The live window: composed image, rolling fps / latency plots, status line, hot keys.

Threading contract (the pipeline runs its stages in worker threads, the main thread
runs Qt):

* build `Viewer(...)` on the main thread;
* `submit(image, metrics)` may be called from any thread; it never blocks and keeps
  only the newest image (older ones not yet shown are dropped);
* `run(stop)` runs the Qt event loop on the main thread until the window is closed
  (it then sets `stop`) or until `stop` is set by the pipeline (it then closes the
  window); it returns within ~20 ms either way. A Viewer runs once.

Hot keys: 1/K skeleton, 2/G body parts, 3/D depth, 4/N normals, 5/A albedo (each pane's
keys come with its `viz.panes.Pane` in `Layers.previews`), L class legend (they
flip the shared `Layers` the render stage reads, so the change shows on the next
rendered frame; a hidden preview keeps its place, so a recording keeps one size);
Space pauses the display (the pipeline keeps running, the window freezes on the
current image; the plots keep rolling); S saves the shown image as a
PNG in `screenshot_dir`; R starts / stops recording through `on_record_toggle(True /
False)` (the pipeline owns the video writer); Q / Esc quits.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import cv2
import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt import QtCore, QtGui, QtWidgets

from realtime.errors import UserError

from .compose import Layers
from .panes import BUILTIN

log = logging.getLogger(__name__)

_TICK_MS = 15  # how often the GUI thread picks up the newest image and checks `stop`
_PLOT_EVERY_S = 0.1


def _code(key) -> int:
    """A Qt key as a plain int (bindings differ: IntEnum, Enum or int)."""
    return int(getattr(key, "value", key))


_Key = QtCore.Qt.Key


def _toggles(layers: Layers) -> dict[int, str]:
    """Hot key code -> the `Layers` flag it flips: the overlay's own, then each preview
    pane's (`Pane.hot_keys`)."""
    keys = {"1": "skeleton", "K": "skeleton", "2": "seg", "G": "seg", "L": "legend"}
    for pane in layers.previews.values():
        keys.update({key: pane.name for key in pane.hot_keys})
    return {_code(getattr(_Key, f"Key_{key}")): name for key, name in keys.items()}


def key_help(layers: Optional[Layers] = None) -> str:
    """The hot keys of `layers` (as built for the run; None: every built-in pane)."""
    panes = layers.previews.values() if layers is not None else BUILTIN.values()
    keys = ["1/K skeleton"] if layers is None or layers.skeleton else []
    keys += ["2/G parts", "L legend"] if layers is None or layers.seg else []
    keys += [f"{'/'.join(p.hot_keys)} {p.title}" for p in panes if p.hot_keys]
    return "  ".join(keys + ["Space pause", "S screenshot", "R record", "Q quit"])


_SPACE, _SCREENSHOT, _RECORD = _code(_Key.Key_Space), _code(_Key.Key_S), _code(_Key.Key_R)
_QUIT = {_code(_Key.Key_Q), _code(_Key.Key_Escape)}
_STAGE_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]


# Debian/Ubuntu packages Qt 6's xcb platform plugin needs beyond a basic X11 install.
XCB_PACKAGES = ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0", "libxcb-render-util0",
                "libxcb-xinerama0", "libxcb-shape0", "libxkbcommon-x11-0")
_qt_checked = False  # Qt started once in a child process: no need to try again


def check_display() -> None:
    """Raise a UserError when no window can open on this Linux machine: no display, or a
    Qt platform plugin that does not load (Qt would abort the whole process, exit 134).
    Qt is started once in a child process to find out, before any output file exists."""
    global _qt_checked
    if not sys.platform.startswith("linux") or QtWidgets.QApplication.instance() is not None or _qt_checked:
        return
    if not any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")):
        raise UserError(
            "There is no display for the viewer window (DISPLAY is not set); "
            "run without --view, or set QT_QPA_PLATFORM=offscreen to run it without a screen."
        )
    if os.environ.get("QT_QPA_PLATFORM", "").split(":")[0] in ("offscreen", "minimal"):
        return
    import subprocess

    probe = "from pyqtgraph.Qt import QtWidgets; QtWidgets.QApplication(['sapiens-rt'])"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return  # slow, not broken: let the real window try
    if done.returncode == 0:
        _qt_checked = True
        return
    missing = _missing_xcb_libraries(done.stderr)
    if missing:
        packages = " ".join(dict.fromkeys(_debian_package(lib) for lib in missing))
        raise UserError(
            f"The viewer window cannot open: Qt's xcb platform plugin needs system libraries that are not installed "
            f"({', '.join(missing)}); install them (Debian/Ubuntu: sudo apt-get install {packages}; the full list Qt 6 "
            f"needs is in the README), or run without --view."
        )
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip() and "Traceback" not in line]
    reason = next((line for line in lines if "qt.qpa" in line or "display" in line.lower()), lines[-1] if lines else
                  f"exit status {done.returncode}")
    raise UserError(f"The viewer window cannot open ({reason}); check DISPLAY / WAYLAND_DISPLAY, or run without --view, "
                    f"or set QT_QPA_PLATFORM=offscreen to run the viewer without a screen.")


def _missing_xcb_libraries(qt_stderr: str) -> list[str]:
    """Shared libraries the xcb platform plugin lacks (from `ldd`, plus the one Qt loads itself)."""
    import shutil
    import subprocess

    missing = ["libxcb-cursor.so.0"] if "xcb-cursor0" in qt_stderr else []
    plugin = Path(QtCore.QLibraryInfo.path(QtCore.QLibraryInfo.LibraryPath.PluginsPath)) / "platforms" / "libqxcb.so"
    if plugin.is_file() and shutil.which("ldd"):
        listing = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True).stdout
        missing += [line.split("=>")[0].strip() for line in listing.splitlines() if "not found" in line]
    return list(dict.fromkeys(missing))


def _debian_package(soname: str) -> str:
    """libxcb-icccm.so.4 -> libxcb-icccm4, libxkbcommon-x11.so.0 -> libxkbcommon-x11-0 (Debian's naming)."""
    base, _, version = soname.partition(".so.")
    version = version.split(".")[0]
    return f"{base}-{version}" if base[-1:].isdigit() else f"{base}{version}"


class _Window(QtWidgets.QWidget):
    """Top-level widget: forwards keys and the close request to its Viewer."""

    def __init__(self, viewer: "Viewer") -> None:
        super().__init__()
        self._viewer = viewer
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt name)
        if not self._viewer._on_key(_code(event.key())):
            super().keyPressEvent(event)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        self._viewer._on_close()
        event.accept()


class Viewer:
    """A pyqtgraph window showing composed frames (see the module docstring for the contract).

    title:            window title.
    status:           fixed part of the status line, e.g. "webcam:0 | sapiens2-0.4b | cuda:0".
    layers:           the shared `Layers` the render stage reads; hot keys flip it.
    screenshot_dir:   where S writes PNGs (created on first use).
    on_record_toggle: called on the GUI thread with True / False when R starts / stops
                      recording; None disables R.
    history_s:        seconds of metrics shown in the plots.
    """

    def __init__(
        self,
        title: str,
        status: str,
        layers: Layers,
        screenshot_dir: str | Path = "recordings",
        on_record_toggle: Optional[Callable[[bool], None]] = None,
        history_s: float = 30.0,
    ) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("Viewer must be built on the main thread (Qt runs there)")
        check_display()
        self._app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
        self.layers = layers
        self.status = status
        self.screenshot_dir = Path(screenshot_dir)
        self.on_record_toggle = on_record_toggle
        self.paused = False
        self.recording = False
        self._history_s = history_s
        self._lock = threading.Lock()
        self._pending: Optional[tuple[np.ndarray, dict[str, float]]] = None
        self._shown: Optional[np.ndarray] = None
        self._metrics: dict[str, float] = {}
        self._history: collections.deque = collections.deque()
        self._t0 = time.monotonic()
        self._last_plot = 0.0
        self._notice = ""
        self._stop: Optional[threading.Event] = None
        self._closed = False
        self._build(title)

    # -- any thread ------------------------------------------------------------------
    def submit(self, image: np.ndarray, metrics: dict[str, float]) -> None:
        """Offer a composed (H, W, 3) uint8 RGB image and the current metrics; never blocks.

        metrics: numeric values by name (e.g. `realtime.metrics.Metrics.snapshot()`).
        Plotted: "fps" and "input_fps"; "latency_ms", "latency_p95_ms" and every other key
        ending in "_ms" but not "_p95_ms" (e.g. "stage.detect_ms"). The status line shows
        "fps", "latency_ms", "dropped" (frames dropped so far) and "gpu_peak_mb".
        Only the newest submission is kept until the GUI thread shows it.
        """
        with self._lock:
            self._pending = (image, dict(metrics))

    # -- main thread -----------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Run the Qt event loop until the window closes (sets `stop`) or `stop` is set."""
        self._stop = stop
        self._timer.start(_TICK_MS)
        self._window.show()
        self._window.raise_()
        self._window.activateWindow()
        self._window.setFocus()
        if not stop.is_set() and not self._closed:
            self._app.exec()
        self._timer.stop()
        stop.set()
        self._dispose()

    def grab(self) -> np.ndarray:
        """The window as it looks now: (H, W, 3) uint8 RGB (for tests and docs)."""
        qimage = self._window.grab().toImage().convertToFormat(QtGui.QImage.Format.Format_RGB888)
        width, height = qimage.width(), qimage.height()
        buffer = np.frombuffer(qimage.constBits(), np.uint8, count=qimage.sizeInBytes())
        return buffer.reshape(height, qimage.bytesPerLine())[:, : width * 3].reshape(height, width, 3).copy()

    def _build(self, title: str) -> None:
        self._window = _Window(self)
        self._window.setWindowTitle(title)
        self._window.resize(1280, 900)
        layout = QtWidgets.QVBoxLayout(self._window)
        layout.setContentsMargins(4, 4, 4, 4)
        self._graphics = pg.GraphicsLayoutWidget()
        self._graphics.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)  # keys go to the window
        self._view = self._graphics.addViewBox(row=0, col=0, colspan=3, lockAspect=True, invertY=True)
        self._image_item = pg.ImageItem(axisOrder="row-major")
        self._view.addItem(self._image_item)
        # Three plots, each on its own axis (the stages take a few ms next to a total of hundreds),
        # with their legends in a row below them, where they cannot cover or be clipped by a curve.
        self._fps_plot = self._graphics.addPlot(row=1, col=0, title="fps")
        self._latency_plot = self._graphics.addPlot(row=1, col=1, title="end-to-end latency (ms)")
        self._stage_plot = self._graphics.addPlot(row=1, col=2, title="time per stage, median (ms)")
        self._legends = {}
        for col, plot in enumerate((self._fps_plot, self._latency_plot, self._stage_plot)):
            plot.setLabel("bottom", "seconds ago")
            plot.showGrid(x=True, y=True, alpha=0.3)
            plot.setMouseEnabled(x=False, y=False)
            legend = pg.LegendItem(colCount=3, labelTextSize="8pt")
            self._graphics.addItem(legend, row=2, col=col)
            self._legends[plot] = legend
        self._fps_curve = self._curve(self._fps_plot, pg.mkPen("#59d159", width=2), "output")
        self._input_fps_curve: Optional[pg.PlotDataItem] = None  # added when "input_fps" arrives
        self._latency_curves: dict[str, pg.PlotDataItem] = {}
        grid = self._graphics.ci.layout
        grid.setRowStretchFactor(0, 4)
        grid.setRowStretchFactor(1, 1)
        grid.setRowStretchFactor(2, 0)
        layout.addWidget(self._graphics, stretch=1)
        self._status_label = QtWidgets.QLabel(self.status)
        self._status_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.NoTextInteraction)
        layout.addWidget(self._status_label)
        help_label = QtWidgets.QLabel(key_help(self.layers))
        help_label.setStyleSheet("color: gray")
        layout.addWidget(help_label)
        self._timer = QtCore.QTimer()
        self._timer.timeout.connect(self._tick)

    def _curve(self, plot, pen, name: str) -> pg.PlotDataItem:
        curve = plot.plot(pen=pen)
        self._legends[plot].addItem(curve, name)
        return curve

    def _tick(self) -> None:
        if self._stop is not None and self._stop.is_set():
            self._window.close()
            return
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        image, metrics = pending
        if not self.paused:
            self._show(image)
        self._metrics = metrics
        now = time.monotonic() - self._t0
        self._history.append((now, metrics))
        while self._history and self._history[0][0] < now - self._history_s:
            self._history.popleft()
        if now - self._last_plot >= _PLOT_EVERY_S:
            self._last_plot = now
            self._update_plots(now)
        self._update_status()

    def _show(self, image: np.ndarray) -> None:
        first = self._shown is None or self._shown.shape != image.shape
        self._shown = image
        self._image_item.setImage(image, autoLevels=False, levels=(0, 255))
        if first:
            self._view.autoRange(padding=0)

    def _update_plots(self, now: float) -> None:
        times = np.array([t for t, _ in self._history]) - now
        for plot in (self._fps_plot, self._latency_plot, self._stage_plot):  # grow the window until history_s
            plot.setXRange(min(times[0], -1.0), 0, padding=0)
        self._fps_curve.setData(times, [m.get("fps", np.nan) for _, m in self._history])
        if any("input_fps" in m for _, m in self._history):
            if self._input_fps_curve is None:
                dashed = pg.mkPen("#aaaaaa", width=1, style=QtCore.Qt.PenStyle.DashLine)
                self._input_fps_curve = self._curve(self._fps_plot, dashed, "input")
            self._input_fps_curve.setData(times, [m.get("input_fps", np.nan) for _, m in self._history])
        # End-to-end latency (median and p95) and the median of every stage.
        keys = sorted({k for _, m in self._history for k in m if k.endswith("_ms")})
        keys = [k for k in keys if k == "latency_p95_ms" or not k.endswith("_p95_ms")]
        for key in keys:
            if key not in self._latency_curves:
                pen, name = self._latency_pen(key), key.removesuffix("_ms").removeprefix("stage.")
                plot = self._latency_plot if key.startswith("latency") else self._stage_plot
                self._latency_curves[key] = self._curve(plot, pen, {"latency": "median", "latency_p95": "p95"}.get(name, name))
            self._latency_curves[key].setData(times, [m.get(key, np.nan) for _, m in self._history])

    def _latency_pen(self, key: str):
        if key == "latency_ms":
            return pg.mkPen("#ffffff", width=2)
        if key == "latency_p95_ms":
            return pg.mkPen("#ffffff", width=1, style=QtCore.Qt.PenStyle.DashLine)
        stages = sum(1 for k in self._latency_curves if not k.startswith("latency"))
        return pg.mkPen(_STAGE_COLORS[stages % len(_STAGE_COLORS)], width=2)

    def _update_status(self) -> None:
        parts = [self.status]
        m = self._metrics
        if "fps" in m:
            parts.append(f"{m['fps']:.1f} fps")
        if "latency_ms" in m:
            parts.append(f"latency {m['latency_ms']:.0f} ms")
        if "dropped" in m:
            parts.append(f"dropped {int(m['dropped'])}")
        if "gpu_peak_mb" in m:
            parts.append(f"GPU peak {m['gpu_peak_mb']:.0f} MB")
        if self.paused:
            parts.append("PAUSED")
        if self.recording:
            parts.append("● REC")
        if self._notice:
            parts.append(self._notice)
        self._status_label.setText("  |  ".join(parts))

    def _on_key(self, key: int) -> bool:
        """Handle a hot key (a Qt key code); False when the key is not ours."""
        toggles = _toggles(self.layers)
        if key in toggles:
            name = toggles[key]
            setattr(self.layers, name, not getattr(self.layers, name))
            self._notice = f"{name} {'on' if getattr(self.layers, name) else 'off'}"
        elif key == _SPACE:
            self.paused = not self.paused
        elif key == _SCREENSHOT:
            self.save_screenshot()
        elif key == _RECORD:
            self._toggle_recording()
        elif key in _QUIT:
            self._window.close()
        else:
            return False
        self._update_status()
        return True

    def save_screenshot(self) -> Optional[Path]:
        """Write the shown image as PNG into `screenshot_dir`; None when nothing is shown yet."""
        if self._shown is None:
            self._notice = "no image to save yet"
            return None
        self.screenshot_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = self.screenshot_dir / f"sapiens-rt-{stamp}.png"
        n = 1
        while path.exists():
            n += 1
            path = self.screenshot_dir / f"sapiens-rt-{stamp}-{n}.png"
        if not cv2.imwrite(str(path), cv2.cvtColor(self._shown, cv2.COLOR_RGB2BGR)):
            self._notice = f"could not write {path}"
            log.error("could not write screenshot %s", path)
            return None
        self._notice = f"saved {path}"
        log.info("screenshot saved to %s", path)
        return path

    def _toggle_recording(self) -> None:
        if self.on_record_toggle is None:
            self._notice = "recording is not available here (start with a video output to record)"
            return
        wanted = not self.recording
        try:
            self.on_record_toggle(wanted)
        except Exception as error:  # the pipeline's writer failed: report it, keep showing frames
            log.error("could not %s recording: %s", "start" if wanted else "stop", error)
            self._notice = f"recording error: {error}"
            return
        self.recording = wanted
        self._notice = "recording" if wanted else "recording stopped"

    def _on_close(self) -> None:
        self._closed = True
        if self._stop is not None:
            self._stop.set()
        self._app.quit()

    def _dispose(self) -> None:
        """Close and delete the widgets now: Qt objects left for interpreter exit can abort it."""
        self._timer.timeout.disconnect(self._tick)
        self._window.hide()
        self._window.deleteLater()
        self._timer.deleteLater()
        QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
        self._app.processEvents()

