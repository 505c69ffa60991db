"""Time the overlay rendering (pose + body-part colours) of a 1080p frame on the CPU.

Synthetic but realistically sized people (`synthetic.people`, not model output): 4 persons
of 308 keypoints each, segmentation at half resolution (as a pipeline running the dense
task on a smaller input would give). Prints milliseconds per frame for the overlay
alone and for the full 3-pane composition (overlay + depth + normals): wall-clock median
and minimum, and process CPU time per frame (summed over OpenCV's threads).

    python bench/render.py [--persons 4] [--repeats 50] [--cv-threads N]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # synthetic/ is not installed

from realtime.frames import Frame  # noqa: E402
from synthetic.people import synthetic_dense, synthetic_person  # noqa: E402
from viz.compose import Layers, compose  # noqa: E402
from viz.keypoints import SkeletonAnnotator  # noqa: E402
from viz.maps import overlay_seg  # noqa: E402


def _time_ms(fn, repeats: int) -> tuple[float, float, float]:
    """Median and minimum wall milliseconds of `repeats` calls (after 3 warm-up calls), and
    the mean process CPU milliseconds per call (all threads; less sensitive to other load)."""
    for _ in range(3):
        fn()
    times = []
    cpu_start = time.process_time()
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    cpu_ms = (time.process_time() - cpu_start) * 1e3 / repeats
    return float(np.median(times)), float(np.min(times)), cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--persons", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--cv-threads", type=int, help="cv2.setNumThreads (default: OpenCV's choice)")
    args = parser.parse_args()
    if args.cv_threads is not None:
        cv2.setNumThreads(args.cv_threads)

    rng = np.random.default_rng(0)
    h, w = 1080, 1920
    image = cv2.GaussianBlur(rng.integers(0, 255, (h, w, 3), dtype=np.uint8), (0, 0), 3)
    step = (w - 240) / args.persons  # people side by side, 800 px tall and a bit shorter each
    people = tuple(
        synthetic_person((120 + i * step, 150, 120 + (i + 0.6) * step, 950 - 60 * i), track_id=i, rng=rng)
        for i in range(args.persons)
    )
    dense = synthetic_dense((h, w), people, map_scale=0.5)
    frame = Frame(index=0, timestamp=0.0, image=image, people=people, dense=dense)
    annotator = SkeletonAnnotator()

    def overlay() -> np.ndarray:
        return annotator.draw(overlay_seg(image, dense.seg), people, inplace=True)

    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"device: CPU ({cpu}), OpenCV {cv2.__version__}, cv2 threads {cv2.getNumThreads()}, load average {load}")
    seg_h, seg_w = dense.seg.shape
    print(f"input: {w}x{h} RGB, {args.persons} synthetic persons x 308 keypoints, seg map {seg_w}x{seg_h}")
    for name, fn in [
        ("skeleton only", lambda: annotator.draw(image, people)),
        ("seg overlay only", lambda: overlay_seg(image, dense.seg)),
        ("overlay (seg + skeleton)", overlay),
        ("compose 3 panes (overlay + depth + normals)", lambda: compose(frame, Layers(), caption="25.0 fps  40 ms")),
    ]:
        median, best, cpu = _time_ms(fn, args.repeats)
        print(f"{name:45s} wall median {median:6.2f} ms   min {best:6.2f} ms   cpu {cpu:6.2f} ms")


if __name__ == "__main__":
    main()
