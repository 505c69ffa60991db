"""Sources: timestamps from the container, rotation, pixel formats, folders, webcams, bad inputs."""

import struct

import cv2
import numpy as np
import pytest

from media import numbered_frames, write_video
from realtime.errors import UserError
from realtime.sources import WebcamSource, open_source


def _read_all(source):
    with source:
        return source.info, list(source.frames())


def test_video_timestamps_come_from_the_container_vfr(tmp_path):
    times = [0.0, 0.04, 0.1, 0.13, 0.2, 0.5, 0.52]
    path = write_video(tmp_path / "vfr.mp4", numbered_frames(len(times)), times=times)
    info, frames = _read_all(open_source(str(path)))
    assert not info.live and (info.width, info.height) == (64, 48) and info.name == "vfr"
    assert [round(t, 4) for t, _ in frames] == times
    assert all(img.dtype == np.uint8 and img.shape == (48, 64, 3) for _, img in frames)


def _set_rotation_90(path):
    """Write a 90-degree display matrix into the MP4's track header (what phones do)."""
    data = bytearray(path.read_bytes())
    at = data.find(b"tkhd")
    version = data[at + 4]
    # after type, version/flags, the v0/v1 times + track id + duration, then reserved/layer/volume
    matrix = at + 8 + (20 if version == 0 else 32) + 16
    one, minus_one = 0x00010000, 0xFFFF0000
    data[matrix:matrix + 36] = struct.pack(">9I", 0, one, 0, minus_one, 0, 0, 0, 0, 0x40000000)
    path.write_bytes(bytes(data))


def test_rotation_metadata_is_applied(tmp_path):
    img = np.zeros((48, 64, 3), np.uint8)
    img[:8, :16] = 255  # a white block in the top-left corner of the stored picture
    path = write_video(tmp_path / "phone.mp4", [img] * 3)
    _set_rotation_90(path)
    info, frames = _read_all(open_source(str(path)))
    assert (info.width, info.height) == (48, 64)
    shown = frames[0][1]
    assert shown.shape == (64, 48, 3)
    # a "rotate=90" phone video is shown turned 90 degrees clockwise (as ffmpeg/players do):
    # the stored top-left block ends up top-right
    assert shown[:8, -8:].mean() > 200
    assert max(shown[:8, :8].mean(), shown[-8:, :8].mean(), shown[-8:, -8:].mean()) < 60


def test_ten_bit_video_becomes_8bit_rgb(tmp_path):
    path = write_video(tmp_path / "ten.mkv", numbered_frames(3), codec="libx264", pix_fmt="yuv420p10le")
    _, frames = _read_all(open_source(str(path)))
    assert len(frames) == 3 and frames[1][1].dtype == np.uint8 and abs(frames[1][1].mean() - 17) < 3


def test_image_folder_natural_order_and_pixel_formats(tmp_path):
    gray = np.full((20, 30), 100, np.uint8)
    cv2.imwrite(str(tmp_path / "f10.png"), gray)
    cv2.imwrite(str(tmp_path / "f2.png"), np.full((20, 30, 4), 50, np.uint8))  # BGRA
    cv2.imwrite(str(tmp_path / "f1.png"), np.full((20, 30, 3), 65535, np.uint16))  # 16-bit
    (tmp_path / "notes.txt").write_text("not an image")
    info, frames = _read_all(open_source(str(tmp_path), fps=10))
    assert info.frame_count == 3 and info.fps == 10
    assert [round(t, 3) for t, _ in frames] == [0.0, 0.1, 0.2]
    assert [int(img.mean()) for _, img in frames] == [255, 50, 100]
    assert all(img.shape == (20, 30, 3) and img.dtype == np.uint8 for _, img in frames)
    _, globbed = _read_all(open_source(str(tmp_path / "f1*.png")))
    assert len(globbed) == 2


def test_webcam_with_a_mocked_capture_device(monkeypatch):
    class FakeCapture:
        def __init__(self, index):
            self.index, self.n, self.props = index, 0, {}

        def isOpened(self):
            return self.index == 0

        def set(self, prop, value):
            self.props[prop] = value

        def get(self, prop):
            return 30.0 if prop == cv2.CAP_PROP_FPS else 0.0

        def read(self):
            self.n += 1
            if self.n > 5:
                return False, None
            frame = np.zeros((24, 32, 3), np.uint8)
            frame[..., 0] = 200  # blue in BGR
            return True, frame

        def release(self):
            pass

    monkeypatch.setattr(cv2, "VideoCapture", FakeCapture)
    source = open_source("webcam:0", width=32, height=24)
    assert isinstance(source, WebcamSource)
    info, frames = _read_all(source)
    assert info.live and (info.width, info.height) == (32, 24) and len(frames) == 5
    assert frames[0][1][0, 0].tolist() == [0, 0, 200]  # became RGB
    times = [t for t, _ in frames]
    assert times == sorted(times)
    assert source.ended_early and "stopped delivering" in source.ended_early
    with pytest.raises(UserError, match="Webcam 3 could not be opened"):
        open_source("3").open()


def _file(path, content: bytes):
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.mp4", "does not exist"),
    (lambda p: _file(p / "empty.mp4", b""), "cannot be read as video"),
    (lambda p: _file(p / "text.mp4", b"hello, not a video"), "cannot be read as video"),
    (lambda p: (p / "nothing").mkdir() or p / "nothing", "No images found"),
])
def test_bad_inputs_give_one_clear_sentence(tmp_path, make, message):
    with pytest.raises(UserError, match=message) as err:
        open_source(str(make(tmp_path))).open()
    text = str(err.value)
    assert "\n" not in text and text.endswith(".")


def test_truncated_video_keeps_what_decodes(tmp_path):
    frames = [np.random.default_rng(i).integers(0, 255, (96, 128, 3), dtype=np.uint8) for i in range(30)]
    path = write_video(tmp_path / "full.mkv", frames)  # Matroska: no index needed to decode a prefix
    data = path.read_bytes()
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(data[: len(data) // 2])
    source = open_source(str(cut))
    _, got = _read_all(source)
    assert 3 <= len(got) < 30
    assert source.ended_early is None or "truncated" in source.ended_early
