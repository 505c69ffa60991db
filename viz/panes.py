"""Preview panes: what `compose` draws beside the overlay, one per whole-image task.

A `Pane` is a title, the viewer's hot keys that show / hide it, and a `render` function

    render(maps: DenseMaps, foreground: (h, w) bool or None, size_hw) -> (h, w, 3) uint8 RGB, or None

(None: no data yet). The task table (`realtime.tasks`) gives each task row its pane and
hands the panes of a run to `Layers(panes=...)`; viz never looks the tasks up itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from realtime.frames import DenseMaps

from .maps import albedo_to_rgb, depth_to_rgb, normal_to_rgb

Render = Callable[[DenseMaps, Optional[np.ndarray], tuple[int, int]], Optional[np.ndarray]]


@dataclass(frozen=True)
class Pane:
    """name:     the pane's key in the layout and its `Layers` flag (`layers.depth = False`).
    title:    the label drawn on the pane.
    render:   the maps of a frame -> the pane's picture (see the module docstring).
    hot_keys: viewer keys that flip the pane's flag (Qt key names: "3", "D").
    """

    name: str
    title: str
    render: Render
    hot_keys: tuple[str, ...] = ()


def _render_depth(maps: DenseMaps, foreground: Optional[np.ndarray], size_hw: tuple[int, int]) -> Optional[np.ndarray]:
    return None if maps.depth is None else depth_to_rgb(maps.depth, foreground, size_hw)


def _render_normal(maps: DenseMaps, foreground: Optional[np.ndarray], size_hw: tuple[int, int]) -> Optional[np.ndarray]:
    return None if maps.normal is None else normal_to_rgb(maps.normal, foreground, size_hw)


def _render_albedo(maps: DenseMaps, foreground: Optional[np.ndarray], size_hw: tuple[int, int]) -> Optional[np.ndarray]:
    return None if maps.albedo is None else albedo_to_rgb(maps.albedo, foreground, size_hw)


DEPTH = Pane("depth", "depth", _render_depth, ("3", "D"))
NORMAL = Pane("normal", "normals", _render_normal, ("4", "N"))
ALBEDO = Pane("albedo", "albedo", _render_albedo, ("5", "A"))
BUILTIN: dict[str, Pane] = {p.name: p for p in (DEPTH, NORMAL, ALBEDO)}  # by name, for `Layers(panes=("overlay", "depth"))`
