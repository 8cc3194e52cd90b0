"""The arithmetic base layer: BLS12-381 field arithmetic and the Numba plumbing it runs on, and nothing of the
proving engine (no curves, MSM, NTT or Groth16). It is what ``porep`` (Poseidon, ChaCha, the SDR graph, the
sealer's field batches) shares with the engine, so it is named and kept at the bottom.

  gpu.arith.cudashim        CPU / CUDA / simulator differences (``jitable``, ``kernel``, ``dispatching``)
  gpu.arith.cpupool         the CPU thread pool for host-side batch work (``parallel_for``, ``cpu_threads``)
  gpu.arith.montgomery_ptx  the Fq/Fr Montgomery product as inline PTX carry chains (CUDA only)
  gpu.arith._generated      straight-line limb code made by gpu/codegen.py (committed; a test checks it)
  gpu.arith.fields          Fr, Fq, Fq2: the stable public face of the above
"""
