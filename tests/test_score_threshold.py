"""The keypoint score threshold (the official demo's `kpt_thr`) is defined once, in the foundation
layer (`realtime.data.KEYPOINT_SCORE_THRESHOLD`), and every layer that trusts or distrusts a keypoint
by its score uses it: the drawing, the filters and the tracker, the box finder, the 3D lift and the
face rig. Read with `ast`, so a literal that comes back anywhere is found."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("realtime", "viz", "trackers")
PARAMETERS = {"min_score", "min_keypoint_score", "score_threshold"}  # the names the threshold goes by as an argument


def _modules():
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "blender_scripts" not in path.parts:  # they run inside Blender, without our packages
                yield path, ast.parse(path.read_text(), str(path))


def _defaults(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            yield from zip(positional[len(positional) - len(args.defaults):], args.defaults)
            yield from ((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)


def test_every_score_threshold_argument_defaults_to_the_one_constant():
    found, literal = [], []
    for path, tree in _modules():
        for arg, default in _defaults(tree):
            if arg.arg in PARAMETERS:
                found.append(f"{path.relative_to(REPO)}:{arg.arg}")
                if not (isinstance(default, ast.Name) and default.id == "KEYPOINT_SCORE_THRESHOLD"):
                    literal.append(f"{path.relative_to(REPO)}:{default.lineno} {arg.arg}={ast.unparse(default)}")
    assert len(found) >= 9 and literal == []  # the filters, tracker, drawing, box finder, lift, infer stage


def test_no_other_module_defines_a_keypoint_score_threshold_of_its_own():
    own = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value == 0.3:
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if any("SCORE" in n or "KPT" in n for n in names):
                    own.append(f"{path.relative_to(REPO)}:{node.lineno} {names}")
    assert own == ["realtime/data/__init__.py:" + str(_line_of_constant()) + " ['KEYPOINT_SCORE_THRESHOLD']"]


def _line_of_constant() -> int:
    text = (REPO / "realtime" / "data" / "__init__.py").read_text().splitlines()
    return next(i + 1 for i, line in enumerate(text) if line.startswith("KEYPOINT_SCORE_THRESHOLD = "))


def test_the_filter_and_the_lift_agree_on_a_keypoint_just_below_and_at_the_threshold():
    """One keypoint scored just below the threshold and one at it: the live filter measures only the
    second (the first is reported predicted), and the lift gives 3D only to the second."""
    from realtime.transforms import sample_keypoints_3d
    from trackers.one_euro import OneEuroFilter

    scores = np.array([[np.nextafter(KEYPOINT_SCORE_THRESHOLD, 0), KEYPOINT_SCORE_THRESHOLD]])
    points = np.array([[[10.0, 10.0], [20.0, 20.0]]])
    smoother = OneEuroFilter()
    smoother(0.0, points, np.array([40.0]), np.ones((1, 2)))  # both measured once
    _, predicted = smoother(0.1, points + 5, np.array([40.0]), scores)
    assert predicted[0].tolist() == [True, False]
    lifted = sample_keypoints_3d(np.ones((32, 32, 3), np.float32), points, scores, (32, 32))
    assert np.isnan(lifted[0, 0]).all() and np.isfinite(lifted[0, 1]).all()
