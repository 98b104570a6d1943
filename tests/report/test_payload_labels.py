"""The axes a plot labels workloads with (report/payload.py label_axes): the fewest var axes that tell the
workloads apart."""

from flashinfer_bench.report.payload import label_axes

GQA = [{"batch_size": 1, "num_pages": 53, "len_indptr": 2, "num_kv_indices": 37},
       {"batch_size": 4, "num_pages": 98, "len_indptr": 5, "num_kv_indices": 82},
       {"batch_size": 8, "num_pages": 224, "len_indptr": 9, "num_kv_indices": 208}]


def test_one_axis_when_one_tells_them_apart():
    assert label_axes(GQA, ["batch_size", "num_pages", "len_indptr", "num_kv_indices"]) == ["batch_size"]


def test_two_axes_when_one_is_not_enough():
    grid = [{"batch_size": b, "kv_len": k, "len_indptr": b + 1} for b in (1, 8) for k in (512, 4096)]
    assert label_axes(grid, ["batch_size", "kv_len", "len_indptr"]) == ["batch_size", "kv_len"]


def test_workloads_no_axis_tells_apart_get_the_best_choice_and_a_single_one_its_first_axis():
    same = [{"n": 4, "m": 1}, {"n": 4, "m": 1}, {"n": 4, "m": 2}]
    assert label_axes(same, ["n", "m"]) == ["m"]
    assert label_axes([{"n": 4, "m": 1}], ["n", "m"]) == ["n"]
    assert label_axes([{}, {}], []) == []
