"""Bytes a Groth16 proof needs, by stage, from the circuit's sizes alone: the one formula set behind admission
(``prover.device_bytes``, the agent's resident and host accounting) and the memory plan that
``psagent bench e2e --plan`` prints before anything is allocated.

Why one module: a 32GiB partition's buffers are tens of GB each, so a plan that drifts from what admission
reserves is worse than none. Everything here is arithmetic on counts (no arrays), so a plan for a circuit
too large for this machine costs nothing to make.

Counts (``ProofSizes``): n = 2^logn (the domain), inputs (ONE included), aux, the A query (all inputs + the
aux with an A entry), the B queries (inputs and aux with a B entry), nnz and rows of the compact matrices.
Device, resident per key: the five bases (affine Montgomery: 96 bytes a G1 point, 192 a G2 point, H in n
slots), the A/B gather indices (uint32), and with the device SpMV the compact R1CS (``spmv_cuda``: row
pointers, uint32 columns, coefficient indices, the Montgomery table). Device, per proof: the H step's
(3, n, 8) buffer, the MSM's sorted entries (~12 windows x 8 bytes a scalar of the largest MSM, n), the
Montgomery scratch of the device SpMV (one Fr per variable), and per circuit h, the witness and the gathered
A/B scalars (32 bytes an element). Host, per partition in flight: the witness and, without the device SpMV,
A.w, B.w, C.w (32 bytes a row each).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gpu.groth16.r1cs import R1CS, CompactCSR

G1_AFFINE = 96  # 2 x 12 uint32 limbs
G2_AFFINE = 192
FR = 32  # 8 uint32 limbs
SORT_WINDOWS = 12  # sorted (bucket, index) entries per scalar of the largest MSM, 8 bytes each


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
    """Device bytes a CUDA proving key keeps for as long as it lives."""
    out = {
        "bases.h": G1_AFFINE * s.n,
        "bases.l": G1_AFFINE * s.num_aux,
        "bases.a": G1_AFFINE * s.n_a,
        "bases.b_g1": G1_AFFINE * s.n_b,
        "bases.b_g2": G2_AFFINE * s.n_b,
        "gather indices": 4 * (s.n_a + s.n_b),
    }
    if device_spmv:
        out["resident R1CS"] = resident_r1cs_bytes(s)
    return out


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


def proof_device_working_bytes(s: ProofSizes, *, device_spmv: bool = False) -> int:
    """One proof's shared device buffers, at their peak: first the H step's (3, n, 8) (with the device SpMV
    also the witness's Montgomery scratch), then h in its own array beside the largest MSM's sorted entries
    (the prover releases the H-step buffer before the MSMs)."""
    scratch = FR * s.num_vars if device_spmv else 0
    return max(3 * s.n * FR + scratch, s.n * FR + SORT_WINDOWS * 8 * s.n)


def proof_device_per_circuit_bytes(s: ProofSizes) -> int:
    """Per circuit of a prove() call: the witness and the gathered A and B scalar vectors (h is counted in
    the working buffers)."""
    return FR * (s.num_vars + s.n_a + s.n_b)


def batch_device_bytes(s: ProofSizes) -> tuple[int, int]:
    """(shared, per circuit) device bytes of a batch: every circuit of a group keeps its own h, and the MSMs'
    sort entries come on top of one H-step buffer at most."""
    return 3 * s.n * FR + SORT_WINDOWS * 8 * s.n, FR * (s.n + s.num_vars + s.n_a + s.n_b)


def proof_device_bytes(s: ProofSizes, circuits: int = 1, *, device_spmv: bool = False) -> int:
    """What a prove() call of ``circuits`` circuits needs on the device beyond the key (what the agent
    reserves before it hands the job over)."""
    if circuits == 1:
        return proof_device_working_bytes(s, device_spmv=device_spmv) + proof_device_per_circuit_bytes(s)
    shared, per = batch_device_bytes(s)
    return shared + FR * s.num_vars * device_spmv + circuits * per


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
    *,
    device_spmv: bool,
    cuda: bool = True,
    params_to_device: bool = True,
    partitions_in_flight: int = 2,
) -> list[Stage]:
    """Host and device bytes held after each stage of a proof on one device, cumulative where they stay
    (``partitions_in_flight``: the one proving plus the one synthesised ahead). The parameters stay on the
    host unless a CUDA engine decodes them onto its device (``params_to_device``); a host key also holds H
    permuted (a second copy of the H query)."""
    dev_key = key_device_bytes(s, device_spmv=device_spmv) if cuda else {}
    asg = assignment_host_bytes(s, device_spmv=device_spmv and cuda)
    out = [
        Stage("circuit (compact R1CS, host)", compact_r1cs_host_bytes(s), 0),
    ]
    if not (cuda and params_to_device):
        bases = key_device_bytes(s, device_spmv=False)
        host = sum(v for k, v in bases.items() if k.startswith("bases.")) + (0 if cuda else bases["bases.h"])
        out.append(Stage("parameters on the host", host, 0, "the .params points decoded" +
                         ("" if cuda else " + H permuted")))
    for name in ("bases.h", "bases.l", "bases.a", "bases.b_g1", "bases.b_g2", "gather indices"):
        if name in dev_key:
            out.append(Stage(f"key: {name}", 0, dev_key[name]))
    if "resident R1CS" in dev_key:
        out.append(Stage("key: resident R1CS (device SpMV)", 0, dev_key["resident R1CS"]))
    out.append(
        Stage(
            "assignments in flight", partitions_in_flight * asg, 0,
            f"{partitions_in_flight} x {asg:,} bytes (witness"
            + ("" if device_spmv and cuda else " + A.w, B.w, C.w") + ")",
        )
    )
    if cuda:
        out.append(Stage("NTT twiddles (cached per device)", 0, FR * (s.n // 2)))
        out.append(
            Stage("proof: working buffers (peak)", 0, proof_device_working_bytes(s, device_spmv=device_spmv),
                  "max(H step (3, n, 8)" + (" + SpMV scratch" if device_spmv else "")
                  + ", h + MSM sort entries)")
        )
        out.append(Stage("proof: witness, A/B scalars", 0, proof_device_per_circuit_bytes(s)))
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
