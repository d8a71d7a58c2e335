"""One frame pipeline for every command and the desktop app.

``source -> pre-processing (ROI, scale) -> subtractor -> post-processing
(threshold, minimum area, objects and tracks) -> sinks`` (mask files, mask
video, overlay video, objects JSONL/CSV, CDnet scores and ROC, checkpoints,
live preview)::

    import bgsub
    from bgsub.pipeline import MaskFiles, ObjectsFile, Pipeline, Scores
    from bgsub.sources import open_source

    pipe = Pipeline(bgsub.create("olkn"), min_area=20,
                    sinks=[MaskFiles("masks/"), ObjectsFile("objects.jsonl"), Scores()])
    with open_source("videos/sample") as source:
        result = pipe.run(source)
    print(result.frames, result.metrics["F"])
"""

from bgsub.pipeline.core import FrameOutput, Pipeline, PipelineResult, describe_error
from bgsub.pipeline.objects import DetectedObject, Tracker, find_objects
from bgsub.pipeline.region import Region, check_model_scale, load_roi
from bgsub.pipeline.sinks import (
    Callback,
    Checkpoints,
    MaskFiles,
    MaskVideo,
    ObjectsFile,
    OverlayVideo,
    Scores,
    Sink,
    draw_overlay,
)

__all__ = [
    "Pipeline", "FrameOutput", "PipelineResult", "describe_error",
    "Region", "check_model_scale", "load_roi",
    "DetectedObject", "Tracker", "find_objects",
    "Sink", "MaskFiles", "MaskVideo", "OverlayVideo", "ObjectsFile", "Scores", "Checkpoints", "Callback",
    "draw_overlay",
]
