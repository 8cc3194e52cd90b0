"""Proofs of Spacetime: WinningPoSt and WindowPoSt (docs post.md).

* :mod:`porep.post.params` — ``RegisteredPoStProof`` ids 0–14, both shapes, parameter stems;
* :mod:`porep.post.challenges` — the challenged leaves of a sector (and WinningPoSt's sector choice);
* :mod:`porep.post.proof` — ``FallbackPoStSectorProof`` and its bincode 1.x wire form;
* :mod:`porep.post.verify` — the strict vanilla check of a request (what Curio's engine call carries);
* :mod:`porep.post.vanilla` — vanilla proofs of sealed single-tree sectors (tests, the long suite);
* :mod:`porep.post.public_inputs` — the circuit's public inputs from the public values only;
* :mod:`porep.post.circuit` — the FallbackPoSt circuit (Rust's synthesis order) and request → witness;
* :mod:`porep.post.pce` / :mod:`porep.post.witness` — its pre-compiled R1CS and vectorised assignment;
* :mod:`porep.post.partition` — what a prover asks of it: the R1CS of a proof type, a request's assignment.
"""
