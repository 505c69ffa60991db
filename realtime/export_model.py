"""`sapiens-rt export-model --to onnx`: the ONNX graph of a task model (`realtime.models.onnx_export`)
written to a file under the output rule of every command (`realtime.outputs`).

    path = export_onnx("pose", "sapiens2_0.4b_pose.safetensors", "pose.onnx")

The graph never lands over the checkpoint (nor its weights file beside it); it is written to a
temporary beside `out`, checked by `onnx.checker` and moved into place; a weights file an earlier,
larger export left under the same name is removed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional

from realtime.errors import UserError
from realtime.models.onnx_export import onnx_graph, require_onnx
from realtime.outputs import check_outputs, check_writable, remove_stale

log = logging.getLogger(__name__)

EXTERNAL_DATA_BYTES = 1 << 30  # larger weights go to `<out>.data` beside the graph (protobuf stops at 2 GB: 1b, 5b)


def export_onnx(
    task: str,
    checkpoint: Optional[str | os.PathLike],
    out: str | os.PathLike,
    *,
    arch: Optional[str] = None,
    input_hw: Optional[tuple[int, int]] = None,
) -> Path:
    """Write the `task` model from `checkpoint` (None: the released `arch` file) to `out` as ONNX
    (`realtime.models.onnx_export.onnx_graph`: input `image` (persons, 3, H, W), H, W = `input_hw`,
    default the task's trained size); returns `out`."""
    onnx = require_onnx()
    out = Path(out)
    data = out.with_name(f"{out.name}.data")  # the weights of a model over 1 GB, beside the graph
    # never over the checkpoint, also not with the weights file beside the graph (realtime.outputs)
    check_outputs({"the ONNX file": out, "its weights file": data}, [checkpoint] if checkpoint is not None else [])
    if not out.parent.is_dir():
        raise UserError(f"Cannot write {out}: the folder {out.parent} does not exist; create it or choose another output path.")
    if out.is_dir():
        raise UserError(f"{out} is a folder; give the ONNX file a name such as {out / (task + '.onnx')}.")
    check_writable(out, option="output")
    graph = onnx_graph(task, checkpoint, out.parent, arch=arch, input_hw=input_hw)
    large = sum(len(t.raw_data) for t in graph.graph.initializer) > EXTERNAL_DATA_BYTES
    partial = out.with_name(out.name + ".partial")
    try:
        onnx.save_model(graph, str(partial), save_as_external_data=large, all_tensors_to_one_file=True, location=data.name)
        onnx.checker.check_model(str(partial))
        partial.replace(out)
    except OSError as err:
        raise UserError(f"Cannot write {out} in the folder {out.parent} ({err.strerror or err}); choose a writable output "
                        "path.") from None
    finally:
        partial.unlink(missing_ok=True)
    if not large:  # a weights file of an earlier, larger export to this name belongs to no graph now
        remove_stale([data], f"an earlier export to {out} wrote it; this model's weights are inside the graph")
    props = {p.key: p.value for p in graph.metadata_props}
    log.info("exported %s %s (%s) to %s", props.get("arch"), task, props.get("input_hw"), out)
    return out
