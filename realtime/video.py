"""Where rendered frames go: an H.264 video file written with PyAV.

The file is a fragmented MP4 (a fragment per keyframe, written as it goes),
so whatever was encoded stays playable even if the process is killed before
`close()`. Timestamps are the source's (variable frame rates survive), and
the source's first audio stream is copied into the output on `close()`.
"""

from __future__ import annotations

import logging
import os
from fractions import Fraction
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.errors import UserError

log = logging.getLogger(__name__)

TIME_BASE = Fraction(1, 90000)  # the MPEG clock: fine enough for any frame rate


class VideoWriter:
    """Encode RGB frames with their timestamps into an MP4 (H.264, yuv420p).

    The output is opened at the first frame (its size is known then); odd
    sizes are padded by one black pixel (yuv420p needs even sizes), and later
    frames of another size are scaled to fit that size.
    """

    def __init__(self, path: str | os.PathLike, *, fps: float, audio_from: Optional[str] = None,
                 crf: int = 20, preset: str = "veryfast"):
        self.path = Path(path)
        self.fps = fps if fps and fps > 0 else 30.0
        self.audio_from = audio_from
        self.crf, self.preset = crf, preset
        self.frames_written = 0
        self._container = None
        self._stream = None
        self._audio_out = None
        self._last_pts = -1
        self._last_time = 0.0
        _check_writable(self.path)

    def write(self, image: np.ndarray, timestamp: float) -> None:
        """Add one (H, W, 3) uint8 RGB frame shown at `timestamp` seconds."""
        import av

        if self._container is None:
            self._open(image.shape[1], image.shape[0])
        image = _fit(image, self._stream.width, self._stream.height)
        frame = av.VideoFrame.from_ndarray(image, format="rgb24")
        pts = max(int(round(timestamp / TIME_BASE)), self._last_pts + 1)
        frame.pts, frame.time_base = pts, TIME_BASE
        self._last_pts, self._last_time = pts, timestamp
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self.frames_written += 1

    def _open(self, width: int, height: int) -> None:
        import av

        try:
            self._container = av.open(str(self.path), mode="w", format="mp4",
                                      options={"movflags": "frag_keyframe+empty_moov+default_base_moof"})
        except (av.error.FFmpegError, OSError) as err:
            raise UserError(f"Cannot write video {self.path} ({err}); choose a writable --out path.") from None
        stream = self._container.add_stream("libx264", rate=Fraction(self.fps).limit_denominator(1001))
        stream.width, stream.height = width + width % 2, height + height % 2
        stream.pix_fmt = "yuv420p"
        stream.time_base = TIME_BASE
        stream.codec_context.time_base = TIME_BASE
        # no B-frames: timestamps start where the source's do (fragmented MP4 has no edit list) and latency stays low
        stream.options = {"crf": str(self.crf), "preset": self.preset, "bf": "0"}
        self._stream = stream
        if self.audio_from:
            self._audio_out = self._add_audio_stream(self.audio_from)

    def _add_audio_stream(self, source: str):
        import av

        try:
            with av.open(source) as src:
                if not src.streams.audio:
                    return None
                return self._container.add_stream_from_template(src.streams.audio[0])
        except (av.error.FFmpegError, ValueError) as err:
            log.warning("not copying audio from %s: %s", source, err)
            return None

    def _copy_audio(self) -> None:
        """Copy the source's audio packets up to the last video timestamp."""
        import av

        end = self._last_time + 1.0 / self.fps
        try:
            with av.open(self.audio_from) as src:
                audio = src.streams.audio[0]
                for packet in src.demux(audio):
                    # Packets before time 0 (the AAC priming packet) would make the
                    # fragmented muxer shift the video clock; the decoder drops them anyway.
                    if packet.pts is None or packet.pts < 0 or packet.size == 0:
                        continue
                    if float(packet.pts * audio.time_base) > end:
                        break
                    packet.stream = self._audio_out
                    self._container.mux(packet)
        except av.error.FFmpegError as err:  # a truncated source: keep the audio copied so far
            log.warning("audio copy from %s stopped early: %s", self.audio_from, err)

    def close(self) -> None:
        """Flush the encoder, copy audio, and finalize the file. Safe to call twice."""
        if self._container is None:
            return
        try:
            for packet in self._stream.encode():
                self._container.mux(packet)
            if self._audio_out is not None:
                self._copy_audio()
        finally:
            self._container.close()
            self._container = None

    def __enter__(self) -> "VideoWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _fit(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """The frame at the video's size: padded by a pixel to even sizes, or, when a source
    changes size (an image folder of mixed sizes), scaled to fit and centred on black."""
    h, w = image.shape[:2]
    if (h + h % 2, w + w % 2) == (height, width):
        return np.pad(image, ((0, h % 2), (0, w % 2), (0, 0))) if (h % 2 or w % 2) else image
    import cv2

    s = min(width / w, height / h)
    nw, nh = max(1, min(width, round(w * s))), max(1, min(height, round(h * s)))
    canvas = np.zeros((height, width, 3), np.uint8)
    top, left = (height - nh) // 2, (width - nw) // 2
    canvas[top:top + nh, left:left + nw] = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA)
    return canvas


def _check_writable(path: Path) -> None:
    """Fail before any work is done if the output cannot be created."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"Cannot create the folder {folder} for {path.name} ({err.strerror}); choose a writable output path.") from None
    if path.is_dir():
        raise UserError(f"Output {path} is a folder; give a file name such as {path / 'out.mp4'}.")
    if not os.access(folder, os.W_OK):
        raise UserError(f"Cannot write to {folder} (permission denied); choose a writable output path.")
