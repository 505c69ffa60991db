"""The render stage: the picture (overlay, panes, caption) for the video and the viewer."""

from __future__ import annotations

from typing import Callable

from realtime.frames import Frame


class RenderStage:
    """Composes the picture (overlay + depth/normal panes + caption) for the video and the viewer."""

    name = "render"

    def __init__(self, layers, metrics, caption: Callable[[dict], str]):
        from viz.compose import compose

        self.compose = compose
        self.layers = layers  # viz.compose.Layers, toggled by the viewer's hot keys
        self.metrics = metrics
        self.caption = caption

    def process(self, frame: Frame) -> Frame:
        return frame.replace(overlay=self.compose(frame, self.layers, caption=self.caption(self.metrics.snapshot())))

    def close(self) -> None:
        pass
