"""An offline demo of the whole pipeline: `python tests/demo.py` from a checkout, nothing to download.

It makes a short synthetic clip (a bright figure walking across a dark room), then runs
`sapiens-rt run` on it with the tiny fixture weights the tests use (tests/reference/fixtures:
the official model structure with made-up weights, so the keypoints mean nothing), with pose,
segmentation and depth, tracking, smoothing, face, ground and motion, and writes the overlay
video and the tracks where `--out-dir` says (default: sapiens-demo/), then prints the summary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # the checkout's realtime, and the tests' media helpers

FIXTURES = HERE / "reference" / "fixtures"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default="sapiens-demo", help="where the clip, the overlay and the tracks go "
                        "(default: sapiens-demo)")
    parser.add_argument("--frames", type=int, default=24, help="length of the clip in frames (default 24)")
    args = parser.parse_args(argv)
    import numpy as np

    from media import write_video
    from realtime.cli import main as sapiens_rt

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frames = []
    for i in range(max(args.frames, 1)):
        image = np.full((240, 320, 3), 30, np.uint8)
        x = 60 + 6 * i
        image[40:220, x:x + 50] = (210, 180, 160)  # the walker
        image[20:50, x + 12:x + 38] = (230, 200, 180)  # a head
        frames.append(image)
    clip = write_video(out / "walk.mp4", frames, fps=15)
    checkpoints = [arg for task, file in (("pose", "pose"), ("seg", "seg"), ("depth", "pointmap"))
                   for arg in ("--checkpoint", f"{task}={FIXTURES / f'{file}_weights.safetensors'}")]
    code = sapiens_rt(["run", str(clip), "--tasks", "pose,seg,depth", *checkpoints, "--boxes-from", "frame", "--device", "cpu",
                       "--out", str(out / "overlay.mp4"), "--tracks", str(out / "tracks.jsonl"), "--no-progress"])
    if code == 0:
        print(f"demo: open {out / 'overlay.mp4'}; the tracks are in {out / 'tracks.jsonl'} (docs/tracks-format.md)")
    return code


if __name__ == "__main__":
    sys.exit(main())
