"""Filecoin proof-of-replication without the GPU: what a sector, its C1 and its proofs are.

  prooftypes, ids, fr32, commcid   the shared vocabulary: proof types, prover / replica ids, fr32 padding,
                                   commitment CIDs
  hashes    Poseidon, sha254, ChaCha8, Merkle trees (dense and sparse)
  sdr       Stacked DRG: graph, labels, challenges, sealing a test sector, vanilla proofs and their strict
            check, the circuit's public inputs without the circuit
  c1        the C1 output: models, arrays, the byte-exact codec, lotus-bench's envelope, synthetic C1s
            (random for the codec, sparse and valid of any size)
  circuit   the StackedDRG circuit: gadgets, the pre-compiled circuit, the vectorised witness, the partition
            seam the proof pipeline asks
  snap      SnapDeals: update, vanilla proofs and their check, the update circuit and its seam
  post      WinningPoSt and WindowPoSt: proof types, challenges, the bincode vanilla proof and its strict
            check, the FallbackPoSt circuit, its pre-compiled form, witness and seam

May import ``gpu`` (its arithmetic and file helper; the circuits also its R1CS); never ``agent`` or
``market``.
"""
