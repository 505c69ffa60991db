"""The live viewer, offscreen, in a subprocess (an abort at interpreter exit must fail the test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from realtime.data import seg_palette

SCENARIO = Path(__file__).with_name("viewer_scenario.py")
FRAME_RGB = np.array((200, 30, 30))
SEG_BLEND = (0.5 * FRAME_RGB + 0.5 * seg_palette()[22]).round()  # Torso blended at alpha 0.5
LINK_RGB = np.array((0, 255, 0))  # left ankle - left knee
FPS_PEN = np.array((0x59, 0xD1, 0x59))


def run_scenario(out_dir: Path, mode: str) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(SCENARIO.parents[1])}
    proc = subprocess.run([sys.executable, str(SCENARIO), str(out_dir), mode],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads((out_dir / "result.json").read_text())


def count_near(image: np.ndarray, color: np.ndarray, tol: int = 3) -> int:
    return int(np.sum(np.abs(image.astype(int) - color).max(axis=-1) <= tol))


def read_rgb(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)


@pytest.fixture(scope="module")
def user_closes(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("viewer")
    return out, run_scenario(out, "user-closes")


def test_window_shows_the_frame_overlays_and_a_plot(user_closes):
    out, _ = user_closes
    before = read_rgb(out / "before.png")
    assert count_near(before, FRAME_RGB) > 20_000  # the frame itself, scaled into the window
    assert count_near(before, SEG_BLEND) > 5_000  # body-part colours
    assert count_near(before, LINK_RGB, tol=40) > 100  # the skeleton link
    plot_strip = before[int(before.shape[0] * 0.7):]
    assert count_near(plot_strip, FPS_PEN, tol=10) > 20  # the fps curve is drawn


def test_hot_keys_toggle_layers_in_the_shown_image(user_closes):
    out, result = user_closes
    after = read_rgb(out / "after_toggles.png")
    assert result["layers"] == {"skeleton": False, "seg": False}
    assert count_near(after, FRAME_RGB) > 20_000
    assert count_near(after, SEG_BLEND) == 0
    assert count_near(after, LINK_RGB, tol=40) == 0


def test_screenshot_record_pause_keys(user_closes):
    out, result = user_closes
    assert len(result["screenshots"]) == 1
    shot = read_rgb(out / "shots" / result["screenshots"][0])
    assert shot.shape == (240, 320, 3)  # the composed image itself, not the window
    assert count_near(shot, FRAME_RGB) > 10_000 and count_near(shot, SEG_BLEND) == 0
    assert result["record_calls"] == [True, False]
    assert result["paused"] is True


def test_closing_the_window_sets_stop_and_returns_promptly(user_closes):
    _, result = user_closes
    assert result["stop_set"] and not result["worker_alive"]
    assert result["return_delay_s"] < 2.0


def test_pipeline_stop_closes_the_window_and_returns_promptly(tmp_path):
    result = run_scenario(tmp_path, "pipeline-stops")
    assert result["stop_set"] and not result["worker_alive"]
    assert result["return_delay_s"] < 2.0


def test_no_display_is_a_user_error(monkeypatch):
    from realtime.errors import UserError
    from viz.viewer import check_display

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    if sys.platform.startswith("linux"):
        with pytest.raises(UserError, match="QT_QPA_PLATFORM=offscreen"):
            check_display()
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    check_display()  # fine with a platform plugin named
