"""Which int8 weights the preparation dequantises itself, and the float32 it writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cgraph.backends.onnx_prepare import FLOAT, INT8, find_folds, fold_int8, schema

WEIGHT = np.array([[-128, -1, 0], [1, 64, 127]], dtype=np.int8)
SCALE = np.array([[0.5], [0.0078125]], dtype=np.float32)


def model(cast_to: int = FLOAT, shared: bool = False, as_input: bool = False) -> Any:
    """x · (Cast(w) · s): the shape of every weight in the packaged model."""
    built = schema()()
    graph = built.graph
    graph.initializer.add(name="w", data_type=INT8, dims=[2, 3], raw_data=WEIGHT.tobytes())
    graph.initializer.add(name="s", data_type=FLOAT, dims=[2, 1], raw_data=SCALE.tobytes())
    cast = graph.node.add(op_type="Cast", input=["w"], output=["w_f"])
    cast.attribute.add(name="to", i=cast_to)
    graph.node.add(op_type="Mul", input=["w_f", "s"], output=["w_d"])
    graph.node.add(op_type="MatMul", input=["x", "w_d"], output=["y"])
    if shared:
        graph.node.add(op_type="Identity", input=["w"], output=["w_too"])
    if as_input:
        graph.input.add(name="w")
    graph.output.add(name="y")
    return built


def test_a_weight_cast_to_float_and_scaled_is_folded() -> None:
    [fold] = find_folds(model().graph)
    assert (fold.weight, fold.scale, fold.output, fold.nodes) == ("w", "s", "w_d", (0, 1))


@pytest.mark.parametrize(
    "changed", [{"cast_to": 10}, {"shared": True}, {"as_input": True}], ids=str
)
def test_a_weight_that_is_not_only_a_float32_product_stays(changed: dict[str, Any]) -> None:
    assert find_folds(model(**changed).graph) == []  # float16, used elsewhere, fed by a caller


def test_the_folded_weight_is_the_float32_product_in_a_file_of_its_own(tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(model().SerializeToString())
    (tmp_path / "out").mkdir()
    assert fold_int8(source, tmp_path / "out" / "model.onnx") == 1
    folded = schema()()
    folded.ParseFromString((tmp_path / "out" / "model.onnx").read_bytes())
    assert [n.op_type for n in folded.graph.node] == ["MatMul"]
    [tensor] = folded.graph.initializer
    place = {e.key: e.value for e in tensor.external_data}
    assert (tensor.name, tensor.data_type, list(tensor.dims)) == ("w_d", FLOAT, [2, 3])
    data = (tmp_path / "out" / place["location"]).read_bytes()
    offset, length = int(place["offset"]), int(place["length"])
    written = np.frombuffer(data[offset : offset + length], dtype="<f4").reshape(2, 3)
    assert written.tobytes() == (WEIGHT.astype(np.float32) * SCALE).tobytes()
