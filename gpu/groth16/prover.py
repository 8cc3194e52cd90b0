"""The Groth16 prover (bellperson's create_proof, SupraSeal's GPU split), CPU and CUDA, single or batched.

Per circuit, a straight line of timed phases:
  upload_abc (CUDA) a, b, c to the device through pinned staging buffers (gpu.transfer)
  quotient   a, b, c (= A.w, B.w, C.w on the domain) -> iNTT (NR, the 1/n deferred)
             -> coset NTT (RN, g^i/n fused) -> (a b - c) / (g^n - 1)
             -> coset iNTT (NR, g^-i/n fused, result out of Montgomery form): the coefficients of h in
             bit-reversed order. No bit reversal runs: the H bases are permuted once when the ProvingKey is
             built (position p holds H[bitrev(p)]; the slot of h_(n-1), always 0, the identity).
  upload_witness (CUDA) the witness, once; the A/B scalar vectors are gathered from it on the device
  msm_h      sum h_i H_i (with msm_h.sort/.accumulate/.integrate: the MSM's stages, CUDA events)
  msm_l      sum aux_j L_j
  msm_a      inputs (all) + aux with A-density
  msm_b_g1 / msm_b_g2   inputs with B-density + aux with B-density (the MSM engine skips zeros, sums ones and
             runs Pippenger on the rest: gpu.msm)
  epilogue   A = alpha + r delta + A'; B = beta + s delta + B';
             C = s A' + r B1' + rs delta + s alpha + r beta + H' + L'
The device SpMV (``gpu.options.EngineOptions.device_spmv``, its default ``gpu.options.DEVICE_PATHS``): A.w,
B.w, C.w evaluated on the device from matrices kept resident on the ProvingKey (gpu.groth16.spmv_cuda): only
the witness is uploaded per proof, the host does no SpMV. An assignment made by ``Assignment.on_device`` (or
``from_r1cs(..., device_spmv=True)``) carries its constraint system instead of a, b, c; the CUDA prover then
runs upload_witness, ``spmv`` (``upload_r1cs`` once per key) and quotient in place of upload_abc; the CPU
prover evaluates it on the host. Same proof bytes either way.
r and s come from the OS CSPRNG unless given (deterministic mode: CPU and CUDA then give identical bytes).
Batches (several assignments of one shape) share the resident bases of one ProvingKey: the SRS is loaded and
uploaded once; on CUDA each MSM then runs once for a group of circuits (one sort and one accumulation pass
over the bases, gpu.msm.MSMContext.msm_batch), groups as large as device memory admits.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpu import memory
from gpu.arith.fields import fr_encode, fr_from_ints, fr_mul_batch, fr_sub_batch
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.curves import G1, G2
from gpu.device import Device, place
from gpu.groth16.params import Parameters, Proof, VerifyingKey
from gpu.groth16.plan import Layout
from gpu.groth16.r1cs import R1CS, Density, check_witness
from gpu.ntt import Order, plan, transform_cpu, transform_cuda, vanishing_on_coset
from gpu.ntt.tables import NO_SCALE, scale
from gpu.placement import Backend
from gpu.transfer import PinnedPool, Staging, pinned_copy

if TYPE_CHECKING:
    from gpu.groth16.params_device import DeviceParameters
    from gpu.groth16.plan import ProofSizes
    from gpu.groth16.spmv_cuda import DeviceR1CS

@dataclass
class Assignment:
    """One circuit instance: the full witness (canonical, ONE first) and A.w, B.w, C.w (Montgomery, one row
    per constraint including the input constraints). With ``system`` set (``on_device``), a, b, c are empty
    (0, 8) arrays and the prover evaluates ``system`` at the witness itself: on the device for CUDA (a
    DeviceR1CS, or an R1CS made resident on the ProvingKey), on the host for the CPU (an R1CS only)."""

    witness: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    num_inputs: int
    system: R1CS | DeviceR1CS | None = None

    @staticmethod
    def from_r1cs(
        r1cs: R1CS, witness: np.ndarray, pool: PinnedPool | None = None, *, device_spmv: bool = False
    ) -> Assignment:
        """Evaluate the R1CS at ``witness``; with ``pool``, the witness and A.w, B.w, C.w are written into
        page-locked arrays taken from it (give them back with ``release`` once proved). ``device_spmv``
        (``gpu.options.EngineOptions.device_spmv``) defers the evaluation to the prover (``on_device``)."""
        if device_spmv:
            return Assignment.on_device(r1cs, witness, pool)
        if pool is None:
            a, b, c = r1cs.evaluate(witness)
            return Assignment(np.ascontiguousarray(witness), a, b, c, r1cs.num_inputs)
        rows = r1cs.num_constraints + r1cs.num_inputs
        bufs = (pool.take((rows, 8)), pool.take((rows, 8)), pool.take((rows, 8)))
        w = pool.take(np.shape(witness), np.asarray(witness).dtype)
        try:
            np.copyto(w, witness)
            a, b, c = r1cs.evaluate(w, out=bufs)
        except BaseException:
            pool.give(w, *bufs)
            raise
        return Assignment(w, a, b, c, r1cs.num_inputs)

    @staticmethod
    def on_device(
        system: R1CS | DeviceR1CS, witness: np.ndarray, pool: PinnedPool | None = None
    ) -> Assignment:
        """The witness only (into a page-locked array from ``pool`` if given); A.w, B.w, C.w are evaluated
        by the prover from ``system``: a DeviceR1CS already resident on the key's device, or an R1CS that
        the CUDA ProvingKey uploads once and keeps (``ProvingKey.device_r1cs``). The host does no SpMV."""
        w = check_witness(witness, system.num_inputs + system.num_aux)
        if pool is not None:
            buf = pool.take(w.shape, w.dtype)
            np.copyto(buf, w)
            w = buf
        empty = np.zeros((0, 8), dtype=np.uint32)
        return Assignment(w, empty, empty, empty, system.num_inputs, system)

    def release(self, pool: PinnedPool) -> None:
        """Give this assignment's arrays back to the pool they came from."""
        if self.system is not None:
            pool.give(self.witness)
        else:
            pool.give(self.witness, self.a, self.b, self.c)

    def pinned(self) -> Assignment:
        """The same assignment in page-locked host memory: the CUDA prover then uploads it with one DMA per
        array instead of through staging buffers (a synthesiser should write there directly)."""
        if self.system is not None:
            return Assignment(pinned_copy(self.witness), self.a, self.b, self.c, self.num_inputs, self.system)
        return Assignment(
            pinned_copy(self.witness), pinned_copy(self.a), pinned_copy(self.b), pinned_copy(self.c),
            self.num_inputs,
        )

    @property
    def inputs(self) -> np.ndarray:
        return self.witness[: self.num_inputs]

    @property
    def aux(self) -> np.ndarray:
        return self.witness[self.num_inputs :]


def bitrev_indices(logn: int) -> np.ndarray:
    """bitrev(p) for p in [0, 2^logn), int64."""
    p = np.arange(1 << logn, dtype=np.int64)
    out = np.zeros_like(p)
    for _ in range(logn):
        out = (out << 1) | (p & 1)
        p >>= 1
    return out


def permuted_h_bases(h: np.ndarray, logn: int) -> np.ndarray:
    """H bases in bit-reversed positions with the identity in the slot of index n - 1."""
    n = 1 << logn
    if h.shape[0] != n - 1:
        raise ValueError(f"H query has {h.shape[0]} points, domain 2^{logn} needs {n - 1}")
    rev = bitrev_indices(logn)
    out = np.zeros((n,) + h.shape[1:], dtype=np.uint32)
    ok = rev < n - 1
    out[ok] = h[rev[ok]]
    return out


# ------------------------------------------------------------------------------------------- quotient


def quotient_cpu(a: np.ndarray, b: np.ndarray, c: np.ndarray, logn: int) -> np.ndarray:
    """h's coefficients, canonical, in bit-reversed order (n, 8)."""
    n = 1 << logn
    abc = np.zeros((3, n, 8), dtype=np.uint32)
    for k, x in enumerate((a, b, c)):
        abc[k, : x.shape[0]] = x
    transform_cpu(abc, logn, plan(Order.NR), True, NO_SCALE, NO_SCALE)
    transform_cpu(abc, logn, plan(Order.RN), False, scale(logn, "coset_ninv"), NO_SCALE)
    zinv = fr_encode([pow(vanishing_on_coset(logn), R - 2, R)])
    h = fr_mul_batch(fr_sub_batch(fr_mul_batch(abc[0], abc[1]), abc[2]), zinv)
    h3 = h.reshape(1, n, 8)
    transform_cpu(h3, logn, plan(Order.NR), True, NO_SCALE, scale(logn, "inv_coset", canonical=True))
    return h


def upload_abc(a: np.ndarray, b: np.ndarray, c: np.ndarray, logn: int, staging: Staging | None = None) -> Any:
    """a, b, c into a zero-padded (3, n, 8) device array, through ``staging``'s pinned buffers (a fresh
    Staging if none is given)."""
    from numba import cuda

    n = 1 << logn
    st = staging or Staging()
    d = cuda.device_array((3, n, 8), dtype=np.uint32)
    for k, x in enumerate((a, b, c)):
        m = x.shape[0]
        st.upload(x, d[k, :m])
        if m < n:
            _zero_rows(d[k], m)
    return d


def h_step_device(d: Any, logn: int, dev: Device) -> Any:
    """The H step on a resident (3, n, 8) device array holding a, b, c (Montgomery, zero-padded): 3 iNTT +
    3 coset NTT + pointwise + 1 coset iNTT, no bit reversal; returns d[0] = h (canonical, bit-reversed)."""
    from numba import cuda

    from gpu.ntt import cuda as ncu

    transform_cuda(d, logn, plan(Order.NR), True, NO_SCALE, NO_SCALE, device=dev)
    transform_cuda(d, logn, plan(Order.RN), False, scale(logn, "coset_ninv"), NO_SCALE, device=dev)
    zinv = cuda.to_device(fr_encode([pow(vanishing_on_coset(logn), R - 2, R)]))
    ncu.h_pointwise(d[0], d[1], d[2], zinv)
    transform_cuda(
        d[0:1], logn, plan(Order.NR), True, NO_SCALE, scale(logn, "inv_coset", canonical=True), device=dev
    )
    return d[0]


def _zero_rows(d2: Any, start: int) -> None:
    from gpu.groth16 import cuda_kernels

    cuda_kernels.zero_rows(d2, start)


# ------------------------------------------------------------------------------------------- keys


class ProvingKey:
    """Parameters made ready for proving on one backend/device: bases resident (uploaded once for CUDA), the H
    bases permuted for the bit-reversed quotient, and the density that maps the witness onto the A/B
    queries."""

    def __init__(
        self,
        params: Parameters,
        density: Density,
        *,
        backend: Backend | str = Backend.cpu,
        device: Device | int | None = None,
        keep_host: bool = True,
        layout: Layout | None = None,
    ) -> None:
        """``layout`` (CUDA; ``gpu.groth16.plan.choose_layout``): where the bases live and how the MSMs are
        cut; None: the resident layout, one pass per MSM. A streamed layout keeps the host bases (page-locked
        where they lie) and uploads nothing of them."""
        from gpu.msm import MSMContext

        self.params = params
        self.layout = layout
        self.host_bases: dict[str, np.ndarray] | None = None
        kw = self._prepare(
            params.vk,
            density,
            params.domain_log,
            num_aux=params.l.shape[0],
            n_a=params.a.shape[0],
            n_b=(params.b_g1.shape[0], params.b_g2.shape[0]),
            backend=backend,
            device=device,
        )
        if self.device is not None and layout is not None and not layout.key_on_device:
            from gpu.transfer import pin_in_place

            with self.device.use():
                self.host_bases = {name: pin_in_place(arr) for name, _, arr in params.sections()}
            self.ctx = {}
            self._resident: tuple[R1CS, DeviceR1CS] | None = None
            return
        with self._loading():
            self.ctx = {
                "h": MSMContext(permuted_h_bases(params.h, self.logn), **kw),
                "l": MSMContext(params.l, **kw),
                "a": MSMContext(params.a, **kw),
                "b_g1": MSMContext(params.b_g1, **kw),
                "b_g2": MSMContext(params.b_g2, **kw),
            }
        if backend == "cuda" and not keep_host:
            self.params = None  # type: ignore[assignment]  # the bases live on the device now
        self._resident = None

    def _loading(self) -> Any:
        """The key's uploads as the ledger's phase "key" (its bytes are the layout's resident ones)."""
        from contextlib import nullcontext

        if self.device is None:
            return nullcontext()
        lay = self.layout
        planned = sum(lay.resident().values()) if lay is not None else 0
        return memory.ledger(self.device.index).phase("key", planned)

    @property
    def streamed(self) -> bool:
        """Whether the bases stay on the host and are streamed to the device as each MSM runs."""
        return self.host_bases is not None

    @classmethod
    def from_device_parameters(
        cls,
        dparams: DeviceParameters,
        density: Density,
        *,
        device: Device | int | None = None,
        layout: Layout | None = None,
    ) -> ProvingKey:
        """A CUDA key over bases already resident on ``device`` (``gpu.groth16.params_device.load_to_device``
        with ``h_bitrev=True``, on the same device): nothing is uploaded or permuted on the host and no host
        copy of the bases exists (``params`` is None; the vk is kept). The host constructor's checks are made
        here too (query sizes against the density, delta not the identity)."""
        from gpu.msm import MSMContext

        logn = dparams.domain_log
        if not dparams.h_bitrev:
            raise ValueError(
                "the H bases must be loaded in bit-reversed slots (load_to_device(..., h_bitrev=True))"
            )
        if dparams.h.shape[0] != 1 << logn:
            raise ValueError(f"H query has {dparams.h.shape[0]} slots, domain 2^{logn} needs {1 << logn}")
        if layout is not None and not layout.key_on_device:
            raise ValueError(f"bases on the device make a resident key, not {layout.name}")
        self = cls.__new__(cls)
        self.params = None  # type: ignore[assignment]  # the bases live on the device only
        self.layout = layout
        self.host_bases = None
        kw = self._prepare(
            dparams.vk,
            density,
            logn,
            num_aux=dparams.l.shape[0],
            n_a=dparams.a.shape[0],
            n_b=(dparams.b_g1.shape[0], dparams.b_g2.shape[0]),
            backend=Backend.cuda,
            device=device,
        )
        assert self.device is not None
        for name in MSM_NAMES:
            on = _device_index_of(getattr(dparams, name))
            if on is not None and on != self.device.index:
                raise ValueError(
                    f"the {name} bases live on device {on}, the key is for device {self.device.index}"
                )
        self.ctx = {name: MSMContext(getattr(dparams, name), **kw) for name in MSM_NAMES}
        self._resident = None
        return self

    def _prepare(
        self,
        vk: VerifyingKey,
        density: Density,
        logn: int,
        *,
        num_aux: int,
        n_a: int,
        n_b: tuple[int, int],
        backend: Backend | str,
        device: Device | int | None,
    ) -> dict[str, Any]:
        """What both constructors share: placement, the density's index maps, the size and delta checks and,
        for CUDA, the resident A/B gather indices and the pinned staging buffers; returns MSMContext's
        keywords."""
        self.vk = vk
        self.backend, self.device = place(backend, device)
        self.density = density
        self.num_inputs = vk.num_inputs
        self.num_aux = num_aux
        self.logn = logn
        self.a_aux_idx = np.flatnonzero(density.a_aux)
        self.b_inp_idx = np.flatnonzero(density.b_input)
        self.b_aux_idx = np.flatnonzero(density.b_aux)
        if density.a_aux.shape[0] != self.num_aux or density.b_input.shape[0] != self.num_inputs:
            raise ValueError("density does not match the parameters' variable counts")
        if n_a != self.num_inputs + self.a_aux_idx.shape[0]:
            raise ValueError(
                f"A query has {n_a} points, the density needs {self.num_inputs + self.a_aux_idx.shape[0]}"
            )
        nb = self.b_inp_idx.shape[0] + self.b_aux_idx.shape[0]
        if n_b[0] != nb or n_b[1] != nb:
            raise ValueError(f"B queries have {n_b[0]}/{n_b[1]} points, density needs {nb}")
        if not (self.vk.delta_g1.any() and self.vk.delta_g2.any()):
            raise ValueError("delta is the identity (subversion-CRS attack)")
        kw: dict[str, Any] = {"backend": backend, "device": self.device}
        if backend == "cuda":
            # witness positions of the A and B scalars, resident: per proof the witness is uploaded once and
            # the scalar vectors are gathered on the device
            from numba import cuda

            a_full = np.concatenate([np.arange(self.num_inputs), self.num_inputs + self.a_aux_idx]).astype(
                np.uint32
            )
            b_full = np.concatenate([self.b_inp_idx, self.num_inputs + self.b_aux_idx]).astype(np.uint32)
            assert self.device is not None
            self.staging = Staging()  # pinned buffers for a, b, c and the witness, reused by every proof
            from gpu.ntt.cuda import h_step_tables

            with self.device.use():
                self.d_a_idx = cuda.to_device(a_full)
                self.d_b_idx = cuda.to_device(b_full)
                h_step_tables(self.device, logn)  # resident from the start, as the plan counts them
        return kw

    @property
    def sizes(self) -> ProofSizes:
        """The counts the byte accounting reads (``gpu.groth16.plan``), from this key's density."""
        from gpu.groth16.plan import ProofSizes

        return ProofSizes(
            logn=self.logn,
            num_inputs=self.num_inputs,
            num_aux=self.num_aux,
            a_aux=int(self.a_aux_idx.shape[0]),
            b_input=int(self.b_inp_idx.shape[0]),
            b_aux=int(self.b_aux_idx.shape[0]),
        )

    def device_r1cs(self, r1cs: R1CS, t: dict[str, float] | None = None) -> DeviceR1CS:
        """``r1cs`` resident on this key's device, uploaded on first use and kept (one system per key: a
        different R1CS object replaces it); ``t['upload_r1cs']`` gets the upload's seconds when one ran."""
        from gpu.groth16.spmv_cuda import DeviceR1CS

        if self.backend != "cuda" or self.device is None:
            raise ValueError("device-resident matrices need a CUDA ProvingKey")
        if self._resident is None or self._resident[0] is not r1cs:
            self._resident = None  # free the old matrices before the new ones arrive
            t0 = time.perf_counter()
            self._resident = (r1cs, DeviceR1CS.upload(r1cs, self.device, self.staging))
            if t is not None:
                t["upload_r1cs"] = time.perf_counter() - t0
        return self._resident[1]

    def scalars(self, asg: Assignment) -> dict[str, np.ndarray]:
        """The scalar vector of each MSM except H."""
        inp, aux = asg.inputs, asg.aux
        if inp.shape[0] != self.num_inputs or aux.shape[0] != self.num_aux:
            raise ValueError(
                f"assignment has {inp.shape[0]} inputs / {aux.shape[0]} aux, key expects "
                f"{self.num_inputs} / {self.num_aux}"
            )
        b = np.concatenate([inp[self.b_inp_idx], aux[self.b_aux_idx]])
        return {"l": aux, "a": np.concatenate([inp, aux[self.a_aux_idx]]), "b_g1": b, "b_g2": b}


def _device_index_of(arr: Any) -> int | None:
    """The index of the device a numba device array was allocated on (None when unknown: the simulator)."""
    try:
        return int(arr.gpu_data.context.device.id)
    except AttributeError:
        return None


def _random_scalar() -> int:
    return secrets.randbelow(R)


def prove(
    pk: ProvingKey,
    assignments: Assignment | Sequence[Assignment],
    *,
    r: int | Sequence[int] | None = None,
    s: int | Sequence[int] | None = None,
    timings: list[dict[str, float]] | None = None,
    batch: bool = True,
    memory_bytes: int | None = None,
) -> list[Proof]:
    """Proofs for one or several assignments of the key's circuit shape. ``r``/``s`` (one int per circuit, or
    one for all) make it deterministic; otherwise each circuit gets fresh CSPRNG values. ``timings`` receives
    one dict of per-phase seconds per circuit. With the CUDA backend and several circuits, ``batch`` runs each
    MSM once for a group of circuits (``MSMContext.msm_batch``: one sort and one accumulation pass over the
    resident bases); the groups are as large as ``memory_bytes`` admits. ``memory_bytes``: the device bytes
    this call may hold beyond the key's resident ones (the agent's admission grant); one circuit at a time
    then runs under the cap resident + grant (``gpu.memory``: a phase planned past it is refused before it
    starts, naming it); None: the device's ledger keeps the cap its engine set, or none. In a batch, a
    circuit's MSM phases are the group's time divided by its size (key ``batch`` gives the size)."""
    asgs = [assignments] if isinstance(assignments, Assignment) else list(assignments)
    nc = len(asgs)
    rs = _per_circuit(r, nc)
    ss = _per_circuit(s, nc)
    ts: list[dict[str, float]] = [{} for _ in range(nc)]
    if pk.backend == "cuda":
        assert pk.device is not None
        with pk.device.use():
            if batch and nc > 1:
                res = []
                size = _group_size(pk, nc, memory_bytes)
                for lo in range(0, nc, size):
                    res += _msms_cuda_batch(pk, asgs[lo : lo + size], ts[lo : lo + size], memory_bytes)
            else:
                res = []
                for asg, t in zip(asgs, ts, strict=True):
                    with _capped(pk, asg, memory_bytes):
                        res.append(_msms_cuda(pk, asg, t))
    else:
        res = [_msms_cpu(pk, asg, t) for asg, t in zip(asgs, ts, strict=True)]
    proofs = []
    for k, t in enumerate(ts):
        t0 = time.perf_counter()
        proofs.append(_epilogue(pk, res[k], rs[k], ss[k]))
        t["epilogue"] = time.perf_counter() - t0
        t["total"] = sum(v for key, v in t.items() if key not in ("total", "batch") and "." not in key)
    if timings is not None:
        timings.extend(ts)
    return proofs


def _capped(pk: ProvingKey, asg: Assignment, memory_bytes: int | None) -> Any:
    """The ledger's cap for one circuit's proof: the layout's resident bytes plus the grant."""
    from contextlib import nullcontext

    if memory_bytes is None:
        return nullcontext()
    assert pk.device is not None
    resident = sum(_layout_for(pk, asg).resident().values())
    return memory.ledger(pk.device.index).capped(resident + memory_bytes)


def _per_circuit(v: int | Sequence[int] | None, nc: int) -> list[int]:
    if v is None:
        return [_random_scalar() for _ in range(nc)]
    if isinstance(v, int):
        return [v % R] * nc
    vals = [int(x) % R for x in v]
    if len(vals) != nc:
        raise ValueError(f"{len(vals)} randomisers for {nc} circuits")
    return vals


def _check_abc(pk: ProvingKey, asg: Assignment) -> None:
    n = 1 << pk.logn
    for name, x in (("a", asg.a), ("b", asg.b), ("c", asg.c)):
        if x.shape[0] > n or x.ndim != 2 or x.shape[1] != 8:
            raise ValueError(f"{name} has shape {x.shape}; the domain holds {n} rows of 8 limbs")


def _msms_cpu(pk: ProvingKey, asg: Assignment, t: dict[str, float]) -> dict[str, np.ndarray]:
    a, b, c = asg.a, asg.b, asg.c
    if asg.system is not None:
        if not isinstance(asg.system, R1CS):
            raise ValueError("an assignment over device-resident matrices needs the CUDA backend")
        t0 = time.perf_counter()
        a, b, c = asg.system.evaluate(asg.witness)
        t["evaluate"] = time.perf_counter() - t0
    _check_abc(pk, Assignment(asg.witness, a, b, c, asg.num_inputs))
    t0 = time.perf_counter()
    h = quotient_cpu(a, b, c, pk.logn)
    t["quotient"] = time.perf_counter() - t0
    out = {}
    for name, sc in [("h", h)] + list(pk.scalars(asg).items()):
        t0 = time.perf_counter()
        out[name] = pk.ctx[name].msm(np.ascontiguousarray(sc))
        t["msm_" + name] = time.perf_counter() - t0
    return out


def _upload_witness(pk: ProvingKey, w: np.ndarray, t: dict[str, float]) -> Any:
    """The witness on the device (canonical), once per proof: the device SpMV and the L/A/B scalars read
    it."""
    from numba import cuda

    t0 = time.perf_counter()
    d_w = cuda.device_array(w.shape, dtype=np.uint32)
    pk.staging.upload(w, d_w)
    cuda.synchronize()
    t["upload_witness"] = t.get("upload_witness", 0.0) + time.perf_counter() - t0
    return d_w


def _h_step(pk: ProvingKey, asg: Assignment, dr: DeviceR1CS | None, d_w: Any, t: dict[str, float]) -> Any:
    """h (canonical, bit-reversed, an (n, 8) device array) in two NTT buffers: a filled and taken to the
    coset, then b (multiplied into a), then c in b's place (a <- (a - c) / Z), then a back from the coset.
    A buffer is filled by the device SpMV (``dr`` at ``d_w``) or from the host's A.w, B.w, C.w. The same field
    operations as :func:`quotient_cpu`, so the same bits."""
    from numba import cuda

    from gpu.groth16.cuda_kernels import mul_into, sub_scale

    assert pk.device is not None
    dev: Device = pk.device
    logn = pk.logn
    n = 1 << logn
    fill_key = "spmv" if dr is not None else "upload_abc"
    t0 = time.perf_counter()
    filling = 0.0
    zinv = cuda.to_device(fr_encode([pow(vanishing_on_coset(logn), R - 2, R)]))

    def fill(buf: Any, k: int) -> None:
        nonlocal filling
        cuda.synchronize()
        t1 = time.perf_counter()
        if dr is not None:
            dr.evaluate_into(k, d_w, buf[0], logn)
        else:
            x = (asg.a, asg.b, asg.c)[k]
            pk.staging.upload(np.ascontiguousarray(x), buf[0, : x.shape[0]])
            _zero_rows(buf[0], x.shape[0])
        cuda.synchronize()
        filling += time.perf_counter() - t1

    def to_coset(buf: Any) -> None:
        transform_cuda(buf, logn, plan(Order.NR), True, NO_SCALE, NO_SCALE, device=dev)
        coset = scale(logn, "coset_ninv")
        transform_cuda(buf, logn, plan(Order.RN), False, coset, NO_SCALE, device=dev)

    a = cuda.device_array((1, n, 8), dtype=np.uint32)
    fill(a, 0)
    to_coset(a)
    b = cuda.device_array((1, n, 8), dtype=np.uint32)
    fill(b, 1)
    to_coset(b)
    mul_into(a[0], b[0])
    fill(b, 2)
    to_coset(b)
    sub_scale(a[0], b[0], zinv)
    del b
    transform_cuda(
        a, logn, plan(Order.NR), True, NO_SCALE, scale(logn, "inv_coset", canonical=True), device=pk.device
    )
    cuda.synchronize()
    t[fill_key] = t.get(fill_key, 0.0) + filling
    t["quotient"] = t.get("quotient", 0.0) + time.perf_counter() - t0 - filling
    return a[0]


MSM_NAMES = ("h", "l", "a", "b_g1", "b_g2")
MSM_STAGES = ("sort_ms", "accumulate_ms", "integrate_ms")


def _layout_for(pk: ProvingKey, asg: Assignment) -> Layout:
    """The key's layout, which must agree with where the assignment's A.w, B.w, C.w are computed; a key made
    without one (a direct prove() call, a test) proves in the resident layout, one pass per MSM."""
    from dataclasses import replace

    spmv = asg.system is not None
    lay = pk.layout
    if lay is None:
        return replace(Layout.resident_of(pk.sizes, device_spmv=spmv))
    if lay.device_spmv != spmv:
        raise ValueError(
            f"the key's layout ({lay.name}) computes A.w, B.w, C.w on the "
            f"{'device' if lay.device_spmv else 'host'}, this assignment on the "
            f"{'device' if spmv else 'host'}"
        )
    return lay


class _Phases:
    """The prover's side of the memory plan: each phase entered with the pending frees flushed, refused before
    it starts when its planned bytes pass the ledger's cap (``gpu.memory.BudgetExceeded`` naming it), and
    its measured peak recorded beside the planned bytes."""

    def __init__(self, pk: ProvingKey, lay: Layout) -> None:
        assert pk.device is not None
        self.ledger = memory.ledger(pk.device.index)
        self.planned = lay.phase_bytes()

    def __call__(self, name: str) -> Any:
        led = self.ledger
        planned = self.planned[name]
        memory.flush_frees()
        if led.cap is not None and planned > led.cap:
            raise memory.BudgetExceeded(
                f"device {led.index}: phase {name!r} is planned at {planned:,} bytes (key included); the "
                "budget "
                f"is {led.cap:,}",
                phase=name, need=planned, budget=led.cap, device=led.index,
            )
        return led.phase(name, planned)


def _msm_passes(
    pk: ProvingKey,
    name: str,
    m: int,
    step: int,
    scalars_of: Callable[[int, int], Any],
    t: dict[str, float],
) -> np.ndarray:
    """sum_i s_i B_i over the first m bases of MSM ``name`` in passes of ``step`` points (the layout's): each
    pass an MSM over a slice of the resident bases or over a chunk of the page-locked host bases copied into
    a ring of device buffers while the pass before it runs; ``scalars_of(lo, hi)`` gives a pass's scalars on
    the device. The passes' XYZZ sums are added on the host; the affine sum is returned."""
    from gpu.msm import MSMContext
    from gpu.transfer import BaseRing

    assert pk.device is not None
    group = G2 if name == "b_g2" else G1
    t0 = time.perf_counter()
    step = max(1, min(step, m))
    if pk.host_bases is not None:
        ring = BaseRing(pk.device.index, (step,) + group.affine_shape)
        spans: Any = ring.chunks(pk.host_bases[name][:m], step)
    else:
        bases = pk.ctx[name]._bases
        spans = ((lo, min(m, lo + step), bases[lo : min(m, lo + step)]) for lo in range(0, m, step))
    parts = []
    passes = 0
    for lo, hi, view in spans:
        stages: dict[str, float] = {}
        ctx = MSMContext(view, backend=Backend.cuda, device=pk.device)
        parts.append(ctx.msm_xyzz(scalars_of(lo, hi), timings=stages))
        passes += 1
        for key in MSM_STAGES:  # the MSM's own stages (CUDA events), summed over the passes
            if key in stages:
                t[f"msm_{name}.{key[:-3]}"] = t.get(f"msm_{name}.{key[:-3]}", 0.0) + stages[key] / 1e3
    total = group.xyzz_to_affine(group.sum_xyzz(np.concatenate(parts)))[0] if parts else _identity(group)
    t["msm_" + name] = time.perf_counter() - t0
    t[f"msm_{name}.passes"] = float(passes)
    return total


def _identity(group: Any) -> np.ndarray:
    return np.zeros(group.affine_shape, dtype=np.uint32)


def _msms_cuda(pk: ProvingKey, asg: Assignment, t: dict[str, float]) -> dict[str, np.ndarray]:
    """One circuit on the device, phase by phase as its layout plans (``gpu.groth16.plan.Layout.phases``):
    h_step (the witness first when the device SpMV reads it), msm_h (h, then freed), msm_l (the witness
    uploaded here when A.w, B.w, C.w came from the host), msm_a, msm_b_g1, msm_b_g2 (the A/B scalars gathered
    a pass at a time into one buffer)."""
    from numba import cuda

    from gpu.groth16.cuda_kernels import gather, gather_bitrev

    _check_abc(pk, asg)
    w = np.ascontiguousarray(asg.witness)
    if w.shape[0] != pk.num_inputs + pk.num_aux:
        raise ValueError(f"assignment has {w.shape[0]} variables, key expects {pk.num_inputs + pk.num_aux}")
    assert pk.device is not None
    lay = _layout_for(pk, asg)
    phase = _Phases(pk, lay)
    phase.ledger.reset_phases()
    cuda.synchronize()
    out: dict[str, np.ndarray] = {}
    d_w = None
    with phase("h_step"):
        dr = None
        if asg.system is not None:
            dr = _device_r1cs(pk, asg.system, w, t)
            d_w = _upload_witness(pk, w, t)
        d_h = _h_step(pk, asg, dr, d_w, t)
    n = 1 << pk.logn
    with phase("msm_h"):
        if pk.host_bases is None:  # bases in bit-reversed slots, as h is
            out["h"] = _msm_passes(pk, "h", n, lay.h_chunk, lambda lo, hi: d_h[lo:hi], t)
        else:  # bases in natural order: each pass's scalars gathered from h's bit-reversed positions
            buf = cuda.device_array((max(1, min(lay.h_chunk, n - 1)), 8), dtype=np.uint32)
            out["h"] = _msm_passes(
                pk, "h", n - 1, lay.h_chunk, lambda lo, hi: gather_bitrev(d_h, lo, hi, pk.logn, buf), t
            )
            del buf
        d_h = None  # h released: the lambdas above read it through the cell
    ni = pk.num_inputs
    with phase("msm_l"):
        if d_w is None:
            d_w = _upload_witness(pk, w, t)
        dw = d_w
        out["l"] = _msm_passes(pk, "l", pk.num_aux, lay.chunk, lambda lo, hi: dw[ni + lo : ni + hi], t)
    for name, idx, step in (
        ("a", pk.d_a_idx, lay.chunk),
        ("b_g1", pk.d_b_idx, lay.chunk),
        ("b_g2", pk.d_b_idx, lay.chunk_g2),
    ):
        with phase("msm_" + name):
            m = int(idx.shape[0])
            gbuf = cuda.device_array((max(1, min(step, m)), 8), dtype=np.uint32)

            def gathered(lo: int, hi: int, ix: Any = idx, g: Any = gbuf) -> Any:
                return gather(dw, ix[lo:hi], out=g)

            out[name] = _msm_passes(pk, name, m, step, gathered, t)
            del gbuf
    for name in phase.ledger.phases:
        fig = phase.ledger.phases[name]
        t[f"device.{name}.planned_gb"] = fig.planned / 1e9
        t[f"device.{name}.peak_gb"] = fig.peak / 1e9
    return out


def _device_r1cs(pk: ProvingKey, system: R1CS | DeviceR1CS, w: np.ndarray, t: dict[str, float]) -> DeviceR1CS:
    """The assignment's constraint system resident on the key's device (uploaded once per key), checked
    against the key and the witness."""
    assert pk.device is not None
    dr = pk.device_r1cs(system, t) if isinstance(system, R1CS) else system
    if dr.num_vars != w.shape[0] or dr.num_inputs != pk.num_inputs:
        raise ValueError(
            f"the device R1CS has {dr.num_inputs} / {dr.num_aux} variables, key expects "
            f"{pk.num_inputs} / {pk.num_aux}"
        )
    if dr.device is not None and dr.device.index != pk.device.index:
        raise ValueError(f"the device R1CS lives on device {dr.device.index}, the key on {pk.device.index}")
    return dr


def _device_scalars(pk: ProvingKey, asg: Assignment, t: dict[str, float]) -> dict[str, Any]:
    """A batch member's device scalar vectors: h (the two-buffer H step), the witness and its gathered A/B
    vectors, all held until the group's MSMs have run (the resident layout only)."""
    from numba import cuda

    from gpu.groth16.cuda_kernels import gather

    _check_abc(pk, asg)
    w = np.ascontiguousarray(asg.witness)
    if w.shape[0] != pk.num_inputs + pk.num_aux:
        raise ValueError(f"assignment has {w.shape[0]} variables, key expects {pk.num_inputs + pk.num_aux}")
    cuda.synchronize()
    dr = _device_r1cs(pk, asg.system, w, t) if asg.system is not None else None
    d_w = _upload_witness(pk, w, t)
    d_h = _h_step(pk, asg, dr, d_w, t)
    d_b = gather(d_w, pk.d_b_idx)
    return {"h": d_h, "l": d_w[pk.num_inputs :], "a": gather(d_w, pk.d_a_idx), "b_g1": d_b, "b_g2": d_b}


def _msms_cuda_batch(
    pk: ProvingKey,
    asgs: Sequence[Assignment],
    ts: Sequence[dict[str, float]],
    memory_bytes: int | None = None,
) -> list[dict[str, np.ndarray]]:
    """One group of circuits: per-circuit H steps and uploads, then each MSM once for all of them. With a
    grant (``memory_bytes``), the MSM passes get what the circuits' buffers leave of it (else what the
    device's budget leaves)."""
    from numba import cuda

    if pk.host_bases is not None:
        raise ValueError(f"batched MSMs need the bases resident; this key streams them ({pk.layout})")
    scalars = [_device_scalars(pk, asg, t) for asg, t in zip(asgs, ts, strict=True)]
    memory.flush_frees()
    outs: list[dict[str, np.ndarray]] = [{} for _ in asgs]
    k = len(asgs)
    for name in MSM_NAMES:
        t0 = time.perf_counter()
        stages: dict[str, float] = {}
        left = None if memory_bytes is None else max(0, memory_bytes - k * _batch_bytes(pk)[1])
        pts = pk.ctx[name].msm_batch([sc[name] for sc in scalars], timings=stages, max_bytes=left)
        cuda.synchronize()
        dt = time.perf_counter() - t0
        for i, t in enumerate(ts):
            outs[i][name] = pts[i]
            t["msm_" + name] = dt / k
            t["batch"] = float(k)
            for key in MSM_STAGES:
                if key in stages:
                    t[f"msm_{name}.{key[:-3]}"] = stages[key] / 1e3 / k
    return outs


def device_bytes(pk: ProvingKey, circuits: int = 1, *, device_spmv: bool = False) -> int:
    """Device bytes one prove() call of ``circuits`` circuits needs beyond the key's resident bytes: one
    circuit, its layout's largest phase (``gpu.groth16.plan.Layout.working``: what the agent reserves); a
    batch, the shared H-step buffers and each circuit's h, witness and A/B scalars (the MSM passes take what
    is left of the grant)."""
    from dataclasses import replace

    if circuits == 1:
        lay = pk.layout if pk.layout is not None else Layout.resident_of(pk.sizes, device_spmv=device_spmv)
        return replace(lay, device_spmv=device_spmv).working()
    shared, per = _batch_bytes(pk)
    return shared + circuits * per


def _batch_bytes(pk: ProvingKey) -> tuple[int, int]:
    from gpu.groth16.plan import batch_device_bytes

    return batch_device_bytes(pk.sizes)


def _group_size(pk: ProvingKey, nc: int, memory_bytes: int | None = None) -> int:
    """Circuits per batch: what fits in ``memory_bytes`` (None: what the device's budget leaves, all of them
    without one) next to the working buffers (see device_bytes)."""
    assert pk.device is not None
    led = memory.ledger(pk.device.index)
    free = memory_bytes if memory_bytes is not None else (None if led.cap is None else led.cap - led.live)
    if free is None:
        return nc
    working, per_circuit = _batch_bytes(pk)
    return max(1, min(nc, (free - working) // max(per_circuit, 1)))


def _epilogue(pk: ProvingKey, m: dict[str, np.ndarray], r: int, s: int) -> Proof:
    vk = pk.vk
    pts1 = np.concatenate([vk.delta_g1, m["a"][None], m["b_g1"][None], vk.delta_g1, vk.alpha_g1, vk.beta_g1])
    sc1 = fr_from_ints([r, s, r, r * s % R, s, r])
    p1 = G1.mul(pts1, sc1)  # r delta, s A', r B1', rs delta, s alpha, r beta
    a = G1.add(G1.add(vk.alpha_g1, p1[0:1]), m["a"][None])
    c = p1[1:2]
    for part in (p1[2:3], p1[3:4], p1[4:5], p1[5:6], m["h"][None], m["l"][None]):
        c = G1.add(c, part)
    sd2 = G2.mul(vk.delta_g2, fr_from_ints([s]))
    b = G2.add(G2.add(vk.beta_g2, sd2), m["b_g2"][None])
    return Proof(a, b, c)
