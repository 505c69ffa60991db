"""`sapiens-rt`: argument parsing only; every command calls one library function.

Each subcommand has an `_add_<name>(subparsers)` that declares its options
(defaults `None` where the library owns the default) and a `_cmd_<name>(args)`
that imports what it needs lazily, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import sys

from realtime import __version__
from realtime.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sapiens-rt",
        description="Real-time Sapiens2 pose, segmentation, normals and depth on cameras, videos and image folders.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _COMMANDS:
        add(sub)
    return parser


def _add_export(sub) -> None:
    parser = sub.add_parser(
        "export",
        help="convert a tracks .jsonl to CSV, NPZ, OpenPose, COCO, TRC, C3D or Blender",
        description="Convert a keypoint tracks .jsonl (written live by sapiens-rt) to a format other tools open.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  sapiens-rt export run.jsonl --to csv                       # run.csv, one row per frame
  sapiens-rt export run.jsonl --to openpose -o json/         # json/run_000000000000_keypoints.json ...
  sapiens-rt export run.jsonl --to coco --subset coco17      # run_coco.json, COCO person keypoints
  sapiens-rt export run.jsonl --to trc --person 1 --smooth rts   # OpenSim markers (3D metres if recorded)
  sapiens-rt export run.jsonl --to c3d --person 1            # needs 3D tracks (pointmap task)
  sapiens-rt export run.jsonl --to blender -o run.blend      # needs `blender` on PATH""",
    )
    parser.add_argument("tracks", metavar="TRACKS", help="tracks .jsonl file")
    parser.add_argument("--to", required=True, choices=("csv", "npz", "openpose", "coco", "trc", "c3d", "blender"), help="output format")
    parser.add_argument("-o", "--out", default=None, help="output file (folder for openpose); default: next to TRACKS")
    parser.add_argument("--person", type=int, default=None, metavar="ID", help="only this track id (TRC/C3D need one person)")
    parser.add_argument("--subset", default=None, choices=("308", "coco-wholebody", "coco17"), help="keypoints to export (default 308; COCO: coco-wholebody)")
    parser.add_argument("--smooth", default=None, choices=("rts", "savgol", "butterworth"), help="smooth offline (zero-phase) before exporting")
    parser.set_defaults(func=_cmd_export)


def _cmd_export(args) -> int:
    from realtime.export.formats import export_tracks

    out = export_tracks(args.tracks, args.to, args.out, person=args.person, subset=args.subset, smooth=args.smooth)
    print(f"wrote {out}")
    return 0


def _add_smooth(sub) -> None:
    parser = sub.add_parser(
        "smooth",
        help="smooth a tracks .jsonl offline (zero-phase) into a new .jsonl",
        description="Smooth every person's keypoints over the whole recording; keeps every frame and person and sets \"smoothed\": true.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  sapiens-rt smooth run.jsonl --method rts -o run_smooth.jsonl
  sapiens-rt smooth run.jsonl --method butterworth -o run_bw.jsonl && sapiens-rt export run_bw.jsonl --to trc --person 1""",
    )
    parser.add_argument("tracks", metavar="TRACKS", help="tracks .jsonl file")
    parser.add_argument("--method", required=True, choices=("rts", "savgol", "butterworth"), help="smoother")
    parser.add_argument("-o", "--out", required=True, metavar="SMOOTHED.jsonl", help="output tracks file")
    parser.set_defaults(func=_cmd_smooth)


def _cmd_smooth(args) -> int:
    from realtime.export.smoothing import smooth_tracks_file

    out = smooth_tracks_file(args.tracks, args.out, args.method)
    print(f"wrote {out}")
    return 0


# Every subcommand's `_add_<name>`, in the order `--help` lists them.
_COMMANDS: tuple = (_add_export, _add_smooth)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
