"""Stacked DRG (SDR) proof of replication without the circuit: the graph and its parents, the labels, the
challenges, sealing a sector, the vanilla proofs of a C1 and their strict check, and the circuit's public
inputs computed from a sector's public values."""
