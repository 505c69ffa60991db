"""Where rendered frames go: an H.264 video file written with PyAV.

The file is a fragmented MP4 whose header is on disk before the first frame,
cut into fragments of one second (`FRAGMENT_SECONDS`), each flushed to disk
as soon as it is complete; the encoder holds no frames back (x264
`zerolatency`). Fragments need not start with a keyframe (a frame's
references sit in earlier fragments, already on disk), so keyframes stay
x264's own and the file stays small. Whatever happens to the process, the
file plays up to the last complete fragment: a hard kill loses at most the
last second of frames. A write error (disk full, file size limit) cuts the file
back to its last complete fragment and raises `OutputWriteError`.
Timestamps are the source's (variable frame rates survive); the source's
first audio stream is copied alongside, up to each frame's time.

The same stream goes to standard output (`-`), a pipe or a FIFO: fragmented MP4
needs no seeking, so `--out - | ffplay -` or `--out - > overlay.mp4` decodes.
A reader that closes the pipe early ends the writing quietly (`ReaderClosed`).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import struct
from fractions import Fraction
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.errors import OutputWriteError, ReaderClosed, UserError

log = logging.getLogger(__name__)

TIME_BASE = Fraction(1, 90000)  # the MPEG clock: fine enough for any frame rate
FRAGMENT_SECONDS = 1.0  # a fragment is flushed this often: the most a hard kill can lose


class VideoWriter:
    """Encode RGB frames with their timestamps into an MP4 (H.264, yuv420p).

    The output is opened at the first frame (its size is known then); odd
    sizes are padded by one black pixel (yuv420p needs even sizes), and later
    frames of another size are scaled to fit that size.
    """

    def __init__(self, path: str | os.PathLike, *, fps: float, audio_from: Optional[str] = None,
                 crf: int = 20, preset: str = "veryfast", threads: Optional[int] = None):
        self.path = Path(path)
        self.threads = threads  # the encoder's threads (None: x264's own choice, about 1.5 per core)
        self.fps = fps if fps and np.isfinite(fps) and fps > 0 else 30.0
        self.audio_from = audio_from
        self.crf, self.preset = crf, preset
        self.frames_written = 0  # frames given to the encoder
        self.frames_on_disk = 0  # frames in complete fragments flushed to the file
        self._container = None
        self._stream = None
        self._audio = None  # (input container, input stream, packet iterator, output stream)
        self._audio_pending = None  # the next audio packet, not yet due
        self._packets = 0
        self._kept_bytes = 0  # file size after the last successful write: a fragment boundary
        self._failed: Optional[OutputWriteError] = None
        self._last_pts = -1
        self._last_time = 0.0
        self._pipe: Optional[_Pipe] = None  # standard output, a pipe or a FIFO: written as a stream of bytes
        if str(path) == "-" or _is_stream(self.path):
            self._pipe = _Pipe(str(path))
        else:
            _check_writable(self.path)

    def write(self, image: np.ndarray, timestamp: float) -> None:
        """Add one (H, W, 3) uint8 RGB frame shown at `timestamp` seconds."""
        import av

        if self._failed is not None:
            raise self._failed
        try:
            if self._container is None:
                self._open(image.shape[1], image.shape[0])
            image = _fit(image, self._stream.width, self._stream.height)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            pts = max(int(round(timestamp / TIME_BASE)), self._last_pts + 1)
            frame.pts, frame.time_base = pts, TIME_BASE
            self._last_pts, self._last_time = pts, timestamp
            self.frames_written += 1
            for packet in self._stream.encode(frame):
                self._mux_video(packet)
            self._copy_audio(until=timestamp)
        except (av.error.FFmpegError, OSError) as err:
            self._fail(err)
        self._kept_bytes = self._file_size()

    def _mux_video(self, packet) -> None:
        before = self._file_size()
        self._container.mux(packet)
        self._packets += 1
        if self._file_size() > before:  # this packet closed the fragment before it, which is now on disk
            self.frames_on_disk = self._packets - 1

    def _open(self, width: int, height: int) -> None:
        import av

        try:
            target = self._pipe if self._pipe is not None else str(self.path)
            self._container = av.open(target, mode="w", format="mp4", options={
                "movflags": "empty_moov+default_base_moof",
                "frag_duration": str(int(FRAGMENT_SECONDS * 1e6)),  # microseconds
                "flush_packets": "1",  # each fragment reaches the disk when it is complete
                # never hold video back for more than a fragment waiting for audio packets
                "max_interleave_delta": str(int(FRAGMENT_SECONDS * 1e6)),
            })
        except (av.error.FFmpegError, OSError) as err:
            raise UserError(f"Cannot write video {self.path} ({_reason(err)}); choose a writable --out path.") from None
        stream = self._container.add_stream("libx264", rate=Fraction(self.fps).limit_denominator(1001))
        stream.width, stream.height = width + width % 2, height + height % 2
        stream.pix_fmt = "yuv420p"
        stream.time_base = TIME_BASE
        stream.codec_context.time_base = TIME_BASE
        # No B-frames: timestamps start where the source's do (fragmented MP4 has no edit list).
        # zerolatency: a packet for every frame at once (no look-ahead held in the encoder).
        stream.options = {"crf": str(self.crf), "preset": self.preset, "bf": "0", "tune": "zerolatency",
                          **({"threads": str(self.threads)} if self.threads else {})}
        self._stream = stream
        if self.audio_from:
            self._audio = self._add_audio_stream(self.audio_from)
        self._container.start_encoding()  # the header goes to disk now, before any frame

    def _add_audio_stream(self, source: str):
        import av

        try:
            src = av.open(source)
        except (av.error.FFmpegError, OSError) as err:
            log.warning("not copying audio from %s: %s", source, err)
            return None
        if not src.streams.audio:
            src.close()
            return None
        audio = src.streams.audio[0]
        try:
            out = self._container.add_stream_from_template(audio)
        except (av.error.FFmpegError, ValueError) as err:
            log.warning("not copying audio from %s: %s", source, err)
            src.close()
            return None
        return src, audio, src.demux(audio), out

    def _copy_audio(self, until: float) -> None:
        """Copy the source's audio packets that start up to `until` seconds."""
        import av

        if self._audio is None:
            return
        src, audio, packets, out = self._audio
        while True:
            packet, self._audio_pending = self._audio_pending, None
            if packet is None:
                try:
                    packet = next(packets, None)
                except av.error.FFmpegError as err:  # a truncated source: keep the audio copied so far
                    log.warning("audio copy from %s stopped early: %s", self.audio_from, err)
                    packet = None
                if packet is None:
                    self._close_audio()
                    return
            # Packets before time 0 (the AAC priming packet) would make the
            # fragmented muxer shift the video clock; the decoder drops them anyway.
            if packet.pts is None or packet.pts < 0 or packet.size == 0:
                continue
            if float(packet.pts * audio.time_base) > until:
                self._audio_pending = packet
                return
            packet.stream = out
            self._container.mux(packet)

    def _close_audio(self) -> None:
        if self._audio is not None:
            try:
                self._audio[0].close()
            except Exception:  # a broken audio source: nothing of ours to save in it
                pass
            self._audio, self._audio_pending = None, None

    def _file_size(self) -> int:
        if self._pipe is not None:
            return self._pipe.written
        try:
            return os.stat(self.path).st_size
        except OSError:
            return self._kept_bytes

    def _fail(self, err: Exception) -> None:
        """After a write error: close without writing more, cut the file back to its last
        complete fragment (a partly written one would not decode) and raise one sentence."""
        container, self._container = self._container, None
        self._close_audio()
        if container is not None:
            try:
                container.close()
            except Exception:  # the same write error again; the file is cut back below
                pass
        if self._pipe is not None:
            self._pipe.close()
            if _reader_gone(err):
                self._failed = ReaderClosed(f"the reader of the video {self.path} closed it")
                raise self._failed from None
        try:
            if stat.S_ISREG(os.stat(self.path).st_mode) and os.stat(self.path).st_size > self._kept_bytes:
                os.truncate(self.path, self._kept_bytes)
        except OSError:
            pass
        self._failed = OutputWriteError(
            f"cannot write the video {self.path} ({_reason(err)}); it keeps its first {self.frames_on_disk} frames "
            f"(every complete {FRAGMENT_SECONDS:g} s fragment); free disk space or choose another --out.")
        raise self._failed

    def close(self) -> None:
        """Flush the encoder, copy the rest of the audio, and finalize the file. Safe to call twice;
        after a write error it only releases what is still open."""
        import av

        if self._container is None:
            self._close_audio()
            if self._pipe is not None:
                self._pipe.close()
            return
        try:
            for packet in self._stream.encode():
                self._mux_video(packet)
            self._copy_audio(until=self._last_time + 1.0 / self.fps)
        except (av.error.FFmpegError, OSError) as err:
            self._fail(err)
        self._close_audio()
        self._kept_bytes = self._file_size()
        container, self._container = self._container, None
        try:
            container.close()  # the last fragment
            if self._pipe is not None:
                self._pipe.close()
        except (av.error.FFmpegError, OSError) as err:
            self._fail(err)  # (the container is already closed)
        # FFmpeg may drop a write error of its last flush (a disk filled by another file): check
        # that the file is a chain of whole boxes, else cut it back to its last whole fragment.
        whole = whole_fragments_end(self.path)
        if whole is not None:
            if whole > self._kept_bytes:  # only the index after the last fragment was cut
                self.frames_on_disk = self._packets
            self._kept_bytes = whole
            self._fail(OSError(errno.ENOSPC, "its last fragment could not be written whole"))
        self.frames_on_disk = self._packets

    def __enter__(self) -> "VideoWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Pipe:
    """Standard output (`-`), a pipe or a FIFO as a write-only file for PyAV (no `seek`: the muxer
    writes straight through), counting the bytes written."""

    def __init__(self, path: str):
        try:
            self.fd = os.dup(1) if path == "-" else os.open(path, os.O_WRONLY)
        except OSError as err:
            raise UserError(f"Cannot write video {path} ({err.strerror}); choose a writable --out path.") from None
        self.written = 0

    def write(self, data) -> int:
        view = memoryview(data)
        while view:
            sent = os.write(self.fd, view)
            self.written += sent
            view = view[sent:]
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)


def _is_stream(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _reader_gone(err: BaseException) -> bool:
    """A write error that means the reader closed the pipe (EPIPE), however it was wrapped."""
    while err is not None:
        if isinstance(err, BrokenPipeError) or getattr(err, "errno", None) == errno.EPIPE:
            return True
        err = err.__cause__ or err.__context__
    return False


def whole_fragments_end(path: Path) -> Optional[int]:
    """None when the MP4 at `path` is a chain of whole top-level boxes to its last byte; else
    the size up to the end of its last whole fragment (moof + mdat), or of its header (moov)
    when no fragment is whole: where the file must be cut so that it decodes to its end."""
    try:
        size = os.stat(path).st_size
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            offset, keep, previous = 0, 0, b""
            while offset < size:
                f.seek(offset)
                head = f.read(16)
                if len(head) < 8:
                    return keep
                length, kind = struct.unpack(">I4s", head[:8])
                if length == 1 and len(head) == 16:
                    length = struct.unpack(">Q", head[8:16])[0]
                elif length == 0:  # "to the end of the file": whole by definition
                    return None
                if length < 8 or offset + length > size:
                    return keep  # a box cut short
                offset += length
                if kind == b"moov" or (kind == b"mdat" and previous == b"moof"):
                    keep = offset
                previous = kind
    except OSError:
        return None
    return None


def _reason(err: Exception) -> str:
    text = getattr(err, "strerror", None) or str(err) or type(err).__name__
    return str(text).strip().splitlines()[0]


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
        raise UserError(f"Cannot create the folder {folder} for {path.name} ({err.strerror}); choose a writable output "
                        "path.") from None
    if path.is_dir():
        raise UserError(f"Output {path} is a folder; give a file name such as {path / 'out.mp4'}.")
    if not os.access(folder, os.W_OK):
        raise UserError(f"Cannot write to {folder} (permission denied); choose a writable output path.")
