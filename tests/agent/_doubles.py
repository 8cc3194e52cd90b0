"""Doubles for the agent's tests: a prover that marks its partition proofs and gives a verdict from the mark,
a Groth16 engine on the reference implementation, and a toy circuit. They stand in for the compiled prover
where a test is about the agent's logic; the real ones run in the end-to-end tests."""

from __future__ import annotations

import secrets

from agent.proving.prover import Proven
from agent.proving.verifier import VerifyReport
from agent.proving.work import Work
from market.proofdata import ProofData, SectorID
from porep.c1 import KeyOrder
from porep.ids import prover_id
from porep.sdr.seal import seal
from porep.sdr.vanilla import make_c1


def make_work_bytes(miner: int = 1000, sector: int = 1) -> bytes:
    """A real ProofData carrying the C1 of a freshly sealed 2KiB sector (Go key order, as Curio sends it)."""
    sealed = seal(
        "StackedDrg2KiBV1_1", prover_id(miner), sector, bytes([7]) * 32, piece=bytes(range(256)) * 7
    )
    c1 = make_c1(sealed, bytes([9]) * 32)
    return ProofData.encode(SectorID(miner, sector), porep=c1.to_json(KeyOrder.GO))


MARK = 0xA5  # a partition proof "verifies" iff its first byte is the mark


def mark_report(proof: bytes) -> VerifyReport:
    """The verdict on the prover double's proofs: partition k verified iff it carries the mark."""
    return VerifyReport(tuple(proof[i] == MARK for i in range(0, len(proof), 192)))


class FakeProver:
    """Returns 192 bytes per partition and the verdict read from their marks; ``corrupt`` unmarks that
    partition's proof, ``fail`` makes the next calls raise."""

    def __init__(self, corrupt: int | None = None, fail: int = 0) -> None:
        self.corrupt = corrupt
        self.fail = fail
        self.job_ids: list[str] = []
        self.works: list[Work] = []

    async def prove(self, work: Work, job_id: str) -> Proven:
        self.job_ids.append(job_id)
        self.works.append(work)
        if self.fail:
            self.fail -= 1
            raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
        parts = [bytearray(secrets.token_bytes(1) * 192) for _ in range(work.partitions)]
        for p in parts:
            p[0] = MARK
        if self.corrupt is not None:
            parts[self.corrupt][0] ^= 0xFF
        proof = b"".join(parts)
        return Proven(proof, mark_report(proof))


class ReferenceEngine:
    """The pipeline's Groth16 engine on gpu.groth16.reference (Python integers + pyblst: real proofs of tiny
    circuits in milliseconds, without compiling the engine's kernels). Records what the pipeline hands it."""

    backend = "reference"
    device = None
    params_to_device = False

    def __init__(self, device_bytes: int = 1000, delay_s: float = 0.0, corrupt: bool = False) -> None:
        """``corrupt``: flip a bit of every proof (a faulty device)."""
        import threading

        self.corrupt = corrupt
        self.nbytes = device_bytes
        self.delay_s = delay_s
        self.memory: list[int | None] = []
        self.released = 0
        self.assigned = 0
        self.keys = 0
        self.log: list[str] = []
        self._lock = threading.Lock()

    def key(self, params: object, r1cs: object) -> tuple[object, object]:
        self.keys += 1
        return params, r1cs

    def device_bytes(self, key: object) -> int:
        return self.nbytes

    def resident_bytes(self, key: object, r1cs: object) -> int:
        return 0

    def host_bytes(self, r1cs: object) -> int:
        from agent.proving.engine import assignment_host_bytes

        return assignment_host_bytes(r1cs)  # type: ignore[arg-type]

    def load_params(self, path: object) -> object:
        raise AssertionError("the reference engine reads parameters on the host")

    def assign(self, r1cs: object, witness: object) -> list[int]:
        from gpu.arith.fields import fr_to_ints

        with self._lock:
            self.assigned += 1
        return list(fr_to_ints(witness))

    def release(self, asg: object) -> None:
        with self._lock:
            self.released += 1

    def prove(self, key: tuple, asg: list[int], *, memory_bytes: int | None, timings: dict) -> bytes:
        import time

        from gpu.groth16 import reference

        with self._lock:
            self.memory.append(memory_bytes)
        t0 = time.perf_counter()
        if self.delay_s:
            time.sleep(self.delay_s)
        proof = reference.prove(key[0], key[1], asg, r=secrets.randbelow(2**200), s=secrets.randbelow(2**200))
        timings["msm_h"] = time.perf_counter() - t0
        if self.corrupt:
            proof = proof[:100] + bytes([proof[100] ^ 1]) + proof[101:]
        return proof

    def device_used(self) -> None:
        return None


def toy_r1cs(n_inputs: int) -> object:
    """x_i · ONE = x_i for every input, and one auxiliary y · ONE = y."""
    from gpu.groth16.r1cs import CSR, R1CS

    rows = [[(i, 1)] for i in range(1, n_inputs + 2)]
    one = [[(0, 1)] for _ in rows]
    return R1CS(n_inputs + 1, 1, CSR.from_rows(rows), CSR.from_rows(one), CSR.from_rows(rows))


def toy_sample() -> tuple[object, object, list[int]]:
    """A self-test sample on the toy circuit: (R1CS, full assignment, public inputs)."""
    from gpu.arith.fields import fr_from_ints

    xs = [secrets.randbelow(2**250), 5]
    return toy_r1cs(2), fr_from_ints([1, *xs, 9]), xs


class ToyCircuit:
    """The pipeline's circuit seam answered by the toy circuit: partition k's public inputs come from
    ``inputs_of(item)[k]`` (the item: a C1, or a Snap request's UpdateWork), its one aux value is 9 + k."""

    def __init__(self, n_inputs: int, inputs_of: object, delay_s: float = 0.0) -> None:
        self.n_inputs = n_inputs
        self.inputs_of = inputs_of
        self.delay_s = delay_s
        self.r1cs_calls = 0
        self.log: list[str] = []

    def r1cs(self, pt: object) -> object:
        self.r1cs_calls += 1
        return toy_r1cs(self.n_inputs)

    def assignment(self, c1: object, k: int) -> object:
        import time

        from gpu.arith.fields import fr_from_ints

        self.log.append(f"synth {k}")
        if self.delay_s:
            time.sleep(self.delay_s)
        xs = self.inputs_of(c1)[k]  # type: ignore[operator]
        return fr_from_ints([1, *xs, 9 + k])


def toy_circuits(circuit: ToyCircuit, update: ToyCircuit | None = None) -> object:
    """The pipeline's circuits with the toy one for PoRep work (and ``update`` for Snap work)."""
    from agent.proving.pipeline import Circuits

    return Circuits(circuit, update or ToyCircuit(circuit.n_inputs, circuit.inputs_of))  # type: ignore[arg-type]


def toy_work(partitions: int, inputs: list[list[int]] | None = None) -> Work:
    """A Work of a toy proof type ("Toy", parameter stem "toy") whose public inputs are ``inputs`` (default:
    random first input, 11 + k second); its C1 is a stand-in the toy circuit reads the inputs from."""
    from types import SimpleNamespace

    from agent.proving.work import InputFormat, WorkKind

    pt = SimpleNamespace(name="Toy", param_stem="toy", partitions=partitions, size_label="toy")
    xs = inputs if inputs is not None else [[secrets.randbelow(2**250), 11 + k] for k in range(partitions)]
    c1 = SimpleNamespace(proof_type=pt, xs=xs)
    return Work(
        WorkKind.POREP, pt, c1, None, tuple(tuple(v) for v in xs), b"", InputFormat.C1, None, None  # type: ignore[arg-type]
    )


def throwaway_key_file(directory: object) -> object:
    """A new wallet's key file (0600, in a 0700 directory below ``directory``): what `run` and `status`
    need before they look at anything else."""
    from pathlib import Path

    from market.wallet import Wallet, write_key_file

    key = Path(str(directory)) / "keys" / "wallet.key"
    if not key.exists():
        key.parent.mkdir(mode=0o700, parents=True)
        write_key_file(key, Wallet.generate())
    return key
