"""Device and host memory of a Groth16 proof, decided in one place: the layout (what is resident, how the
MSMs are cut into passes, where A.w, B.w, C.w are computed) and, for each phase of a proof, every buffer it
holds, from the circuit's counts alone.

Why one decider: a 32GiB partition's buffers are tens of GB each, and the first 32GiB run ran out of memory
with a plan that counted the largest MSM's sorted entries and not its buckets. Here the MSM's bytes come from
``gpu.msm.context`` (the formulas its pass allocates by), the NTT tables from the tables' sizes, and the
prover allocates exactly the buffers of its layout's phases (``gpu.memory``'s ledger checks each phase against
its planned bytes on every proof). Admission, ``doctor``, ``bench e2e --plan`` and the prover all read
:func:`choose_layout`; nothing else decides device memory.

Layouts (:data:`LAYOUTS`):
* ``resident``: the key's five bases on the device (affine Montgomery, H in bit-reversed slots); the H MSM in
  as many passes as the budget needs.
* ``stream24``: the bases in page-locked host memory (one copy per process), streamed through a ring of two
  device buffers as each MSM runs; the R1CS resident for the device SpMV.
* ``stream16``: as stream24 with A.w, B.w, C.w computed on the host (the R1CS does not fit beside the H step).
Every layout does the H step in two NTT buffers (a, then b, multiplied in; c, subtracted and divided by Z)
and gathers the A/B scalars a pass at a time, so no copy of the witness is held.

Counts (``ProofSizes``): n = 2^logn (the domain), inputs (ONE included), aux, the A query (all inputs + the
aux with an A entry), the B queries (inputs and aux with a B entry), nnz and rows of the compact matrices.
Not allocations, and so in no phase: the CUDA context and the kernels' local memory, which the default budget
leaves out by reading the free memory after every kernel has run once (:func:`overheads` names them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gpu.groth16.r1cs import R1CS, CompactCSR
from gpu.msm.context import msm_bound

G1_AFFINE = 96  # 2 x 12 uint32 limbs
G2_AFFINE = 192
FR = 32  # 8 uint32 limbs
G1_XYZZ = 192  # 4 x 12 limbs: the MSM's bucket and partial sums
G2_XYZZ = 384
RESIDENT, STREAM24, STREAM16 = "resident", "stream24", "stream16"
LAYOUTS = ("auto", RESIDENT, STREAM24, STREAM16)
RING_SLOTS = 2  # device buffers a streamed MSM copies bases into: one being read, one being filled
MIN_CHUNK = 1 << 12  # the smallest MSM pass a layout cuts (points)
LOCAL_BYTES_PER_THREAD = 3920  # the largest kernel stack frame: integrate_g2 (BENCHMARKS' kernel table)
RESIDENT_THREADS_PER_SM = 2048  # the driver reserves local memory for every thread an SM can hold


@dataclass(frozen=True)
class ProofSizes:
    """The counts the byte formulas read (``num_inputs`` includes ONE; ``rows`` = constraints + inputs)."""

    logn: int
    num_inputs: int
    num_aux: int
    a_aux: int  # aux variables with an A entry
    b_input: int  # inputs with a B entry
    b_aux: int  # aux variables with a B entry
    rows: int = 0
    matrices: tuple[tuple[int, int, int], ...] = ()  # per A, B, C: (nnz, coefficient index bytes, table rows)

    @property
    def n(self) -> int:
        return 1 << self.logn

    @property
    def n_a(self) -> int:
        return self.num_inputs + self.a_aux

    @property
    def n_b(self) -> int:
        return self.b_input + self.b_aux

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux

    @staticmethod
    def of_r1cs(r1cs: R1CS) -> ProofSizes:
        """The sizes of ``r1cs`` (density and matrices; a plain CSR counted as interned on upload: 4-byte
        indices and one table row per entry, an upper bound)."""
        d = r1cs.density()
        return ProofSizes(
            logn=r1cs.domain_log,
            num_inputs=r1cs.num_inputs,
            num_aux=r1cs.num_aux,
            a_aux=int(d.a_aux.sum()),
            b_input=int(d.b_input.sum()),
            b_aux=int(d.b_aux.sum()),
            rows=r1cs.num_constraints_total,
            matrices=matrix_sizes(r1cs),
        )

    @staticmethod
    def of_stats(
        stats: SizeStats, *, coeff_bytes: int = 2, table_rows: int = 0
    ) -> ProofSizes:
        """From circuit statistics (a PCE template's ``stats()``: no matrix materialised)."""
        rows = stats.num_constraints + stats.num_inputs
        return ProofSizes(
            logn=max(0, (rows - 1).bit_length()),
            num_inputs=stats.num_inputs,
            num_aux=stats.num_aux,
            a_aux=stats.a_aux,
            b_input=stats.b_input,
            b_aux=stats.b_aux,
            rows=rows,
            matrices=tuple((int(k), coeff_bytes, table_rows) for k in stats.nnz),
        )


def matrix_sizes(r1cs: R1CS) -> tuple[tuple[int, int, int], ...]:
    """(nnz, coefficient index bytes, table rows) of A, B, C; a plain CSR counted as interned on upload
    (4-byte indices, one table row per entry: an upper bound)."""
    out = []
    for mat in (r1cs.a, r1cs.b, r1cs.c):
        if isinstance(mat, CompactCSR):
            item = int(mat.coeff.dtype.itemsize) if mat.coeff.dtype.itemsize in (1, 2, 4) else 4
            out.append((int(mat.nnz), item, int(mat.table.shape[0])))
        else:
            out.append((int(mat.nnz), 4, int(mat.nnz)))
    return tuple(out)


class SizeStats(Protocol):
    """What ``ProofSizes.of_stats`` reads (porep.circuit.stacked.PartitionStats has it), read-only."""

    @property
    def num_constraints(self) -> int: ...
    @property
    def num_inputs(self) -> int: ...
    @property
    def num_aux(self) -> int: ...
    @property
    def nnz(self) -> tuple[int, int, int]: ...
    @property
    def a_aux(self) -> int: ...
    @property
    def b_input(self) -> int: ...
    @property
    def b_aux(self) -> int: ...


def key_device_bytes(s: ProofSizes, *, device_spmv: bool) -> dict[str, int]:
    """Device bytes a CUDA proving key of the ``resident`` layout keeps for as long as it lives."""
    return Layout.resident_of(s, device_spmv=device_spmv).resident()


def resident_r1cs_bytes(s: ProofSizes) -> int:
    """The compact A, B, C on the device (``spmv_cuda.DeviceR1CS``): per matrix row pointers (uint32, int64
    from 2^32 entries), uint32 columns, coefficient indices and the Montgomery table, each at least one
    element."""
    rows = s.rows - s.num_inputs  # the circuit's own rows: the input rows are written by a kernel
    total = 0
    for nnz, item, table in s.matrices:
        ptr = 4 if nnz < 1 << 32 else 8
        total += max(rows + 1, 1) * ptr + max(nnz, 1) * (4 + item) + max(table, 1) * FR
    return total


def ntt_table_bytes(logn: int) -> int:
    """The H step's device tables (``gpu.ntt.cuda``'s per-device cache): the twiddles (n/2 Fr), the empty
    scale (three one-row tables) and the two-level g^i/n and g^-i/n tables (const, 2^L and 2^(logn-L)
    rows)."""
    tw = FR * max(1, (1 << logn) >> 1)
    none = 3 * FR
    lbits = (logn + 1) // 2
    two_level = FR * (1 + (1 << lbits) + max(1, 1 << (logn - lbits)))
    return tw + none + (2 * two_level if logn else 0)


def proof_device_per_circuit_bytes(s: ProofSizes) -> int:
    """Per circuit of a batched prove() call: h, the witness and the gathered A and B scalar vectors."""
    return FR * (s.n + s.num_vars + s.n_a + s.n_b)


def batch_device_bytes(s: ProofSizes) -> tuple[int, int]:
    """(shared, per circuit) device bytes of a batch (the ``resident`` layout only): the H step's two buffers
    and Z's inverse while each circuit's h is made, and per circuit h, the witness and its A/B scalars (the
    MSM passes get what the grant leaves)."""
    return 2 * s.n * FR + FR, proof_device_per_circuit_bytes(s)


@dataclass(frozen=True)
class Phase:
    """One phase of a proof: its name (the prover's, the ledger's) and the buffers it holds at its peak."""

    name: str
    buffers: dict[str, int]

    @property
    def bytes(self) -> int:
        return sum(self.buffers.values())


@dataclass(frozen=True)
class Layout:
    """Where a proof's bytes live (see the module docstring). ``h_chunk``: points of one H MSM pass;
    ``chunk``: points of one L / A / B_G1 pass (B_G2: half as many, the same bytes)."""

    name: str
    sizes: ProofSizes
    key_on_device: bool
    device_spmv: bool
    h_chunk: int
    chunk: int

    @staticmethod
    def resident_of(s: ProofSizes, *, device_spmv: bool) -> Layout:
        """The resident layout with one pass per MSM."""
        return Layout(RESIDENT, s, True, device_spmv, s.n, max(s.num_aux, s.n_a, s.n_b, 1))

    @property
    def chunk_g2(self) -> int:
        return max(1, self.chunk // 2)

    def resident(self) -> dict[str, int]:
        """Device bytes the key keeps for as long as it lives (charged once per key)."""
        s = self.sizes
        out: dict[str, int] = {}
        if self.key_on_device:
            out |= {
                "bases.h": G1_AFFINE * s.n,
                "bases.l": G1_AFFINE * s.num_aux,
                "bases.a": G1_AFFINE * s.n_a,
                "bases.b_g1": G1_AFFINE * s.n_b,
                "bases.b_g2": G2_AFFINE * s.n_b,
            }
        out["gather indices"] = 4 * (s.n_a + s.n_b)
        if self.device_spmv:
            out["resident R1CS"] = resident_r1cs_bytes(s)
        out["NTT tables"] = ntt_table_bytes(s.logn)
        return out

    def _msm(self, m: int, chunk: int, point: int, xyzz: int, *, gather: bool) -> dict[str, int]:
        """The buffers of one MSM over m bases in passes of ``chunk``: the pass, the gathered scalars of a
        pass (A, B) and, streamed, the ring the bases arrive in."""
        p = max(1, min(chunk, m))
        out = {"MSM pass": msm_bound(p, xyzz)}
        if gather:
            out["gathered scalars"] = FR * p
        if not self.key_on_device:
            out["bases ring"] = RING_SLOTS * point * p
        return out

    def phases(self) -> list[Phase]:
        """The proof's phases in order, each with the buffers it holds (the resident bytes not included)."""
        s = self.sizes
        w = {"witness": FR * s.num_vars}
        early = w if self.device_spmv else {}  # the device SpMV reads the witness; else it comes after H
        ntt = {"NTT buffer a": FR * s.n, "NTT buffer b": FR * s.n, "Z inverse": FR}
        h = {"h": FR * s.n}
        h_points = s.n if self.key_on_device else s.n - 1  # streamed: the file's n - 1 points, natural order
        msm_h = self._msm(h_points, self.h_chunk, G1_AFFINE, G1_XYZZ, gather=False)
        if not self.key_on_device:
            msm_h["bit-reversed scalars"] = FR * max(1, min(self.h_chunk, s.n - 1))
        return [
            Phase("h_step", early | ntt),
            Phase("msm_h", early | h | msm_h),
            Phase("msm_l", w | self._msm(s.num_aux, self.chunk, G1_AFFINE, G1_XYZZ, gather=False)),
            Phase("msm_a", w | self._msm(s.n_a, self.chunk, G1_AFFINE, G1_XYZZ, gather=True)),
            Phase("msm_b_g1", w | self._msm(s.n_b, self.chunk, G1_AFFINE, G1_XYZZ, gather=True)),
            Phase("msm_b_g2", w | self._msm(s.n_b, self.chunk_g2, G2_AFFINE, G2_XYZZ, gather=True)),
        ]

    def working(self) -> int:
        """A proof's device bytes beyond the resident ones, at its largest phase (what a job reserves)."""
        return max(p.bytes for p in self.phases())

    def peak(self) -> int:
        """Resident plus working: the most device bytes the engine holds while it proves."""
        return sum(self.resident().values()) + self.working()

    def phase_bytes(self) -> dict[str, int]:
        """Each phase's planned device bytes, resident included (what the ledger's measured peaks are set
        beside)."""
        base = sum(self.resident().values())
        return {p.name: base + p.bytes for p in self.phases()}

    def host_bytes(self) -> dict[str, int]:
        """Host bytes the layout keeps per process beyond the circuit: the page-locked bases when streamed."""
        if self.key_on_device:
            return {}
        s = self.sizes
        g1 = (s.n - 1) + s.num_aux + s.n_a + s.n_b
        return {"bases (page-locked)": G1_AFFINE * g1 + G2_AFFINE * s.n_b}

    def describe(self) -> str:
        """One line: the layout and how it cuts the MSMs."""
        where = "on the device" if self.key_on_device else "streamed from page-locked host memory"
        spmv = "on the device" if self.device_spmv else "on the host"
        return (
            f"layout {self.name}: bases {where}, A.w/B.w/C.w {spmv}, H MSM in passes of {self.h_chunk:,} "
            f"points, L/A/B in passes of {self.chunk:,}"
        )


class LayoutError(ValueError):
    """No layout of the kind asked for fits the budget; ``need``: the smallest peak that would have."""

    def __init__(self, message: str, need: int) -> None:
        super().__init__(message)
        self.need = need


def _chunks(top: int) -> list[int]:
    """Pass sizes to try, largest first: ``top``, then powers of two below it down to MIN_CHUNK."""
    out = [max(1, top)]
    p = 1 << max(0, (top - 1).bit_length() - 1)
    while p >= MIN_CHUNK:
        if p < out[-1]:
            out.append(p)
        p >>= 1
    return out


def candidates(s: ProofSizes, name: str, *, device_spmv: bool) -> list[Layout]:
    """Every layout of kind ``name`` worth trying, best first: the largest H passes, then the largest
    L/A/B passes (the H MSM's passes cost the most time to cut)."""
    on_device = name == RESIDENT
    spmv = device_spmv and name != STREAM16
    biggest = max(s.num_aux, s.n_a, s.n_b, 1)
    h_top = s.n if on_device else max(1, s.n - 1)
    return [
        Layout(name, s, on_device, spmv, h, c)
        for h in _chunks(h_top)
        for c in _chunks(biggest)
    ]


def choose_layout(s: ProofSizes, budget: int | None, *, device_spmv: bool, force: str = "auto") -> Layout:
    """The layout of a proof of ``s`` under ``budget`` device bytes (key included; None: no limit, the
    resident layout in one pass each): ``force`` one of :data:`LAYOUTS` (``auto``: resident if it fits, else
    stream24, else stream16). LayoutError when nothing of that kind fits."""
    if force not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {force!r}")
    kinds = [RESIDENT, STREAM24, STREAM16] if force == "auto" else [force]
    if budget is None:
        return candidates(s, kinds[0], device_spmv=device_spmv)[0]
    smallest = None
    for kind in kinds:
        for lay in candidates(s, kind, device_spmv=device_spmv):
            peak = lay.peak()
            if peak <= budget:
                return lay
            smallest = peak if smallest is None else min(smallest, peak)
    assert smallest is not None
    gb = 1e9
    raise LayoutError(
        f"no {'layout' if force == 'auto' else force + ' layout'} fits {budget / gb:.2f} GB of device "
        "memory: "
        f"the smallest needs {smallest / gb:.2f} GB",
        smallest,
    )


def smallest_layout(s: ProofSizes, *, device_spmv: bool) -> Layout:
    """The layout with the smallest device peak (a streamed one in its smallest passes): what the smallest
    card that can prove ``s`` needs."""
    return min(
        (
            lay
            for kind in (RESIDENT, STREAM24, STREAM16)
            for lay in candidates(s, kind, device_spmv=device_spmv)
        ),
        key=lambda lay: lay.peak(),
    )


@dataclass(frozen=True)
class Overheads:
    """Device memory outside every allocation: the CUDA context and the kernels' local memory (reserved at a
    kernel's first launch for every thread the device can hold, and kept)."""

    context: int
    local: int

    @property
    def total(self) -> int:
        return self.context + self.local


def overheads(sms: int = 132, *, context: int = 600_000_000) -> Overheads:
    """The figures for a device of ``sms`` multiprocessors (default: an H100 / H200); ``context``: the
    primary context's own memory (~0.5-0.6 GB measured on Hopper)."""
    return Overheads(context, LOCAL_BYTES_PER_THREAD * RESIDENT_THREADS_PER_SM * sms)


def assignment_host_bytes(s: ProofSizes, *, device_spmv: bool) -> int:
    """Host bytes one partition's assignment holds until it is proven: the witness and, unless A.w, B.w, C.w
    are evaluated on the device, those three vectors."""
    return FR * (s.num_vars + (0 if device_spmv else 3 * s.rows))


def compact_r1cs_host_bytes(s: ProofSizes) -> int:
    """The compact matrices on the host (int64 row pointers, uint32 columns, coefficient indices, one
    table)."""
    rows = s.rows - s.num_inputs
    table = max((t for _, _, t in s.matrices), default=0)  # the PCE's matrices share one table
    return sum(8 * (rows + 1) + nnz * (4 + item) for nnz, item, _ in s.matrices) + table * FR


@dataclass(frozen=True)
class Stage:
    name: str
    host: int
    device: int
    note: str = ""


def memory_plan(
    s: ProofSizes,
    layout: Layout | None,
    *,
    params_to_device: bool = True,
    partitions_in_flight: int = 2,
) -> list[Stage]:
    """Host and device bytes of a proof, by item (``layout`` None: the CPU backend): the circuit, the
    parameters where they live, the assignments in flight (``partitions_in_flight``: the one proving plus the
    one synthesised ahead), the key's resident device bytes and the largest phase's working bytes. Device
    bytes summed over the stages are the layout's peak."""
    out = [Stage("circuit (compact R1CS, host)", compact_r1cs_host_bytes(s), 0)]
    g1_points = (s.n - 1) + s.num_aux + s.n_a + s.n_b
    bases = G1_AFFINE * g1_points + G2_AFFINE * s.n_b
    if layout is None:
        out.append(Stage("parameters on the host", bases + G1_AFFINE * s.n, 0,
                         "the .params points decoded + H permuted"))
    elif not layout.key_on_device:
        out.append(Stage("parameters, page-locked (streamed)", bases, 0, "one copy per process"))
    elif not params_to_device:
        out.append(Stage("parameters on the host", bases, 0, "the .params points decoded"))
    spmv = layout is not None and layout.device_spmv
    asg = assignment_host_bytes(s, device_spmv=spmv)
    out.append(
        Stage(
            "assignments in flight", partitions_in_flight * asg, 0,
            f"{partitions_in_flight} x {asg:,} bytes (witness" + ("" if spmv else " + A.w, B.w, C.w") + ")",
        )
    )
    if layout is None:
        return out
    for name, nbytes in layout.resident().items():
        out.append(Stage(f"key: {name}", 0, nbytes))
    top = max(layout.phases(), key=lambda p: p.bytes)
    parts = ", ".join(f"{k} {v / 1e9:.2f}" for k, v in top.buffers.items())
    out.append(Stage(f"proof: phase {top.name} (the largest)", 0, top.bytes, parts + " GB"))
    return out


def plan_totals(stages: list[Stage]) -> tuple[int, int]:
    """(host bytes, device bytes) at the peak: every stage's bytes held at once."""
    return sum(st.host for st in stages), sum(st.device for st in stages)


def params_file_bytes(s: ProofSizes) -> int:
    """The size of the circuit's bellperson .params file: the vk (alpha, beta, delta in G1; beta, gamma, delta
    in G2; one IC point per input) and the five sections, each with its u32 length, uncompressed points."""
    vk = 3 * G1_AFFINE + 3 * G2_AFFINE + 4 + G1_AFFINE * s.num_inputs
    g1_points = (s.n - 1) + s.num_aux + s.n_a + s.n_b
    return vk + 5 * 4 + G1_AFFINE * g1_points + G2_AFFINE * s.n_b
