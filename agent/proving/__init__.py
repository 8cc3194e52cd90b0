"""The agent's proving wing: one way from input bytes to a verified proof, for every path that proves.

  kind        :class:`WorkKind` — PoRep, SnapDeals, WinningPoSt or WindowPoSt, told apart in one place (for a
              request and a proof type)
  work        :class:`Work` — the only place input is recognised (C1, market ProofData, lotus-bench envelope,
              Snap, a cuzk call's PoSt), strictly checked, and given its kind, proof type, partitions and
              public inputs (once)
  circuits    :class:`Circuits` — the circuit seam: the R1CS of a proof type, the assignment of a partition
  parameters  parameter file paths, the record of checked files, development parameters made here
  engine      the Groth16 engine protocol and ``gpu.groth16`` behind it
  schedule    :class:`PartitionSchedule`: a proof's partitions synthesised on CPU threads ahead of the lanes
              that prove them (a bounded queue, host bytes reserved in partition order, cancel at a boundary)
  plan        ``sizes_of`` / ``memory_plan_of``: a proof's sizes and memory plan (layout and phases under a
              device budget) from its circuit template's counts
  result      :class:`ProofResult`, :class:`PartitionResult`, :class:`StageEvent`: what a proof tells
  pipeline    :class:`ProofPipeline`: a Work to a proof in one pass, every partition verified as it is proven
  verifier    :class:`HostVerifier`: the pairing check (the pipeline's, and ``psagent verify``'s)
  prover      :class:`AdmittedProver`: the pipeline behind ``agent.admission`` (the agent's prover)

``psagent prove``, ``psagent verify``, ``bench e2e`` and the agent's request stages (``agent.stages``) all go
through these. Import from the submodules: this package's own import loads nothing, so the CLI can set up
Numba's kernel cache before the engine is imported.
"""
