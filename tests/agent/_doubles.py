"""Doubles for the agent's tests: a prover that marks its partition proofs and a checker that reads the
mark. They stand in for the Groth16 prover and the pairing check where a test is about the pipeline's logic;
the real ones run in the end-to-end tests."""

from __future__ import annotations

import secrets

from agent.pipeline import VerifyReport
from market.proofdata import ProofData, SectorID
from porep.c1 import KeyOrder
from porep.ids import prover_id
from porep.seal import seal
from porep.vanilla import make_c1


def make_work_bytes(miner: int = 1000, sector: int = 1) -> bytes:
    """A real ProofData carrying the C1 of a freshly sealed 2KiB sector (Go key order, as Curio sends it)."""
    sealed = seal(
        "StackedDrg2KiBV1_1", prover_id(miner), sector, bytes([7]) * 32, piece=bytes(range(256)) * 7
    )
    c1 = make_c1(sealed, bytes([9]) * 32)
    return ProofData.encode(SectorID(miner, sector), porep=c1.to_json(KeyOrder.GO))


class FakeProver:
    """Returns 192 bytes per partition; ``corrupt`` flips a byte of that partition's proof."""

    def __init__(self, corrupt: int | None = None, fail: int = 0) -> None:
        self.corrupt = corrupt
        self.fail = fail
        self.job_ids: list[str] = []

    def prove(self, work: ProofData, job_id: str) -> bytes:
        self.job_ids.append(job_id)
        if self.fail:
            self.fail -= 1
            raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
        assert work.porep is not None
        parts = [
            bytearray(secrets.token_bytes(1) * 192) for _ in range(work.porep.arrays.proof_type.partitions)
        ]
        for p in parts:
            p[0] = 0xA5  # the checker double's "valid" mark
        if self.corrupt is not None:
            parts[self.corrupt][0] ^= 0xFF
        return b"".join(parts)


class MarkChecker:
    """Checker double: a partition 'verifies' iff it carries the prover double's mark."""

    def verify(self, work: ProofData, proof: bytes) -> VerifyReport:
        return VerifyReport(tuple(proof[i] == 0xA5 for i in range(0, len(proof), 192)))


class ReferenceEngine:
    """The pipeline's Groth16 engine on gpu.groth16.reference (Python integers + pyblst: real proofs of tiny
    circuits in milliseconds, without compiling the engine's kernels). Records what the pipeline hands it."""

    backend = "reference"

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
    ``inputs_of(c1)[k]`` (the real request's, for a real C1), its one aux value is 9 + k."""

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
