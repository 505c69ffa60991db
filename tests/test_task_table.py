"""Every row of the task table, end to end at toy scale (timm's test_models habit):
build the model from its `ModelSpec` on the fixture arch, run the row's preprocess ->
forward -> postprocess on an image, and render the result the way the picture does
(the row's pane, or the overlay). Asserts shape, dtype and finite values at each step,
so a row whose parts do not fit together fails here, before any run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from realtime import tasks, transforms
from realtime.frames import DenseMaps, Frame, Person
from realtime.models import build_model
from viz.compose import Layers, compose, compose_size

ARCH = "fixture_e32_h4_l18"  # the tiny arch of tests/reference/fixtures, with every task head
INPUT_HW = (64, 48)  # toy input size (the pointmap head resamples its scale branch's grid to fit)
IMAGE_HW = (90, 120)
MAP_HW = (45, 60)  # dense maps come back at most this size here (the Predictor caps map sides too)


def _image() -> np.ndarray:
    """(H, W, 3) uint8 RGB: smooth shapes plus noise, so every model sees structure."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:IMAGE_HW[0], 0:IMAGE_HW[1]]
    base = 128 + 80 * np.sin(xx[..., None] / (5.0 + np.arange(3))) * np.cos(yy[..., None] / 7.0)
    return np.clip(base + rng.normal(0, 10, base.shape), 0, 255).astype(np.uint8)


def _finite(array) -> bool:
    return bool(np.isfinite(np.asarray(array, dtype=np.float64)).all())


@pytest.mark.parametrize("row", tasks.all_tasks(), ids=lambda row: row.name)
def test_every_row_builds_runs_decodes_and_renders(row: tasks.Task):
    torch.manual_seed(0)
    model = build_model(row.name, ARCH)
    assert model.decode_head.__class__ is row.model.head
    assert hasattr(model.decode_head, row.model.output_layer)  # the layer that names a checkpoint's task
    input_hw = INPUT_HW
    image = _image()
    chw = torch.from_numpy(image).permute(2, 0, 1)
    people: list[Person] = []
    maps: dict[str, np.ndarray] = {}
    with torch.no_grad():
        if row.per_person:
            boxes = np.array([[10, 5, 70, 85], [60, 20, 115, 88]], np.float32)
            center, scale = (torch.from_numpy(a) for a in transforms.box_to_center_scale_np(boxes, input_hw))
            x = row.preprocess(chw, center, scale, input_hw)
            assert x.shape == (2, 3, *input_hw) and x.dtype == torch.float32 and _finite(x)
            raw = model(x)
            points = row.postprocess(raw, (center, scale), input_hw)
            assert points.dtype == torch.float32 and points.shape[0] == 2 and points.shape[2] == 3
            assert _finite(points[..., 2]) and _finite(points[..., :2][points[..., 2] > 0])
            people = [Person(box, keypoints=p[:, :2].numpy(), keypoint_scores=p[:, 2].numpy()) for box, p in zip(boxes, points)]
            assert people[0].keypoints.shape == (points.shape[1], 2)
        else:
            x, meta = row.preprocess(chw, input_hw)
            assert x.shape == (1, 3, *input_hw) and x.dtype == torch.float32 and _finite(x)
            raw = model(x)
            out = row.postprocess(raw, meta, MAP_HW)
            assert tuple(out.shape[:2]) == MAP_HW and out.ndim in (2, 3)
            assert out.dtype in (torch.uint8, torch.float32) and _finite(out)
            maps[row.field] = out.numpy()
            for name, derive in row.derived.items():
                maps[name] = derive(maps[row.field])
                assert maps[name].shape[:2] == MAP_HW and _finite(maps[name])
    for output in (raw if isinstance(raw, tuple) else (raw,)):
        assert output.dtype == torch.float32 and _finite(output)

    dense = DenseMaps(computed_on=0, **maps)
    assert all(dense.get(name) is not None for name in row.fields) or row.per_person
    frame = Frame(0, 0.0, image, people=people, dense=dense)
    if row.pane is not None:
        picture = row.pane.render(dense, None, IMAGE_HW)
        assert picture is not None and picture.shape == (*IMAGE_HW, 3) and picture.dtype == np.uint8 and picture.std() > 0
        layers = Layers(panes=("overlay", row.pane))
    else:
        layers = Layers(panes=("overlay",))
    shown = compose(frame, layers)
    assert shown.dtype == np.uint8 and shown.shape == (*compose_size(IMAGE_HW, layers.panes), 3)
    if row.pane is not None:  # the pane's picture sits right of the overlay (below its title)
        assert np.array_equal(shown[30:IMAGE_HW[0], IMAGE_HW[1]:], picture[30:])
    else:  # the overlay shows the result: people drawn, or body parts coloured
        bare = compose(Frame(0, 0.0, image), layers)
        assert not np.array_equal(shown[:IMAGE_HW[0], :IMAGE_HW[1]], bare[:IMAGE_HW[0], :IMAGE_HW[1]])


def test_the_table_and_the_model_registry_agree():
    from realtime.models import registry

    for row in tasks.all_tasks():
        assert registry.spec(row.name) is row.model
    assert {row.name for row in tasks.all_tasks()} == {spec.name for spec in registry.all_specs()}
