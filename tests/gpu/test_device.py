"""gpu.placement / gpu.device: the backend enum, ``auto`` resolved in one place, explicit devices, device
listing without entering contexts, CUDA failures as GpuError at Device.use()."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numba.cuda
import pytest
from numba.cuda.cudadrv import error as cuda_error

import gpu
from gpu import device as gdev
from gpu.device import Device, place, resolve_backend
from gpu.placement import Backend, GpuError, engine_backend


def test_backend_names_and_the_engine_refusing_auto() -> None:
    assert gpu.Backend is Backend and gpu.GpuError is GpuError
    assert engine_backend("cpu") is Backend.cpu and engine_backend(Backend.cuda) is Backend.cuda
    with pytest.raises(ValueError, match="must be resolved"):
        engine_backend("auto")
    with pytest.raises(ValueError, match="'cpu' or 'cuda', not 'gpu'"):
        engine_backend("gpu")
    assert place("cpu", None) == (Backend.cpu, None)
    with pytest.raises(ValueError, match="explicit device"):
        place(Backend.cuda, None)


def _sim(index: int = 0) -> Device:
    return Device(index, "CUDA simulator", (0, 0), True)


@pytest.mark.parametrize(
    ("found", "asked", "want"),
    [
        ([], "auto", Backend.cpu),
        ([_sim()], "auto", Backend.cpu),  # the simulator runs kernels as Python: auto does not pick it
        ([_sim()], "cuda", Backend.cuda),
        ([Device(0, "H200", (9, 0))], "auto", Backend.cuda),
        ([Device(0, "H200", (9, 0))], "cpu", Backend.cpu),
    ],
)
def test_auto_is_resolved_in_one_place(
    monkeypatch: pytest.MonkeyPatch, found: list[Device], asked: str, want: Backend
) -> None:
    monkeypatch.setattr(gdev, "devices", lambda: found)
    assert resolve_backend(asked) is want


def test_cuda_without_any_device_is_a_gpu_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gdev, "devices", lambda: [])
    with pytest.raises(GpuError, match="no usable CUDA GPU"):
        resolve_backend("cuda")


def test_listing_devices_enters_no_context(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoContext:
        def __getitem__(self, i: int) -> Any:
            raise AssertionError(f"devices() entered device {i}'s context")

    fake = [SimpleNamespace(id=i, name=b"NVIDIA H200", compute_capability=(9, 0)) for i in range(3)]
    monkeypatch.setattr(gdev, "simulator", lambda: False)
    monkeypatch.setattr(numba.cuda, "is_available", lambda: True)
    monkeypatch.setattr(numba.cuda, "list_devices", lambda: fake)
    monkeypatch.setattr(numba.cuda, "gpus", NoContext())
    found = gdev.devices()
    assert [(d.index, d.name, d.compute_capability, d.simulated) for d in found] == [
        (i, "NVIDIA H200", (9, 0), False) for i in range(3)
    ]


def test_cuda_failures_become_one_error_type_at_the_device_boundary() -> None:
    dev = Device(0, "not simulated", (9, 0), False)  # goes through cuda.gpus[0] (the simulator's here)
    with pytest.raises(GpuError, match="CUDA device 0: CudaSupportError") as info:
        with dev.use():
            raise cuda_error.CudaSupportError("CUDA_ERROR_OUT_OF_MEMORY")
    assert info.value.device == 0 and info.value.out_of_memory
    assert isinstance(info.value.__cause__, cuda_error.CudaSupportError)
    with pytest.raises(ValueError, match="ours"), dev.use():  # not a CUDA failure: passes unchanged
        raise ValueError("ours")
