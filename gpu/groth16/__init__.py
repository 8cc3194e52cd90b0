"""Groth16 over BLS12-381: R1CS, witness assignment, prover, parameters, verifier and setup.

Only the proof's size lives here, so that callers that split or check proof bytes (the agent, the mock
market) can name it without loading the engine (importing this package loads no Numba code)."""

__all__ = ["PROOF_BYTES"]

PROOF_BYTES = 192
"""A Groth16 proof: A (G1 compressed, 48) ‖ B (G2 compressed, 96) ‖ C (G1 compressed, 48); a proof of several
partitions is their concatenation in partition order."""
