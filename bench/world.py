"""Motion in the world from a moving camera: camera egomotion, world roots, world foot locking.

Scenes: `synthetic/world_scene.py`, a textured room rendered per frame (640 x 480, f = 500 px)
along each camera path (static, pan, dolly, handheld shake, follow shot), with performers whose
ground truth (world joints, contacts) comes from one function: by default two synthetic walkers
(`--motion walkers`), or real motion capture (the CMU clips in tests/data/mocap/, two side by side:
`--motion mocap` the stylised subject 131, `--motion walks` the everyday walks, one walking away from
the camera and one at 45 degrees, `--motion turning` the same with a walk turning 90 degrees and a held-out
walk, `--motion unseen` as `walks` with the walks of three subjects added after all the tuning, measured once).
Measured input as bench/rig.py: 2D keypoints every frame (1 px), 3D
keypoints and a half-resolution pointmap every 5th frame (2 % per-frame scale jitter, 1.5 cm per
keypoint, 0.5 % of the depth per pointmap pixel), the people's mask from the seg (edge +-1 px).

Per frame, causal, as the world stage would run: `CameraTracker` (camera pose), `Lifter` per
person (3D every frame, scale-stabilised), `WorldAnchor` (floor and world frame from the feet, in
the odometry frame; its up the background's floor, `ScenePlanes`, as the ground stage hands it to the world
stage in `Frame.floor_up`: before round 21 the feet's own tilt, 0.4-3.1 degrees off on the stylised clips), then
in the world: `ContactDetector` (the world floor, the camera's line of
sight), the VMC sink's one-euro filter and `FootLock`.

Reported per camera path and seed (the last line: the worst of each over all of them):
- camera rotation error: mean angle between the estimated and true camera rotation relative to
  the first frame (deg); translation error: mean position error relative to the first frame as
  % of the camera's path length (paths shorter than 1 m count as 1 m: a pan has none);
- root: each performer's hips in the first camera's frame after the live senders' one-euro filter,
  both trajectories moved to start at the same point (the first frame aligned), mean error as % of
  the distance travelled; pair distance from the same roots; `root*`: the same from the frame the
  world is fixed (the floor fitted, ~150 frames in), where a moving camera's world roots begin in a
  run (`Camera.world`; before it people are camera-relative): frame 0's own pointmap scale error,
  which nothing causal can take out on that frame, is then behind it (the egomotion's metres are the
  mean of the scales seen so far); `RTE`: the root translation error as WHAM and GVHMR report it (their
  `compute_rte`: the whole track rigidly aligned to the truth, rotation and translation without scale, the mean
  error over the distance travelled), the measure the issue's 2 % goal is quoted from;
- slide: the locked ankles' travel along the floor during true contacts (mm/frame, world);
- pair distance: mean |error| of the distance between the two performers' hips, % of the truth;
- static drift over `--static-seconds` (60 s) of a static camera with the performers walking:
  the largest camera translation (cm) and rotation (deg) reported;
- egomotion cost: mean ms per 640 x 480 frame of `CameraTracker.update`, one OpenCV thread.
With `--pipeline`: the same scenes (the walkers, or `--motion walks|turning|unseen|mocap`) through the run's own stages
instead, egomotion -> ground -> world -> motion (`realtime.stages`, `--camera auto`), from the frames the collect stage
would hand on (image, seg, pointmap and 3D every 5th frame): the frame the people moved into the world,
the camera's rotation error after it, the world up error (the angle between the world frame's y and
the true up, both in each frame's camera, mean over the frames from the world's fix on), the distance
between the two performers' `Person.bones` roots against the truth, each performer's height (and the
truth: eye height / 0.936), the ground stage's
world slide (its ankle and heel of each foot in true contact on a frame and the one before, in the
world of the world stage's cameras, once the world is fixed: mm/frame on the lifted frames, and on
all frames with the depth frames' re-measuring), the avatar's feet slide (the ankles of `Person.bones` by forward
kinematics, in the world, between two frames of true contact: mm per 1/30 s, `avatar_slide`), the world roots the
run hands on (`Person.bones`, from
the first frame in the world, aligned there: % of the distance travelled, the worst performer), the
stages' foot contacts against the truth (`Person.contacts`: the world stage's once in the world, else the
ground stage's; precision and recall over the frames that have them), and each stage's cost per frame.
`--hold camera`: the ground stage is not shown the egomotion stage's camera (as before round 5, when it
ran before the egomotion), so its lifter holds planted feet in the camera frame.
`--no-background-scale`: the ground stage is not shown the egomotion's `Odometry.pointmap_scale` (as before
round 11), so a moving camera's people keep the pointmap's per-frame scale jitter.
`--fps F`: the same scenes sampled at F frames a second over the same seconds (the performers' joints interpolated
between their 30 fps frames, a frame's true contacts those of the 30 fps frame at or before it, the camera paths
functions of time), the pointmap at the same rate in seconds (every 5th frame at 30 fps, every 10th at 60); the
slide is then given per 1/30 s so rates compare. Not with
`--pipeline`.
Run: python bench/world.py [--seeds 0 1 2] [--frames 300] [--paths ...] [--motion walkers|mocap|walks|turning|unseen]
     [--pipeline [--hold world|camera] [--no-background-scale]] [--fps 30]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.data import keypoint_names  # noqa: E402
from realtime.options import CONTACT_DECIDERS  # noqa: E402
from realtime.rig.contacts import ContactDetector  # noqa: E402
from realtime.rig.egomotion import CameraTracker  # noqa: E402
from realtime.rig.floor import Floor, foot_indices  # noqa: E402
from realtime.rig.floor_scene import ScenePlanes, body_cues  # noqa: E402
from realtime.rig.lift import Lifter  # noqa: E402
from realtime.rig.lock import FootLock  # noqa: E402
from realtime.rig.world import WorldAnchor, transform_points  # noqa: E402
from realtime.stages.motion import Filter3D  # noqa: E402
from synthetic.world_scene import CAMERA_PATHS, FPS, Motion, SceneRenderer, scene_truth, walkers  # noqa: E402

NAMES = keypoint_names()
DEPTH_EVERY = 5  # at FPS: the pointmap 6 times a second
RAW_SCALE = False  # True: leave the frame's pointmap scale in the people's 3D (only the bone-length filter)
HIPS = [NAMES.index("left_hip"), NAMES.index("right_hip")]
ANKLES = [NAMES.index("left_ankle"), NAMES.index("right_ankle")]
NECK = NAMES.index("neck")
FEET = foot_indices(NAMES)
WORLD_FLOOR = Floor(np.array([0.0, 1.0, 0.0]), np.zeros(3))


def mocap_motions(frames: int) -> list[Motion]:
    """Two of the shipped CMU clips side by side (tests/mocap_clips.py), 2.8 m apart, 4 m out."""
    from tests.mocap_clips import load_clips

    clips = load_clips()
    out = []
    for i, clip in enumerate(clips[:2]):
        joints = clip.joints[:frames].copy()
        start = joints[0, HIPS].mean(axis=0)
        joints[..., 0] += 2.8 * (i - 0.5) - start[0]
        joints[..., 2] += 3.0 - start[2]
        out.append(Motion(joints, clip.contacts[:frames]))
    return out


def walk_motions(frames: int, seed: int, turning: bool = False, unseen: bool = False) -> list[Motion]:
    """Two of the everyday CMU walks (tests/mocap_clips.py `WALKS`; the pair turns with the seed) side by
    side, 2.8 m apart, each path centred 4.5 m out: the first walking away from the static camera, the
    second turned 45 degrees; each played forward then backward to `frames` (a walk is 3-4 s).
    turning: the first is the walk that turns 90 degrees (`OTHER_GAITS`, CMU 16_18), the second a walk
    held out from the tuning (`HELD_OUT`, turning with the seed). unseen: two of the walks added after all the
    tuning and measured once (`UNSEEN`, the pair turning with the seed)."""
    from tests.mocap_clips import HELD_OUT, OTHER_GAITS, UNSEEN, WALKS, load_clip

    walks = UNSEEN if unseen else WALKS
    names = ((OTHER_GAITS[0], HELD_OUT[seed % len(HELD_OUT)]) if turning else
             tuple(walks[(seed + i) % len(walks)] for i in range(2)))
    out = []
    for i, heading in enumerate((0.0, 45.0)):
        clip = load_clip(names[i])
        joints = clip.joints @ Rotation.from_euler("y", heading, degrees=True).as_matrix().T
        hips = joints[:, HIPS].mean(axis=1)
        middle = (hips.min(axis=0) + hips.max(axis=0)) / 2
        joints = joints - np.array([middle[0] - 2.8 * (i - 0.5), 0.0, middle[2] - 4.5])
        out.append(Motion(*_loop(Motion(joints, clip.contacts), frames)))
    return out


def depth_every_at(fps: float) -> int:
    """The pointmap's frame interval at `fps`: DEPTH_EVERY frames at FPS, the same rate in seconds at any other."""
    return max(1, int(round(DEPTH_EVERY * fps / FPS)))


def at_rate(motion: Motion, fps: float) -> Motion:
    """A 30 fps `Motion` sampled at `fps` over the same seconds: joints interpolated linearly between the nearest
    frames (NaN where either is unknown), each frame's contacts those of the frame at or before it."""
    if abs(fps - FPS) < 1e-3 * FPS:
        return motion
    count = int(np.floor((len(motion.joints) - 1) * fps / FPS + 1e-6)) + 1
    position = np.arange(count) * FPS / fps
    before = np.clip(np.floor(position + 1e-6).astype(int), 0, len(motion.joints) - 1)
    after = np.minimum(before + 1, len(motion.joints) - 1)
    share = np.clip(position - before, 0.0, 1.0)[:, None, None]
    return Motion((1.0 - share) * motion.joints[before] + share * motion.joints[after], motion.contacts[before].copy())


def run(motions: list[Motion], path: str, seed: int, *, timing: list | None = None, fps: float = FPS) -> dict:
    """One scene through the causal chain at `fps` (`motions` at 30 fps, `at_rate`); returns its measures (the
    slide per 1/30 s)."""
    motions = [at_rate(m, fps) for m in motions]
    depth_every = depth_every_at(fps)
    truth = scene_truth(motions, path, fps=fps, seed=seed)
    frames, people = len(truth.times), len(motions)
    renderer, rng = SceneRenderer(seed), np.random.default_rng(seed)
    tracker, anchor, scene = CameraTracker(), WorldAnchor(NAMES), ScenePlanes()
    lifters = [Lifter(NAMES) for _ in range(people)]
    detectors = [ContactDetector(WORLD_FLOOR, NAMES) for _ in range(people)]
    live_filter, locks = Filter3D("one_euro", 0.5, len(NAMES)), [FootLock(NAMES) for _ in range(people)]
    root_filter = Filter3D("one_euro", 0.5, 1)  # what a live sender does to the root it sends
    poses = np.zeros((frames, 4, 4))
    hips = np.full((people, frames, 3), np.nan)  # odometry frame
    locked_ankles = np.full((people, frames, 2, 3), np.nan)  # world
    contacts = np.zeros((people, frames, 2), bool)
    grounded = np.zeros(frames, bool)
    scores = np.full(len(NAMES), 0.9)
    for t in range(frames):
        seen = renderer.observe(truth, t, rng, depth_frame=t % depth_every == 0)
        start = time.perf_counter()
        pose = tracker.update(seen.gray, seen.person_mask, seen.pointmap, None, truth.times[t])
        if timing is not None:
            timing.append(time.perf_counter() - start)
        poses[t] = pose.world_from_camera
        floor_up = scene_up(scene, seen, pose.world_from_camera[:3, :3])
        points = []
        for p in range(people):
            known = np.isfinite(truth.joints[p, t]).all(axis=-1)
            pixels = np.where(known[:, None], seen.keypoints2d[p], np.nan)
            depth = None if seen.keypoints3d is None else np.where(known[:, None], seen.keypoints3d[p], np.nan)
            if depth is not None and pose.pointmap_scale is not None and not RAW_SCALE:
                depth = depth / pose.pointmap_scale  # the frame's scale jitter, measured on the background
            planted = contacts[p, t - 1] if t and grounded[t - 1] else None  # as the ground stage: the last frame's
            motion = np.linalg.inv(poses[t]) @ poses[t - 1] if t else None  # held in the world, not the image
            lifted = lifters[p].update(pixels, depth, scores, planted, motion, truth.times[t])
            points.append(lifted)
            if lifted is None:
                continue
            root = transform_points(pose.world_from_camera, lifted[HIPS].mean(axis=0))
            hips[p, t] = root_filter(truth.times[t], p, root[None], None)[0]
            if depth is not None:
                anchor.add(pose.world_from_camera, lifted, floor_up)
        frame = anchor.frame
        grounded[t] = frame.grounded
        if not frame.grounded:
            continue
        world_from_camera = frame.camera(pose.world_from_camera)
        for p, lifted in enumerate(points):
            if lifted is None:
                continue
            world = transform_points(world_from_camera, lifted)
            contacts[p, t] = detectors[p].update(truth.times[t], world, camera=world_from_camera[:3, 3])
            filtered = live_filter(truth.times[t], p, world, None)
            locked_ankles[p, t] = locks[p].apply(truth.times[t], filtered, contacts[p, t])[ANKLES]

    odometry = np.linalg.inv(truth.world_from_camera[0]) @ truth.world_from_camera
    rotation_error = [np.degrees(Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).magnitude()) for a, b in zip(poses, odometry)]
    path_length = max(float(np.linalg.norm(np.diff(odometry[:, :3, 3], axis=0), axis=1).sum()), 1.0)
    translation_error = np.linalg.norm(poses[:, :3, 3] - odometry[:, :3, 3], axis=1).mean() / path_length
    true_hips = transform_points(np.linalg.inv(truth.world_from_camera[0]), truth.joints[:, :, HIPS].mean(axis=2))
    def root_error(first: int) -> float:
        """The worst performer's mean root error from frame `first` on, both tracks aligned there, / distance."""
        return max(aligned_error(hips[p, first:], true_hips[p, first:]) for p in range(people))

    steps = []
    for p in range(people):
        truth_contacts = truth.contacts[p] & grounded[:, None]
        both = truth_contacts[1:] & truth_contacts[:-1]
        move = np.diff(locked_ankles[p], axis=0)
        steps.append(np.linalg.norm(move[..., [0, 2]], axis=-1)[both & np.isfinite(move).all(axis=-1)])
    out = {"camera_rotation_deg": float(np.mean(rotation_error)), "camera_translation_pct": 100 * float(translation_error),
           "root_pct_of_distance": 100 * float(root_error(0)),
           "root_pct_from_fix": 100 * float(root_error(int(np.argmax(grounded)))) if grounded.any() else float("nan"),
           "rte_pct": 100 * max(root_translation_error(hips[p], true_hips[p]) for p in range(people)),
           "slide_mm_per_frame": 1000 * float(np.concatenate(steps).mean()) * (fps / FPS)}
    if people >= 2:
        d_est = np.linalg.norm(hips[0] - hips[1], axis=1)
        d_true = np.linalg.norm(true_hips[0] - true_hips[1], axis=1)
        out["pair_distance_pct"] = 100 * float(np.nanmean(np.abs(d_est - d_true) / d_true))
    truth_contacts = truth.contacts & grounded[None, :, None]
    tp = (contacts & truth_contacts).sum()
    out["contact_precision"] = float(tp / max(contacts.sum(), 1))
    out["contact_recall"] = float(tp / max(truth_contacts.sum(), 1))
    return out


def scene_up(scene: ScenePlanes, seen, rotation: np.ndarray) -> np.ndarray | None:
    """The floor's up in this frame's camera from the backgrounds seen so far (this frame's too on a depth frame), as
    the ground stage hands it to the world stage (`Frame.floor_up`): the frame's raw pointmap, 3D keypoints and people's
    mask, each frame's normal turned through the odometry (`rotation`: odometry_from_camera). None until enough
    backgrounds showed the floor."""
    cues = None if seen.pointmap is None else body_cues(list(seen.keypoints3d), FEET, HIPS, NECK)
    if cues is not None:
        scene.add(seen.pointmap, seen.person_mask, *cues, rotation)  # the mask resampled to the map's grid there
    return scene.normal(rotation, moving=True)


def static_drift(motions_for, seconds: float, seed: int) -> tuple[float, float]:
    """A static camera for `seconds` with the performers walking: the largest drift (cm, deg)."""
    frames = int(seconds * 30)
    truth = scene_truth(motions_for(frames, seed), "static", seed=seed)
    renderer, rng, tracker = SceneRenderer(seed), np.random.default_rng(seed), CameraTracker()
    worst_t, worst_r = 0.0, 0.0
    for t in range(frames):
        seen = renderer.observe(truth, t, rng, depth_frame=t % DEPTH_EVERY == 0)
        pose = tracker.update(seen.gray, seen.person_mask, seen.pointmap, None)
        worst_t = max(worst_t, float(np.linalg.norm(pose.position)))
        worst_r = max(worst_r, float(np.degrees(Rotation.from_matrix(pose.rotation).magnitude())))
    return 100 * worst_t, worst_r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--paths", nargs="+", default=list(CAMERA_PATHS), choices=CAMERA_PATHS)
    parser.add_argument("--motion", choices=("walkers", "mocap", "walks", "turning", "unseen"), default="walkers",
                        help="walkers: two synthetic walkers; mocap: the stylised CMU clips (subject 131); "
                             "walks: the everyday CMU walks; turning: a CMU walk turning 90 degrees beside a held-out walk; "
                             "unseen: as walks, the walks of three subjects added after all the tuning")
    parser.add_argument("--static-seconds", type=float, default=60.0)
    parser.add_argument("--pipeline", action="store_true",
                        help="through the run's stages (egomotion -> ground -> world -> motion)")
    parser.add_argument("--hold", choices=("world", "camera"), default="world",
                        help="--pipeline: camera = the ground stage not shown the camera (feet held in the camera frame)")
    parser.add_argument("--no-background-scale", action="store_true",
                        help="--pipeline: the ground stage not shown the egomotion's pointmap scale (before round 11)")
    parser.add_argument("--contacts", choices=CONTACT_DECIDERS, default="rules",
                        help="--pipeline: how the ground stage decides foot contacts (as `sapiens-rt run --contacts`)")
    parser.add_argument("--fps", type=float, default=FPS,
                        help="the frame rate the scenes are sampled at (the same seconds; the slide per 1/30 s)")
    args = parser.parse_args()
    if not (np.isfinite(args.fps) and 1.0 <= args.fps <= 1000.0):
        parser.error(f"--fps {args.fps}: give a frame rate between 1 and 1000, e.g. --fps 60")
    if args.pipeline and args.fps != FPS:
        parser.error("--pipeline runs at 30 fps only; leave --fps out")
    if args.contacts != "rules" and not args.pipeline:
        parser.error("--contacts chooses the ground stage's decider: add --pipeline")
    slide_unit = "mm/frame" if args.fps == FPS else "mm per 1/30 s"
    cv2.setNumThreads(1)  # the cost on one core
    def motions_for(frames: int, seed: int) -> list[Motion]:
        if args.motion in ("walks", "turning", "unseen"):
            return walk_motions(frames, seed, turning=args.motion == "turning", unseen=args.motion == "unseen")
        if args.motion == "mocap":
            clips = mocap_motions(frames)
            reps = -(-frames // min(len(m.joints) for m in clips))
            return clips if reps == 1 else [Motion(*_loop(m, frames)) for m in clips]
        return walkers(2, frames, seed)

    if args.pipeline:
        rows = [pipeline_run(path, seed, args.frames, hold=args.hold, background_scale=not args.no_background_scale,
                             motions=None if args.motion == "walkers" else motions_for(args.frames, seed),
                             contacts=args.contacts)
                for path in args.paths for seed in args.seeds]
        for path in args.paths:
            lifted = [r["slide_lifted_mm"] for r in rows if r["path"] == path]
            every = [r["slide_all_mm"] for r in rows if r["path"] == path]
            ups = [r.get("world_up_deg", float("nan")) for r in rows if r["path"] == path]
            roots = [r["root_world_pct"] for r in rows if r["path"] == path and "root_world_pct" in r]
            avatar = [r["avatar_slide_mm"] for r in rows if r["path"] == path]
            precision = np.mean([r.get("contact_precision", np.nan) for r in rows if r["path"] == path])
            recall = np.mean([r.get("contact_recall", np.nan) for r in rows if r["path"] == path])
            root = f"; world root {np.mean(roots):.2f} % of distance ({min(roots):.2f}-{max(roots):.2f})" if roots else ""
            print(f"{path}: ground slide in the world (hold {args.hold}) lifted frames {np.mean(lifted):.2f} mm/frame "
                  f"({min(lifted):.2f}-{max(lifted):.2f}), all frames {np.mean(every):.2f} ({min(every):.2f}-{max(every):.2f}); "
                  f"world up error {np.mean(ups):.2f} deg ({min(ups):.2f}-{max(ups):.2f}){root}; "
                  f"contacts P {precision:.2f} R {recall:.2f}; avatar feet slide {np.mean(avatar):.2f} mm per 1/30 s "
                  f"({min(avatar):.2f}-{max(avatar):.2f})")
        return

    timing: list[float] = []
    rows = []
    print(f"{'path':9s} {'seed':>4s} {'rot deg':>8s} {'trans %':>8s} {'root %':>7s} {'slide mm':>9s} {'pair %':>7s} {'P':>5s} "
          f"{'R':>5s} {'root* %':>7s} {'RTE %':>6s}")
    for path in args.paths:
        for seed in args.seeds:
            r = run(motions_for(args.frames, seed), path, seed, timing=timing, fps=args.fps)
            rows.append(r)
            print(f"{path:9s} {seed:4d} {r['camera_rotation_deg']:8.3f} {r['camera_translation_pct']:8.2f} "
                  f"{r['root_pct_of_distance']:7.2f} {r['slide_mm_per_frame']:9.2f} "
                  f"{r.get('pair_distance_pct', float('nan')):7.2f} {r['contact_precision']:5.2f} {r['contact_recall']:5.2f} "
                  f"{r['root_pct_from_fix']:7.2f} {r['rte_pct']:6.2f}",
                  flush=True)
    drifts = ([static_drift(motions_for, args.static_seconds, seed) for seed in args.seeds] if args.static_seconds > 0
              else [(0.0, 0.0)])
    for seed, (cm, deg) in zip(args.seeds, drifts):
        print(f"static {args.static_seconds:.0f} s, seed {seed}: drift {cm:.3f} cm {deg:.4f} deg")
    print(f"egomotion cost: {1000 * np.mean(timing):.2f} ms per 640x480 frame (median {1000 * np.median(timing):.2f}, "
          f"p95 {1000 * np.percentile(timing, 95):.2f}), one OpenCV thread, {len(timing)} frames")
    worst = {k: max(r[k] for r in rows if k in r) for k in rows[0]}
    print(f"root translation error as WHAM and GVHMR measure it (RTE: the whole track rigidly aligned): worst "
          f"{worst['rte_pct']:.2f} %, mean {np.mean([r['rte_pct'] for r in rows]):.2f} %")
    print(f"world: camera rotation {worst['camera_rotation_deg']:.2f} deg, translation {worst['camera_translation_pct']:.2f} %, "
          f"root {worst['root_pct_of_distance']:.2f} % of distance, slide {worst['slide_mm_per_frame']:.2f} {slide_unit}, "
          f"pair distance {worst.get('pair_distance_pct', float('nan')):.2f} %, static drift {max(d[0] for d in drifts):.2f} cm "
          f"{max(d[1] for d in drifts):.3f} deg")


def pipeline_run(path: str, seed: int, frames: int, hold: str = "world", background_scale: bool = True,
                 motions: list[Motion] | None = None, contacts: str = "rules") -> dict:
    """One scene through EgomotionStage -> GroundStage -> WorldStage -> MotionStage (see the module's
    docstring); hold 'camera': the ground stage does not see the egomotion stage's camera;
    background_scale False: nor its pointmap scale; motions: the performers (default two walkers); contacts: the
    ground stage's decider ("rules" or "learned")."""
    from tests.world_tracks import run_chain

    cost: dict[str, list[float]] = {}
    truth, out, _ = run_chain(path, frames, background_scale=background_scale, hold=hold, seed=seed, motions=motions,
                              cost=cost, contacts=contacts)
    world = [f.index for f in out if f.camera.world]
    grounded = next((f.index for f in out if f.camera.grounded), None)
    result = {"path": path, "seed": seed, "world_from": world[0] if world else None, "grounded_from": grounded}
    if grounded is not None:
        first = out[grounded].camera.world_from_camera
        errors = [np.degrees(Rotation.from_matrix((np.linalg.inv(first) @ f.camera.world_from_camera)[:3, :3].T
                                                  @ (np.linalg.inv(truth.world_from_camera[grounded]) @ pose)[:3, :3])
                             .magnitude())
                  for f, pose in zip(out[grounded:], truth.world_from_camera[grounded:])]
        result["camera_rotation_deg"] = float(np.mean(errors))
        # the world's up (y) against the true up, both in each frame's camera: the world frame's tilt
        ups = [np.degrees(np.arccos(np.clip(f.camera.world_from_camera[1, :3] @ pose[1, :3], -1.0, 1.0)))
               for f, pose in zip(out[grounded:], truth.world_from_camera[grounded:])]
        result["world_up_deg"] = round(float(np.mean(ups)), 3)
    if world:  # the run's world roots (`Person.bones`) from the first frame in the world, aligned there
        result["root_world_pct"] = round(world_root_error(truth, out, world), 2)
    rows = [i for i in world if all(p.bones is not None and not p.bones.root_held for p in out[i].people)]
    if rows:
        est = np.array([np.linalg.norm(out[i].people[0].bones.root_position - out[i].people[1].bones.root_position)
                        for i in rows])
        ref = np.linalg.norm(truth.joints[0, rows][:, HIPS].mean(axis=1) - truth.joints[1, rows][:, HIPS].mean(axis=1), axis=1)
        result["pair_distance_pct"] = 100 * float(np.mean(np.abs(est - ref) / ref))
    eyes = [NAMES.index("left_eye"), NAMES.index("right_eye")]
    result["height"] = [p.height for p in out[-1].people]
    result["height_truth"] = [round(float(np.nanmedian(truth.joints[p, :, eyes, 1].mean(axis=0))) / 0.936, 3) for p in range(2)]
    known = [(f.index, p, person.contacts) for f in out for p, person in enumerate(f.people) if person.contacts is not None]
    if known:  # the stages' contacts (the world stage's once in the world, else the ground stage's) against the truth
        detected = np.array([c for _, _, c in known], bool)
        true = np.array([truth.contacts[p, t] for t, p, _ in known], bool)
        result["contact_precision"] = round(float((detected & true).sum() / max(detected.sum(), 1)), 3)
        result["contact_recall"] = round(float((detected & true).sum() / max(true.sum(), 1)), 3)
    lifted, every = ground_slide(truth, out)
    result["slide_lifted_mm"] = round(1000 * float(lifted.mean()), 2)
    result["slide_all_mm"] = round(1000 * float(every.mean()), 2)
    avatar = avatar_slide(truth, out)
    result["avatar_slide_mm"] = round(float(avatar.mean()), 2) if len(avatar) else float("nan")
    result["cost_ms"] = {name: (round(1000 * float(np.mean(v)), 2), round(1000 * float(np.median(v)), 2))
                         for name, v in cost.items()}
    print(result, flush=True)
    return result


def world_root_error(truth, out: list, world: list[int]) -> float:
    """The worst performer's mean error of the world roots the run hands on (`Person.bones.root_position` on
    the frames in the world), both tracks in the camera of the first such frame and aligned there, as % of the
    distance travelled (the measure of `root*` in `run`, on the stages' own output)."""
    first = world[0]
    est_camera, true_camera = np.linalg.inv(out[first].camera.world_from_camera), np.linalg.inv(truth.world_from_camera[first])
    errors = []
    for p in range(len(out[first].people)):
        est = np.array([transform_points(est_camera, out[i].people[p].bones.root_position) if out[i].people[p].bones is not None
                        else np.full(3, np.nan) for i in world])
        ref = transform_points(true_camera, truth.joints[p, world][:, HIPS].mean(axis=1))
        errors.append(100 * aligned_error(est, ref))
    return max(errors)


def aligned_error(est: np.ndarray, ref: np.ndarray) -> float:
    """(T, 3) estimated and true positions, both moved to start at their first: the mean distance between them
    over the distance the truth travelled."""
    travelled = np.linalg.norm(np.diff(ref, axis=0), axis=1).sum()
    return float(np.nanmean(np.linalg.norm((est - est[0]) - (ref - ref[0]), axis=1))) / travelled


def root_translation_error(est: np.ndarray, ref: np.ndarray) -> float:
    """WHAM's and GVHMR's RTE (their `compute_rte`): the estimated track rigidly aligned to the true one over the
    whole take (rotation and translation, no scale), the mean distance between them over the distance travelled."""
    ok = np.isfinite(est).all(axis=1)
    e, r = est[ok] - est[ok].mean(axis=0), ref[ok] - ref[ok].mean(axis=0)
    rotation, _ = Rotation.align_vectors(r, e)
    travelled = np.linalg.norm(np.diff(ref, axis=0), axis=1).sum()
    return float(np.linalg.norm(rotation.apply(e) - r, axis=1).mean() / travelled)


def ground_slide(truth, out: list) -> tuple[np.ndarray, np.ndarray]:
    """The ground stage's feet (ankle and heel) in true contact on a frame and the one before, in the
    world of the world stage's cameras once the world is fixed: each step (metres) on the lifted frames,
    and on every frame (the depth frames re-measure the foot: their noise is the pointmap's)."""
    feet = [[NAMES.index(f"{side}_{point}") for point in ("ankle", "heel")] for side in ("left", "right")]
    lifted, every = [], []
    for t in range(1, len(out)):
        if not out[t - 1].camera.grounded:
            continue
        poses = [out[i].camera.world_from_camera for i in (t - 1, t)]
        for p, (a, b) in enumerate(zip(out[t - 1].people, out[t].people)):
            for side, foot in enumerate(feet):
                if not (truth.contacts[p, t, side] and truth.contacts[p, t - 1, side]):
                    continue
                if a.keypoints3d is None or b.keypoints3d is None:
                    continue
                wa, wb = (transform_points(pose, q.keypoints3d[foot]) for pose, q in zip(poses, (a, b)))
                step = float(np.linalg.norm(wb - wa, axis=1).mean())
                if np.isfinite(step):
                    every.append(step)
                    if t % DEPTH_EVERY:
                        lifted.append(step)
    return np.array(lifted), np.array(every)


def avatar_slide(truth, out: list) -> np.ndarray:
    """The avatar's feet: each step (mm per 1/30 s) along the world's floor of the ankle of `Person.bones` (forward
    kinematics, `bench.motion.avatar_world`: the bones' own world on frames in it, else placed in the world stage's
    world from the bones' own root, with the performer's root origin, `bench.motion.camera_origin` of its first
    camera-relative frame, as bench/motion.py places it: the root as solved, the pin's shift of the hips included)
    between two frames of true contact, both placed in the same kind of world."""
    from bench.motion import SLIDE_PER, avatar_world, camera_origin

    origins: dict[int, np.ndarray] = {}  # performer -> its root origin (camera-relative bones)
    for frame in out:
        for p, person in enumerate(frame.people):
            if p not in origins and frame.camera is not None and not frame.camera.world:
                origin = camera_origin(person)
                if origin is not None:
                    origins[p] = origin
    steps = []
    for t in range(1, len(out)):
        if out[t].camera is None or out[t - 1].camera is None or out[t].camera.world != out[t - 1].camera.world:
            continue
        dt = out[t].timestamp - out[t - 1].timestamp
        for p, (a, b) in enumerate(zip(out[t - 1].people, out[t].people)):
            placed = [avatar_world(frame, person, None if frame.camera.world else origins.get(p))
                      for frame, person in ((out[t - 1], a), (out[t], b))]
            if placed[0] is None or placed[1] is None:
                continue
            for side in range(2):
                if truth.contacts[p, t, side] and truth.contacts[p, t - 1, side]:
                    move = placed[1][0][side, 0] - placed[0][0][side, 0]  # the ankle (the foot bone's head)
                    steps.append(1000 * float(np.linalg.norm(move[[0, 2]])) * SLIDE_PER / dt)
    return np.array([s for s in steps if np.isfinite(s)])


def _loop(motion: Motion, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """A clip played forward then backward until `frames` (no jump at the seam)."""
    index = np.arange(frames) % (2 * len(motion.joints) - 2)
    index = np.where(index < len(motion.joints), index, 2 * len(motion.joints) - 2 - index)
    return motion.joints[index], motion.contacts[index]


if __name__ == "__main__":
    main()
