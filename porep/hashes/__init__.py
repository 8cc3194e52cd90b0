"""The hashes and trees of a sector: Poseidon over BLS12-381 Fr (single and batched), SHA-256 trimmed to 254
bits, the ChaCha8 generator of the DRG graph, Merkle trees of any arity and their sparse form."""
