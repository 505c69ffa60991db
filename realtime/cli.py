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


def _add_download(sub) -> None:
    p = sub.add_parser(
        "download",
        help="fetch Sapiens2 checkpoints (and the person detector) into the Hugging Face cache",
        description="Fetch checkpoints ahead of time into the Hugging Face cache (with a progress bar), "
        "so later runs work offline. Prints where each file went. Files already in the cache or under "
        "$SAPIENS_CHECKPOINT_ROOT are not fetched again.",
        epilog="examples:\n"
        "  sapiens-rt download --tasks pose,seg --size 0.4b\n"
        "  sapiens-rt download --tasks pose,normal,pointmap,detector --size 1b",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--tasks", default=None, help="comma-separated: pose, seg, normal, pointmap, detector (default: pose,detector)")
    p.add_argument("--size", default=None, help="model size: 0.4b, 0.8b, 1b or 5b (default: 0.4b)")
    p.set_defaults(func=_cmd_download)


def _cmd_download(args) -> int:
    from realtime.models import DEFAULT_SIZE, download

    tasks = [t.strip() for t in (args.tasks or "pose,detector").split(",") if t.strip()]
    for task, path in download(tasks, args.size or DEFAULT_SIZE).items():
        print(f"{task}: {path}")
    return 0


# Every subcommand's `_add_<name>`, in the order `--help` lists them.
_COMMANDS: tuple = (_add_download,)


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
