"""`sapiens-rt`: argument parsing only; every command calls one library function.

Each subcommand has an `_add_<name>(subparsers)` that declares its options
(defaults `None` where the library owns the default) and a `_cmd_<name>(args)`
that imports what it needs lazily, so `--help` stays fast.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

# Before anything else is imported, when this is the `sapiens-rt` command (not a program importing the module):
# a Ctrl+C / SIGTERM from here on is remembered, and `main` ends with 130 / 143 as soon as it starts, instead
# of a KeyboardInterrupt traceback from an import.
_early: list[int] = []
_before_import: dict = {}  # the process's own handlers, given back when an in-process `main(argv)` returns


def _remember_early(signum, _frame) -> None:
    _early.append(signum)


_COMMAND = __name__ == "__main__" or os.path.splitext(os.path.basename(sys.argv[0] if sys.argv else ""))[0] == "sapiens-rt"
if _COMMAND and threading.current_thread() is threading.main_thread():
    for _sig in (signal.SIGINT, signal.SIGTERM):
        _before_import[_sig] = signal.signal(_sig, _remember_early)

import argparse  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
from typing import Optional  # noqa: E402

# E402: these come after the signal handlers above on purpose (an early Ctrl+C must not raise from an import).
from realtime import __version__  # noqa: E402
from realtime.errors import Terminated, UserError, signals_held, stop_exit_code  # noqa: E402
from realtime.export.table import ALIASES, BATCH_FORMATS, FORMATS, titles  # noqa: E402

log = logging.getLogger("sapiens-rt")

RUN_TASKS = "pose,seg"  # what `run` does by default; `download` fetches these and the detector by default


class _Parser(argparse.ArgumentParser):
    """argparse with its errors in the one-line `error: ...` style of every other message."""

    def error(self, message: str):
        self.exit(2, f"error: {message}; see {self.prog} --help.\n")


def _number(text: str, kind: type, what: str, low: float, low_ok: bool = True, high: float = math.inf):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not math.isfinite(value) or value < low or (value == low and not low_ok) or value > high:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, "a whole number of 1 or more", 1)


def count(text: str) -> int:
    return _number(text, int, "a whole number of 0 or more", 0)


def positive_float(text: str) -> float:
    return _number(text, float, "a positive number", 0.0, low_ok=False)


def unit_float(text: str) -> float:
    return _number(text, float, "a number from 0 to 1", 0.0, high=1.0)


def lag_ms(text: str) -> float:
    from realtime.options import MAX_MOTION_LAG_MS

    return _number(text, float, f"a number of milliseconds from 0 to {MAX_MOTION_LAG_MS:g}", 0.0, high=MAX_MOTION_LAG_MS)


def ray_address(text: str) -> str:
    """`auto`, HOST:PORT or a URL such as ray://HOST:10001. A bare `--ray` before the inputs
    would otherwise take the first input for the address."""
    if text in ("", "auto") or "://" in text or re.fullmatch(r"[\w.-]+:\d+", text):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a Ray address (auto, HOST:PORT or ray://HOST:10001); "
                                     "to start a Ray here, put --ray after the inputs")


def vrchat_address(text: str) -> str:
    """HOST:PORT or HOST; a bare `--vrchat` before SOURCE would otherwise take the source (a file, a folder, a camera
    index) for VRChat's host."""
    if text.isdecimal() or os.path.exists(text):  # False for a name no file can have
        raise argparse.ArgumentTypeError(f"{text[:60]!r} is a source, not VRChat's address; put --vrchat after SOURCE "
                                         "(sapiens-rt run SOURCE --vrchat)")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sapiens-rt",
        description="Real-time Sapiens2 pose, segmentation, normals and depth on cameras, videos and image folders.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _COMMANDS:
        add(sub)
    return parser


def _add_run(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run Sapiens2 on a camera, video, stream or image folder",
        description="Run Sapiens2 pose (308 keypoints), body-part segmentation, normals and depth on every "
        "person of every frame, with tracking and smoothing; write an overlay video and keypoint tracks, "
        "and optionally show a live viewer. Weights download from the Hugging Face hub on first use.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  sapiens-rt run 0 --view                          # webcam 0, live window
  sapiens-rt run dance.mp4                         # -> recordings/dance-<time>/overlay.mp4 + tracks.jsonl
  sapiens-rt run dance.mp4 --tasks pose --no-video --tracks dance.jsonl
  sapiens-rt run rtsp://cam.local/stream --view --tasks pose,seg,depth
  sapiens-rt run shots/ --out shots.mp4           # a folder of images
  sapiens-rt run clip.mp4 --device cpu --input-size 512x384 --tasks pose   # lighter, for a CPU

outputs: without --out/--tracks everything goes to recordings/<source>-<time>/. --tracks - (or
/dev/stdout) writes the tracks to standard output, --out - the video (fragmented MP4, e.g. | ffplay -);
not both. The summary, progress and logs go to standard error when standard output carries data.
exit status: 0 finished (or window closed, or the reader of a pipe closed it, e.g. | head), 1 a stage
failed, 2 bad input or option, 3 the source ended early (truncated file, lost stream), 130 interrupted
(Ctrl+C), 143 terminated (SIGTERM); outputs hold every frame processed until then.""",
    )
    p.add_argument("source", metavar="SOURCE", help="webcam index (0 or webcam:0), video file, stream URL (rtsp://, udp://, "
                   "tcp://, http(s)://), image folder or glob")
    out = p.add_argument_group("outputs")
    out.add_argument("--out", metavar="VIDEO.mp4", help="overlay video (H.264 MP4, the source's timestamps and audio); - for "
                     "standard output (default: recordings/<source>-<time>/overlay.mp4)")
    out.add_argument("--tracks", metavar="TRACKS.jsonl", help="keypoint tracks, one JSON line per frame "
                     "(docs/tracks-format.md); - for standard output; a FIFO waits up to 10 s for its reader "
                     "(default: recordings/<source>-<time>/tracks.jsonl)")
    out.add_argument("--no-video", action="store_true", help="write no overlay video (tracks only, fastest)")
    out.add_argument("--output-dir", metavar="DIR", help="folder for default outputs (default: recordings)")
    out.add_argument("--view", action="store_true", help="show the live viewer window")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    out.add_argument("--no-caption", action="store_true", help="no fps / latency / model line on the overlay (clean videos)")
    live = p.add_argument_group("live motion (VMC / OSC / VRChat)")
    _add_live_motion_options(live)
    live.add_argument("--live-pace", default="on", choices=["on", "off"], help="on a video file, send each frame at its "
                      "time in the video, so receivers play at real speed without bursts (default: on); off: as soon as "
                      "it is ready. Cameras and streams are sent as they come either way")
    _add_model_options(p)
    _add_people_options(p)
    _add_smoothing_options(p)
    source = _add_source_options(p)
    source.add_argument("--stills", action=argparse.BooleanOptionalAction, default=None,
                        help="treat an image folder as unrelated photos: no tracking or smoothing, each tracks row names its "
                             "file and image size (default: on when the images differ in size)")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args) -> int:
    from realtime.options import CLI
    from realtime.run import run

    summary = run(_run_options(args), caller=CLI)
    data_on_stdout = "-" in summary.outputs.values()  # nothing but the data on a standard output that carries it
    print("\n".join(summary.lines), file=sys.stderr if data_on_stdout else sys.stdout)
    return summary.result.exit_code


def _run_options(args):
    """RunOptions from the `run` options."""
    from dataclasses import replace

    from realtime.options import CLI, LiveOutputOptions, OutputOptions, RunOptions
    from realtime.stages.live import live_senders

    models, smoothing = _model_options(args), _smoothing_options(args)
    outputs = OutputOptions(out=args.out, tracks=args.tracks, output_dir=args.output_dir or "recordings", no_video=args.no_video,
                            progress=not args.no_progress, caption=not args.no_caption)
    senders = live_senders(vmc=args.vmc, vmc_person=args.vmc_person, vmc_fingers=args.vmc_fingers, vmc_bundle=args.vmc_bundle,
                           vmc_face_only=args.vmc_face_only, face_calibrate=args.face_calibrate, osc=args.osc, tasks=models.tasks,
                           vrchat=args.vrchat, vrchat_trackers=args.vrchat_trackers, vrchat_height=args.vrchat_height,
                           vrchat_person=args.vrchat_person, caller=CLI)
    return RunOptions(source=args.source, input=replace(_source_options(args), stills=args.stills), models=models,
                      people=_people_options(args), smoothing=smoothing, outputs=outputs,
                      live_outputs=LiveOutputOptions(view=args.view, senders=senders, live_pace=args.live_pace == "on"))


def _add_live_motion_options(group) -> None:
    """--vmc / --osc / --vrchat and their options, as `run` and `stream` take them."""
    group.add_argument("--vmc", action="append", default=[], metavar="HOST:PORT", help="stream bones and face with the VMC "
                       "protocol (OSC/UDP; receivers listen on 39539; [::1]:39539 for IPv6; repeat for several receivers) to "
                       "Blender VMC4B, Unity EVMC4U, Unreal VMC4UE, VSeeFace; needs --tasks pose,depth (pose alone with "
                       "--vmc-face-only)")
    group.add_argument("--vmc-person", metavar="ID|all", help="track id to stream with --vmc (default: the largest person); "
                       "all: person k (in order of appearance) to port PORT+k")
    group.add_argument("--vmc-fingers", action="store_true", help="also stream the finger bones with --vmc")
    group.add_argument("--vmc-bundle", default="split", choices=["split", "single"], help="split: datagrams of at most 1,400 "
                       "bytes (default; never IP-fragmented); single: one bundle per frame (VSeeFace's preference on one "
                       "machine)")
    group.add_argument("--vmc-face-only", action="store_true", help="--vmc sends the head, neck, spine and the face expression "
                       "only (a person at a desk; needs no depth task)")
    group.add_argument("--osc", metavar="HOST:PORT", help="stream raw keypoints as OSC /sapiens/person/<id>/<keypoint> x y z "
                       "score (datagrams of at most 1,400 bytes)")
    group.add_argument("--vrchat", nargs="?", const="127.0.0.1:9000", type=vrchat_address, metavar="HOST:PORT",
                       help="stream full-body OSC "
                       "trackers, the head and the face (Unified Expressions) to VRChat (default 127.0.0.1:9000; put it "
                       "after SOURCE); needs --tasks pose,depth; see docs/vrchat.md")
    group.add_argument("--vrchat-trackers", metavar="LIST", help="comma list of hip, feet, chest, knees, elbows (default: "
                       "hip,feet, as VRChat advises)")
    group.add_argument("--vrchat-height", type=positive_float, metavar="METRES", help="your height as VRChat knows it: "
                       "tracker positions are scaled by it over the performer's measured height (default: real metres)")
    group.add_argument("--vrchat-person", metavar="ID", help="track id to stream with --vrchat (default: the largest person)")


# The option groups `run` and `batch` share: each fills one group of `realtime.options`.

def _add_model_options(p) -> None:
    m = p.add_argument_group("models")
    m.add_argument("--tasks", default=RUN_TASKS, help="comma list of pose, seg, normal, depth (= pointmap), albedo (own "
                   f"checkpoint only) (default: {RUN_TASKS})")
    m.add_argument("--size", default="0.4b", choices=["0.4b", "0.8b", "1b", "5b"], help="Sapiens2 model size (default: 0.4b; no "
                   "0.1b task weights are released)")
    m.add_argument("--checkpoint", action="append", default=[], metavar="TASK=PATH", help="use a local checkpoint for a task "
                   "instead of the hub (repeatable)")
    m.add_argument("--detector", metavar="PATH", help="local RTMDet person detector checkpoint (.pth or .safetensors)")
    m.add_argument("--device", help="cuda, cuda:1 or cpu, in any case (default: cuda when available)")
    m.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], help="default: bf16 (fp16 on older GPUs) on CUDA, fp32 on CPU")
    m.add_argument("--input-size", metavar="HxW", help="network input HEIGHTxWIDTH for pose and seg (default: the size the "
                   "models were trained at; 512x384 has a quarter of 1024x768's pixels, for speed)")
    m.add_argument("--dense-size", metavar="HxW", help="network input HEIGHTxWIDTH for normal, depth and albedo (default "
                   "1024x768, as trained; 512x384 has a quarter of the pixels; depth's metric scale is then approximate)")
    m.add_argument("--flip-test", action="store_true", help="average pose with the mirrored crop, as the official demo does (2x "
                   "cost)")
    m.add_argument("--dense-every", default=None, metavar="N|auto", help="run normal/depth every N frames and reuse the last "
                   "maps in between; auto: as often as the source's frame rate leaves time for (default: auto for cameras and "
                   "streams, 1 for files)")
    m.add_argument("--seg-every", default=None, metavar="N|auto", help="run seg every N frames and reuse its last map in "
                   "between; auto: every frame, or every other frame while the run is behind the source's frame rate "
                   "(default: auto for cameras and streams, 1 for files)")
    m.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile the models (default: on with CUDA, where it measured fastest; the first launch with "
                        "new settings waits while it compiles, later launches load the kernels from ~/.cache/"
                        "sapiens-realtime; --no-compile runs the plain path)")
    m.add_argument("--fp8", nargs="?", const="attention", default=False, choices=("attention", "ffn", "attention+ffn"),
                   metavar="SCOPE", help="backbone linear layers in FP8 (E4M3) on GPUs of compute capability 8.9+ (Ada, "
                   "Hopper): attention (the projections; the default), ffn (the FFN's, per-token scales) or attention+ffn; "
                   "needs compiling; see docs/deploy.md")
    m.add_argument("--sdpa", choices=("default", "flash", "cudnn", "efficient", "math", "triton"), default="default",
                   help="the attention kernel (default: PyTorch's choice; triton: the project's own kernel; `python "
                        "bench/gpu_kernels.py` times each on yours; see docs/gpu-performance.md)")
    m.add_argument("--dual-backbone", action="store_true",
                   help="run the pose and seg backbones as one when both run on a frame with one person (batched GEMMs, one "
                        "attention call; GPU, not yet measured: see docs/gpu-performance.md)")
    m.add_argument("--fuse", action="store_true",
                   help="the backbones' SwiGLU product in its GEMM's epilogue and each residual add with the next norm as one "
                        "pass (Triton kernels; GPU, not yet measured: see docs/gpu-performance.md)")
    m.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="replay one CUDA graph per task and person count, and one for the detector, all captured in "
                        "the warm-up (default: on when the run is on CUDA; --no-cuda-graphs runs eagerly; see "
                        "docs/gpu-performance.md)")
    m.add_argument("--crop-sampling", default="official", choices=["official", "bilinear", "bicubic"],
                   help="how person crops are interpolated: official = bilinear for large people, bicubic for small ones "
                        "(the official demo's, what the models were trained with; default), or one kind for every crop")


def _add_people_options(p) -> None:
    d = p.add_argument_group("people")
    d.add_argument("--boxes-from", default="detector", choices=["detector", "seg", "frame"], help="person boxes from the RTMDet "
                   "detector, the segmentation foreground, or the whole frame (default: detector)")
    d.add_argument("--detect-every", type=positive_int, metavar="N", help="run the detector every N frames; boxes follow the "
                   "poses in between (default 3 for cameras and streams, 1 for files)")
    d.add_argument("--max-people", type=positive_int, metavar="N", help="keep the N most confident people (default: everyone)")


def _add_smoothing_options(p) -> None:
    from realtime.options import CONTACT_DECIDERS

    d = p.add_argument_group("smoothing")
    d.add_argument("--smooth", default="one_euro", choices=["one_euro", "kalman", "none"], help="live keypoint filter (default "
                   "one_euro)")
    d.add_argument("--smoothness", type=unit_float, default=0.5, help="0 = raw, 1 = strongest smoothing (default 0.5)")
    d.add_argument("--face-calibrate", type=positive_float, default=2.0, metavar="SECONDS", help="seconds of neutral face at the "
                   "start from which each person's face baseline is learned (default 2)")
    d.add_argument("--motion-lag", type=lag_ms, default=0.0, metavar="MS", help="foot contacts (and the feet's lock) decided "
                   "seeing up to MS milliseconds ahead: every frame leaves that much later (0 to 1000, default 0: at once; "
                   "100 for a file; see bench/RESULTS.md for quality against lag); needs --contacts learned")
    d.add_argument("--contacts", choices=CONTACT_DECIDERS, default="rules", help="how foot contacts are decided: rules "
                   "(default: hand-set gates on the feet's heights and speeds) or learned (a small temporal network trained on "
                   "motion capture, bench/train_contacts.py: more true contacts found, but today the avatar's feet slide more "
                   "on some motions, see bench/RESULTS.md)")


def _add_source_options(p, *, live: bool = True):
    """The source group; `live`: with the options only cameras and network streams use (`batch` reads files)."""
    s = p.add_argument_group("source")
    if live:
        s.add_argument("--width", type=positive_int, help="webcam capture width (default: the camera's own)")
        s.add_argument("--height", type=positive_int, help="webcam capture height (default: the camera's own)")
        s.add_argument("--fps", type=positive_float, help="webcam capture rate, or the frame rate of an image folder "
                       "(default 30)")
        s.add_argument("--timeout", type=positive_float, default=10.0, help="seconds to wait for a network stream (default 10)")
        s.add_argument("--reconnects", type=count, default=3, help="times to reopen a stream that dies (default 3)")
    else:
        s.add_argument("--fps", type=positive_float, help="the frame rate of an image folder (default 30)")
    s.add_argument("--max-frames", type=positive_int, metavar="N", help="stop after N frames")
    s.add_argument("--max-in-flight", type=positive_int, metavar="N", help="frames inside the pipeline at once: lower is less "
                   "latency, higher more throughput (default: 2 for cameras and streams, one per stage for files)")
    s.add_argument("--camera", choices=("auto", "static", "moving"), default="auto",
                   help="with depth: static = a fixed camera (no egomotion); moving = roots, contacts and exports in a world "
                        "frame tracked from the background; auto = as static until the camera is seen to move (default auto)")
    return s


def _model_options(args):
    from realtime.options import ModelOptions
    from realtime.run import parse_size, parse_tasks

    checkpoints = {}
    for item in args.checkpoint:
        task, sep, path = item.partition("=")
        if not sep:
            raise UserError(f"--checkpoint {item} is not TASK=PATH; write it like --checkpoint "
                            "pose=/models/sapiens2_0.4b_pose.safetensors.")
        try:
            checkpoints[parse_tasks(task)[0]] = path  # aliases (depth) name the same task
        except UserError:
            from realtime.tasks import choices

            raise UserError(f"--checkpoint {item} names the unknown task {task.strip()!r}; write it as TASK=PATH with TASK one "
                            f"of {choices()}.") from None
    dense_every, dense_auto = _every(args.dense_every, "--dense-every")
    seg_every, seg_auto = _every(args.seg_every, "--seg-every")
    task_sizes = {}
    if args.dense_size:
        from realtime.tasks import all_tasks

        hw = parse_size(args.dense_size, option="--dense-size")
        task_sizes = {t.name: hw for t in all_tasks() if t.dense}
    sized = {"input_hw": parse_size(args.input_size)} if args.input_size else {}
    return ModelOptions(tasks=parse_tasks(args.tasks), size=args.size, checkpoints=checkpoints, detector=args.detector,
                        device=args.device, dtype=args.dtype, task_sizes=task_sizes, dense_every=dense_every,
                        dense_auto=dense_auto, seg_every=seg_every, seg_auto=seg_auto, flip_test=args.flip_test,
                        compile=args.compile, dual_backbone=args.dual_backbone, fuse=args.fuse,
                        fp8=args.fp8, sdpa=args.sdpa, cuda_graphs=args.cuda_graphs, crop_sampling=args.crop_sampling, **sized)


def _every(value: Optional[str], option: str) -> tuple[Optional[int], bool]:
    """'3' -> (3, False), 'auto' -> (None, True), None -> (None, False): a schedule option."""
    if value is None:
        return None, False
    if value == "auto":
        return None, True
    if not value.isdigit() or int(value) < 1:
        raise UserError(f"{option} {value} is neither a whole number of frames (1 or more) nor auto; write e.g. {option} 3.")
    return int(value), False


def _people_options(args):
    from realtime.options import PeopleOptions

    return PeopleOptions(boxes_from=args.boxes_from, detect_every=args.detect_every, max_people=args.max_people)


def _smoothing_options(args):
    from realtime.options import SmoothingOptions

    return SmoothingOptions(smooth=args.smooth, smoothness=args.smoothness, face_calibrate=args.face_calibrate,
                            motion_lag=args.motion_lag, contacts=args.contacts)


def _source_options(args):
    from realtime.options import SourceOptions

    live = {"webcam_size": (args.height, args.width), "timeout": args.timeout, "reconnects": args.reconnects} \
        if hasattr(args, "width") else {}  # `batch` reads files: no camera or stream options
    return SourceOptions(webcam_fps=args.fps, max_frames=args.max_frames, max_in_flight=args.max_in_flight,
                         camera=args.camera, **live)


def _add_export(sub) -> None:
    parser = sub.add_parser(
        "export",
        help=f"convert a tracks .jsonl to {titles()}",
        description="Convert a keypoint tracks .jsonl (written live by sapiens-rt) to a format other tools open.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  sapiens-rt export run.jsonl --to csv                       # run.csv, one row per frame
  sapiens-rt export run.jsonl --to openpose -o json/         # json/run_000000000000_keypoints.json ...
  sapiens-rt export run.jsonl --to coco --subset coco17      # run_coco.json, COCO person keypoints
  sapiens-rt export run.jsonl --to trc --person 1 --smooth rts   # OpenSim markers (3D metres if recorded)
  sapiens-rt export run.jsonl --to c3d --person 1            # needs 3D tracks (run with --tasks pose,depth)
  sapiens-rt export run.jsonl --to blender -o run.blend      # needs `blender` on PATH
  sapiens-rt export run.jsonl --to bvh --person 1            # bone rotations (needs 3D tracks: --tasks pose,depth)
  sapiens-rt export run.jsonl --to gltf --person 1 --fingers # run.glb, node hierarchy + animation
  sapiens-rt export run.jsonl --to fbx --rig mixamo          # run.fbx, skinned skeleton (needs `blender` on PATH)
  sapiens-rt export run.jsonl --to vrma --fingers            # run.vrma, VRM Animation for VRM avatars""",
    )
    parser.add_argument("tracks", metavar="TRACKS", help="tracks .jsonl file (- or /dev/stdin: read from a pipe)")
    parser.add_argument("--to", required=True, choices=tuple(FORMATS) + tuple(ALIASES),
                        help="output format (glb = gltf; gltf writes binary .glb, or JSON when -o ends in .gltf)")
    parser.add_argument("-o", "--out", default=None, help="output file (folder for openpose); default: next to TRACKS")
    parser.add_argument("--person", type=int, default=None, metavar="ID", help="only this track id (TRC/C3D/BVH/glTF/FBX/VRMA "
                        "need one person)")
    parser.add_argument("--subset", default=None, choices=("308", "coco-wholebody", "coco17"), help="keypoints to export "
                        "(default 308; COCO: coco-wholebody)")
    parser.add_argument("--smooth", default=None, choices=("rts", "savgol", "butterworth", "none"),
                        help="smooth offline (zero-phase) before exporting (default: none; rts for bvh/gltf/fbx/vrma)")
    parser.add_argument("--fingers", action="store_true", help="bvh/gltf/fbx/vrma: add finger bones (15 per hand)")
    parser.add_argument("--rig", default=None, choices=("vrm", "mixamo", "unreal", "smpl"),
                        help="bvh/gltf/fbx: bone names, hierarchy and rest pose of this rig (default vrm)")
    parser.add_argument("--root", default=None, choices=("world", "camera"),
                        help="bvh/gltf/fbx/vrma/csv/trc: 3D and root in the world frame tracked during the run, or "
                             "camera-relative (default: world when the camera moved); the camera path goes beside the file "
                             "(.camera.csv, glTF: a camera node)")
    parser.add_argument("--no-foot-lock", dest="foot_lock", action="store_false",
                        help="bvh/gltf/fbx/vrma: leave the feet as measured (default: a foot in contact is held still, the leg "
                             "solved by IK)")
    parser.add_argument("--recorded-contacts", dest="hindsight", action="store_false",
                        help="keep the foot contacts the run decided (default: decided again with the contact model's whole "
                             "hindsight, 0.2 s, where the tracks hold 3D keypoints and a grounded camera)")
    parser.set_defaults(func=_cmd_export)


def _cmd_export(args) -> int:
    from realtime.export.formats import export_tracks

    out = export_tracks(args.tracks, args.to, args.out, person=args.person, subset=args.subset, smooth=args.smooth,
                        fingers=args.fingers, rig=args.rig, foot_lock=args.foot_lock, root=args.root,
                        hindsight=args.hindsight)
    print(f"wrote {out}")
    return 0


def _add_smooth(sub) -> None:
    parser = sub.add_parser(
        "smooth",
        help="smooth a tracks .jsonl offline (zero-phase) into a new .jsonl",
        description="Smooth every person's keypoints (2D and 3D) over the whole recording; keeps every frame and person, "
                    "marks them smoothed, and solves their bones again from the smoothed 3D keypoints.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  sapiens-rt smooth run.jsonl                       # -> run_smooth.jsonl (rts)
  sapiens-rt smooth run.jsonl --method rts -o run_rts.jsonl
  sapiens-rt smooth run.jsonl --method butterworth -o run_bw.jsonl && sapiens-rt export run_bw.jsonl --to trc --person 1""",
    )
    parser.add_argument("tracks", metavar="TRACKS", help="tracks .jsonl file (- or /dev/stdin: read from a pipe)")
    parser.add_argument("--method", default="rts", choices=("rts", "savgol", "butterworth"),
                        help="zero-phase smoother (default rts: Rauch-Tung-Striebel over a constant-velocity Kalman filter)")
    parser.add_argument("-o", "--out", default=None, metavar="SMOOTHED.jsonl",
                        help="output tracks file (default: next to TRACKS, run.jsonl -> run_smooth.jsonl; never TRACKS itself)")
    parser.add_argument("--recorded-contacts", dest="hindsight", action="store_false",
                        help="keep the foot contacts the run decided (default: decided again with the contact model's whole "
                             "hindsight, 0.2 s, where the tracks hold 3D keypoints and a grounded camera)")
    parser.set_defaults(func=_cmd_smooth)


def _cmd_smooth(args) -> int:
    from realtime.export.smoothing import smooth_tracks_file

    out = smooth_tracks_file(args.tracks, args.out, args.method, hindsight=args.hindsight)
    print(f"wrote {out}")
    return 0

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
    p.add_argument("--tasks", default=None, help="comma-separated: pose, seg, normal, pointmap (or depth), detector (default: "
                   f"{RUN_TASKS},detector, what `sapiens-rt run` uses by default); no albedo weights are released")
    p.add_argument("--size", default=None, help="model size: 0.4b, 0.8b, 1b or 5b (default: 0.4b)")
    p.set_defaults(func=_cmd_download)


def _cmd_download(args) -> int:
    from realtime.models import DEFAULT_SIZE, download
    from realtime.tasks import canonical

    tasks = [canonical(t.strip()) for t in (args.tasks or f"{RUN_TASKS},detector").split(",") if t.strip()]
    for task, path in download(tasks, args.size or DEFAULT_SIZE).items():
        print(f"{task}: {path}")
    return 0


def _add_batch(sub) -> None:
    p = sub.add_parser(
        "batch",
        help="process many videos (one worker per GPU, or on a Ray cluster); resumable",
        description="Run every video of INPUTS through the `run` pipeline, one video per worker at a time, "
        "longest first; each video gets DIR/<name>/overlay.mp4 and tracks.jsonl. Finished videos are "
        "listed in DIR/batch.jsonl and skipped when the same command runs again.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  sapiens-rt batch footage/ --output-dir out/                  # every video in footage/, all local GPUs
  sapiens-rt batch 'day*/cam*.mp4' --output-dir out/ --tasks pose --export csv
  sapiens-rt batch footage/ --output-dir out/ --ray            # on a Ray started here (pip install .[cluster])
  sapiens-rt batch /data/videos --output-dir /data/out --ray auto   # on the running Ray cluster (one actor per GPU)

exit status: 0 every video done (now or before), 1 some failed (see the table and DIR/batch.jsonl),
2 bad input or option, 130 interrupted (Ctrl+C), 143 terminated (SIGTERM); unfinished videos are redone by the next run.""",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="video files, folders of videos, image folders, or globs")
    out = p.add_argument_group("outputs")
    out.add_argument("--output-dir", required=True, metavar="DIR", help="one folder per video inside it, and the manifest "
                     "batch.jsonl")
    out.add_argument("--no-video", action="store_true", help="write no overlay videos (tracks only, fastest)")
    out.add_argument("--export", action="append", default=[], choices=BATCH_FORMATS,
                     help="also write this `sapiens-rt export` format beside each tracks.jsonl (repeatable)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    out.add_argument("--no-caption", action="store_true", help="no fps / latency / model line on the overlay videos")
    w = p.add_argument_group("workers")
    w.add_argument("--workers", type=positive_int, metavar="N", help="number of workers (default: one per GPU; 1 on the CPU)")
    w.add_argument("--retries", type=count, default=2, metavar="N", help="times a video is retried after its worker died "
                   "(default 2)")
    w.add_argument("--ray", nargs="?", const="", default=None, type=ray_address, metavar="ADDRESS",
                   help="run on Ray: no ADDRESS starts one here (put it after the inputs), `auto` joins the running cluster, "
                        "HOST:PORT or ray://HOST:10001 a remote one")
    w.add_argument("--ray-timeout", type=positive_float, default=30.0, metavar="S",
                   help="seconds to reach the Ray cluster at ADDRESS before giving up (default 30)")
    # The per-video options are those of `run`: the same groups, filled the same way.
    _add_model_options(p)
    _add_people_options(p)
    _add_smoothing_options(p)
    _add_source_options(p, live=False)
    p.set_defaults(func=_cmd_batch)


def _cmd_batch(args) -> int:
    from realtime.batch import BatchOptions, run_batch
    from realtime.options import CLI

    options = BatchOptions(inputs=args.inputs, output_dir=args.output_dir, run=_batch_run_options(args),
                           exports=tuple(dict.fromkeys(args.export)), workers=args.workers, retries=args.retries,
                           ray=args.ray, ray_timeout=args.ray_timeout, progress=not args.no_progress)
    result = run_batch(options, caller=CLI)
    print("\n".join(result.lines))
    return result.exit_code


def _batch_run_options(args):
    """The per-video RunOptions of a batch: `run`'s shared groups; the worker sets each video's
    source and output files, and a batch shows no window and streams nothing live."""
    from realtime.options import OutputOptions, RunOptions

    return RunOptions(source="", input=_source_options(args), models=_model_options(args), people=_people_options(args),
                      smoothing=_smoothing_options(args),
                      outputs=OutputOptions(output_dir=args.output_dir, no_video=args.no_video, caption=not args.no_caption))


def _add_export_model(sub) -> None:
    p = sub.add_parser(
        "export-model",
        help="write a Sapiens2 task model as ONNX (dynamic person batch) for ONNX Runtime or TensorRT",
        description="Export a task model to ONNX; see docs/deploy.md. Needs: pip install 'sapiens-realtime[onnx]'.",
        epilog="example:\n  sapiens-rt export-model --to onnx --task pose --checkpoint sapiens2_0.4b_pose.safetensors -o "
               "pose.onnx",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--to", required=True, choices=["onnx"], help="output format")
    p.add_argument("--task", required=True, help="pose, seg, normal, depth (= pointmap) or albedo")
    p.add_argument("--checkpoint", metavar="PATH", help="task checkpoint (default: the released file of --size, downloaded)")
    p.add_argument("--size", default="0.4b", choices=["0.4b", "0.8b", "1b", "5b"], help="model size when no --checkpoint is "
                   "given (default: 0.4b)")
    p.add_argument("--input-size", metavar="HxW", help="fixed input HEIGHTxWIDTH (default: the trained size, 1024x768)")
    p.add_argument("-o", "--out", metavar="MODEL.onnx", help="output file (default: <task>.onnx)")
    p.set_defaults(func=_cmd_export_model)


def _cmd_export_model(args) -> int:
    from realtime.export_model import export_onnx
    from realtime.run import parse_size, parse_tasks

    task = parse_tasks(args.task)[0]
    out = export_onnx(task, args.checkpoint, args.out or f"{task}.onnx",
                      arch=None if args.checkpoint else f"sapiens2_{args.size}",
                      input_hw=parse_size(args.input_size) if args.input_size else None)
    print(f"wrote {out}")
    return 0


def _add_stream(sub) -> None:
    parser = sub.add_parser(
        "stream",
        help="send a recorded tracks .jsonl to VMC / OSC / VRChat receivers at its original timing",
        description="Replay a tracks file (from sapiens-rt run --tracks) to live receivers at the recorded frame times.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  sapiens-rt stream take1.jsonl --vmc 127.0.0.1:39539              # into Blender VMC4B / VSeeFace
  sapiens-rt stream take1.jsonl --vmc 127.0.0.1:39539 --vmc 127.0.0.1:39540 --loop
  sapiens-rt stream take1.jsonl --osc 127.0.0.1:9000 --speed 0.5   # half speed
  sapiens-rt stream take1.jsonl --vrchat                           # trackers and face into VRChat on this PC
exit status: 0 done, 2 bad file or option, 130 interrupted (Ctrl+C).""",
    )
    parser.add_argument("tracks", metavar="TRACKS", help="tracks .jsonl file (- or /dev/stdin: read from a pipe)")
    _add_live_motion_options(parser)
    parser.add_argument("--face-calibrate", type=positive_float, default=2.0, metavar="SECONDS", help="seconds of neutral face "
                        "to learn from (default 2)")
    parser.add_argument("--speed", type=positive_float, default=1.0, help="playback speed (default 1: the recorded pace)")
    parser.add_argument("--loop", action="store_true", help="start over at the end, until Ctrl+C")
    parser.set_defaults(func=_cmd_stream)


def _cmd_stream(args) -> int:
    from realtime.replay import StreamOptions, stream

    summary = stream(StreamOptions(tracks=args.tracks, vmc=args.vmc, osc=args.osc, vmc_person=args.vmc_person,
                                   vmc_fingers=args.vmc_fingers, vmc_bundle=args.vmc_bundle, vmc_face_only=args.vmc_face_only,
                                   face_calibrate=args.face_calibrate, speed=args.speed, loop=args.loop, vrchat=args.vrchat,
                                   vrchat_trackers=args.vrchat_trackers, vrchat_height=args.vrchat_height,
                                   vrchat_person=args.vrchat_person))
    if summary.stopped:
        print(summary.stopped, file=sys.stderr)
    print("\n".join(summary.lines))
    return summary.exit_code


# Every subcommand's `_add_<name>`, in the order `--help` lists them.
_COMMANDS: tuple = (_add_run, _add_batch, _add_download, _add_export, _add_smooth, _add_stream, _add_export_model)


_signalled: list[KeyboardInterrupt] = []  # the signal that asked this run to stop, if one did


def _raise_on_signal(signum, _frame) -> None:
    stop = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    _signalled.append(stop)
    raise stop


def _stopped(stop: KeyboardInterrupt) -> int:
    if threading.current_thread() is threading.main_thread():  # stopping now: a further signal only waits its turn
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _remember_early)
    print("terminated" if isinstance(stop, Terminated) else "interrupted", file=sys.stderr)
    return stop_exit_code(stop)


def main(argv: list[str] | None = None) -> int:
    """The `sapiens-rt` command. With `argv` None (the real command line) a run stopped by a
    signal leaves the process at once with 130 / 143 (`_exit_now`). Called from Python with `argv`,
    it returns the exit status and gives the caller's Ctrl+C and SIGTERM handlers back (while it
    runs they are its own), so a later Ctrl+C still stops the caller's program."""
    callers = _callers_handlers() if argv is not None else {}
    try:
        code = _main(argv)
    except KeyboardInterrupt as err:  # a second signal inside the first one's handling
        code = _stopped(err)
    finally:
        if callers:  # a signal held while this call was stopping was this call's (it returns 130 / 143)
            _early.clear()
        for sig, handler in callers.items():
            signal.signal(sig, handler)
    if argv is None:
        _exit_now(code)
    return code


def _callers_handlers() -> dict:
    """The SIGINT / SIGTERM handlers to give back after an in-process `main`: those in place now, or
    the ones this module's import replaced (`_remember_early` is for the command's own start only)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    out = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if handler is _remember_early:
            handler = _before_import.get(sig)
        if handler is None:  # not set from Python: Python's own default
            handler = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
        out[sig] = handler
    return out


def _exit_now(code: int) -> None:
    """After the command is done (its outputs closed): a further Ctrl+C / SIGTERM ends the process
    at once, with the command's own status; a stopped command does not wait for the interpreter's
    slow tear-down (torch, daemon threads) either, where another Ctrl+C would print a traceback
    or end it by the signal instead of exiting with 130."""
    def now(signum, _frame) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # the work was done (or stopped) before this signal: its status stands

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, now)
        signal.signal(signal.SIGTERM, now)
    if code in (130, 143) or _signalled:
        logging.shutdown()
        now(signal.SIGTERM if code == 143 else signal.SIGINT, None)


# The C extensions a command loads first. A KeyboardInterrupt raised inside one's module init can
# abort the interpreter (SIGABRT), so a signal during these imports is held and acted on after them.
HEAVY_IMPORTS = {"run": ("numpy", "torch", "cv2", "av"), "batch": ("numpy", "torch", "cv2", "av"),
                 "export-model": ("numpy", "torch"), "stream": ("numpy", "cv2", "av")}


def _import_deferring_signals(modules) -> None:
    import importlib

    with signals_held():  # a signal during them raises once they are imported (the handler is `_raise_on_signal`)
        for name in modules:
            importlib.import_module(name)


def _main(argv: list[str] | None) -> int:
    # First of all: Ctrl+C and SIGTERM during imports, model loading and warm-up raise, so
    # every clean-up runs (no half-made outputs) and the exit is 130 / 143, not a traceback.
    _signalled.clear()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _raise_on_signal)
        signal.signal(signal.SIGTERM, _raise_on_signal)
    if _early:  # a signal while this module was being imported
        stop = Terminated() if _early[-1] == signal.SIGTERM else KeyboardInterrupt()
        _early.clear()
        return _stopped(stop)
    try:
        args = build_parser().parse_args(argv)
        logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
        log.info("sapiens-rt %s: starting", args.command)
        _import_deferring_signals(HEAVY_IMPORTS.get(args.command, ("numpy",)))
        return int(args.func(args) or 0)
    except UserError as err:
        if _signalled:  # the signal landed inside a library (safetensors, PyAV) that reported it as its own error
            return _stopped(_signalled[-1])
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt as err:
        return _stopped(err)
    except Exception:
        # A signal that lands inside an import can leave a library half-initialised, so that it
        # fails later in its own way (numpy's lazy attributes: RecursionError): the signal wins.
        if _signalled:
            return _stopped(_signalled[-1])
        raise


if __name__ == "__main__":
    sys.exit(main())
