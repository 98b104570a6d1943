import pytest
import torch

from flashinfer_bench.timing.devices import device_name, iter_tensors, resolve_device


class FakeCudaTensor(torch.Tensor):
    """A CPU tensor that claims to live on cuda:1 (no GPU here)."""

    @property
    def device(self):
        return torch.device("cuda", 1)


def fake_cuda_tensor():
    return torch.zeros(2).as_subclass(FakeCudaTensor)


def test_iter_tensors_walks_nested_containers():
    a, b, c = torch.zeros(1), torch.zeros(2), torch.zeros(3)
    found = list(iter_tensors(((a, [1, {"k": b}]), {"x": (c,), "y": "text"})))
    assert [t.numel() for t in found] == [1, 2, 3]


def test_cuda_tensor_in_kwargs_decides():
    dev = resolve_device(None, (torch.zeros(1),), {"w": [fake_cuda_tensor()]})
    assert dev == torch.device("cuda", 1)


def test_no_tensors_and_no_cuda_means_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device(None, (torch.zeros(1), 3), {}) == torch.device("cpu")
    assert resolve_device(None, (), {}) == torch.device("cpu")


def test_no_cuda_tensor_but_cuda_available_uses_current_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert resolve_device(None, (torch.zeros(1),), {}) == torch.device("cuda", 3)


@pytest.mark.parametrize("given", ["cpu", torch.device("cpu")])
def test_explicit_cpu_is_honoured_even_with_cuda_tensors(given):
    assert resolve_device(given, (fake_cuda_tensor(),), {}) == torch.device("cpu")


def test_explicit_cuda_index_forms(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 2)
    assert resolve_device(1, (), {}) == torch.device("cuda", 1)
    assert resolve_device("cuda:0", (), {}) == torch.device("cuda", 0)
    assert resolve_device("cuda", (), {}) == torch.device("cuda", 2)


def test_cpu_device_name():
    assert device_name(torch.device("cpu")) == "cpu"
