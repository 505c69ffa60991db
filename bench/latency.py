"""Glass to datagram on a paced live camera (issue 34).

A camera in this process sends 640x480 frames at 30 fps over loopback TCP (it listens, the run
connects to tcp://127.0.0.1:PORT, as FFmpeg's tcp protocol does by default). `raw`: a YUV4MPEG2
stream (uncompressed 4:2:0, each frame's size known, so no parser waits for the next one); `h264`:
libx264 (ultrafast, zerolatency, every frame intra) with an access unit delimiter after each frame,
which ends the frame for FFmpeg's parser the way an RTP marker bit does on an RTSP camera. Each
frame's send time (perf_counter, just before its bytes go out) is kept here by its place in the
stream, which is the run's frame index.

`sapiens-rt run` (a subprocess: tiny fixture pose model, --boxes-from frame, CPU) reads the stream
and sends `--osc` to a stock python-osc server in this process, which notes when each frame's first
datagram (/sapiens/frame (i)index ...) arrives. perf_counter is CLOCK_MONOTONIC on Linux, one clock
for the camera, the server and the run's own stamps.

    glass-to-datagram = first datagram of frame i received - frame i sent

over the frames sent in the measured window (from `--warmup` s after the first datagram, so model
loading and the stream's start-up backlog are left out, for `--seconds` s). Configurations, in
alternating order each round: plain (tracks to a file, no video), +out (--out overlay.mp4), +view
(--view, QT_QPA_PLATFORM=offscreen), +slow tracks pipe (--tracks - into a reader that sleeps 50 ms
per line). Each run's summary gives the model's own time (infer + collect stage p50), the overlay's
CPU time (render + write stage p50) and the sender's read->sent p50.

The capture's own delay: the same camera into `realtime.sources.VideoSource` in this process,
send -> frame handed on (the pipeline stamps `read_at` there), with the stream options before this
issue (`low_delay=False`) and after, in alternating rounds; the frame's number rides in its
top-left corner, so lost frames cannot shift the keys.

Run: python bench/latency.py [--rounds 3] [--seconds 8] [--configs plain,out,view,slow-pipe] [--codec raw]
     [--compare-with DIR]   (runs of another checkout alternate with this tree's: a before/after)
     python bench/latency.py --profile out   (one in-process run: each stage's time and the waits between)
"""

from __future__ import annotations

import argparse
import fractions
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from realtime.options import LiveOutputOptions, ModelOptions, OutputOptions, PeopleOptions, SourceOptions  # noqa: E402
from realtime.sources import VideoSource  # noqa: E402

FIXTURES = ROOT / "tests" / "reference" / "fixtures"
WIDTH, HEIGHT, FPS = 640, 480, 30
CYCLE = 32  # distinct frames the camera cycles through; the frame number mod CYCLE rides in the corner
MARK = 32  # px: side of the corner square that carries the frame number
SLOW_LINE_SECONDS = 0.05  # the slow tracks reader: one line per 50 ms (20 lines/s, slower than 30 fps)
BEHIND_THREADS = frozenset({"stage-render", "stage-write"})  # OS thread names (realtime/pipeline.py) after the senders
CONFIGS = ("plain", "out", "view", "slow-pipe")
AUD = b"\x00\x00\x00\x01\x09\x10"  # H.264 access unit delimiter (any slice type)


# --------------------------------------------------------------------------- the camera


def _images() -> list[np.ndarray]:
    """CYCLE frames: a bright figure-sized blob walking over a noisy background, frame number in the corner."""
    rng = np.random.default_rng(0)
    background = rng.integers(10, 60, (HEIGHT, WIDTH, 3), dtype=np.uint8)
    yy, xx = np.mgrid[:HEIGHT, :WIDTH]
    images = []
    for k in range(CYCLE):
        cx = 200 + 240 * k / CYCLE
        blob = np.exp(-(((xx - cx) / 60.0) ** 2 + ((yy - 260) / 150.0) ** 2) / 2)
        image = np.clip(background + 190 * blob[..., None], 0, 255).astype(np.uint8)
        image[:MARK, :MARK] = _mark_value(k)
        images.append(image)
    return images


def _mark_value(k: int) -> int:
    return 4 + 8 * (k % CYCLE)


def read_mark(image: np.ndarray) -> int:
    """The frame number mod CYCLE from the corner square (robust to a lossy codec's small errors)."""
    value = float(np.median(image[4:MARK - 4, 4:MARK - 4]))
    return int(round((value - 4) / 8)) % CYCLE


def encoded_frames(codec: str) -> tuple[bytes, list[bytes]]:
    """(stream header, CYCLE encoded frames) for `codec`; encoded once, so the camera costs no CPU per frame."""
    import av

    images = _images()
    if codec == "raw":
        header = f"YUV4MPEG2 W{WIDTH} H{HEIGHT} F{FPS}:1 Ip A1:1 C420jpeg\n".encode()
        frames = []
        for image in images:
            yuv = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuv420p")
            frames.append(b"FRAME\n" + b"".join(bytes(plane) for plane in yuv.planes))
        return header, frames
    if codec == "h264":
        context = av.CodecContext.create("libx264", "w")
        context.width, context.height, context.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        context.time_base = fractions.Fraction(1, FPS)
        context.options = {"preset": "ultrafast", "tune": "zerolatency", "x264-params": "keyint=1"}  # cycles freely
        context.open()
        frames = []
        for k, image in enumerate(images):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuv420p")
            frame.pts = k
            frames.append(b"".join(bytes(p) for p in context.encode(frame)))
        frames[-1] += b"".join(bytes(p) for p in context.encode(None))
        return b"", [f + AUD for f in frames]
    raise SystemExit(f"--codec {codec}: use raw or h264")


class Camera:
    """A paced live camera on 127.0.0.1: accepts one connection, then sends a frame every 1/FPS s.

    Like a camera, it captures on its own clock: when a send blocked past the next frames' capture
    times (the reader was not reading), those frames are skipped, not queued. `sent[i]` is the
    perf_counter just before stream frame i's bytes went out; `stop()` ends the stream.
    `frames`: end the stream after that many; `hold_after`: after sending that frame, wait until
    `resume` is set (at most `hold_limit` s) before the next (tests: is a frame handed on before
    the next one exists?)."""

    def __init__(self, codec: str = "raw", *, frames: Optional[int] = None, hold_after: Optional[int] = None,
                 hold_limit: float = 10.0):
        self.header, self.encoded = encoded_frames(codec)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sent: list[float] = []
        self.skipped = 0
        self.frames, self.hold_after, self.hold_limit = frames, hold_after, hold_limit
        self.resume = threading.Event()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="camera", daemon=True)
        self.thread.start()

    @property
    def uri(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._stop.set()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
                break
            except socket.timeout:
                continue
        else:
            self.listener.close()
            return
        self.listener.close()  # one reader; a reconnect is refused at once
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        period = 1.0 / FPS
        try:
            conn.sendall(self.header)
            start, n = time.perf_counter(), 0  # n: capture count on the camera's clock
            while not self._stop.is_set() and (self.frames is None or len(self.sent) < self.frames):
                delay = start + n * period - time.perf_counter()
                if delay > 0:
                    self._stop.wait(delay)
                    continue
                index = len(self.sent)
                self.sent.append(time.perf_counter())
                conn.sendall(self.encoded[index % CYCLE])
                if index == self.hold_after:
                    self.resume.wait(self.hold_limit)
                    start = time.perf_counter() - (n + 1) * period  # the next frame is due now
                late = int((time.perf_counter() - start) / period) - (n + 1)
                if late > 0:  # frames whose capture time passed while this one was being sent
                    self.skipped += late
                n += 1 + max(late, 0)
        except OSError:  # the reader closed the connection
            pass
        finally:
            conn.close()


# --------------------------------------------------------------------------- the capture's own delay


def capture_delays(codec: str, low_delay: bool, seconds: float, warmup: float = 1.0) -> tuple[list[float], float]:
    """Camera -> VideoSource in this process: per frame, handed on - sent (ms), keyed by the corner
    mark, for frames after `warmup` s; and the open time (ms)."""
    camera = Camera(codec)
    source = VideoSource(camera.uri, live=True, timeout=10.0, low_delay=low_delay)
    t0 = time.perf_counter()
    source.open()
    opened = (time.perf_counter() - t0) * 1000.0
    t0 = time.perf_counter()  # the warm-up counts from here: the open's backlog is `opened`, reported apart
    delays, expected = [], 0
    try:
        for _, image in source.frames():
            now = time.perf_counter()
            k = expected + (read_mark(image) - expected) % CYCLE  # the first number >= expected with this mark
            expected = k + 1
            if k < len(camera.sent) and now - t0 > warmup:
                delays.append((now - camera.sent[k]) * 1000.0)
            if now - t0 > warmup + seconds:
                break
    finally:
        camera.stop()
        source.close()
    return delays, opened


# --------------------------------------------------------------------------- the run and the receiver


class FirstDatagrams:
    """A stock python-osc UDP server; the handler of /sapiens/frame (the first datagram of every
    frame) notes its arrival (perf_counter) by frame index."""

    def __init__(self):
        from pythonosc.dispatcher import Dispatcher
        from pythonosc.osc_server import BlockingOSCUDPServer

        self.arrived: dict[int, float] = {}
        dispatcher = Dispatcher()
        dispatcher.map("/sapiens/frame", self._frame)
        self.server = BlockingOSCUDPServer(("127.0.0.1", 0), dispatcher)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def _frame(self, _address: str, index: int, *_args) -> None:
        self.arrived.setdefault(int(index), time.perf_counter())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class RunResult:
    config: str
    g2d: list[float] = field(default_factory=list)  # ms, frames in the measured window that got a datagram
    sent: int = 0  # frames the camera sent in the window
    stages: dict[str, float] = field(default_factory=dict)  # stage -> p50 ms (the run's summary)
    read_sent: dict[str, float] = field(default_factory=dict)  # sender -> read->sent p50 ms
    behind_skipped: int = 0
    cpu_ms: float = float("nan")  # the run's CPU time (all threads) per camera frame in the window
    behind_cpu_ms: float = float("nan")  # the same, of the threads after the live senders (render, write, encoder)
    exit_code: Optional[int] = None
    error: Optional[str] = None

    @property
    def p50(self) -> float:
        return float(np.percentile(self.g2d, 50)) if self.g2d else float("nan")

    @property
    def p95(self) -> float:
        return float(np.percentile(self.g2d, 95)) if self.g2d else float("nan")

    @property
    def model(self) -> float:
        return self.stages.get("infer", 0.0) + self.stages.get("collect", 0.0)

    @property
    def overlay(self) -> float:
        return self.stages.get("render", 0.0) + self.stages.get("write", 0.0)


def run_command(uri: str, osc_port: int, config: str, folder: Path, tasks: str = "pose") -> list[str]:
    command = [sys.executable, "-m", "realtime.cli", "run", uri, "--device", "cpu", "--tasks", tasks,
               "--checkpoint", f"pose={FIXTURES / 'pose_weights.safetensors'}", "--input-size", "128x96",
               "--boxes-from", "frame", "--osc", f"127.0.0.1:{osc_port}", "--no-progress", "--timeout", "60",
               "--reconnects", "0"]
    if "pointmap" in tasks or "depth" in tasks:
        command += ["--checkpoint", f"pointmap={FIXTURES / 'pointmap_weights.safetensors'}"]
    tracks = str(folder / "tracks.jsonl")
    return command + {
        "plain": ["--no-video", "--tracks", tracks],
        "out": ["--out", str(folder / "overlay.mp4"), "--tracks", tracks],
        "view": ["--view", "--no-video", "--tracks", tracks],
        "slow-pipe": ["--no-video", "--tracks", "-"],
    }[config]


def run_once(config: str, *, codec: str, seconds: float, warmup: float, tasks: str = "pose", extra: tuple[str, ...] = (),
             env: Optional[dict] = None, root: Path = ROOT) -> RunResult:
    """One `sapiens-rt run` (the code under `root`) on a fresh camera; the camera stops `seconds` after the
    measured window opens."""
    result = RunResult(config)
    camera, receiver = Camera(codec), FirstDatagrams()
    env = {**os.environ, "PYTHONPATH": str(root), "QT_QPA_PLATFORM": "offscreen", **(env or {})}
    with tempfile.TemporaryDirectory() as tmp:
        command = run_command(camera.uri, receiver.port, config, Path(tmp), tasks) + list(extra)
        reader = None
        if config == "slow-pipe":
            run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp)
            reader = subprocess.Popen([sys.executable, "-c", "import sys, time\nfor _ in sys.stdin.buffer:\n"
                                       f"    time.sleep({SLOW_LINE_SECONDS})\n"], stdin=run.stdout)
            run.stdout.close()  # the reader owns the pipe now
            summary_stream = run.stderr
        else:
            run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=tmp)
            summary_stream = run.stdout
        output: list[str] = []
        pump = threading.Thread(target=lambda: output.extend(summary_stream.read().decode(errors="replace").splitlines()),
                                daemon=True)
        pump.start()
        try:
            deadline = time.perf_counter() + 180.0  # model loading included
            while not receiver.arrived and run.poll() is None and time.perf_counter() < deadline:
                time.sleep(0.05)
            window_start = time.perf_counter() + warmup
            window_end = window_start + seconds
            _wait_while_running(run, window_start)
            cpu_start, behind_start = _cpu_seconds(run.pid), _cpu_seconds(run.pid, BEHIND_THREADS)
            _wait_while_running(run, window_end)
            cpu_end, behind_end = _cpu_seconds(run.pid), _cpu_seconds(run.pid, BEHIND_THREADS)
            _wait_while_running(run, window_end + 0.5)
            camera.stop()  # the stream ends; the run finishes ("stream lost") and prints its summary
            try:
                run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
            pump.join(timeout=10)
        finally:
            camera.stop()
            receiver.close()
            if reader is not None:
                reader.kill()
                reader.wait()
    result.exit_code = run.returncode
    window = [i for i, t in enumerate(camera.sent) if window_start <= t < window_end]
    result.sent = len(window)
    result.g2d = [(receiver.arrived[i] - camera.sent[i]) * 1000.0 for i in window if i in receiver.arrived]
    if window and run.returncode is not None and cpu_start is not None and cpu_end is not None:
        result.cpu_ms = (cpu_end - cpu_start) * 1000.0 / len(window)
    if window and run.returncode is not None and behind_start is not None and behind_end is not None:
        result.behind_cpu_ms = (behind_end - behind_start) * 1000.0 / len(window)
    parse_summary(output, result)
    if not result.g2d:
        tail = [line for line in output if line.strip()][-3:]
        result.error = " / ".join(tail) or f"exit code {run.returncode}"
    return result


def _wait_while_running(run: subprocess.Popen, until: float) -> None:
    while run.poll() is None and time.perf_counter() < until:
        time.sleep(0.02)


def _cpu_seconds(pid: int, threads: Optional[frozenset[str]] = None) -> Optional[float]:
    """User + system CPU time so far (Linux /proc) of a process and all its threads, or of its threads
    with these OS names only (the pipeline names its stage threads; threads they start inherit the name);
    None when it cannot be read or no thread has those names (an older tree that does not name them)."""
    stats = [Path(f"/proc/{pid}/stat")] if threads is None else list(Path(f"/proc/{pid}/task").glob("*/stat"))
    total, found = 0.0, False
    for stat in stats:
        try:
            name, rest = stat.read_text().split(" (", 1)[1].rsplit(")", 1)
        except (OSError, IndexError, ValueError):
            if threads is None:
                return None
            continue  # a thread that ended in between
        if threads is None or name in threads:
            fields = rest.split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)
            found = True
    return total if found else None


def parse_summary(lines: list[str], result: RunResult) -> None:
    for line in lines:
        if line.startswith("per stage (p50 / p95 ms):"):
            for name, p50 in re.findall(r"(\w+) ([\d.]+)/[\d.]+", line.split(":", 1)[1]):
                result.stages[name] = float(p50)
        sender = re.match(r"--(\w+): read->sent p50 ([\d.]+) ms", line)
        if sender:
            result.read_sent[sender.group(1)] = float(sender.group(2))
        behind = re.match(r"the picture, video and tracks skipped (\d+) frames", line)
        if behind:
            result.behind_skipped = int(behind.group(1))


# --------------------------------------------------------------------------- where the time goes (in-process)


def profile(config: str, *, codec: str, seconds: float, warmup: float, max_in_flight: Optional[int] = None) -> list[str]:
    """One run in this process (`realtime.run.run`) with every stage's `process` timed per frame:
    the medians of each wait and each stage from `read_at` to the live stage's end, over frames
    read in the measured window. (The camera shares this process: a little more contention than
    the subprocess runs have.)"""
    import realtime.stages as stages_module
    from realtime.options import RunOptions
    from realtime.run import run
    from realtime.stages import live_senders

    marks: dict[int, dict[str, tuple[float, float]]] = {}
    read_at: dict[int, float] = {}
    originals = {}
    for name in stages_module.__all__:
        cls = getattr(stages_module, name)
        if isinstance(cls, type) and hasattr(cls, "process") and hasattr(cls, "name"):
            originals[cls] = cls.process

            def timed(self, frame, _process=cls.process):
                start = time.perf_counter()
                out = _process(self, frame)
                marks.setdefault(frame.index, {})[self.name] = (start, time.perf_counter())
                read_at.setdefault(frame.index, frame.read_at)
                return out

            cls.process = timed
    camera, receiver = Camera(codec), FirstDatagrams()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            outputs = {"plain": dict(no_video=True), "out": dict(out=str(folder / "overlay.mp4"))}[config]

            def stop_later():
                deadline = time.perf_counter() + 180.0
                while not receiver.arrived and time.perf_counter() < deadline:
                    time.sleep(0.05)
                time.sleep(warmup + seconds + 0.5)
                camera.stop()

            stopper = threading.Thread(target=stop_later, daemon=True)
            stopper.start()
            pose = {"pose": str(FIXTURES / "pose_weights.safetensors")}
            run(RunOptions(source=camera.uri, input=SourceOptions(timeout=60.0, reconnects=0, max_in_flight=max_in_flight),
                           models=ModelOptions(tasks=("pose",), checkpoints=pose, device="cpu", input_hw=(128, 96)),
                           people=PeopleOptions(boxes_from="frame"),
                           outputs=OutputOptions(tracks=str(folder / "tracks.jsonl"), progress=False, **outputs),
                           live_outputs=LiveOutputOptions(senders=live_senders(osc=f"127.0.0.1:{receiver.port}"))))
    finally:
        camera.stop()
        receiver.close()
        for cls, process in originals.items():
            cls.process = process
    first = min(receiver.arrived.values())
    window = [i for i in marks if "live" in marks[i] and first + warmup <= read_at[i] < first + warmup + seconds]
    def since_read(name: str) -> float:
        return _median([marks[i][name][0] - read_at[i] for i in window if name in marks[i]])

    order = sorted({name for i in window for name in marks[i]}, key=since_read)
    order = order[:order.index("live") + 1]
    lines = [f"profile ({config}, max in flight {max_in_flight or 'default'}, in-process, {len(window)} frames): "
             f"median ms from read_at"]
    previous_end = {i: read_at[i] for i in window}
    parts = []
    for name in order:
        wait = _median([(marks[i][name][0] - previous_end[i]) * 1000 for i in window if name in marks[i]])
        spent = _median([(marks[i][name][1] - marks[i][name][0]) * 1000 for i in window if name in marks[i]])
        parts.append(f"wait {wait:.1f} + {name} {spent:.1f}")
        for i in window:
            if name in marks[i]:
                previous_end[i] = marks[i][name][1]
    total = _median([(marks[i]["live"][1] - read_at[i]) * 1000 for i in window])
    g2d = _median([(receiver.arrived[i] - camera.sent[i]) * 1000 for i in window if i in receiver.arrived])
    lines.append("  " + ", ".join(parts) + f"; read -> live end {total:.1f}; glass-to-datagram {g2d:.1f}")
    return lines


# --------------------------------------------------------------------------- report


def machine_line() -> str:
    cpu = platform.processor() or "?"
    try:
        names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"machine: {os.cpu_count()} CPUs ({cpu}); load average {load} (1, 5, 15 min)"


def _median(values: list[float]) -> float:
    values = [v for v in values if np.isfinite(v)]
    return statistics.median(values) if values else float("nan")


def _ms(value: float) -> str:
    return f"{value:.1f}" if np.isfinite(value) else "n/a"


def _signed(value: float) -> str:
    return f"{value:+.1f}" if np.isfinite(value) else "n/a"


def _capture_report(codecs: list[str], seconds: float) -> dict[str, float]:
    """Send -> handed on, stream options before this issue vs low delay, alternating; p50 after, by codec."""
    after_p50 = {}
    for codec in codecs:
        samples: dict[bool, list[float]] = {False: [], True: []}
        opens: dict[bool, list[float]] = {False: [], True: []}
        for r in range(2):
            for low in ((False, True) if r % 2 == 0 else (True, False)):
                delays, opened = capture_delays(codec, low, seconds)
                samples[low] += delays
                opens[low].append(opened)
        before, after = (np.percentile(samples[v], [50, 95]) if samples[v] else (np.nan, np.nan) for v in (False, True))
        print(f"capture ({codec}): sent -> handed on p50 {_ms(before[0])} ms, p95 {_ms(before[1])} ms before "
              f"(FFmpeg's default probing, frame threads); p50 {_ms(after[0])} ms, p95 {_ms(after[1])} ms after "
              f"(low delay); open {_ms(_median(opens[False]))} -> {_ms(_median(opens[True]))} ms; "
              f"{len(samples[False])} / {len(samples[True])} frames")
        after_p50[codec] = float(after[0])
    return after_p50


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs per configuration, alternating (default 3)")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per run (default 8)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds after the first datagram left out (default 2)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"comma list of {', '.join(CONFIGS)}")
    parser.add_argument("--codec", default="raw", choices=["raw", "h264"], help="the camera's stream (default raw)")
    parser.add_argument("--tasks", default="pose", help="tasks of the run (pose, or pose,depth)")
    parser.add_argument("--capture-seconds", type=float, default=4.0, help="seconds per capture-delay round (0: skip)")
    parser.add_argument("--capture-codecs", default="raw,h264", help="codecs for the capture-delay rounds")
    parser.add_argument("--compare-with", metavar="DIR", help="another checkout (e.g. `git archive dcb5744 | tar -x -C DIR`) "
                        "whose runs alternate with this tree's, for a before/after in one go")
    parser.add_argument("--max-in-flight", type=int, help="passed to the run (default: the run's own)")
    parser.add_argument("--profile", choices=["plain", "out"], help="only: one in-process run, where the time goes per stage")
    args = parser.parse_args(argv)
    if args.profile:
        print(machine_line())
        print("\n".join(profile(args.profile, codec=args.codec, seconds=args.seconds, warmup=args.warmup,
                                 max_in_flight=args.max_in_flight)))
        print(machine_line().replace("machine:", "machine at the end:"))
        return 0
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if set(configs) - set(CONFIGS) or "plain" not in configs:
        parser.error(f"--configs must include plain and only name {', '.join(CONFIGS)}")
    trees = {"this tree": ROOT}
    if args.compare_with:
        trees["compared"] = Path(args.compare_with).resolve()
    extra = ("--max-in-flight", str(args.max_in_flight)) if args.max_in_flight else ()

    print(machine_line())
    print(f"camera: {WIDTH}x{HEIGHT} at {FPS} fps over loopback TCP ({args.codec}); run: tiny fixture {args.tasks} "
          f"model(s) at 128x96, --boxes-from frame, CPU; receiver: python-osc BlockingOSCUDPServer")
    capture = _capture_report([c.strip() for c in args.capture_codecs.split(",") if c.strip()], args.capture_seconds) \
        if args.capture_seconds > 0 else {}

    runs = [(tree, config) for config in configs for tree in trees]
    results: dict[tuple[str, str], list[RunResult]] = {run: [] for run in runs}
    for r in range(args.rounds):
        for tree, config in runs[r % len(runs):] + runs[:r % len(runs)]:  # each round starts one further on
            result = run_once(config, codec=args.codec, seconds=args.seconds, warmup=args.warmup, tasks=args.tasks,
                              extra=extra, root=trees[tree])
            results[tree, config].append(result)
            label = f"round {r + 1} {config}" + (f" ({tree})" if len(trees) > 1 else "")
            if result.error:
                print(f"{label}: no datagrams measured ({result.error})")
                continue
            senders = ", ".join(f"{k} {_ms(v)}" for k, v in result.read_sent.items())
            print(f"{label}: glass-to-datagram p50 {_ms(result.p50)} ms, p95 {_ms(result.p95)} ms "
                  f"({len(result.g2d)} of {result.sent} frames sent); model {_ms(result.model)} ms; "
                  f"render {_ms(result.stages.get('render', float('nan')))} ms, "
                  f"write {_ms(result.stages.get('write', float('nan')))} ms; "
                  f"CPU {_ms(result.cpu_ms)} ms/frame (behind the senders {_ms(result.behind_cpu_ms)}); "
                  f"read->sent p50 {senders or 'n/a'} ms; behind-skipped {result.behind_skipped}", flush=True)

    def paired(a: tuple[str, str], b: tuple[str, str], pick) -> float:
        """Median over rounds of pick(a) - pick(b), both from the same round."""
        return _median([pick(x) - pick(y) for x, y in zip(results.get(a, []), results.get(b, [])) if not x.error and not y.error])

    def overlay_cost(tree: str) -> float:
        """The overlay's CPU time per camera frame: what the threads after the live senders (drawing,
        writing and the encoder threads they start) used in the --out runs' windows, median over rounds."""
        return _median([r.behind_cpu_ms for r in results.get((tree, "out"), []) if not r.error])

    print("                         g2d p50  g2d p95  model  render+write  read->sent p50  CPU/frame  (ms, medians over rounds)")
    for tree, config in runs:
        rows = [r for r in results[tree, config] if not r.error]
        name = f"{config} ({tree})" if len(trees) > 1 else config
        if not rows:
            reason = results[tree, config][0].error if results[tree, config] else "not run"
            print(f"{name:24s} could not run: {reason}")
            continue
        print(f"{name:24s} {_ms(_median([r.p50 for r in rows])):>7s}  {_ms(_median([r.p95 for r in rows])):>7s}  "
              f"{_ms(_median([r.model for r in rows])):>5s}  {_ms(_median([r.overlay for r in rows])):>12s}  "
              f"{_ms(_median([r.read_sent.get('osc', float('nan')) for r in rows])):>14s}  "
              f"{_ms(_median([r.cpu_ms for r in rows])):>9s}")
    for tree in trees:
        for config in configs[1:]:
            print(f"{config} - plain ({tree}, paired by round): "
                  f"g2d p50 {_signed(paired((tree, config), (tree, 'plain'), lambda r: r.p50))} ms, "
                  f"p95 {_signed(paired((tree, config), (tree, 'plain'), lambda r: r.p95))} ms, "
                  f"model {_signed(paired((tree, config), (tree, 'plain'), lambda r: r.model))} ms")
        if "out" in configs:
            print(f"overlay CPU time per frame ({tree}): render + write + encoder threads {_ms(overlay_cost(tree))} ms; "
                  f"the run's CPU ms per frame with --out - without "
                  f"{_ms(paired((tree, 'out'), (tree, 'plain'), lambda r: r.cpu_ms))} ms "
                  f"(render + write stage time with --out - write without: "
                  f"{_ms(paired((tree, 'out'), (tree, 'plain'), lambda r: r.overlay))} ms)")
    if len(trees) > 1:
        for config in configs:
            print(f"{config}: this tree - compared (paired by round): g2d p50 "
                  f"{_signed(paired(('this tree', config), ('compared', config), lambda r: r.p50))} ms, p95 "
                  f"{_signed(paired(('this tree', config), ('compared', config), lambda r: r.p95))} ms")

    ok = [r for r in results["this tree", "plain"] if not r.error]
    g2d = _median([r.p50 for r in ok])
    model = _median([r.model for r in ok])
    read_sent = _median([r.read_sent.get("osc", float("nan")) for r in ok])
    plus_out = paired(("this tree", "out"), ("this tree", "plain"), lambda r: r.p50)
    plus_pipe = paired(("this tree", "slow-pipe"), ("this tree", "plain"), lambda r: r.p50)
    if np.isfinite(g2d) and np.isfinite(read_sent):
        print(f"plain: glass-to-datagram p50 - read->sent p50 = {g2d - read_sent:+.1f} ms (capture + UDP, seen from outside); "
              f"capture alone p50 {_ms(capture.get(args.codec, float('nan')))} ms")
    goals = [f"g2d p50 <= model + 10 ms: {_verdict(g2d, model + 10)}",
             f"read->sent p50 <= model + 5 ms: {_verdict(read_sent, model + 5)}"]
    if "slow-pipe" in configs:
        goals.append(f"slow pipe adds <= 3 ms: {_verdict(plus_pipe, 3.0)}")
    if "out" in configs:
        cost = overlay_cost("this tree")
        goals.append(f"+out <= its CPU time ({_ms(cost)} ms): {_verdict(plus_out, cost)}")
    print("goals: " + "; ".join(goals))
    print(machine_line().replace("machine:", "machine at the end:"))
    print(f"latency: glass-to-datagram p50 {_ms(g2d)} ms (model {_ms(model)} ms); +out {_signed(plus_out)} ms; "
          f"+slow tracks pipe {_signed(plus_pipe)} ms; read->sent p50 {_ms(read_sent)} ms")
    return 0


def _verdict(value: float, limit: float) -> str:
    if not (np.isfinite(value) and np.isfinite(limit)):
        return "n/a"
    return "yes" if value <= limit else "NO"


if __name__ == "__main__":
    sys.exit(main())
