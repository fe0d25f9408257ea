"""Preparing the packaged int8 model for this machine, within a small memory budget.

The packaged file stores each weight matrix as int8 with a float32 scale, turned into
float32 inside the graph (`Cast` to float, then `Mul` by the scale). Left to ONNX Runtime,
constant folding holds the int8 and the float32 copies of every weight at once: a 210 MB
rise over the process. Here those products are computed with numpy, a block of rows at a
time, straight into a file of external weights; ONNX Runtime then optimises that float32
graph and saves it, mapping the weights instead of copying them: a rise of about 50 MB
each. The weights are bit for bit the ones ONNX Runtime folds (its `Mul` rounds each
float32 product once, as numpy does), and so are the saved graph and the vectors.

The ONNX file is read with protobuf (a requirement of onnxruntime) through a schema of the
few fields touched here; protobuf keeps every other field as it was read.
"""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

FLOAT, INT8 = 1, 3
"""ONNX `TensorProto.DataType` codes."""
ROWS = 2048
"""Rows of a weight dequantised at a time: the vocabulary's 30522 rows in 3 MB blocks."""
ALIGN = 65536
"""External weights start at this boundary, so ONNX Runtime can map them from the file."""


@dataclass(frozen=True)
class Fold:
    """One weight the graph dequantises: `output` = Cast(`weight`, float) · `scale`."""

    weight: str
    scale: str
    output: str
    nodes: tuple[int, int]
    """The indices of the Cast and the Mul in the graph's nodes."""


def prepare(model: Path, target: Path) -> None:
    """Write `model` optimised for ONNX Runtime at `target`, its weights in
    `target.name + ".data"`: the int8 weights dequantised here, the rest by ONNX Runtime."""
    folded = target.parent / "folded"
    folded.mkdir()
    try:
        fold_int8(model, folded / model.name)
        optimise(folded / model.name, target)
    finally:
        shutil.rmtree(folded, ignore_errors=True)


def fold_int8(model: Path, target: Path) -> int:
    """Write `model` with its int8 weights dequantised into float32 external weights
    (`target.name + ".data"`); how many were. A graph without such weights is copied;
    `ValueError` when `model` is not an ONNX file."""
    from google.protobuf.message import DecodeError

    parsed = schema()()
    try:
        parsed.ParseFromString(model.read_bytes())
    except DecodeError as err:
        raise ValueError(f"{model}: not an ONNX model ({err})") from err
    graph = parsed.graph
    folds = find_folds(graph)
    weights = {t.name: t for t in graph.initializer}
    data_name = f"{target.name}.data"
    with (target.parent / data_name).open("wb") as data:
        for fold in folds:
            written = _write_weight(data, weights[fold.weight], weights[fold.scale])
            tensor = graph.initializer.add(name=fold.output, data_type=FLOAT, data_location=1)
            tensor.dims.extend(weights[fold.weight].dims)
            for key, value in (("location", data_name), *written):
                tensor.external_data.add(key=key, value=value)
    used = {fold.weight for fold in folds} | {fold.scale for fold in folds}
    _delete(graph.node, {i for fold in folds for i in fold.nodes})
    _delete(graph.initializer, {i for i, t in enumerate(graph.initializer) if t.name in used})
    target.write_bytes(parsed.SerializeToString())
    return len(folds)


def find_folds(graph: Any) -> list[Fold]:
    """The graph's `Mul(Cast(int8 weight, to=float), float scale)` pairs whose weight,
    scale and Cast feed nothing else, and whose scale broadcasts over the weight's rows."""
    weights = {t.name: t for t in graph.initializer}
    users: dict[str, list[int]] = {}
    for index, node in enumerate(graph.node):
        for name in node.input:
            users.setdefault(name, []).append(index)
    # A name the graph also takes or gives (older exporters list weights as inputs) stays.
    named = {value.name for value in (*graph.output, *graph.input)}
    found = (_fold(graph, index, weights, users, named) for index in range(len(graph.node)))
    return [fold for fold in found if fold is not None]


def _fold(
    graph: Any, index: int, weights: dict[str, Any], users: dict[str, list[int]], named: set[str]
) -> Fold | None:
    """The fold whose Cast is node `index`, if that node begins one."""
    cast = graph.node[index]
    if cast.op_type != "Cast" or not cast.input or _cast_to(cast) != FLOAT:
        return None
    weight = weights.get(cast.input[0])
    after = users.get(cast.output[0], [])
    if weight is None or weight.data_type != INT8 or users[weight.name] != [index]:
        return None
    mul = graph.node[after[0]] if len(after) == 1 else None
    others = [name for name in mul.input if name != cast.output[0]] if mul else []
    scale = weights.get(others[0]) if mul and mul.op_type == "Mul" and len(others) == 1 else None
    if mul is None or scale is None or users[scale.name] != after:
        return None
    if named & {weight.name, scale.name, mul.output[0]} or not _foldable(weight, scale):
        return None
    return Fold(weight.name, scale.name, mul.output[0], (index, after[0]))


def _cast_to(node: Any) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None)


def _foldable(weight: Any, scale: Any) -> bool:
    """Both stored in the file, and the scale a float32 that broadcasts over the weight."""
    import numpy as np

    if scale.data_type != FLOAT or not weight.raw_data or weight.data_location:
        return False
    if scale.data_location or len(weight.dims) != 2 or len(scale.dims) > 2:
        return False
    try:
        shape = np.broadcast_shapes(tuple(weight.dims), tuple(scale.dims))
    except ValueError:
        return False
    return shape == tuple(weight.dims) and len(weight.raw_data) == weight.dims[0] * weight.dims[1]


def _write_weight(data: BinaryIO, weight: Any, scale: Any) -> list[tuple[str, str]]:
    """Append Cast(`weight`, float) · `scale` to `data`, a block of rows at a time; its
    `offset` and `length` there."""
    import numpy as np

    data.write(b"\0" * (-data.tell() % ALIGN))
    offset = data.tell()
    shape = tuple(weight.dims)
    quantised = np.frombuffer(weight.raw_data, dtype=np.int8).reshape(shape)
    factors = np.broadcast_to(_floats(scale), shape)
    for row in range(0, shape[0], ROWS):
        block = quantised[row : row + ROWS].astype(np.float32) * factors[row : row + ROWS]
        data.write(block.astype("<f4", copy=False).tobytes())
    return [("offset", str(offset)), ("length", str(data.tell() - offset))]


def _floats(tensor: Any) -> Any:
    import numpy as np

    if tensor.raw_data:
        values = np.frombuffer(tensor.raw_data, dtype="<f4")
    else:
        values = np.array(tensor.float_data, dtype=np.float32)
    return values.reshape(tuple(tensor.dims))


def _delete(repeated: Any, indices: set[int]) -> None:
    for index in sorted(indices, reverse=True):
        del repeated[index]


def optimise(model: Path, target: Path) -> None:
    """Let ONNX Runtime optimise `model` and save the result at `target`, weights apart.
    The extended level only: its rewrites hold on any CPU, not just this one."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3  # warnings about unused initialisers are not the user's
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    weights = ("session.optimized_model_external_initializers_file_name", f"{target.name}.data")
    options.add_session_config_entry(*weights)
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
    )
    # The session is only opened to save its graph: packing the weights for this CPU's
    # kernels would copy them all (a 40 MB rise) for nothing.
    options.add_session_config_entry("session.disable_prepacking", "1")
    onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


@functools.cache
def schema() -> Any:
    """The message class of an ONNX model, with only the fields read or written here."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="cgraph_onnx.proto", package="cgraph_onnx")
    for name, fields in _MESSAGES.items():
        message = file.message_type.add(name=name)
        for field_name, number, kind, repeated in fields:
            added = message.field.add(name=field_name, number=number)
            added.label = field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL
            if kind in _MESSAGES:
                added.type, added.type_name = field.TYPE_MESSAGE, f".cgraph_onnx.{kind}"
            else:
                added.type = getattr(field, f"TYPE_{kind}")
                added.options.packed = kind == "FLOAT"  # as onnx.proto declares them
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("cgraph_onnx.Model"))


_MESSAGES: dict[str, list[tuple[str, int, str, bool]]] = {
    # name: (field, number in onnx.proto, type, repeated)
    "Entry": [("key", 1, "STRING", False), ("value", 2, "STRING", False)],
    "Value": [("name", 1, "STRING", False)],
    "Tensor": [
        ("dims", 1, "INT64", True),
        ("data_type", 2, "INT32", False),
        ("float_data", 4, "FLOAT", True),
        ("name", 8, "STRING", False),
        ("raw_data", 9, "BYTES", False),
        ("external_data", 13, "Entry", True),
        ("data_location", 14, "INT32", False),
    ],
    "Attribute": [("name", 1, "STRING", False), ("i", 3, "INT64", False)],
    "Node": [
        ("input", 1, "STRING", True),
        ("output", 2, "STRING", True),
        ("op_type", 4, "STRING", False),
        ("attribute", 5, "Attribute", True),
    ],
    "Graph": [
        ("node", 1, "Node", True),
        ("initializer", 5, "Tensor", True),
        ("input", 11, "Value", True),
        ("output", 12, "Value", True),
    ],
    "Model": [("graph", 7, "Graph", False)],
}
