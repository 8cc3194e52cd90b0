"""A generic Groth16 engine over BLS12-381 (fields, curves, NTT, MSM, R1CS, prover, parameters, verifier)
with CPU (Numba njit) and CUDA (Numba CUDA) backends. Knows nothing of Filecoin and imports nothing of ours.

Layers, bottom first; a module imports only from its own part and from lower layers, never a sibling or
anything above (tests/test_import_direction.py checks it module by module):
  0  gpu.placement  the Backend enum (cpu / cuda / auto) and GpuError, the one CUDA failure type; imports
                    nothing (re-exported here as gpu.Backend, gpu.GpuError)
     gpu.options    EngineOptions: every engine switch as one value (device SpMV, parameters to the device,
                    the PTX product, CPU threads), set by the caller, never read from the environment
     gpu.arith      the arithmetic base: cudashim (CPU / CUDA / simulator differences: ``jitable``,
                    ``kernel``), cpupool (host thread pool), montgomery_ptx (inline-PTX Montgomery product,
                    CUDA only, EngineOptions.ptx), _generated (limb code), fields (Fr, Fq, Fq2).
                    The only part of gpu that porep may import.
  1  gpu.curves     G1/G2 affine, Jacobian and XYZZ formulas, batch normalisation, zcash bytes, pyblst interop
     gpu.device     explicit device objects with one lock each (nothing read at import; listing enters no
                    context); ``resolve_backend`` decides ``auto``; Device.use() turns CUDA failures into
                    GpuError. The engine takes cpu or cuda plus, for CUDA, a named device: no default device
     gpu.transfer   pinned host buffers and chunked host → device copies
  2  gpu.ntt        radix-2 NTT over Fr (CPU and CUDA), twiddle tables, the Groth16 H-step kernels
     gpu.msm        Pippenger MSM (Groth16 split) with CPU and CUDA backends, resident bases (MSMContext)
  3  gpu.groth16    R1CS, witness assignment, prover, parameters, verifier, setup, the reference prover
                    (porep's circuit package may import its R1CS and prover)
  4  gpu.bench      measurements behind ``psagent bench`` and benchmarks/
gpu/codegen.py is a build tool outside the stack: it writes gpu/arith/_generated/ and gpu/curves/_generated/
(committed; tests check that regenerating changes nothing) and imports nothing of the engine.
"""

from gpu.placement import Backend, GpuError

__all__ = ["Backend", "GpuError"]
