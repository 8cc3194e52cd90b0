"""SnapDeals ("EmptySectorUpdate") update proofs (docs snap.md).

* :mod:`porep.snap.params` — ``RegisteredUpdateProof`` ids 0–4 and the per-size constants;
* :mod:`porep.snap.randomness` — the tag-2^40 Poseidon, phi, rho, challenge digests;
* :mod:`porep.snap.challenges` — the challenges of a partition;
* :mod:`porep.snap.encoding` — new_replica = key + data·rho, decoding and key recovery;
* :mod:`porep.snap.proof` — ``PartitionProof`` and its bincode 1.x wire form;
* :mod:`porep.snap.update` — updating a CC sector and generating the vanilla partition proofs;
* :mod:`porep.snap.tree_r` — tree R in every update shape (single, Sub, Top) and its proofs;
* :mod:`porep.snap.verify` — the strict vanilla check;
* :mod:`porep.snap.public_inputs` — the circuit's public inputs per partition;
* :mod:`porep.snap.circuit` — the EmptySectorUpdate circuit (Rust's synthesis order) and request → witness;
* :mod:`porep.snap.partition` — what a prover asks of it: the R1CS of a size, a partition's assignment.
"""
