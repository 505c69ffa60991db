"""The run mode: is this a live source, a file, or a folder of unrelated stills?

Decided once, by `decide_mode`, from the opened source and the options; every
part of a run that behaves differently reads the mode instead of asking the
source or the options again.

    LIVE    camera or network stream: the gate keeps only the newest frame,
            3 frames in flight, dense maps as often as the frame rate allows,
            seg every other frame while the run is behind,
            extra outputs are latest-wins, no progress bar.
    FILE    video file or image sequence: every frame once and in order,
            dense maps every frame, a progress bar.
    STILLS  unrelated photos: every image on its own (detected every time,
            no identities, no smoothing); each tracks row names its file.
"""

from __future__ import annotations

import enum
import logging
from typing import Optional

from realtime.errors import UserError
from realtime.sources import ImageFolderSource, Source, SourceInfo

log = logging.getLogger(__name__)


class RunMode(enum.Enum):
    LIVE = "live"
    FILE = "file"
    STILLS = "stills"

    @property
    def drops_stale(self) -> bool:
        """The source gate keeps only the newest frame while the stages are busy."""
        return self is RunMode.LIVE

    @property
    def follows_people(self) -> bool:
        """Identities, smoothing and boxes from the previous frame carry from frame to frame."""
        return self is not RunMode.STILLS

    @property
    def shows_progress(self) -> bool:
        """The source has an end, so a progress bar means something."""
        return self is not RunMode.LIVE

    @property
    def adaptive_dense(self) -> bool:
        """Dense maps (normal, depth) as often as the source's frame rate leaves time for, and seg
        every other frame while the run is behind it, by default (`realtime.stages.SegSchedule`)."""
        return self is RunMode.LIVE


def mode_of(info: SourceInfo) -> RunMode:
    """The mode a source has on its own (without --stills): LIVE or FILE."""
    return RunMode.LIVE if info.live else RunMode.FILE


def decide_mode(source: Source, info: SourceInfo, *, stills: Optional[bool], boxes_from: str) -> RunMode:
    """LIVE or FILE from the source; STILLS when asked for (`stills=True`) or, with `stills=None`,
    for an image folder whose images differ in size (unrelated photos, not a sequence)."""
    folder = isinstance(source, ImageFolderSource)
    wanted = stills if stills is not None else (folder and source.sizes_differ())
    if not wanted:
        return mode_of(info)
    if not folder:
        raise UserError("--stills is for a folder or glob of photos; drop it for videos, cameras and streams.")
    if boxes_from == "seg":
        why = "" if stills else (" (its images differ in size, so they are taken as unrelated stills; pass --no-stills for a "
                                 "sequence)")
        raise UserError("--boxes-from seg uses the previous frame's segmentation, which says nothing about an unrelated "
                        f"photo{why}; use --boxes-from detector or --boxes-from frame.")
    log.info("stills mode: every image on its own (no tracking, no smoothing)")
    return RunMode.STILLS
