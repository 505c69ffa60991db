"""Drawing on synthetic inputs with known ground truth: skeleton, seg, depth, normals, layout."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.data import keypoint_table, seg_palette
from realtime.frames import DenseMaps, Frame, Person
from synthetic.people import synthetic_dense, synthetic_person
from viz.compose import Layers, active_panes, compose, compose_size
from viz.keypoints import SkeletonAnnotator, track_color
from viz.maps import BACKGROUND_RGB, colorize_seg, depth_to_rgb, normal_to_rgb, overlay_seg, turbo_rgb

K = 308
GRAY = (40, 40, 40)
TABLE = keypoint_table()


def point_color(k: int) -> tuple[int, ...]:
    return tuple(TABLE["keypoints"][k]["color_rgb"])


def link_color(a: int, b: int) -> tuple[int, ...]:
    return next(tuple(link["color_rgb"]) for link in TABLE["skeleton_links"] if link["indices"] == [a, b])


def near(pixel: np.ndarray, color, tol: int = 25) -> bool:
    """Pixel equals `color` up to anti-aliasing blending."""
    return int(np.abs(pixel.astype(int) - np.array(color)).max()) <= tol


def person_with(points: dict[int, tuple[float, float, float]], box=(0, 0, 10, 10), track_id=None) -> Person:
    """A person whose only keypoints are `points`: index -> (x, y, score); the rest NaN."""
    xy = np.full((K, 2), np.nan, np.float32)
    scores = np.zeros(K, np.float32)
    for k, (x, y, s) in points.items():
        xy[k], scores[k] = (x, y), s
    return Person(box=np.array(box, np.float32), track_id=track_id, keypoints=xy, keypoint_scores=scores)


def gray_image(h: int = 400, w: int = 500) -> np.ndarray:
    return np.full((h, w, 3), GRAY, np.uint8)


# ---------------------------------------------------------------- skeleton


def test_keypoints_and_links_are_drawn_in_their_official_colours_where_they_are():
    left_knee, left_ankle, right_knee, right_ankle, nose, glabella = 11, 13, 12, 14, 0, 70
    person = person_with({
        left_knee: (100, 100, 0.9), left_ankle: (100, 300, 0.8),
        right_knee: (250, 100, 0.9), right_ankle: (250, 300, 0.1),  # ankle under the threshold
        nose: (400, 300, 0.2),  # hidden
        glabella: (400, 100, 0.95),  # a fine (face) point
    }, box=(50, 50, 450, 350))
    image = gray_image(720, 960)  # 3 px body lines
    out = SkeletonAnnotator(draw_boxes=False, draw_labels=False).draw(image, [person])

    assert tuple(out[100, 100]) == point_color(left_knee)
    assert tuple(out[300, 100]) == point_color(left_ankle)
    assert near(out[200, 100], link_color(left_ankle, left_knee))  # middle of the link
    assert tuple(out[100, 400]) == point_color(glabella)
    # Hidden points and links that touch a hidden point leave the image as it was.
    assert tuple(out[300, 250]) == GRAY and tuple(out[200, 250]) == GRAY
    assert tuple(out[300, 400]) == GRAY
    assert tuple(out[100, 250]) == point_color(right_knee)
    # Nothing drawn far from the keypoints; the input is untouched.
    assert tuple(out[20, 20]) == GRAY and tuple(out[700, 900]) == GRAY
    assert np.all(image == GRAY)


def test_inplace_draws_on_the_given_image():
    image = gray_image()
    out = SkeletonAnnotator().draw(image, [person_with({5: (50, 50, 1.0)})], inplace=True)
    assert out is image and tuple(image[50, 50]) == point_color(5)


def test_keypoints_without_scores_are_all_shown_and_nan_ones_skipped():
    xy = np.full((K, 2), np.nan, np.float32)
    xy[5] = (60, 60)
    person = Person(box=np.array([0, 0, 10, 10], np.float32), keypoints=xy)
    out = SkeletonAnnotator(draw_boxes=False, draw_labels=False).draw(gray_image(), [person])
    assert tuple(out[60, 60]) == point_color(5)
    assert (np.any(out != GRAY, axis=-1)).sum() < 200  # only that one dot


def test_body_lines_are_thick_and_fine_points_small():
    person = person_with({11: (100, 100, 1), 13: (100, 300, 1), 70: (300, 200, 1)}, box=(0, 0, 500, 1000))
    out = SkeletonAnnotator(draw_boxes=False, draw_labels=False).draw(gray_image(1080, 1920), [person])
    link_width = np.sum(np.any(out[200, 60:140] != GRAY, axis=-1))
    face_dot = np.sum(np.any(out[180:220, 280:320] != GRAY, axis=-1))
    assert link_width >= 3
    assert 1 <= face_dot <= 30


@pytest.mark.parametrize("size_hw", [(480, 640), (2160, 3840)])
def test_line_width_scales_with_the_image(size_hw):
    h, w = size_hw
    f = h / 480
    person = person_with({11: (100 * f, 100 * f, 1), 13: (100 * f, 400 * f, 1)}, box=(0, 0, 0.5 * w, h))
    out = SkeletonAnnotator(draw_boxes=False, draw_labels=False).draw(gray_image(h, w), [person])
    row = out[round(250 * f)].astype(int)
    width = np.sum(np.abs(row - link_color(13, 11)).max(axis=-1) <= 60)
    # 3 px per 720 px of short side, within anti-aliasing slack.
    expected = 3 * h / 720
    assert expected - 1.5 <= width <= expected + 3  # cv2 anti-aliasing adds ~1 px a side


def test_a_person_with_an_unknown_box_still_gets_a_skeleton():
    person = person_with({5: (50, 50, 1.0)}, box=(np.nan, np.nan, np.nan, np.nan))
    out = SkeletonAnnotator().draw(gray_image(), [person])
    assert tuple(out[50, 50]) == point_color(5)


def test_box_and_id_label_use_the_track_colour():
    person = person_with({}, box=(100, 150, 300, 380), track_id=3)
    out = SkeletonAnnotator().draw(gray_image(), [person])
    color = track_color(3)
    assert near(out[260, 100], color, tol=40)  # left edge of the box (1 px, anti-aliased)
    assert tuple(out[260, 110]) == GRAY
    label_area = out[110:150, 100:200].reshape(-1, 3)
    assert np.sum(np.all(label_area == color, axis=1)) > 200  # filled label background above the box
    assert np.any(np.all(label_area == (0, 0, 0), axis=1))  # and dark text on it


# ---------------------------------------------------------------- segmentation


def test_colorize_seg_uses_the_palette():
    seg = np.arange(29, dtype=np.uint8).reshape(1, 29)
    assert np.array_equal(colorize_seg(seg)[0], seg_palette())


def test_seg_overlay_blends_the_palette_where_the_mask_says_even_from_a_half_size_map():
    image = gray_image(400, 600)
    seg = np.zeros((200, 300), np.uint8)  # half resolution
    seg[50:100, 100:150] = 22  # Torso -> image rows 100..200, cols 200..300
    seg[120:150, 20:60] = 5
    out = overlay_seg(image, seg, alpha=0.5)
    expected = (0.5 * np.array(GRAY) + 0.5 * seg_palette()[22]).round()
    assert np.abs(out[150, 250].astype(int) - expected).max() <= 1
    assert np.abs(out[100, 200].astype(int) - expected).max() <= 1  # first pixel of the region
    assert tuple(out[99, 250]) == GRAY and tuple(out[150, 199]) == GRAY  # just outside
    expected5 = (0.5 * np.array(GRAY) + 0.5 * seg_palette()[5]).round()
    assert np.abs(out[270, 80].astype(int) - expected5).max() <= 1
    assert tuple(out[10, 10]) == GRAY  # background class keeps the image
    assert np.all(image == GRAY)


def test_seg_legend_shows_the_present_classes_top_right():
    seg = np.zeros((400, 600), np.uint8)
    seg[300:350, 50:100] = 4  # Hair
    out = overlay_seg(gray_image(400, 600), seg, legend=True)
    top_right = out[:60, 300:].reshape(-1, 3)
    assert np.any(np.all(top_right == seg_palette()[4], axis=1))
    assert not np.any(np.all(top_right == seg_palette()[22], axis=1))


# ---------------------------------------------------------------- depth and normals


def turbo_index(colors: np.ndarray) -> np.ndarray:
    """Nearest turbo LUT index of each RGB colour."""
    lut = turbo_rgb()[:, 0].astype(int)
    return np.argmin(((colors[:, None, :].astype(int) - lut[None]) ** 2).sum(-1), axis=1)


def test_depth_ramp_is_monotonic_along_turbo_and_background_dark():
    depth = np.tile(np.linspace(1.0, 5.0, 200, dtype=np.float32), (50, 1))
    foreground = np.zeros(depth.shape, bool)
    foreground[10:40] = True
    depth[~foreground] = 100.0  # a far wall outside the person must not stretch the range
    rgb = depth_to_rgb(depth, foreground)
    index = turbo_index(rgb[25])
    assert np.all(np.diff(index) <= 0)  # farther = further along the map towards blue
    assert index[0] >= 250 and index[-1] <= 5  # the robust range spans the foreground only
    assert np.all(rgb[~foreground] == BACKGROUND_RGB)
    assert max(BACKGROUND_RGB) < 40


def test_depth_fixed_range_unknown_pixels_and_resize():
    depth = np.full((20, 30), 2.0, np.float32)
    depth[0, 0] = np.nan
    depth[0, 1] = 0.0
    rgb = depth_to_rgb(depth, depth_range=(1.0, 3.0), size_hw=(40, 60))
    assert rgb.shape == (40, 60, 3)
    mid = turbo_index(rgb[20:21, 30])[0]
    assert abs(mid - round(255 * (1 / 2 - 1 / 3) / (1 - 1 / 3))) <= 2  # inverse-depth position
    assert np.all(depth_to_rgb(depth)[0, :2] == BACKGROUND_RGB)


def test_normals_of_a_sphere():
    n = 101
    y, x = np.mgrid[-1 : 1 : n * 1j, -1 : 1 : n * 1j]
    inside = x**2 + y**2 < 0.95
    normal = np.stack([x, y, -np.sqrt(np.clip(1 - x**2 - y**2, 0, 1))], axis=-1).astype(np.float32)
    normal[~inside] = np.nan
    rgb = normal_to_rgb(normal).astype(int)
    centre = rgb[n // 2, n // 2]
    assert np.abs(centre - (128, 128, 0)).max() <= 1  # facing the camera: z = -1
    row, column = rgb[n // 2][inside[n // 2]], rgb[:, n // 2][inside[:, n // 2]]
    assert np.all(np.diff(row[:, 0]) >= 0) and row[-1, 0] > 240 and row[0, 0] < 15  # x right
    assert np.all(np.diff(column[:, 1]) >= 0) and column[-1, 1] > 240  # y down
    assert np.all(rgb[~inside] == BACKGROUND_RGB)
    # A foreground mask hides the rest.
    mask = np.zeros((n, n), bool)
    mask[:, : n // 2] = True
    assert np.all(normal_to_rgb(normal, mask)[:, n // 2 + 1 :] == BACKGROUND_RGB)


# ---------------------------------------------------------------- compose


@pytest.mark.parametrize("layers, size", [
    (Layers(depth=False, normal=False), (480, 640)),
    (Layers(normal=False), (480, 1280)),
    (Layers(), (480, 960)),
])
def test_compose_size_is_fixed_by_the_panes_not_by_the_maps(layers, size):
    rng = np.random.default_rng(1)
    people = (synthetic_person((100, 50, 250, 450), track_id=1, rng=rng),)
    full = Frame(0, 0.0, gray_image(480, 640), people=people, dense=synthetic_dense((480, 640), people))
    bare = Frame(1, 0.04, gray_image(480, 640))
    assert compose_size((480, 640), active_panes(layers)) == size
    assert compose(full, layers, caption="25.0 fps").shape == size + (3,)
    assert compose(bare, layers).shape == size + (3,)


def test_toggling_a_preview_keeps_the_layout_and_blanks_the_pane():
    rng = np.random.default_rng(2)
    people = (synthetic_person((100, 50, 250, 450), track_id=1, rng=rng),)
    frame = Frame(0, 0.0, gray_image(480, 640), people=people, dense=synthetic_dense((480, 640), people))
    layers = Layers()
    shown = compose(frame, layers)
    layers.depth = False  # a viewer hot key
    hidden = compose(frame, layers)
    assert hidden.shape == shown.shape == (480, 960, 3)
    depth_pane = (slice(40, 240), slice(640, 960))  # below the pane's title
    assert np.any(shown[depth_pane] != BACKGROUND_RGB)
    assert np.all(hidden[depth_pane] == BACKGROUND_RGB)
    assert np.array_equal(hidden[240:], shown[240:])  # the normal pane is unchanged


def test_layers_layout_is_validated():
    assert Layers(depth=False).panes == ("overlay", "normal")
    with pytest.raises(ValueError):
        Layers(panes=("depth",))


def test_compose_rounds_odd_sizes_up_to_even():
    for panes in [("overlay",), ("overlay", "depth"), ("overlay", "depth", "normal")]:
        h, w = compose_size((481, 641), panes)
        assert h % 2 == 0 and w % 2 == 0
    out = compose(Frame(0, 0.0, gray_image(481, 641)), Layers())
    assert out.shape == compose_size((481, 641), ("overlay", "depth", "normal")) + (3,)
    # Padding is background, never left-over memory.
    assert np.all(out[481:] == BACKGROUND_RGB) and np.all(out[:, 641 + 320 :] == BACKGROUND_RGB)
    assert np.all(out[480:, 641:] == BACKGROUND_RGB)


def test_compose_panes_show_their_layers_and_leave_the_frame_alone():
    image = gray_image(400, 600)
    person = person_with({11: (100, 100, 1), 13: (100, 300, 1)}, box=(50, 50, 150, 350))
    seg = np.zeros((400, 600), np.uint8)  # 400 px tall image: 2 px body lines
    seg[150:250, 400:500] = 22
    depth = np.where(seg > 0, 2.0, np.nan).astype(np.float32)
    normal = np.zeros((400, 600, 3), np.float32)
    normal[..., 2] = -1
    frame = Frame(0, 0.0, image, people=(person,), dense=DenseMaps(seg=seg, depth=depth, normal=normal))

    out = compose(frame, Layers())  # overlay | depth over normals, previews at half size
    assert near(out[200, 100], link_color(13, 11), tol=40)  # a 2 px line
    assert tuple(out[200, 450]) != GRAY  # seg blended
    depth_pane, normal_pane = out[:200, 600:900], out[200:400, 600:900]
    assert tuple(depth_pane[100, 225]) != BACKGROUND_RGB and tuple(depth_pane[20, 20 + 100]) == BACKGROUND_RGB
    assert tuple(normal_pane[100, 225]) == (128, 128, 0)
    assert np.all(image == GRAY)

    bare = compose(frame, Layers(skeleton=False, seg=False, depth=False, normal=False))
    assert tuple(bare[200, 100]) == GRAY and tuple(bare[200, 450]) == GRAY


# ---------------------------------------------------------------- synthetic demo data


def test_synthetic_person_and_maps_are_consistent():
    box = (100.0, 50.0, 300.0, 450.0)
    person = synthetic_person(box, track_id=2, rng=np.random.default_rng(3))
    xy = person.keypoints
    assert xy.shape == (K, 2) and np.isfinite(xy).all()
    assert np.all((xy[:, 0] > 100 - 40) & (xy[:, 0] < 300 + 40) & (xy[:, 1] > 50 - 20) & (xy[:, 1] < 450 + 20))
    assert xy[11, 1] < xy[13, 1] and xy[5, 0] > xy[6, 0]  # knee above ankle; left shoulder on image right
    dense = synthetic_dense((480, 640), (person,), map_scale=0.5)
    assert dense.seg.shape == dense.depth.shape == (240, 320)
    person_pixels = dense.seg > 0
    assert person_pixels.sum() > 1000 and not person_pixels[:, :40].any()  # only inside the box area
    assert np.isfinite(dense.depth[person_pixels]).all() and np.isnan(dense.depth[~person_pixels]).all()
    norms = np.linalg.norm(dense.normal[person_pixels], axis=-1)
    assert np.allclose(norms, 1, atol=1e-4) and np.all(dense.normal[person_pixels][:, 2] < 0)  # facing the camera


def test_overlay_title_names_what_is_drawn():
    from viz.compose import Layers, overlay_title

    assert overlay_title(Layers(skeleton=True, seg=True)) == "pose + body parts"
    assert overlay_title(Layers(skeleton=True, seg=False)) == "pose"  # a pose-only run
    assert overlay_title(Layers(skeleton=False, seg=True)) == "body parts"
    assert overlay_title(Layers(skeleton=False, seg=False)) == "image"
