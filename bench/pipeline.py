"""Pipeline throughput against the model alone, measured in one run.

    python bench/pipeline.py                       # CPU: 0.4B pose at 256x192 bf16
    python bench/pipeline.py --tasks pose,seg --input-size 1024x768 --dtype bf16   # on a GPU

Builds the real Sapiens2 architecture with RANDOM weights (speed does not
depend on weight values), makes a synthetic video with one person-sized
subject, then times (1) the Predictor alone on the decoded frames and (2) the
whole threaded pipeline (decode -> boxes -> infer -> identity + smoothing ->
render -> H.264 + tracks) on the same video. Prints both rates, their ratio
and the per-stage latencies; the stage with the largest p50 is the one that
holds the pipeline back.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.build import DTYPES  # noqa: E402
from realtime.detect import make_box_finder  # noqa: E402
from realtime.infer import Predictor  # noqa: E402
from realtime.models import build_model  # noqa: E402
from realtime.options import ModelOptions, OutputOptions, PeopleOptions
from realtime.run import RunOptions, parse_size, parse_tasks, run  # noqa: E402


def synthetic_video(path: Path, frames: int, height: int, width: int, fps: int = 30) -> Path:
    """A moving bright 'person' (an ellipse) on a textured background."""
    rng = np.random.default_rng(0)
    background = rng.integers(30, 90, (height, width, 3), dtype=np.uint8)
    yy, xx = np.mgrid[0:height, 0:width]
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            cx = width * (0.3 + 0.4 * i / max(frames - 1, 1))
            body = ((xx - cx) / (0.12 * width)) ** 2 + ((yy - height / 2) / (0.4 * height)) ** 2 < 1
            img = background.copy()
            img[body] = (200, 170, 150)
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def decoded_frames(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="sapiens2_0.4b")
    parser.add_argument("--tasks", default="pose")
    parser.add_argument("--input-size", default="256x192")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--video-size", default="480x640", help="HxW of the synthetic source video")
    parser.add_argument("--no-video", action="store_true", help="write tracks only (no render/encode)")
    parser.add_argument("--dense-every", type=int, default=1)
    args = parser.parse_args()

    tasks = parse_tasks(args.tasks)
    input_hw = parse_size(args.input_size)
    dtype = DTYPES[args.dtype]
    vh, vw = (int(v) for v in args.video_size.split("x"))
    device_name = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"CPU ({torch.get_num_threads()} threads)"
    print(f"device: {device_name}; torch {torch.__version__}")
    print(f"models: {args.arch} {','.join(tasks)} with RANDOM weights (speed does not depend on weight values); "
          f"input {input_hw[0]}x{input_hw[1]}, {args.dtype}; video {vh}x{vw}, {args.frames} frames, one person")

    models = {task: build_model(task, args.arch, device=args.device, dtype=dtype) for task in tasks}
    with tempfile.TemporaryDirectory() as tmp:
        video = synthetic_video(Path(tmp) / "bench.mp4", args.frames, vh, vw)
        frames = decoded_frames(video)
        boxes = np.array([[0, 0, vw - 1, vh - 1]], np.float32)

        predictor = Predictor(models, device=args.device, dtype=dtype, input_hw=input_hw)
        for _ in range(2):  # warm-up (allocator, kernels, autotuning)
            predictor.predict(frames[0], boxes)
        _sync(args.device)
        start = time.perf_counter()
        for frame in frames:
            predictor.predict(frame, boxes)
        _sync(args.device)
        model_fps = len(frames) / (time.perf_counter() - start)

        options = RunOptions(source=str(video),
                             models=ModelOptions(tasks=tasks, device=args.device, dtype=args.dtype, input_hw=input_hw,
                                                 dense_every=args.dense_every),
                             people=PeopleOptions(boxes_from="frame"),
                             outputs=OutputOptions(out=str(Path(tmp) / "out.mp4"), tracks=str(Path(tmp) / "t.jsonl"),
                                                   no_video=args.no_video, progress=False))
        finder = make_box_finder(boxes_from="frame")
        start = time.perf_counter()
        summary = run(options, models=models, box_finder=finder)
        overall_fps = summary.result.frames_out / (time.perf_counter() - start)

    stats = summary.stats
    pipeline_fps = stats["fps"]  # steady state: frames written per second between the first and the last
    print(f"model only (Predictor.predict, crops + forward + decode): {model_fps:.2f} fps")
    print(f"whole pipeline (decode -> render + encode + tracks):      {pipeline_fps:.2f} fps steady state "
          f"({overall_fps:.2f} fps counting start-up and warm-up)")
    print(f"ratio pipeline / model-only: {pipeline_fps / model_fps:.3f}")
    if "latency_ms" in stats:
        print(f"latency frame read -> written: p50 {stats['latency_ms']:.1f} ms, p95 {stats['latency_p95_ms']:.1f} ms")
    stages = {k[6:-3]: v for k, v in stats.items() if k.startswith("stage.") and not k.endswith("_p95_ms")}
    for name, p50 in stages.items():
        print(f"  stage {name:7s} p50 {p50:8.1f} ms   p95 {stats[f'stage.{name}_p95_ms']:8.1f} ms")
    print(f"held back by: {max(stages, key=stages.get)}")


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
