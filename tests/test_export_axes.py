"""3D keypoints sampled from a metric pointmap, the derived hip centre, and the export axes."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.export.axes import camera_to_y_up, camera_to_z_up
from realtime.export.derived import hip_center, shoulder_center
from realtime.transforms import sample_keypoints_3d

W, H = 640, 480  # image
w, h = 160, 120  # pointmap, 4x smaller


def _plane_pointmap():
    """A pointmap that is an affine function of the image pixel centre (bilinear sampling is exact on it)."""
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    x_img, y_img = (u + 0.5) * W / w - 0.5, (v + 0.5) * H / h - 0.5  # image coords of each pointmap pixel centre
    return np.stack([0.001 * x_img - 0.3, 0.002 * y_img - 0.5, 2.0 + 0.0005 * x_img + 0.0002 * y_img], axis=-1)


def _truth(xy):
    x, y = xy[..., 0], xy[..., 1]
    return np.stack([0.001 * x - 0.3, 0.002 * y - 0.5, 2.0 + 0.0005 * x + 0.0002 * y], axis=-1)


def test_bilinear_sampling_on_lower_resolution_pointmap_is_exact_on_a_plane():
    rng = np.random.default_rng(1)
    keypoints = np.stack([rng.uniform(10, W - 10, (2, 50)), rng.uniform(10, H - 10, (2, 50))], axis=-1)  # (N=2, K=50, 2)
    scores = np.ones((2, 50))
    points = sample_keypoints_3d(_plane_pointmap().astype(np.float32), keypoints, scores, (H, W))
    assert points.shape == (2, 50, 3) and points.dtype == np.float32
    np.testing.assert_allclose(points, _truth(keypoints), atol=1e-5)


def test_low_score_outside_unknown_and_background_are_nan():
    pointmap = _plane_pointmap()
    foreground = np.zeros((h, w), dtype=bool)
    foreground[:, : w // 2] = True  # left half of the image is the person
    keypoints = np.array([[[100.0, 100.0], [100.0, 100.0], [500.0, 100.0], [-5.0, 10.0], [np.nan, 3.0], [318.0, 200.0]]])
    scores = np.array([[0.9, 0.1, 0.9, 0.9, 0.9, 0.9]])
    points = sample_keypoints_3d(pointmap, keypoints, scores, (H, W), foreground, min_score=0.3)
    np.testing.assert_allclose(points[0, 0], _truth(keypoints[0, 0]), atol=1e-5)
    assert np.isnan(points[0, 1:5]).all()  # low score, background, outside, NaN keypoint
    # On the silhouette edge only foreground neighbours count: the result is the foreground pixel, not a blend.
    u = (318.0 + 0.5) * w / W - 0.5  # 79.125: neighbours 79 (foreground) and 80 (background)
    assert int(np.floor(u)) == w // 2 - 1
    v = (200.0 + 0.5) * h / H - 0.5
    v0 = int(np.floor(v))
    fv = v - v0
    expected = (1 - fv) * pointmap[v0, w // 2 - 1] + fv * pointmap[v0 + 1, w // 2 - 1]
    np.testing.assert_allclose(points[0, 5], expected, atol=1e-5)


def test_foreground_mask_at_another_resolution():
    keypoints = np.array([[[100.0, 100.0], [500.0, 100.0]]])
    for scale in (0.5, 2.0, 4.0):  # mask coarser than, finer than, and as large as the image
        mask = np.zeros((int(h * scale), int(w * scale)), dtype=bool)
        mask[:, : mask.shape[1] // 2] = True  # left half of the image
        points = sample_keypoints_3d(_plane_pointmap(), keypoints, np.ones((1, 2)), (H, W), mask)
        np.testing.assert_allclose(points[0, 0], _truth(keypoints[0, 0]), atol=1e-5)
        assert np.isnan(points[0, 1]).all()


def test_non_finite_pointmap_pixels_are_skipped():
    pointmap = _plane_pointmap()
    pointmap[:, :] = [0.0, 0.0, 1.0]
    pointmap[50, 40] = np.nan
    keypoint = np.array([[[(40 + 0.5) * 4 - 0.5, (50 + 0.5) * 4 - 0.5]]])  # exactly on the NaN pixel's centre
    points = sample_keypoints_3d(pointmap, keypoint, np.ones((1, 1)), (H, W))
    assert np.isnan(points).all()  # its only weighted neighbour is unknown
    keypoint_between = keypoint + [[[2.0, 0.0]]]  # half way to the next pixel: that one is used alone
    np.testing.assert_allclose(sample_keypoints_3d(pointmap, keypoint_between, np.ones((1, 1)), (H, W))[0, 0], [0, 0, 1])


def test_hip_center_and_shoulder_center():
    names = ["left_shoulder", "right_shoulder", "left_hip", "right_hip"]
    points = np.array([[[0.0, 0.0, 1.0], [2.0, 0.0, 1.0], [0.0, 4.0, 2.0], [1.0, 6.0, 4.0]],
                       [[0, 0, 0], [0, 0, 0], [np.nan] * 3, [1, 1, 1]]])
    scores = np.array([[0.9, 0.8, 0.7, 0.4], [1, 1, 1, 1]])
    root, root_score = hip_center(points, names, scores)
    np.testing.assert_allclose(root[0], [0.5, 5.0, 3.0])
    assert root_score[0] == pytest.approx(0.4) and np.isnan(root[1]).all()
    neck, neck_score = shoulder_center(points, names, scores)
    np.testing.assert_allclose(neck[0], [1.0, 0.0, 1.0])
    assert neck_score[0] == pytest.approx(0.8)


@pytest.mark.parametrize("convert", [camera_to_y_up, camera_to_z_up])
def test_axis_conversions_are_rotations(convert):
    basis = convert(np.eye(3))  # rows: images of x, y, z
    np.testing.assert_allclose(basis @ basis.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(basis) == pytest.approx(1.0)  # no mirroring
    up_in_camera = np.array([0.0, -1.0, 0.0])  # camera y points down
    expected_up = [0, 1, 0] if convert is camera_to_y_up else [0, 0, 1]
    np.testing.assert_allclose(convert(up_in_camera), expected_up)
