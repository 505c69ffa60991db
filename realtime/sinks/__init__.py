"""Everything that leaves a run: the `Sink` interface and the built-in sinks.

    base.py     Sink, LatestWins (live sources), VideoSink, ViewerSink, ProgressSink
    tracks.py   TrackWriter: the tracks JSONL, written live
    video.py    VideoWriter: fragmented H.264 MP4 with the source's timestamps and audio
    osc.py      VmcSink, OscKeypointSink: live VMC / raw OSC motion
    vrchat.py   VrchatSink: VRChat's OSC trackers, head and face (Unified Expressions)
"""
