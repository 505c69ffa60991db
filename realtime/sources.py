"""Where frames come from: webcams (OpenCV), video files and network streams
(PyAV), and image folders or globs.

Every source yields `(timestamp_seconds, rgb_uint8_image)` in order.
Timestamps come from the container (pts x time_base, so variable frame rates
are kept) or, for webcams, from the capture clock. Rotation metadata is
applied and any pixel format becomes 8-bit RGB. Dropping stale frames of live
sources is the pipeline's job (its source gate), not the source's.
"""

from __future__ import annotations

import errno
import glob
import itertools
import logging
import math
import os
import re
import select
import stat
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import cv2
import numpy as np

from realtime.errors import UserError

log = logging.getLogger(__name__)

STREAM_SCHEMES = ("rtsp://", "rtsps://", "rtmp://", "udp://", "tcp://", "http://", "https://", "srt://")
# Live streams: FFmpeg's read-ahead at open. Probing reads up to 5 MB / 5 s of the stream before the
# first frame comes out (seconds on a live camera), and every frame read then waits behind that
# backlog. The least that still finds the stream (32 bytes: the first packet) and 1 microsecond of
# stream time (0 would mean the default, 5 s). `fflags=nobuffer` is left out: it throws the probed
# packets away, i.e. the first frames the camera sent, and saves nothing once probing reads one packet.
LOW_DELAY_OPTIONS = {"probesize": "32", "analyzeduration": "1"}
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".gif"}
ANIMATION_SUFFIXES = {".gif", ".webp", ".png"}  # may hold several frames with their durations
MULTI_PAGE_SUFFIXES = {".tif", ".tiff"}  # may hold several pages


@dataclass(frozen=True)
class SourceInfo:
    """What is known about a source once it is open.

    name:        short name for output folders (file stem, "webcam0", host name).
    live:        True for cameras and network streams: the pipeline drops stale frames.
    width, height: frame size after rotation.
    fps:         nominal frame rate (the container's average rate), if known.
    frame_count: number of frames, if known (files and folders), for progress bars.
    audio_path:  the file whose first audio stream the video writer may copy, if any.
    """

    name: str
    uri: str
    live: bool
    width: int
    height: int
    fps: Optional[float]
    frame_count: Optional[int]
    audio_path: Optional[str] = None


class Source(ABC):
    """Base class: `open()` fills `info`; `frames()` yields (timestamp, rgb); `close()` releases."""

    info: SourceInfo
    # Set when the source ended early (truncated file, lost stream): one sentence for the summary.
    ended_early: Optional[str] = None

    @abstractmethod
    def open(self) -> SourceInfo:
        """Open the source (or fail with a UserError) and return what is known about it."""

    @abstractmethod
    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        """(timestamp seconds, (H, W, 3) uint8 RGB) in order, until the source ends."""

    def close(self) -> None:  # noqa: B027 (optional: a source with nothing to release keeps this)
        pass

    def cancel(self) -> None:  # noqa: B027 (optional: a source whose reads never block keeps this)
        """Unblock a read in progress; called from another thread when the run stops."""

    def input_files(self) -> list[str]:
        """The files this source reads (outputs must never be one of them)."""
        return []

    def __enter__(self) -> "Source":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_source(spec: str, *, width: Optional[int] = None, height: Optional[int] = None,
                fps: Optional[float] = None, timeout: float = 10.0, reconnects: int = 3) -> Source:
    """Pick the source for a command-line SOURCE: `0` / `webcam:0`, a URL, a folder or glob of
    images, a single image, a named pipe, or a video file. Does not open it yet."""
    check_timeout(timeout)
    webcam = re.fullmatch(r"(?:webcam:)?(\d+)", spec.strip())
    if webcam:
        return WebcamSource(int(webcam.group(1)), width=width, height=height, fps=fps)
    if spec.startswith(STREAM_SCHEMES):
        return VideoSource(spec, live=True, timeout=timeout, reconnects=reconnects)
    path = Path(spec).expanduser()
    if path.is_dir():
        return ImageFolderSource(str(path), fps=fps)
    if not path.exists() and any(ch in spec for ch in "*?["):  # a file named "take[1].mp4" is a file, not a pattern
        return ImageFolderSource(spec, fps=fps)
    if not path.exists():
        raise UserError(f"Source {spec} does not exist; pass a video file, an image folder, a webcam index like 0, "
                        f"or a stream URL.")
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return ImageFolderSource(str(path), fps=fps)
    return VideoSource(str(path), live=False, timeout=timeout, reconnects=0)


def check_timeout(timeout: float) -> None:
    """Every wait is bounded: a timeout must be a positive number of seconds."""
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise UserError(f"--timeout {timeout} is not a positive number of seconds; give e.g. --timeout 10.")


# --------------------------------------------------------------------------- video (PyAV)


class VideoSource(Source):
    """A video file or network stream decoded with PyAV.

    Files: every frame, in order, with container timestamps. A file that stops
    decoding part-way (truncated, corrupt) ends the source with `ended_early`
    set; what decoded before stays valid. Streams: `timeout` seconds to open and
    per read; a stream that dies is reopened up to `reconnects` times.

    low_delay (default: on for live streams): each frame is handed on as soon as it is
    decoded. Open with the least probing (`LOW_DELAY_OPTIONS`), decode with slice threads
    only (frame threads hold back one frame per extra thread: 2 frames, 67 ms at 30 fps, on
    a 2-core machine) and FFmpeg's low-delay flag (no wait for frames to reorder).
    """

    def __init__(self, uri: str, *, live: bool, timeout: float = 10.0, reconnects: int = 0,
                 low_delay: Optional[bool] = None):
        check_timeout(timeout)
        self.uri = uri
        self.live = live
        self.low_delay = live if low_delay is None else low_delay
        self.timeout = timeout
        self.reconnects = reconnects
        self._container = None
        self._decoded = None
        self._pipe: Optional[_PipeReader] = None

    def open(self) -> SourceInfo:
        self._container = self._open_container()
        stream = self._container.streams.video[0]
        # Decode the first frame now: it proves the file is video and gives the
        # upright size (rotation metadata lives on the frames).
        self._decoded = self._container.decode(stream)
        first = self._first_frame(stream)
        self._first = first
        w, h = first.width, first.height
        if abs(first.rotation) in (90, 270):
            w, h = h, w
        rate = stream.average_rate or stream.guessed_rate
        if self.low_delay and not stream.average_rate and stream.codec_context.framerate:
            rate = stream.codec_context.framerate  # too little was probed to average: the codec's own (H.264 timing info)
        count = stream.frames or None
        if not count and not self.live and rate and stream.duration and stream.time_base:
            count = int(round(float(stream.duration * stream.time_base) * float(rate)))
        has_audio = bool(self._container.streams.audio) and not self.live
        self.info = SourceInfo(
            name=_stream_name(self.uri) if self.live else Path(self.uri).stem,
            uri=self.uri, live=self.live, width=w, height=h,
            fps=float(rate) if rate else None, frame_count=count,
            audio_path=self.uri if has_audio else None,
        )
        return self.info

    def _first_frame(self, stream):
        """The first decoded frame. A live stream joined part-way (UDP, a camera's RTSP) can begin with data that
        does not decode, a transport packet cut short or frames without their keyframe: that is skipped for up
        to `timeout` seconds. A file, or a stream that never decodes, is refused."""
        import av

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return next(self._decoded)
            except StopIteration:
                self.close()
                raise UserError(f"{self.uri} contains no decodable video frames; check that the file is complete.") from None
            except Exception as err:  # corrupt from the first packet on
                if self.live and isinstance(err, av.error.FFmpegError) and time.monotonic() < deadline:
                    log.info("skipping data that does not decode at the start of %s (%s)", self.uri, _av_reason(err))
                    self._decoded = self._container.decode(stream)  # the container reads on from where it is
                    continue
                self.close()
                raise UserError(f"{self.uri} cannot be decoded ({_av_reason(err)}); "
                                f"check that it is a complete, supported video.") from None

    def _open_container(self):
        import av

        options = {"rtsp_transport": "tcp"} if self.uri.startswith("rtsp") else {}
        if self.low_delay:
            options.update(LOW_DELAY_OPTIONS)
        target = self.uri
        if not self.live and _is_fifo(self.uri):
            self._pipe = target = _PipeReader(self.uri, self.timeout)
            self._pipe.wait_for_data()
        try:
            container = av.open(target, options=options, timeout=(self.timeout, self.timeout))
        except av.error.FileNotFoundError:
            raise UserError(f"Video {self.uri} does not exist; check the path.") from None
        except av.error.ExitError as err:  # timeout while opening a stream
            raise UserError(f"Stream {self.uri} did not answer within {self.timeout:g} s ({_av_reason(err)}); "
                            f"check the URL and that the sender is running, or raise --timeout.") from None
        except (av.error.FFmpegError, OSError) as err:
            if not self.live and self._pipe is None and _mp4_without_index(self.uri):
                raise UserError(f"File {self.uri} is an MP4 cut off before its index (moov) was written, so it is truncated "
                                f"and nothing in it can be decoded; re-record it, or repair it with a tool such as "
                                f"untrunc.") from None
            what = "Stream" if self.live else "File"
            raise UserError(f"{what} {self.uri} cannot be read as video ({_av_reason(err)}); "
                            f"check that it is a complete, supported video file or stream.") from None
        if not container.streams.video:
            container.close()
            raise UserError(f"{self.uri} has no video stream; pass a file or stream that contains video.")
        stream = container.streams.video[0]
        if self.low_delay:
            stream.thread_type = "SLICE"
            stream.codec_context.flags |= av.codec.context.Flags.low_delay
        else:
            stream.thread_type = "AUTO"
        return container

    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        import av

        attempts_left = self.reconnects
        period = 1.0 / (self.info.fps or 30.0)
        offset = 0.0  # after a reconnect the stream's clock restarts: continue after the last time
        last_t = -np.inf
        pending = [self._first]
        while True:
            start: Optional[float] = None
            raw: Optional[float] = None
            try:
                for frame in itertools.chain(pending, self._decoded):
                    # raw .h264/.h265 streams carry no timestamps: count frames at the nominal rate
                    time_ok = frame.time is not None and math.isfinite(frame.time)
                    raw = frame.time if time_ok else (raw + period if raw is not None else 0.0)
                    if start is None:
                        start = raw
                    t = offset + raw - start
                    if t <= last_t:  # repeated or broken pts: keep time strictly increasing
                        t = last_t + 1e-6
                    last_t = t
                    yield t, _rotate(frame.to_ndarray(format="rgb24"), frame.rotation)
                if not self.live:
                    self._check_complete(last_t + (start or 0.0))
                    return
                reason = "the sender closed it"  # a live stream that ends is a lost stream
            except (av.error.FFmpegError, OSError) as err:
                silent = isinstance(err, (av.error.ExitError, TimeoutError))
                reason = f"no data for {self.timeout:g} s" if silent else _av_reason(err)
                if not self.live:
                    self.ended_early = (f"{self.uri} stopped decoding after {max(last_t, 0.0):.2f} s ({reason}); "
                                        f"the file is probably truncated or corrupt, and everything before that point "
                                        f"was processed")
                    log.warning(self.ended_early)
                    return
            pending = []
            if attempts_left <= 0:
                self.ended_early = (f"stream {self.uri} was lost ({reason}) and did not come back after "
                                    f"{self.reconnects} reconnects")
                log.warning(self.ended_early)
                return
            attempts_left -= 1
            log.warning("stream %s lost (%s); reconnecting (%d left)", self.uri, reason, attempts_left)
            self.close()
            try:
                self._container = self._open_container()
            except UserError as reopen_error:
                self.ended_early = f"stream {self.uri} was lost and could not be reopened: {reopen_error}"
                log.warning(self.ended_early)
                return
            self._decoded = self._container.decode(self._container.streams.video[0])
            offset = max(last_t, 0.0) + period

    def input_files(self) -> list[str]:
        return [] if self.live else [self.uri]

    def _check_complete(self, last_pts_seconds: float) -> None:
        """A file whose frames stop well before the duration its header promises was cut short."""
        container = self._container
        stream = container.streams.video[0]
        if stream.duration is not None and stream.time_base is not None:
            expected = float((stream.start_time or 0) * stream.time_base) + float(stream.duration * stream.time_base)
        elif container.duration is not None:
            expected = container.duration / 1e6
        else:
            return
        period = 1.0 / (self.info.fps or 30.0)
        if last_pts_seconds + 2 * period < expected - 0.05:
            self.ended_early = (f"{self.uri} ended at {last_pts_seconds:.2f} s although its header says {expected:.2f} s; "
                                f"the file is probably truncated, and everything before that point was processed")
            log.warning(self.ended_early)

    def cancel(self) -> None:
        if self._pipe is not None:
            self._pipe.cancel()

    def close(self) -> None:
        self._decoded = None
        if self._container is not None:
            try:
                self._container.close()
            except Exception:  # closing a dead stream can fail; nothing is left to save
                pass
            self._container = None
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


class _PipeReader:
    """A named pipe (FIFO) read by PyAV through Python with bounded waits: a plain open()
    of a FIFO blocks until some program opens it for writing, and a read blocks for ever
    when the writer stalls. Here every wait is at most `timeout` seconds and ends early
    on Ctrl+C (main thread) or `cancel()` (the run stopping)."""

    POLL_MS = 200

    def __init__(self, path: str, timeout: float):
        self.path, self.timeout = path, timeout
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # returns at once, writer or not
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)
        self._cancelled = threading.Event()

    def _wait(self) -> int:
        """Poll until data or the writer's end; the poll mask. Raises on timeout or cancel."""
        deadline = time.monotonic() + self.timeout
        while not self._cancelled.is_set():
            events = self._poll.poll(self.POLL_MS)  # Linux: nothing at all while no writer ever came
            if events:
                return events[0][1]
            if time.monotonic() > deadline:
                raise TimeoutError(errno.ETIMEDOUT, f"no data for {self.timeout:g} s")
        raise InterruptedError(errno.EINTR, "the run stopped")

    def wait_for_data(self) -> None:
        try:
            self._wait()
        except TimeoutError:
            self.close()
            raise UserError(f"Nothing was written into the pipe {self.path} within {self.timeout:g} s; start the program "
                            f"that writes into it, or raise --timeout.") from None

    def read(self, size: int) -> bytes:
        while True:
            mask = self._wait()
            if mask & select.POLLIN:
                try:
                    return os.read(self._fd, size)
                except BlockingIOError:
                    continue
            return b""  # POLLHUP: the writer closed the pipe

    def cancel(self) -> None:
        self._cancelled.set()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _rotate(image: np.ndarray, degrees_ccw: int) -> np.ndarray:
    """Apply a display rotation (degrees counter-clockwise) so the image is shown upright."""
    k = int(round(degrees_ccw / 90.0)) % 4
    return np.ascontiguousarray(np.rot90(image, k)) if k else image


def _mp4_without_index(path: str) -> bool:
    """True for an MP4/MOV file whose top-level boxes end before a 'moov' box (a cut recording)."""
    try:
        with open(path, "rb") as f:
            size_total = f.seek(0, 2)
            f.seek(0)
            if f.read(8)[4:8] != b"ftyp":
                return False
            offset = 0
            while offset + 8 <= size_total:
                f.seek(offset)
                header = f.read(16)
                size, kind = int.from_bytes(header[:4], "big"), header[4:8]
                if kind == b"moov":
                    return False
                if size == 1:
                    size = int.from_bytes(header[8:16], "big")
                if size < 8:
                    break
                offset += size
            return True
    except OSError:
        return False


def _stream_name(uri: str) -> str:
    host = re.sub(r"^[a-z]+://", "", uri).split("/")[0].split("@")[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", host) or "stream"


def _av_reason(err: Exception) -> str:
    text = getattr(err, "strerror", None) or str(err) or type(err).__name__
    return str(text).strip().splitlines()[0]


# --------------------------------------------------------------------------- webcam (OpenCV)


class WebcamSource(Source):
    """A local camera by index, read with OpenCV; timestamps from the capture clock."""

    def __init__(self, index: int, *, width: Optional[int] = None, height: Optional[int] = None, fps: Optional[float] = None):
        self.index = index
        self.width, self.height, self.fps = width, height, fps
        self._cap = None

    def open(self) -> SourceInfo:
        _quiet_opencv()
        cap = cv2.VideoCapture(self.index)
        if not cap.isOpened():
            cap.release()
            raise UserError(f"Webcam {self.index} could not be opened; check that a camera with this index exists and is "
                            f"not used by another program.")
        wanted = ((cv2.CAP_PROP_FRAME_WIDTH, self.width), (cv2.CAP_PROP_FRAME_HEIGHT, self.height), (cv2.CAP_PROP_FPS, self.fps))
        for prop, value in wanted:
            if value:
                cap.set(prop, value)
        ok, first = cap.read()
        if not ok or first is None:
            cap.release()
            raise UserError(f"Webcam {self.index} opened but gave no image; check the camera connection and permissions.")
        fps = cap.get(cv2.CAP_PROP_FPS) or self.fps
        self._cap, self._first = cap, first
        self.info = SourceInfo(name=f"webcam{self.index}", uri=f"webcam:{self.index}", live=True,
                               width=first.shape[1], height=first.shape[0], fps=float(fps) if fps else None, frame_count=None)
        return self.info

    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        t0 = time.perf_counter()
        frame = self._first
        misses = 0
        while True:
            if frame is not None:
                yield time.perf_counter() - t0, _to_rgb8(frame, bgr=True)
                misses = 0
            elif misses >= 30:  # about a second without an image: the camera is gone
                self.ended_early = f"webcam {self.index} stopped delivering images"
                return
            else:
                misses += 1
            ok, frame = self._cap.read()
            if not ok:
                frame = None

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None


# --------------------------------------------------------------------------- images


class ImageFolderSource(Source):
    """A folder of images (natural sort order), a glob pattern, or one image file.

    Animated GIF/WebP/PNG files and multi-page TIFFs give all their frames.
    Timestamps are frame index / fps (default 30); a single animated file
    without `fps` keeps its own frame durations. Unreadable files are skipped
    with a warning (their time slot stays empty); grayscale, RGBA and 16-bit
    images become 8-bit RGB.
    """

    def __init__(self, spec: str, *, fps: Optional[float] = None):
        self.spec = spec
        self.own_durations = fps is None
        self.fps = fps or 30.0
        self.skipped: list[str] = []

    def open(self) -> SourceInfo:
        _quiet_opencv()
        path = Path(self.spec).expanduser()
        if path.is_dir():
            files = [p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()]
            name = path.name
        elif path.is_file():
            files, name = [path], path.stem
        else:
            files = [Path(p) for p in glob.glob(self.spec) if Path(p).suffix.lower() in IMAGE_SUFFIXES]
            name = Path(self.spec).parent.name or "images"
        if not files:
            raise UserError(f"No images found in {self.spec}; pass a folder or glob with .jpg/.png/.bmp/.tif/.webp/.gif files.")
        self.files = sorted(files, key=_natural_key)
        self.counts = [_frame_count(f) for f in self.files]
        self.own_durations = self.own_durations and len(self.files) == 1 and self.counts[0] > 1
        first = self._read(self.files[0])
        if first is None:
            raise UserError(f"Image {self.files[0]} cannot be read; check that it is a valid image file.")
        self.info = SourceInfo(name=name, uri=self.spec, live=False, width=first.shape[1], height=first.shape[0],
                               fps=self.fps, frame_count=sum(self.counts))
        return self.info

    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        index, clock = 0, 0.0
        for file, count in zip(self.files, self.counts):
            images, durations = self._read_all(file, count)
            if not images:
                log.warning("skipping unreadable image %s", file)
                self.skipped.append(str(file))
                index += 1
                continue
            for image, duration in zip(images, durations):
                yield (clock if self.own_durations else index / self.fps), image
                index += 1
                clock += duration if duration > 0 else 1.0 / self.fps

    def input_files(self) -> list[str]:
        return [str(f) for f in getattr(self, "files", [])]

    def frame_file(self, index: int) -> str:
        """The file name frame `index` came from (`name.gif#3` for the 4th frame of an animation)."""
        for file, count in zip(self.files, self.counts):
            if index < count:
                return file.name if count == 1 else f"{file.name}#{index}"
            index -= count
        raise IndexError(index)

    def sizes_differ(self) -> bool:
        """True when the images are not all of one size (read from the file headers only)."""
        from PIL import Image, UnidentifiedImageError

        sizes = set()
        for file in self.files:
            try:
                with Image.open(file) as image:
                    sizes.add(image.size)
            except (OSError, UnidentifiedImageError, ValueError):
                continue  # unreadable here: skipped (with a warning) when the frames are read
            if len(sizes) > 1:
                return True
        return False

    @staticmethod
    def _read(file: Path) -> Optional[np.ndarray]:
        raw = cv2.imread(str(file), cv2.IMREAD_UNCHANGED)
        return None if raw is None else _to_rgb8(raw, bgr=True)

    def _read_all(self, file: Path, count: int) -> tuple[list[np.ndarray], list[float]]:
        """Every frame of a file (RGB) and its display duration in seconds (0 = unknown)."""
        if count <= 1:
            image = self._read(file)
            return ([image], [0.0]) if image is not None else ([], [])
        if file.suffix.lower() in MULTI_PAGE_SUFFIXES:
            ok, pages = cv2.imreadmulti(str(file), flags=cv2.IMREAD_UNCHANGED)
            return ([_to_rgb8(p, bgr=True) for p in pages], [0.0] * len(pages)) if ok else ([], [])
        ok, animation = cv2.imreadanimation(str(file))
        if not ok:
            return [], []
        return [_to_rgb8(f, bgr=True) for f in animation.frames], [float(d) / 1000.0 for d in animation.durations]


def _frame_count(file: Path) -> int:
    """Frames in an image file: several for animations and multi-page TIFFs, else 1."""
    if file.suffix.lower() not in ANIMATION_SUFFIXES | MULTI_PAGE_SUFFIXES:
        return 1
    try:
        return max(1, int(cv2.imcount(str(file))))
    except cv2.error:
        return 1


def _quiet_opencv() -> None:
    """OpenCV's own warnings (camera probing, unreadable images) would print before our one
    `error:` line; they stay on with -v (debug logging)."""
    if not log.isEnabledFor(logging.DEBUG):
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path.name)]


def _to_rgb8(image: np.ndarray, *, bgr: bool) -> np.ndarray:
    """Any OpenCV image (gray, BGR, BGRA; 8 or 16 bit, float) -> (H, W, 3) uint8 RGB."""
    if image.dtype == np.uint16:
        image = (image >> 8).astype(np.uint8)
    elif image.dtype != np.uint8:
        image = np.clip(image.astype(np.float32) * (255.0 if image.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)
    if image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2RGB if bgr else cv2.COLOR_RGBA2RGB)
    if image.shape[2] == 1:
        return cv2.cvtColor(image[:, :, 0], cv2.COLOR_GRAY2RGB)
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB) if bgr else np.ascontiguousarray(image)
