import json

import pytest
import torch
from helpers import SCALE_ADD, write_trace_set

from flashinfer_bench.data import Definition, TraceSet
from flashinfer_bench.data.constraints import Constraint, ConstraintError, ShapeOnly

PAGED = "num_kv_indices == kv_indptr[-1].item()"


@pytest.mark.parametrize(
    ("source", "values", "expected"),
    [
        ("num_qo_heads % num_kv_heads == 0", {"num_qo_heads": 32, "num_kv_heads": 8}, True),
        ("len_indptr == batch_size + 1", {"len_indptr": 3, "batch_size": 4}, False),
        (PAGED, {"num_kv_indices": 7, "kv_indptr": torch.tensor([0, 3, 7], dtype=torch.int32)}, True),
        (PAGED, {"num_kv_indices": 7, "kv_indptr": torch.tensor([0, 6])}, False),
        (PAGED, {"num_kv_indices": 7, "kv_indptr": ShapeOnly((3,))}, None),  # values not drawn yet
        ("w.shape[1] == 2 * i", {"w": ShapeOnly((4, 16, 8)), "i": 8}, True),
        ("w.shape[-1] == i and not i > 9", {"w": torch.zeros(2, 8), "i": 8}, True),
        ("1 < topk <= max_pages * page_size", {"topk": 5, "max_pages": 2, "page_size": 2}, False),
        ("x[-1] >= 0 or n ** 2 // 3 == 5", {"x": torch.tensor([-1]), "n": 4}, True),
    ],
)
def test_the_grammar_real_definitions_use(source, values, expected):
    assert Constraint.parse(source).evaluate(values) is expected


@pytest.mark.parametrize(
    "source",
    [
        "().__class__.__bases__[0].__subclasses__()",
        "__import__('os').system('true')",
        "open('/etc/passwd')",
        "x.__len__()",
        "[n for n in (1, 2)]",
        "lambda: 1",
        "'a' == 'a'",
        "x[0:2] == y",
        "x.item(1)",
        "n.real",
        "(n := 3)",
    ],
)
def test_anything_else_is_rejected_when_parsed(source):
    with pytest.raises(ConstraintError):
        Constraint.parse(source)


def test_work_a_constraint_can_ask_for_is_bounded():
    with pytest.raises(ConstraintError, match="too large"):
        Constraint.parse("10 ** 10 ** 10 > 0").evaluate({})
    with pytest.raises(ConstraintError, match="parts"):
        Constraint.parse("+".join(["n"] * 150))
    with pytest.raises(ConstraintError, match="neither an axis nor an input"):
        Constraint.parse("m == 1").evaluate({"n": 1})


def test_a_definition_whose_constraint_tries_to_escape_does_nothing_and_is_reported(tmp_path):
    marker = tmp_path / "escaped"
    escapes = [
        f"().__class__.__bases__[0].__subclasses__()[0].__init__.__globals__['os'].system('touch {marker}')",
        f"__import__('os').system('touch {marker}')",
    ]
    definitions = [dict(SCALE_ADD, name=f"evil{i}", constraints=[source]) for i, source in enumerate(escapes)]
    root = write_trace_set(tmp_path / "set", [SCALE_ADD, *definitions], [], {})
    trace_set = TraceSet.from_path(root)
    assert not marker.exists()
    assert list(trace_set.definitions) == ["scale_add"]
    assert len(trace_set.problems) == 2
    assert [p.field for p in trace_set.problems] == ["constraints", "constraints"]
    assert "makes a call" in str(trace_set.problems[0])
    assert "makes a call" in str(trace_set.problems[1])


def test_violations_say_what_each_side_was():
    definition = Definition.model_validate(dict(json.loads(json.dumps(SCALE_ADD)), constraints=["n % 4 == 0"]))
    assert definition.constraint_violations({"n": 6}, {}) == ["constraint 'n % 4 == 0' is false (n % 4 = 2)"]
    assert definition.constraint_violations({"n": 8}, {}) == []
