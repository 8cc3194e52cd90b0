"""Filecoin proof-of-replication (StackedDRG): proof types, C1 models, Poseidon, sha254, graph, challenges,
test-sector sealing, vanilla proofs and their strict verification, and (later) the circuit.

May import ``gpu`` (the circuit builds an R1CS); never ``agent`` or ``market``.
"""
