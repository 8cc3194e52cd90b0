"""A generic Groth16 engine over BLS12-381 (fields, curves, NTT, MSM, R1CS, prover, parameters, verifier)
with CPU (Numba njit) and CUDA (Numba CUDA) backends. Knows nothing of Filecoin and imports nothing of ours.
"""
