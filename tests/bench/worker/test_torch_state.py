import pytest
import torch

from flashinfer_bench.bench.worker import torch_state
from flashinfer_bench.bench.worker.torch_state import preserved_torch_state


def test_changed_settings_are_put_back():
    tf32 = torch.backends.cuda.matmul.allow_tf32
    with preserved_torch_state():
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cuda.matmul.allow_tf32 = not torch.backends.cuda.matmul.allow_tf32
    assert torch.get_default_dtype() == torch.float32
    assert torch.is_grad_enabled()
    assert not torch.are_deterministic_algorithms_enabled()
    assert not torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.backends.cuda.matmul.allow_tf32 == tf32


def test_settings_are_put_back_after_an_exception():
    with pytest.raises(RuntimeError), preserved_torch_state():
        torch.set_grad_enabled(False)
        raise RuntimeError("solution crashed")
    assert torch.is_grad_enabled()


def test_unchanged_settings_are_not_written(monkeypatch):
    def refuse(value):
        raise AssertionError("an unchanged setting was written back")

    monkeypatch.setattr(torch_state, "SETTINGS", [(read, refuse) for read, _ in torch_state.SETTINGS])
    with preserved_torch_state():
        pass
