"""The kernel-resources table (benchmarks/kernel_resources.py) stays complete, and its signatures are the
launches' own.

* Every kernel defined in gpu/ (``@kernel`` / ``cuda.jit`` that is not a device function) has a row, and every
  row names a kernel that exists: a kernel added without a row fails here.
* The host code of the 32GiB path (a proof with device-loaded parameters and the device SpMV, the a/b/c
  upload, a scan over several tiles, an MSM with several bucket segments, NTT orders that bit-reverse, the
  setup's fixed-base products), run under the simulator at tiny sizes, launches every kernel with exactly the
  argument types of its rows (dtype, ndim, layout; scalar types): a row compiled with another signature would
  describe code the device never builds. That check simulates a whole proof (~1-2 min), so it is not in CI:
  ``make test-kernel-launches`` runs it (after a kernel or a launch changes).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def _table() -> ModuleType:
    """benchmarks/kernel_resources.py as a module (its top level imports only the standard library)."""
    spec = importlib.util.spec_from_file_location(
        "kernel_resources", REPO / "benchmarks" / "kernel_resources.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("kernel_resources", mod)
    spec.loader.exec_module(mod)
    return mod


def _is_kernel_decorator(d: ast.expr) -> bool:
    """``@kernel``, ``@kernel(...)``, ``@cuda.jit`` or ``@cuda.jit(...)`` without ``device=True``."""
    call = d if isinstance(d, ast.Call) else None
    f = call.func if call else d
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if name == "kernel":
        return True
    if (
        name == "jit"
        and isinstance(f, ast.Attribute)
        and isinstance(f.value, ast.Name)
        and f.value.id == "cuda"
    ):
        device = [k for k in (call.keywords if call else []) if k.arg == "device"]
        return not (device and isinstance(device[0].value, ast.Constant) and device[0].value.value is True)
    return False


def defined_kernels() -> set[str]:
    """ "module:function" of every kernel defined in gpu/ (source scan, nothing imported)."""
    found = set()
    for path in sorted((REPO / "gpu").rglob("*.py")):
        mod = ".".join(path.relative_to(REPO).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                _is_kernel_decorator(d) for d in node.decorator_list
            ):
                found.add(f"{mod}:{node.name}")
    return found


def test_every_kernel_has_a_row() -> None:
    rows = {s.kernel for s in _table().specs()}
    defined = defined_kernels()
    assert len(defined) >= 25, f"the source scan found only {sorted(defined)}"
    assert defined - rows == set(), (
        f"kernels without a row in benchmarks/kernel_resources.py: {defined - rows}"
    )
    assert rows - defined == set(), f"rows naming no kernel in gpu/: {rows - defined}"


def test_signature_notation_round_trips() -> None:
    """parse_sig and sig_of_types are inverse on every row (the launch check compares in that notation)."""
    kr = _table()
    for s in kr.specs():
        assert kr.sig_of_types(kr.parse_sig(s.sig)) == s.sig.replace("  ", " "), s.name


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """The argument types of every host-side kernel launch the simulator runs, by "module:function"."""
    import numba
    from numba.cuda.simulator import kernel as simk

    kr = _table()
    seen: dict[str, set[str]] = {}
    orig = simk.FakeCUDAKernel.__call__

    def record(self: Any, *args: Any) -> Any:
        if not self._device and not simk._kernel_context:
            key = f"{self.fn.__module__}:{self.fn.__name__}"
            seen.setdefault(key, set()).add(kr.sig_of_types([numba.typeof(a) for a in args]))
        return orig(self, *args)

    monkeypatch.setattr(simk.FakeCUDAKernel, "__call__", record)
    return seen


@pytest.mark.skipif(
    not os.environ.get("PSAGENT_KERNEL_LAUNCHES"), reason="simulates a whole proof: make test-kernel-launches"
)
def test_simulated_launches_type_as_the_rows(
    launches: dict[str, set[str]], tmp_path: Path, seed: int
) -> None:
    from numba import cuda

    from gpu.curves import G1, G2
    from gpu.device import devices
    from gpu.groth16 import reference
    from gpu.groth16.fixed_base import FixedBase
    from gpu.groth16.fixed_base_cuda import CudaFixedBase
    from gpu.groth16.params_device import load_to_device
    from gpu.groth16.prover import Assignment, ProvingKey, prove, upload_abc
    from gpu.groth16.setup import toxic_from_seed
    from gpu.groth16.synthetic import SyntheticCircuit
    from gpu.msm import MSMContext, sort
    from gpu.ntt import Direction, Order, ntt

    dev = devices()[0]
    sc = SyntheticCircuit(16, num_public=1, seed=seed)  # 17 rows: domain 2^5
    r1cs = sc.r1cs().compact()
    params = reference.setup(r1cs.expanded(), toxic_from_seed(seed))
    path = tmp_path / "t.params"
    params.write(path)
    # the 32GiB path: parameters decoded on the device (H bit-reversed), A.w, B.w, C.w by the device SpMV
    dparams = load_to_device(path, dev, h_bitrev=True, chunk_points=16)
    pk = ProvingKey.from_device_parameters(dparams, r1cs.density(), device=0)
    prove(pk, Assignment.on_device(r1cs, sc.witness()), r=5, s=9)
    # the streamed layouts: bases from page-locked host memory, H's scalars gathered from bit-reversed h
    from gpu.groth16 import plan

    lay = plan.candidates(plan.ProofSizes.of_r1cs(r1cs), plan.STREAM24, device_spmv=True)[0]
    streamed = ProvingKey(params, r1cs.density(), backend="cuda", device=0, layout=lay)
    prove(streamed, Assignment.on_device(r1cs, sc.witness()), r=5, s=9)
    with dev.use():
        a, b, c = r1cs.evaluate(sc.witness())
        upload_abc(a, b, c, pk.logn)  # the host-evaluated path's upload (zero padding)
        x = cuda.to_device(np.ones(5000, dtype=np.uint32))  # > one scan tile: the tile offsets run
        sort.exclusive_scan(x, cuda.device_array(5000, dtype=np.uint32), 5000)
    # 7-bit windows: 64 buckets, two segments per window, so the segment tree and the row gather run
    scalars = np.zeros((3, 8), dtype=np.uint32)
    scalars[:, 0] = (1000, 77, 5)
    MSMContext(params.l[:3], backend="cuda", device=0).msm(scalars, window=7)
    v = np.zeros((8, 8), dtype=np.uint32)
    v[:, 0] = np.arange(8)
    ntt(v, order=Order.NN, backend="cuda", device=0)  # bit reversal (the setup's NN inverse)
    ntt(
        v[:1], direction=Direction.INVERSE, order=Order.NN, backend="cuda", device=0
    )  # n = 1: the scale kernel
    scal = np.zeros((2, 8), dtype=np.uint32)
    scal[:, 0] = (3, 5)
    for group in (G1, G2):
        CudaFixedBase(FixedBase(group, group.generator(), window=2), dev, chunk=2).mul_bytes(scal)

    rows: dict[str, set[str]] = {}
    for s in _table().specs():
        rows.setdefault(s.kernel, set()).add(s.sig)
    wrong = {
        k: sorted(sigs - rows.get(k, set())) for k, sigs in launches.items() if sigs - rows.get(k, set())
    }
    assert not wrong, (
        f"launches whose argument types have no row: {wrong}; "
        f"rows: { {k: sorted(rows.get(k, set())) for k in wrong} }"
    )
    bench = {s.kernel for s in _table().specs() if s.stage == "bench"}
    missed = set(rows) - bench - set(launches)
    assert not missed, f"rows of the 32GiB path this test did not launch: {missed}"
