"""Camera egomotion, causal: the camera's pose every frame from the static background and the pointmap.

The map: background corners (`cv2.goodFeaturesToTrack`, never on people) with their 3D taken
from the pointmap, kept in the *odometry frame* (the first pointmap frame's camera: x right,
y down, z forward, metres). Every frame:

1. The corners are followed by pyramidal Lucas-Kanade flow (`cv2.calcOpticalFlowPyrLK`);
   those that land on a person (the mask, dilated) or were lost are dropped.
2. Static test: a hold begins once the corners' median flow has been slower than STILL_SPEED_PX for
   STILL_TIME (on the frames' timestamps, so any frame rate holds alike); while the camera holds still
   the corners are followed from the image where the hold began (not frame to frame, so flow noise
   does not add up); as long as they stay within `static_px` of where they were, the pose is the held
   one, exactly (no drift).
3. Otherwise the pose is solved from the corners' map points and pixels with
   `cv2.solvePnPRansac` (seeded with the last pose; its last step refines on the inliers with
   Levenberg-Marquardt); outliers leave the map.
4. On a pointmap frame (re-anchoring): the pointmap's scale against the map is measured at the
   tracked corners (median depth ratio); each corner's map point becomes the running mean of its
   observations (the pointmap point divided by that ratio, moved by the pose); new corners fill
   the map back up to `max_features`.

Scale: the map keeps the first pointmap's scale; the pointmap's per-frame scale jitter is taken
out at each re-anchoring, and translations are reported in metres as map units times the mean of
all the measured ratios (the first = 1): the ratios are s_k / s_0 (s: a pointmap's scale against
the truth), so their mean tends to 1 / s_0 and the first pointmap's own error is averaged out.
Intrinsics: given, or fitted to the pointmap (`intrinsics_from_pointmap`) and averaged over the
pointmap frames.

Pose: world-from-camera 4x4 (here world = the odometry frame; `realtime.rig.world` turns it
upright and puts its origin on the floor).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import cv2
import numpy as np

from realtime.rig.gates import lasted

log = logging.getLogger(__name__)

STATIC_PX = 0.35  # corners within this many px of where a hold began: the camera has not moved
STILL_TIME = 0.1  # s: the corners' flow slower than STILL_SPEED_PX this long in a row begins a hold
STILL_SPEED_PX = 3.6  # px/s: a camera whose corners' median flow is slower may be still (0.12 px a frame at 30 fps)
MASK_MARGIN_PX = 6  # people's mask grown by this much (the seg's edges, motion blur)
MIN_INLIERS = 12
MAX_SEEN = 20.0  # a map point is the mean of its first observations, then a running mean over about this many
_PROBES = np.array([(0, 0), (MASK_MARGIN_PX, 0), (-MASK_MARGIN_PX, 0), (0, MASK_MARGIN_PX), (0, -MASK_MARGIN_PX)])


@dataclass(frozen=True)
class CameraPose:
    """world_from_camera: (4, 4) metres (odometry frame); status: 'waiting' (no pointmap yet),
    'static' (held), 'tracking', 'lost' (too few corners: the last pose is held until the next
    pointmap frame); tracked: corners followed this frame; inliers: those the pose agrees with;
    pointmap_scale: on a pointmap frame, that pointmap's scale against the metres reported (measured
    on the background: divide the frame's person 3D by it to take out its scale jitter), else None."""

    world_from_camera: np.ndarray
    status: str
    tracked: int = 0
    inliers: int = 0
    pointmap_scale: Optional[float] = None

    @property
    def rotation(self) -> np.ndarray:
        return self.world_from_camera[:3, :3]

    @property
    def position(self) -> np.ndarray:
        return self.world_from_camera[:3, 3]


def intrinsics_from_pointmap(pointmap: np.ndarray, image_wh: Optional[tuple[int, int]] = None, step: int = 8) -> np.ndarray:
    """(fx, fy, cx, cy) px of the image from an (h, w, 3) camera-frame pointmap, by least squares on
    u = fx X/Z + cx, v = fy Y/Z + cy over a grid of its pixels (NaN or z <= 0 skipped). A pointmap of
    another size than the image (image_wh) is scaled to it (pixel centres)."""
    h, w = pointmap.shape[:2]
    sx, sy = ((image_wh[0] / w, image_wh[1] / h) if image_wh else (1.0, 1.0))
    pts = pointmap[::step, ::step].reshape(-1, 3).astype(np.float64)  # a view: no index grid built
    v, u = np.divmod(np.arange(len(pts)), -(-w // step))
    u = (u * step + 0.5) * sx - 0.5
    v = (v * step + 0.5) * sy - 0.5
    ok = np.isfinite(pts).all(axis=1) & (pts[:, 2] > 1e-3)
    if ok.sum() < 10:
        raise ValueError("the pointmap has too few valid points to estimate the intrinsics")
    out = []
    for a, px in ((pts[ok, 0] / pts[ok, 2], u[ok]), (pts[ok, 1] / pts[ok, 2], v[ok])):
        # px = f a + c by least squares, as its 2 x 2 normal equations (lstsq's SVD cost more than the rest)
        da, dp = a - a.mean(), px - px.mean()
        f = float(da @ dp / (da @ da))
        out.append((f, float(px.mean() - f * a.mean())))
    (fx, cx), (fy, cy) = out
    return np.array([fx, fy, cx, cy])


def sample_pointmap(pointmap: np.ndarray, pixels: np.ndarray, image_wh: tuple[int, int], intrinsics: np.ndarray) -> np.ndarray:
    """(N, 2) image px -> (N, 3) camera points on the pixels' own rays at the pointmap's depth there
    (bilinear in z; NaN outside or where a neighbour is unknown). Taking only the depth keeps a
    corner's 3D on its ray: a coarser pointmap's cell centre is up to half a cell off it."""
    h, w = pointmap.shape[:2]
    x = (pixels[:, 0] + 0.5) * w / image_wh[0] - 0.5
    y = (pixels[:, 1] + 0.5) * h / image_wh[1] - 0.5
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    inside = (x0 >= 0) & (x0 < w - 1) & (y0 >= 0) & (y0 < h - 1)
    x0, y0 = np.where(inside, x0, 0), np.where(inside, y0, 0)
    fx_, fy_ = x - x0, y - y0
    z = pointmap[..., 2]
    depth = ((1 - fx_) * (1 - fy_) * z[y0, x0] + fx_ * (1 - fy_) * z[y0, x0 + 1]
             + (1 - fx_) * fy_ * z[y0 + 1, x0] + fx_ * fy_ * z[y0 + 1, x0 + 1])
    depth = np.where(inside, depth, np.nan)
    fx, fy, cx, cy = intrinsics
    return np.stack([(pixels[:, 0] - cx) / fx, (pixels[:, 1] - cy) / fy, np.ones(len(pixels))], axis=1) * depth[:, None]


def _invert(transform: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = transform[:3, :3].T
    out[:3, 3] = -transform[:3, :3].T @ transform[:3, 3]
    return out


def _transform(transform: np.ndarray, points: np.ndarray) -> np.ndarray:
    return points @ transform[:3, :3].T + transform[:3, 3]


def solve_pose(points: np.ndarray, pixels: np.ndarray, intrinsics: np.ndarray, guess: Optional[np.ndarray] = None,
               reprojection_px: float = 1.5, iterations: int = 60) -> tuple[Optional[np.ndarray], np.ndarray]:
    """world_from_camera (4, 4) from (N, 3) world points and their (N, 2) pixels: `cv2.solvePnPRansac`
    (seeded with `guess`, a world_from_camera, when given), which ends with Levenberg-Marquardt on
    the inliers. Returns (pose or None when fewer than MIN_INLIERS agree, inlier indices)."""
    fx, fy, cx, cy = intrinsics
    k = np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1]])
    objects, images = np.asarray(points, np.float64), np.asarray(pixels, np.float64)
    if len(objects) < MIN_INLIERS:
        return None, np.zeros(0, int)
    rvec = tvec = None
    if guess is not None:
        camera_from_world = _invert(guess)
        rvec = cv2.Rodrigues(camera_from_world[:3, :3])[0]
        tvec = camera_from_world[:3, 3].reshape(3, 1).copy()
    ok, rvec, tvec, inliers = cv2.solvePnPRansac(objects, images, k, None, rvec, tvec, useExtrinsicGuess=guess is not None,
                                                 iterationsCount=iterations, reprojectionError=reprojection_px,
                                                 confidence=0.99, flags=cv2.SOLVEPNP_ITERATIVE)
    inliers = np.zeros(0, int) if inliers is None else inliers.ravel()
    if not ok or len(inliers) < MIN_INLIERS:
        return None, inliers
    # No solvePnPRefineLM after it: with SOLVEPNP_ITERATIVE, solvePnPRansac's last step already is the
    # Levenberg-Marquardt solve on all its inliers (a second one does not move the pose).
    camera_from_world = np.eye(4)
    camera_from_world[:3, :3] = cv2.Rodrigues(rvec)[0]
    camera_from_world[:3, 3] = tvec.ravel()
    return _invert(camera_from_world), inliers


class CameraTracker:
    """The camera's world-from-camera pose, frame by frame (see the module's docstring).

    max_features: corners kept in the map; quality, min_distance: `goodFeaturesToTrack`'s;
    window, levels: Lucas-Kanade's window (px) and pyramid levels (the smaller window is cheaper and tracked
    as well on bench/egomotion.py; the 3 levels keep whip pans; bench/RESULTS.md);
    reprojection_px: RANSAC's inlier threshold.
    """

    def __init__(self, *, max_features: int = 150, quality: float = 0.01, min_distance: int = 12,
                 window: int = 11, levels: int = 3, reprojection_px: float = 1.5, static_px: float = STATIC_PX) -> None:
        self.max_features, self.quality, self.min_distance = max_features, quality, min_distance
        self.static_px, self.reprojection_px = static_px, reprojection_px
        self._lk = dict(winSize=(window, window), maxLevel=levels,
                        criteria=(cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 20, 0.01))
        self.reset()

    def reset(self) -> None:
        self._pose = np.eye(4)  # world (odometry, map units) from camera
        self._pixels = np.zeros((0, 2), np.float32)
        self._points = np.zeros((0, 3))  # map points (odometry frame, map units)
        self._seen = np.zeros(0)  # observations averaged into each map point
        self._gray: Optional[np.ndarray] = None
        self._ratios: list[float] = []  # each pointmap frame's scale against the map
        self._intrinsics_sum, self._intrinsics_count = np.zeros(4), 0
        self._given_intrinsics: Optional[np.ndarray] = None
        self._pyramid: Optional[np.ndarray] = None  # the previous image
        self._hold: Optional[tuple[np.ndarray, np.ndarray]] = None  # (image, pixels) where the hold began
        self._time: Optional[float] = None  # the last frame's (s)
        self._still_from: Optional[float] = None  # the time of the frame before the corners' flow became slow
        self._lost = False

    # -- public -------------------------------------------------------------------------

    @property
    def metres_per_unit(self) -> float:
        """Map units -> metres: the mean of the pointmap scales measured against the map."""
        return float(np.mean(self._ratios)) if self._ratios else 1.0

    @property
    def intrinsics(self) -> Optional[np.ndarray]:
        """(fx, fy, cx, cy) px in use (given, or the mean over the pointmap frames)."""
        if self._given_intrinsics is not None:
            return self._given_intrinsics
        return self._intrinsics_sum / self._intrinsics_count if self._intrinsics_count else None

    def update(self, image_gray: np.ndarray, person_mask: Optional[np.ndarray] = None,
               pointmap: Optional[np.ndarray] = None, intrinsics: Optional[np.ndarray] = None,
               timestamp: Optional[float] = None) -> CameraPose:
        """One frame.

        image_gray: (H, W) uint8. person_mask: (H, W) bool, True on people (from the seg's person
        classes, or filled person boxes), None if there are none. pointmap: (h, w, 3) camera-frame
        metres (any size, aligned with the image; NaN where unknown) on the frames that have one.
        intrinsics: (fx, fy, cx, cy) px, or None to fit them to the pointmaps. timestamp: the frame's
        time (s; None: 1/30 s after the last frame's).
        """
        previous = self._time
        if timestamp is None:
            timestamp = 0.0 if previous is None else previous + 1.0 / 30.0
        if not np.isfinite(timestamp):
            raise ValueError(f"CameraTracker.update needs a finite timestamp in seconds, got {timestamp!r}")
        self._time = float(timestamp)
        gray = np.ascontiguousarray(image_gray)
        h, w = gray.shape
        people = self._people(person_mask, (h, w))
        if intrinsics is not None:
            self._given_intrinsics = np.asarray(intrinsics, np.float64)
        elif pointmap is not None:
            self._intrinsics_sum += intrinsics_from_pointmap(pointmap, (w, h))
            self._intrinsics_count += 1
        if self.intrinsics is None:
            return CameraPose(self._metric(self._pose), "waiting")
        if self._gray is None or self._lost or len(self._pixels) < MIN_INLIERS:
            if pointmap is None:
                self._gray = gray if self._gray is not None else None
                return CameraPose(self._metric(self._pose), "lost" if self._gray is not None else "waiting")
            self._start_map(gray, people, pointmap)
            return CameraPose(self._metric(self._pose), "static" if self._hold is not None else "tracking", len(self._pixels),
                              pointmap_scale=1.0 / self.metres_per_unit if len(self._ratios) == 1 else None)

        status, inliers = self._track(gray, people, previous)
        scale = None
        if pointmap is not None and status != "lost":
            ratio = self._reanchor(gray, people, pointmap)
            scale = None if ratio is None else ratio / self.metres_per_unit
        self._gray = gray
        return CameraPose(self._metric(self._pose), status, len(self._pixels), inliers, scale)

    # -- steps --------------------------------------------------------------------------

    def _metric(self, pose: np.ndarray) -> np.ndarray:
        out = pose.copy()
        out[:3, 3] *= self.metres_per_unit
        return out

    @staticmethod
    def _people(person_mask: Optional[np.ndarray], shape: tuple[int, int]) -> Optional[np.ndarray]:
        """uint8 (H, W), 1 on people, at the image's size (None: nobody)."""
        if person_mask is None:
            return None
        people = np.asarray(person_mask).astype(np.uint8)
        if people.shape != shape:
            people = cv2.resize(people, (shape[1], shape[0]), interpolation=cv2.INTER_NEAREST)
        return people

    @staticmethod
    def _background(people: Optional[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
        """uint8 mask at `shape` (the half-size image corners are found on), 255 where new corners may
        be: MASK_MARGIN_PX (full-size pixels) away from people."""
        if people is None:
            return np.full(shape, 255, np.uint8)
        small = cv2.resize(people, (shape[1], shape[0]), interpolation=cv2.INTER_NEAREST)
        size = 2 * (MASK_MARGIN_PX // 2) + 3  # the margin at half size, plus a pixel for the nearest-neighbour resize
        grown = cv2.dilate(small, cv2.getStructuringElement(cv2.MORPH_RECT, (size, size)))
        return np.where(grown > 0, 0, 255).astype(np.uint8)

    @staticmethod
    def _on_people(people: Optional[np.ndarray], pixels: np.ndarray) -> np.ndarray:
        """(N,) bool: a person within MASK_MARGIN_PX of the pixel (its centre and four points around it)."""
        if people is None:
            return np.zeros(len(pixels), bool)
        h, w = people.shape
        probes = np.round(pixels).astype(int)[None] + _PROBES[:, None]  # (5, N, 2): one lookup for all
        x, y = np.clip(probes[..., 0], 0, w - 1), np.clip(probes[..., 1], 0, h - 1)
        return (people[y, x] > 0).any(axis=0)

    def _start_map(self, gray: np.ndarray, people: Optional[np.ndarray], pointmap: np.ndarray) -> None:
        """A new map from this frame's pointmap, at the current pose."""
        self._pixels = np.zeros((0, 2), np.float32)
        self._points, self._seen = np.zeros((0, 3)), np.zeros(0)
        self._hold = None
        if not self._ratios:
            self._ratios.append(1.0)
        self._add_corners(gray, people, pointmap, ratio=self.metres_per_unit if self._lost else 1.0)
        self._gray, self._pyramid, self._lost = gray, gray, False
        self._hold, self._still_from = (self._pyramid, self._pixels.copy()), None

    def _add_corners(self, gray: np.ndarray, people: Optional[np.ndarray], pointmap: np.ndarray, ratio: float) -> None:
        room = self.max_features - len(self._pixels)
        if room < self.max_features // 3:
            return
        # Shi-Tomasi on the half-size image: the full-size search made the slowest frames (bench/RESULTS.md),
        # and Lucas-Kanade follows the patch around a corner, so the pixel of
        # position lost does not matter (its 3D is sampled where it is put).
        half = cv2.pyrDown(gray)
        mask = self._background(people, half.shape)
        for x, y in (self._pixels / 2).astype(int):
            cv2.circle(mask, (int(x), int(y)), self.min_distance // 2, 0, -1)
        corners = cv2.goodFeaturesToTrack(half, room, self.quality, self.min_distance / 2, mask=mask, blockSize=3)
        if corners is None:
            return
        corners = corners.reshape(-1, 2) * 2 + 0.5  # half-size pixel centres -> full size
        camera = sample_pointmap(pointmap, corners, gray.shape[::-1], self.intrinsics)
        ok = np.isfinite(camera).all(axis=1) & (camera[:, 2] > 1e-3)
        self._pixels = np.concatenate([self._pixels, corners[ok].astype(np.float32)])
        self._points = np.concatenate([self._points, _transform(self._pose, camera[ok] / ratio)])
        self._seen = np.concatenate([self._seen, np.ones(ok.sum())])
        if self._hold is not None:  # held still: the image where the hold began shows them there too
            self._hold = (self._hold[0], np.concatenate([self._hold[1], corners[ok].astype(np.float32)]))

    def _keep(self, keep: np.ndarray) -> None:
        self._pixels, self._points, self._seen = self._pixels[keep], self._points[keep], self._seen[keep]
        if self._hold is not None:
            self._hold = (self._hold[0], self._hold[1][keep])

    def _track(self, gray: np.ndarray, people: Optional[np.ndarray], previous: Optional[float]) -> tuple[str, int]:
        """Follow the corners into this frame (`previous`: the last frame's time) and solve the pose."""
        h, w = gray.shape
        pyramid = gray
        if self._hold is not None:  # from where the hold began: flow noise does not add up
            start_pyramid, start = self._hold
            moved, found, _ = cv2.calcOpticalFlowPyrLK(start_pyramid, pyramid, start.reshape(-1, 1, 2),
                                                       self._pixels.reshape(-1, 1, 2).copy(),
                                                       flags=cv2.OPTFLOW_USE_INITIAL_FLOW, **self._lk)
        else:
            moved, found, _ = cv2.calcOpticalFlowPyrLK(self._pyramid, pyramid, self._pixels.reshape(-1, 1, 2), None, **self._lk)
        self._pyramid = pyramid
        moved = moved.reshape(-1, 2)
        inside = (moved[:, 0] >= 0) & (moved[:, 0] < w - 1) & (moved[:, 1] >= 0) & (moved[:, 1] < h - 1)
        keep = found.ravel().astype(bool) & inside
        keep &= ~self._on_people(people, moved)  # a person walked over it
        step = np.linalg.norm(moved - self._pixels, axis=1)
        self._pixels = moved.astype(np.float32)
        self._keep(keep)
        step = step[keep]
        if len(self._pixels) < MIN_INLIERS:
            self._lost = True
            return "lost", 0

        if self._hold is not None:
            if np.median(np.linalg.norm(self._pixels - self._hold[1], axis=1)) < self.static_px:
                return "static", len(self._pixels)
            self._hold = None
            self._still_from = None
        inliers = self._solve()
        if inliers < MIN_INLIERS:
            self._lost = True
            return "lost", inliers
        interval = 0.0 if previous is None else self._time - previous
        slow = bool(len(step)) and previous is not None and np.median(step) < STILL_SPEED_PX * interval
        self._still_from = (self._still_from if self._still_from is not None else previous) if slow else None
        if slow and lasted(self._time - self._still_from, STILL_TIME, interval):
            self._hold = (pyramid, self._pixels.copy())
        return "tracking", inliers

    def _solve(self) -> int:
        """The pose from the map points and the corners' pixels; drops the outliers. Returns the inlier count."""
        pose, inliers = solve_pose(self._points, self._pixels, self.intrinsics, self._pose, self.reprojection_px)
        if pose is None:
            return len(inliers)
        self._pose = pose
        keep = np.zeros(len(self._pixels), bool)
        keep[inliers] = True
        self._keep(keep)
        return len(inliers)

    def _reanchor(self, gray: np.ndarray, people: Optional[np.ndarray], pointmap: np.ndarray) -> Optional[float]:
        """A pointmap frame: measure its scale against the map, refresh the map points, add corners.
        Returns the pointmap's scale against the map (None when too few corners had depth)."""
        observed = sample_pointmap(pointmap, self._pixels, gray.shape[::-1], self.intrinsics)
        predicted = _transform(_invert(self._pose), self._points)
        ok = np.isfinite(observed).all(axis=1) & (observed[:, 2] > 1e-3) & (predicted[:, 2] > 1e-3)
        if ok.sum() < MIN_INLIERS:
            return None
        ratio = float(np.median(observed[ok, 2] / predicted[ok, 2]))
        self._ratios.append(ratio)
        seen = np.minimum(self._seen[ok], MAX_SEEN)[:, None]  # a running mean of the observations
        fresh = _transform(self._pose, observed[ok] / ratio)
        self._points[ok] = (self._points[ok] * seen + fresh) / (seen + 1)
        self._seen[ok] += 1
        self._add_corners(gray, people, pointmap, ratio)
        return ratio
