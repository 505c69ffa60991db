"""Regenerate docs/viewer.png: the live viewer on a real pedestrian video.

There are no trained Sapiens2 weights in this repository, so the overlay data is made
honestly from what OpenCV can compute on the real frames:

* people: moving blobs from OpenCV's MOG2 background subtraction (real silhouettes and
  boxes of the walking pedestrians; standing people are missed);
* keypoints: the synthetic 308-point template of `synthetic.people` placed in each box
  (NOT a pose estimate);
* body parts: each real silhouette pixel takes the nearest synthetic part label;
* depth: distance from the box height (a 1.7 m person), rounded inside the silhouette;
  normals derived from that depth;
* fps / latency: this script's own measured loop on this machine's CPU (background
  subtraction, building the synthetic data, compose), over the last `--shown` frames.

Needs the video from Debian's opencv-doc package (extract without installing):

    cd /tmp && apt-get download opencv-doc && dpkg-deb --fsys-tarfile opencv-doc*.deb \\
        | tar -x --wildcards '*vtest.avi'
    python docs/make_screenshot.py /tmp/usr/share/doc/opencv-doc/examples/data/vtest.avi
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # synthetic/ is not installed

import av  # noqa: E402
import cv2  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from scipy import ndimage  # noqa: E402

from realtime.frames import DenseMaps, Frame  # noqa: E402
from synthetic.people import normals_from_depth, synthetic_dense, synthetic_person  # noqa: E402
from viz.compose import Layers, compose  # noqa: E402
from viz.viewer import Viewer  # noqa: E402

DEFAULT_VIDEO = "/usr/share/doc/opencv-doc/examples/data/vtest.avi"


def moving_people(mask: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Boxes (xyxy) of person-shaped moving blobs and the (H, W) int blob label image."""
    fg = (mask == 255).astype(np.uint8)  # 127 = shadow
    fg = cv2.morphologyEx(fg, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    fg = cv2.morphologyEx(fg, cv2.MORPH_CLOSE, np.ones((9, 5), np.uint8))
    count, blobs, stats, _ = cv2.connectedComponentsWithStats(fg)
    boxes, keep = [], np.zeros(count, bool)
    for i in range(1, count):
        x, y, w, h, area = stats[i]
        if area > 300 and h > 40 and h > 1.3 * w:
            boxes.append(np.array([x, y, x + w, y + h], np.float32))
            keep[i] = True
    return boxes, np.where(keep[blobs], blobs, 0)


def dense_from_silhouettes(image_hw, people, blobs: np.ndarray) -> DenseMaps:
    """Part labels (nearest synthetic label) and depth on the real silhouettes."""
    template = synthetic_dense(image_hw, people, map_scale=1.0).seg
    seg = np.zeros(image_hw, np.uint8)
    depth = np.full(image_hw, np.nan, np.float32)
    for person in people:
        x0, y0, x1, y1 = person.box.astype(int)
        box = (slice(y0, y1), slice(x0, x1))
        inside = (blobs[box] > 0).astype(np.uint8)
        if not template[box].any():
            continue
        # Every silhouette pixel takes the nearest template label.
        _, nearest = ndimage.distance_transform_edt(template[box] == 0, return_indices=True)
        labels = template[box][nearest[0], nearest[1]]
        seg[box] = np.where(inside > 0, labels, seg[box])
        rounded = cv2.distanceTransform(inside, cv2.DIST_L2, 5)
        bulge = 0.12 * np.sqrt(rounded / max(float(rounded.max()), 1e-6))
        depth[box][inside > 0] = 1.7 * image_hw[1] / (y1 - y0) - bulge[inside > 0]
    return DenseMaps(seg=seg, depth=depth, normal=normals_from_depth(depth, image_hw[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video", nargs="?", default=DEFAULT_VIDEO)
    parser.add_argument("--frame", type=int, default=575, help="frame to stop on (background needs ~100)")
    parser.add_argument("--shown", type=int, default=60, help="frames rendered and shown before it")
    parser.add_argument("--out", default=str(Path(__file__).with_name("viewer.png")))
    args = parser.parse_args()

    layers = Layers()
    viewer = Viewer("sapiens-rt", f"{Path(args.video).name} | NO MODEL: synthetic pose + parts in "
                    "motion-detected boxes | cpu", layers)
    stop, done = threading.Event(), threading.Event()
    rng = np.random.default_rng(0)

    def render_stage() -> None:
        subtractor = cv2.createBackgroundSubtractorMOG2(history=200, varThreshold=25, detectShadows=True)
        rate = 0.0
        with av.open(args.video) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            start, shown = None, 0
            for index, video_frame in enumerate(container.decode(stream)):
                image = video_frame.to_ndarray(format="rgb24")
                t0 = time.perf_counter()
                boxes, blobs = moving_people(subtractor.apply(image))
                if index < args.frame - args.shown:
                    continue  # only learning the background
                t1 = time.perf_counter()
                people = tuple(synthetic_person(b, track_id=i, rng=rng) for i, b in enumerate(boxes))
                dense = dense_from_silhouettes(image.shape[:2], people, blobs)
                t2 = time.perf_counter()
                frame = Frame(index, float(video_frame.time or 0.0), image, people=people, dense=dense)
                caption = f"{rate:.1f} fps  frame {index}  (synthetic overlay data)"
                composed = compose(frame, layers, caption=caption)
                t3 = time.perf_counter()
                shown += 1
                rate = shown / (t3 - (start if start is not None else t0))
                start = start if start is not None else t0
                viewer.submit(composed, {"fps": rate, "latency_ms": (t3 - t0) * 1e3,
                                         "stage.motion_ms": (t1 - t0) * 1e3,
                                         "stage.synthetic_ms": (t2 - t1) * 1e3,
                                         "stage.render_ms": (t3 - t2) * 1e3, "dropped": 0})
                if index >= args.frame or stop.is_set():
                    break
        done.set()

    polls_since_done = []

    def save_when_done() -> None:
        if not done.is_set():
            return
        polls_since_done.append(1)
        if len(polls_since_done) < 3:  # let the viewer show the last frame and plot it
            return
        poll.stop()
        # 256 colours keep the PNG well under 500 KB and look the same at this size.
        Image.fromarray(viewer.grab()).quantize(256, method=Image.Quantize.MEDIANCUT).save(args.out, optimize=True)
        print(f"wrote {args.out} ({os.path.getsize(args.out) / 1024:.0f} KB)")
        stop.set()

    from pyqtgraph.Qt import QtCore

    poll = QtCore.QTimer()
    poll.timeout.connect(save_when_done)
    poll.start(100)
    worker = threading.Thread(target=render_stage)
    worker.start()
    viewer.run(stop)
    poll.stop()
    worker.join()


if __name__ == "__main__":
    main()
