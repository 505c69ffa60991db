"""First-use friction: the viewer on a machine whose Qt cannot open a window, wordings,
summaries and captions that say what really happened."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from media import gaussian_marker, write_video

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 / xcb is the Linux case")
def test_view_without_a_working_qt_platform_fails_before_any_file_exists(tmp_path, fixtures_dir):
    from viz.viewer import _missing_xcb_libraries

    src = write_video(tmp_path / "v.mp4", [gaussian_marker(48, 64, 30, 20, 4)] * 3)
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(PYTHONPATH=str(ROOT), DISPLAY=":97")  # no X server answers there
    proc = subprocess.run([sys.executable, "-m", "realtime.cli", "run", str(src), "--view", "--output-dir", str(tmp_path / "rec"),
                           "--tasks", "pose", "--boxes-from", "frame", "--device", "cpu",
                           "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}"],
                          env=env, capture_output=True, text=True, timeout=120)
    err = proc.stderr.strip()
    assert proc.returncode == 2, err  # not 134: Qt did not abort the run
    assert err.startswith("error: The viewer window cannot open") and len(err.splitlines()) == 1, err
    assert "run without --view" in err
    if _missing_xcb_libraries(""):  # this machine lacks xcb libraries: the packages are named
        assert "sudo apt-get install" in err and "libxcb-" in err
    assert not (tmp_path / "rec").exists()
