"""Train the foot-contact model (`realtime.rig.contact_model`) on the motion corpus; write its weights.

    python bench/train_contacts.py --corpus MOCAP_DIR [--train-extra DIR ...]   # -> realtime/data/contact_model.npz

The clips: every clip of the corpus folder and of the project (tests/data/mocap) that is not held out
(`bench.corpus.HELD_OUT`), and every clip of each `--train-extra` folder (BVH files named as the corpus's, e.g. CMU
trials of other subjects in CMU's own skeleton; the weights' header names each folder and clip with its README's
provenance; the committed weights use two after one flag, the tuning folder that `bench/cmu_tune.json` builds
(/work/mocap-tune: side steps, a kneel, a kick, jumps) and a folder of runs by subjects of no held-out or tuning clip
(/work/mocap-run: CMU 102_10, 127_12, 128_02; the project's one tuning run alone left a new runner's stances unheld),
with `--extra` the held-out folder and `--seed 2`: the command in their header; bench/RESULTS.md, "Issue 51: the
learned contact model (ninth stop)", "... (eleventh stop)", "... more runs (fourteenth stop)" and "... (fifteenth
stop)"). A training clip may
not be held out: one named in `HELD_OUT`, or named as (or byte for byte equal to) a clip of an `--extra` folder
(bench/motion.py's held-out clips, which this script reads only to keep them out).
Each at 24, 30 and 60 fps, seen from the front, the side and 45 degrees, with bench/motion.py's camera, noise and scene
(`bench.motion.run_frames`: the noise of `bench.rig._measured`, the pointmap every 1/6 s, the floor learnt first),
through the run's own egomotion (static) and ground stages, so the features (`realtime.rig.contact_model.windows` of
`frame_sample`, from the ground stage's 3D keypoints and floor) are those the stage computes live. The labels:
`bench.corpus.true_contacts` (a heel or the toes within 3 cm of where it rests and slower than 0.2 m/s), at each frame's
time.

Two rounds (the lifter holds the feet the decider planted on the frame before, so what is decided changes what is
seen): round 1 runs the ground stage with the rule-based detector (noise seed 10), trains a model; round 2 runs it
with that model deciding (seed 11); the final model is trained on both rounds' frames. Each frame is one sample per
foot, its hindsight drawn from 0 (half of them) to the model's whole `FUTURE` (the lag options' grid steps). Then the
hysteresis (`on`, `off`) is chosen on the same training runs: the pair with the best mean of precision and recall
(67 ms tolerance, `bench.motion.contact_counts`) without hindsight. Frames within that tolerance of a true
touchdown or lift-off weigh NEAR_WEIGHT in the loss (`--near-weight`, named in the header). Tracks cut from each
run to begin at a random frame (START_CUTS_PER_S, drawn from a generator of their own) add the frames a track's first
0.4 s shows, weighing START_WEIGHT (bench/RESULTS.md, "the learned contact model (eleventh stop)").

Reproducible: fixed seeds (`--seed` is torch's), torch on one thread; the header of the weights names the clips, rates,
views, seeds, the command, the corpus's source and the scores on the training runs (`scores`), which a retrain
reproduces with the code they were trained under. Round 2 decides with `LearnedContacts` as it stands, so a change
to that decider (its `LearnedGates`, its first-step rule) calls for a retrain (bench/RESULTS.md, "Issue 51: the
learned weights retrained (thirteenth stop)").
A few minutes on a 2-core CPU per 14 clips (most of it the stages). `--clips`, `--fps`, `--views`, `--epochs` cut it
(tests).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus  # noqa: E402
from bench import motion as motion_bench  # noqa: E402
from bench.corpus import NAMES  # noqa: E402
from realtime.rig.contact_model import FEATURES, ContactNet, _Index, frame_sample, windows  # noqa: E402
from realtime.stages import EgomotionStage, GroundStage  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "realtime" / "data" / "contact_model.npz"
STEP, PAST, FUTURE = 1 / 30, 12, 6  # s, grid steps before and after the frame decided (0.4 s, 0.2 s)
HIDDEN = 24  # channels of both convolutions
RATES, VIEWS = (24.0, 30.0, 60.0), ("front", "side", "45")
ROUND_SEEDS = (10, 11)  # the noise of round 1 (rules deciding) and round 2 (the round-1 model deciding)
NEAR_WEIGHT = 0.3  # the loss's weight of frames within bench/motion.py's tolerance of a true event
# Tracks that begin anywhere (a person found mid-stride): per second of a recorded run, one more track cut from it to
# begin at a random frame, its frames within the window's past of that start as samples (later ones see what the
# whole run's do). Without them every track trained on begins where its clip does, mostly standing, and the model
# plants both feet on a track's first frames (a run cut mid-stride: bench/RESULTS.md, "the learned contact model
# (tenth stop)").
START_CUTS_PER_S = 1.0
# The cut tracks' samples weigh this in the loss (times the near-event weight). At full weight (about 30 % of the
# samples), and drawn from the runs' generator, the weights decided touchdowns a frame later with the whole hindsight
# (the offline doors' recall on a walk below the live one); at this weight with a generator of their own (CUT_SEED)
# they did not (bench/RESULTS.md, "the learned contact model (eleventh stop)").
START_WEIGHT = 0.3
EPOCHS, BATCH, LEARNING_RATE, WEIGHT_DECAY = 12, 256, 3e-3, 1e-4
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)  # the hysteresis's candidates: on >= off
TORCH_SEED, SAMPLE_SEED, CUT_SEED = 0, 0, 1


def training_motions(folder, names=None, train_extra=(), extra=()) -> list[corpus.Motion]:
    """The clips not held out: the corpus folder's and the project's, and those of the `train_extra` folders, in their
    order (or those of `names`). CorpusError (one sentence) for a train-extra folder that is missing or holds no BVH,
    two train-extra folders of one name, a file that is not a motion BVH, a clip name given twice, and a train-extra
    clip that is held out (`HELD_OUT`, or an `extra` folder's clip by name or content)."""
    motions = [m for m in corpus.corpus_motions(folder) + corpus.project_motions() if not m.held_out]
    named = [Path(f).resolve().name for f in train_extra]
    twice = sorted({name for name in named if named.count(name) > 1})
    if twice:  # the header names each folder's clips under the folder's name: a second would hide the first's
        raise corpus.CorpusError(f"--train-extra: two folders named {twice[0]}: give each folder once, under a name of "
                                 "its own")
    if train_extra:
        motions += extra_motions(train_extra, extra, {m.name for m in motions})
    if names:
        unknown = sorted(set(names) - {m.name for m in motions})
        if unknown:
            raise corpus.CorpusError(f"--clips: no training clip named {', '.join(unknown)} (held-out clips are never "
                                     "trained on)")
        motions = [m for m in motions if m.name in names]
    return motions


def extra_motions(train_extra, extra, taken) -> list[corpus.Motion]:
    """The clips of the --train-extra folders as training motions (not held out); `taken`: names already trained on."""
    held = {name: None for name in corpus.HELD_OUT}
    for path in corpus.extra_files(extra) if extra else []:
        held[path.stem] = path.read_bytes()
    held_bytes = {content for content in held.values() if content is not None}
    motions = []
    for path in corpus.extra_files(train_extra, "--train-extra", "training"):
        if path.stem in held or path.read_bytes() in held_bytes:
            raise corpus.CorpusError(f"--train-extra: {path} is a held-out clip (bench.corpus.HELD_OUT or an --extra "
                                     "folder's): held-out clips are never trained on; remove it from the folder")
        if path.stem in taken:
            raise corpus.CorpusError(f"--train-extra: {path} is named as a clip already trained on ({path.stem}): rename one")
        taken.add(path.stem)
        motions.append(corpus.load_motion(path))
    return motions


def provenance(train_extra) -> dict:
    """{folder name: {"source": its README's first 'Source:' paragraph, "clips": {clip: {"line": the README's first
    heading or table row that names its file (else the first line that does), "source": the first 'Source:' paragraph of the
    README section holding that line, else the folder's}}}}: what the weights' header says of the --train-extra
    clips (empty strings where the folder has no README)."""
    out = {}
    for folder in map(Path, train_extra):
        readme = folder / "README.md"
        lines = readme.read_text(errors="replace").splitlines() if readme.is_file() else []
        source = _source(lines, 0, len(lines))
        clips = {}
        for path in sorted(folder.glob("*.bvh")):
            naming = [i for i, ln in enumerate(lines)
                      if ln.rstrip().endswith(path.name) or any(f"{path.name}{c}" in ln for c in (" ", "|", "`"))]
            # its own heading or table row before a passing mention (another clip's section naming it as a candidate)
            at = next((i for i in naming if lines[i].lstrip().startswith(("#", "|"))), naming[0] if naming else None)
            if at is None:
                clips[path.stem] = {"line": "", "source": source}
                continue
            # the README's section that names it: from the heading at or before that line to the next heading
            start = max((i for i in range(at + 1) if lines[i].startswith("#")), default=0)
            end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("#")), len(lines))
            clips[path.stem] = {"line": " ".join(lines[at].split()), "source": _source(lines, start, end) or source}
        out[folder.resolve().name] = {"source": source, "clips": clips}
    return out


def _source(lines: list[str], start: int, end: int) -> str:
    """The first 'Source:' paragraph among lines[start:end], from 'Source:' to the paragraph's end (a blank line, a
    new list item, a table row or a heading), on one line; "" if none."""
    at = next((i for i in range(start, end) if "Source:" in lines[i]), None)
    if at is None:
        return ""
    text = [lines[at][lines[at].index("Source:"):]]
    for line in lines[at + 1:end]:
        if not line.strip() or line.lstrip().startswith(("- ", "|", "#")):
            break
        text.append(line)
    return " ".join(" ".join(text).split())


def record(motion: corpus.Motion, view: str, seed: int, net: ContactNet | None, truth: corpus.Truth) -> dict:
    """One clip at its rate through egomotion -> ground (deciding with `net`, or the rules when None): per frame of
    the clip after the floor is known, its time, raw sample and true contacts (`truth` at the clip's times)."""
    walk = motion_bench.seen(motion, view, truth)
    ground = GroundStage(NAMES, contacts="rules" if net is None else "learned", contact_model=net)
    stages = [EgomotionStage(camera="static"), ground]
    index = _Index(NAMES)
    times, raw, rows = [], [], []
    # by_time=False: the noise the committed weights were fitted on (one draw per clip and rate)
    for frame in motion_bench.run_frames(stages, motion, walk, seed, by_time=False):
        t = frame.index - motion_bench.WARMUP_DEPTH_FRAMES
        person = frame.people[0]
        if t < 0 or person.contacts is None or person.keypoints3d is None:
            continue
        times.append(motion.times[t])
        raw.append(frame_sample(person.keypoints3d, ground.floor, index))
        rows.append(t)
    for stage in stages:
        stage.close()
    return {"name": motion.name, "fps": motion.fps, "view": view, "times": np.array(times),
            "raw": np.array(raw).reshape(len(times), -1), "truth": truth.contact[rows].reshape(len(rows), 2)}


def record_all(motions, rates, views, seed: int, net: ContactNet | None, log) -> list[dict]:
    runs = []
    for motion in motions:
        truth = corpus.true_contacts(motion)
        for fps in rates:
            at_rate = corpus.resample(motion, fps)
            for view in views:  # judged by the clip's own-rate truth, as bench/motion.py judges
                begun = time.perf_counter()
                run = record(at_rate, view, seed, net, truth.at(at_rate.times))
                runs.append(run)
                print(f"  {motion.name} {fps:g} fps {view}: {len(run['times'])} frames in {time.perf_counter() - begun:.1f} s",
                      file=log, flush=True)
    return runs


def samples(runs: list[dict], net_shape: ContactNet, rng: np.random.Generator, near_weight: float = NEAR_WEIGHT,
            start_cuts: float = START_CUTS_PER_S, start_weight: float = START_WEIGHT,
            cut_rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, W, C) windows, (N,) labels and (N,) loss weights (`near_weight` for frames within the bench's tolerance
    of a true event, else 1): one per foot and frame, hindsight drawn per frame; then those of the tracks `starts`
    cuts from each run (`start_cuts` per second), their weights times `start_weight`, the cuts and their hindsight
    drawn from `cut_rng` (default `rng`): with a generator of their own the runs' samples are drawn as without cuts."""
    cut_rng = rng if cut_rng is None else cut_rng
    xs, ys, ws = [], [], []
    for run in runs:
        tracks = [(run["times"], run["raw"], run["truth"], rng, 1.0)]
        tracks += [(*cut, cut_rng, start_weight) for cut in starts(run, net_shape, cut_rng, start_cuts)]
        for times, raw, truth, draw, weight in tracks:
            count = len(times)
            if count == 0:
                continue
            future = np.where(draw.random(count) < 0.5, 0, draw.integers(1, FUTURE + 1, count))
            x = windows(times, raw, times[:len(truth)], future[:len(truth)], net_shape)  # (T, 2, W, C)
            near = motion_bench.near_events(truth, times[:len(truth)])
            xs.append(x.reshape(-1, *x.shape[2:]))
            ys.append(truth.reshape(-1))
            ws.append((np.where(near, near_weight, 1.0) * weight).reshape(-1))
    return np.concatenate(xs), np.concatenate(ys).astype(np.float32), np.concatenate(ws).astype(np.float32)


def starts(run: dict, net_shape: ContactNet, rng: np.random.Generator, per_s: float) -> list[tuple]:
    """Tracks cut from a recorded run to begin at random frames (about `per_s` per second of it, at least one where
    it is longer than a window's past): [(times from the cut, raw samples from it, (n, 2) truth of its first n frames:
    those within the window's past of the cut)]: a track found mid-motion, as the model sees one (its window before
    the cut unknown)."""
    times = run["times"]
    if per_s <= 0 or len(times) < 2:
        return []
    span = net_shape.past * net_shape.step
    count = max(1, int(round(per_s * (times[-1] - times[0]))))
    out = []
    for k in rng.integers(1, len(times), count):
        n = int(np.searchsorted(times[k:], times[k] + span + 1e-6))
        out.append((times[k:], run["raw"][k:], run["truth"][k:k + n]))
    return out


def shape_only(mean=None, scale=None) -> ContactNet:
    """A ContactNet holding the grid (for `windows`) and, once known, the normalisation."""
    c = len(FEATURES)
    return ContactNet(w1=np.zeros((HIDDEN, c, 3)), b1=np.zeros(HIDDEN), w2=np.zeros((HIDDEN, HIDDEN, 3)), b2=np.zeros(HIDDEN),
                      w3=np.zeros(HIDDEN * (PAST + 1 + FUTURE - 6)), b3=0.0,
                      mean=np.zeros(c, np.float32) if mean is None else mean,
                      scale=np.ones(c, np.float32) if scale is None else scale,
                      step=STEP, past=PAST, future=FUTURE, on=0.5, off=0.5, header={})


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, epochs: int, log, seed: int = TORCH_SEED) -> ContactNet:
    """The model trained on (N, W, C) windows: Adam on the weighted binary cross-entropy, torch seeded with `seed`
    (the initial weights and the batches' order), one thread."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    mean = x.mean(axis=(0, 1)).astype(np.float32)
    scale = np.maximum(x.std(axis=(0, 1)), 1e-3).astype(np.float32)
    mean[-1], scale[-1] = 0.0, 1.0  # the mask channel as it is
    width, c = x.shape[1], x.shape[2]
    model = torch.nn.Sequential(torch.nn.Conv1d(c, HIDDEN, 3), torch.nn.ReLU(), torch.nn.Conv1d(HIDDEN, HIDDEN, 3, dilation=2),
                                torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(HIDDEN * (width - 6), 1))
    optimiser = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=epochs)
    tx = torch.from_numpy(((x - mean) / scale).transpose(0, 2, 1).copy()).float()  # torch's (N, C, W)
    ty, tw = torch.from_numpy(y), torch.from_numpy(w)
    generator = torch.Generator().manual_seed(seed)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    for epoch in range(epochs):
        order = torch.randperm(len(tx), generator=generator)
        total = 0.0
        for start in range(0, len(tx), BATCH):
            batch = order[start:start + BATCH]
            loss = (loss_fn(model(tx[batch])[:, 0], ty[batch]) * tw[batch]).sum() / tw[batch].sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(batch)
        schedule.step()
        print(f"  epoch {epoch + 1}/{epochs}: loss {total / len(tx):.4f}", file=log, flush=True)
    conv1, conv2, linear = model[0], model[2], model[5]

    def a(t):
        return t.detach().numpy().astype(np.float32)

    return ContactNet(w1=a(conv1.weight), b1=a(conv1.bias), w2=a(conv2.weight), b2=a(conv2.bias), w3=a(linear.weight)[0],
                      b3=float(linear.bias.detach()[0]), mean=mean, scale=scale, step=STEP, past=PAST, future=FUTURE,
                      on=0.5, off=0.5, header={})


def probabilities(runs: list[dict], net: ContactNet, future: int) -> list[np.ndarray]:
    """Per recorded run, (T, 2) the model's probability of contact, every frame seeing `future` grid steps."""
    out = []
    for run in runs:
        x = windows(run["times"], run["raw"], run["times"], np.full(len(run["times"]), future), net)
        out.append(net.probabilities(x.reshape(-1, *x.shape[2:])).reshape(-1, 2))
    return out


def hysteresis(p: np.ndarray, on: float, off: float) -> np.ndarray:
    """(T, 2) decisions from (T, 2) probabilities: planted at `on`, released below `off` (as LearnedContacts)."""
    out = np.zeros(p.shape, bool)
    state = np.zeros(2, bool)
    for t in range(len(p)):
        state = np.where(state, p[t] >= off, p[t] >= on)
        out[t] = state
    return out


def scores(runs: list[dict], probs: list[np.ndarray], on: float, off: float) -> dict:
    """Precision and recall (67 ms tolerance) pooled over recorded runs."""
    tp = fp = fn = 0
    for run, p in zip(runs, probs):
        if len(run["times"]) == 0:
            continue
        a, b, c = motion_bench.contact_counts(hysteresis(p, on, off), run["truth"], run["times"])
        tp, fp, fn = tp + a, fp + b, fn + c
    return {"precision": round(tp / max(tp + fp, 1), 4), "recall": round(tp / max(tp + fn, 1), 4)}


def with_thresholds(net: ContactNet, on: float, off: float, header: dict) -> ContactNet:
    from dataclasses import replace

    return replace(net, on=on, off=off, header=header)


def _near_weight(text: str) -> float | None:
    """--near-weight's value, or None when it is not a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 < value <= 1.0 else None  # NaN fails both


def _seed(text: str) -> int | None:
    """--seed's value, or None when it is not a whole number from 0 to 2**32 - 1."""
    try:
        value = int(text.strip()) if text.strip().isascii() else -1
    except ValueError:
        return None
    return value if 0 <= value < 2 ** 32 else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None, help="the corpus folder (default: $SAPIENS_MOCAP_DIR)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the weights file (default: {OUT.relative_to(OUT.parents[2])})")
    parser.add_argument("--train-extra", type=Path, nargs="+", action="extend", default=[], metavar="DIR",
                        help="folders of more training clips (BVH, named as the corpus's; one or more, or the option "
                             "again)")
    parser.add_argument("--extra", type=Path, action="append", default=[], metavar="DIR",
                        help="a folder of held-out clips (bench/motion.py --extra): read only to keep them out of training")
    parser.add_argument("--clips", nargs="+", help="only these training clips")
    parser.add_argument("--fps", type=float, nargs="+", default=list(RATES))
    parser.add_argument("--views", nargs="+", choices=list(VIEWS), default=list(VIEWS))
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--near-weight", default=str(NEAR_WEIGHT), metavar="W",
                        help=f"the loss's weight of frames within 67 ms of a true touchdown or lift-off, above 0 and at "
                             f"most 1 (default {NEAR_WEIGHT})")
    parser.add_argument("--seed", default=str(TORCH_SEED), metavar="N",
                        help=f"torch's seed: the initial weights and the batches' order, 0 to 2**32 - 1 (default {TORCH_SEED})")
    args = parser.parse_args(argv)
    log = sys.stderr
    started = time.perf_counter()
    try:
        if args.extra:
            corpus.extra_files(args.extra)  # the held-out folders must exist: keeping their clips out depends on it
        motions = training_motions(args.corpus, args.clips, args.train_extra, args.extra)
    except corpus.CorpusError as error:
        print(f"error: {error}", file=log)
        return 2
    if args.epochs < 1:
        parser.error("--epochs must be 1 or more")
    near_weight = _near_weight(args.near_weight)
    if near_weight is None:
        print(f"error: --near-weight must be a number above 0 and at most 1, not {args.near_weight!r}", file=log)
        return 2
    seed = _seed(args.seed)
    if seed is None:
        print(f"error: --seed must be a whole number from 0 to 2**32 - 1, not {args.seed!r}", file=log)
        return 2
    rates, views = sorted(set(args.fps)), list(dict.fromkeys(args.views))
    rng, cut_rng = np.random.default_rng(SAMPLE_SEED), np.random.default_rng(CUT_SEED)
    print(f"round 1: {len(motions)} clips x {len(rates)} rates x {len(views)} views, the rules deciding", file=log)
    first = record_all(motions, rates, views, ROUND_SEEDS[0], None, log)
    x, y, w = samples(first, shape_only(), rng, near_weight, cut_rng=cut_rng)
    print(f"round 1: {len(y)} samples", file=log)
    model = fit(x, y, w, args.epochs, log, seed)
    print("round 2: the round-1 model deciding", file=log)
    second = record_all(motions, rates, views, ROUND_SEEDS[1], model, log)
    x2, y2, w2 = samples(second, shape_only(), rng, near_weight, cut_rng=cut_rng)
    x, y, w = np.concatenate([x, x2]), np.concatenate([y, y2]), np.concatenate([w, w2])
    print(f"final: {len(y)} samples", file=log)
    model = fit(x, y, w, args.epochs, log, seed)
    runs = first + second
    probs = {f: probabilities(runs, model, f) for f in (0, 3, FUTURE)}
    best = max(((on, off) for on in THRESHOLDS for off in THRESHOLDS if off <= on),
               key=lambda pair: sum(scores(runs, probs[0], *pair).values()))
    header = {
        "model": "realtime.rig.contact_model.ContactNet",
        "features": list(FEATURES),
        "clips": sorted(m.name for m in motions),
        "rates_fps": rates, "views": views, "noise_seeds": list(ROUND_SEEDS), "epochs": args.epochs,
        "near_weight": near_weight, "start_cuts_per_s": START_CUTS_PER_S,
        "start_weight": START_WEIGHT, "torch_seed": seed,
        "command": "python bench/train_contacts.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "data": ("CMU Graphics Lab Motion Capture Database (mocap.cs.cmu.edu; funded by NSF EIA-0196217): the corpus "
                 "folder's trials (retargeted by DragonForgedTheArtist/IClone-CMU-Mocap), tests/data/mocap"
                 + (" and the train_extra folders' trials" if args.train_extra else "")
                 + "; seen through bench/motion.py's camera, noise and scene; truth from bench.corpus.true_contacts"),
        "train_extra": provenance(args.train_extra),
        "held_out": list(corpus.HELD_OUT),
        "samples": int(len(y)),
        "torch": __import__("torch").__version__, "numpy": np.__version__, "python": platform.python_version(),
        "scores": {f"future_{f}": scores(runs, probs[f], *best) for f in (0, 3, FUTURE)},
    }
    model = with_thresholds(model, best[0], best[1], header)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    model.save(args.out)
    print(f"on {best[0]}, off {best[1]}; scores on the training runs: {json.dumps(header['scores'])}", file=log)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {model.parameters} parameters) in "
          f"{time.perf_counter() - started:.0f} s", file=log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
