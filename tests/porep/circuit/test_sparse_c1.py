"""Sparse C1s (porep.sdr.sparse) through the circuit: the witness satisfies the R1CS and the inputs are the
verifier's. Long suite only (`make test-circuit-long`): 8MiB synthesis takes minutes on 2 cores."""

from __future__ import annotations

import numpy as np
import pytest
from circuit_c1 import long_only

from porep.circuit.stacked import synthesize_c1
from porep.hashes.merkle import build_poseidon_tree, build_poseidon_tree_mont, build_tree_d
from porep.ids import prover_id
from porep.sdr import public_inputs
from porep.sdr.seal import column_hashes_mont, encode
from porep.sdr.sparse import SparseSector, sparse_c1, sparse_sector
from porep.sdr.vanilla_verify import check_c1

MINER, SECTOR, TICKET, SEED = 1000, 11, bytes([5]) * 32, bytes([6]) * 32


def _roots_of_the_materialised_sector(s: SparseSector) -> tuple[bytes, bytes, bytes]:
    """comm_d, comm_c, comm_r_last of the sector written out node by node, with the dense tree builders."""
    pt = s.proof_type
    labels = np.empty((pt.layers, pt.nodes, 32), dtype=np.uint8)
    labels[:] = np.frombuffer(s.label, dtype=np.uint8)
    for v, rows in s.labels.items():
        labels[:, v] = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(pt.layers, 32)
    data = np.empty((pt.nodes, 32), dtype=np.uint8)
    data[:] = np.frombuffer(s.data, dtype=np.uint8)
    tree_c = build_poseidon_tree_mont(column_hashes_mont(labels), pt.tree.base)
    tree_r = build_poseidon_tree(encode(labels[-1], data), pt.tree.base)
    return build_tree_d(data).root, tree_c.root, tree_r.root


@long_only
@pytest.mark.parametrize("name", ["StackedDrg2KiBV1_1", "StackedDrg8MiBV1_1"])
def test_sparse_c1_witness_satisfies(name: str) -> None:
    s = sparse_sector(name, prover_id(MINER), SECTOR, TICKET, SEED)
    assert _roots_of_the_materialised_sector(s) == (s.comm_d, s.comm_c, s.comm_r_last)
    c1 = sparse_c1(s)
    assert check_c1(c1, prover_id=prover_id(MINER), sector=SECTOR).ok
    cs = synthesize_c1(c1, 0)
    r1cs = cs.to_r1cs()
    assert r1cs.first_unsatisfied(cs.witness_array()) is None  # cs.unsatisfied(), vectorised
    r1cs.check(cs.witness_array())
    want = public_inputs.record_inputs(
        c1.proof_type,
        prover_id=prover_id(MINER),
        sector_id=SECTOR,
        ticket=TICKET,
        seed=SEED,
        comm_d=s.comm_d,
        comm_r=s.comm_r,
    )[0]
    assert cs.inputs()[1:] == want
