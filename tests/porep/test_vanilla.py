"""C1 generation and strict vanilla verification.

C1s made from real and random sealed 2KiB sectors pass the strict verifier and survive the byte-exact
codec; every single-field mutation is rejected, and the named ones with exactly the check that should
catch them (a verifier that only says "bad" would not tell an operator what is wrong).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from _c1_mutations import add, flip

from porep.c1 import C1Arrays, KeyOrder, SealCommitPhase1Output, parse_c1
from porep.c1.layout import layout_for
from porep.hashes.poseidon import R
from porep.ids import prover_id
from porep.sdr import challenges
from porep.sdr.graph import StackedGraph
from porep.sdr.seal import SealedSector, seal
from porep.sdr.vanilla import make_c1, make_c1_arrays
from porep.sdr.vanilla_verify import CHECKS, VanillaProofError, check_c1, verify_c1

WP_PROVER, WP_TICKET, WP_POREP, WP_SECTOR = bytes([1]) * 32, bytes([2]) * 32, bytes([0x80]) * 32, 255
SEED = bytes([3]) * 32


@pytest.fixture(scope="module")
def wp_sector(fixtures_dir: Path) -> SealedSector:
    piece = (fixtures_dir / "rust-fil-proofs" / "winning_post" / ".tmpcCAjpp").read_bytes()
    return seal("StackedDrg2KiBV1_1", WP_PROVER, WP_SECTOR, WP_TICKET, piece=piece, porep_id=WP_POREP)


@pytest.fixture(scope="module")
def wp_c1(wp_sector: SealedSector) -> SealCommitPhase1Output:
    return make_c1(wp_sector, SEED)


def _verify(c1: SealCommitPhase1Output | C1Arrays, sector: SealedSector, **kw: object) -> set[str]:
    info = sector.info
    report = verify_c1(c1, prover_id=info.prover_id, sector=info.sector, porep_id=info.porep_id, **kw)  # type: ignore[arg-type]
    return report.checks_failed()


def test_generated_c1_verifies(wp_sector: SealedSector, wp_c1: SealCommitPhase1Output) -> None:
    report = check_c1(wp_c1, prover_id=WP_PROVER, sector=WP_SECTOR, porep_id=WP_POREP)
    assert report.ok and not report.notes
    pt = wp_c1.proof_type
    assert (pt.partitions, pt.challenges_per_partition) == (1, 2)
    want = challenges.interactive(64, wp_sector.info.replica_id, SEED, 0, 2)
    assert [p.encoding_proof.node for _, _, p in wp_c1.proofs()] == want
    proof = wp_c1.vanilla_proofs[0][0]
    x = want[0]
    g = StackedGraph(64, WP_POREP, False)
    assert [c.column.index for c in proof.replica_column_proofs.drg_parents] == g.drg_parents(x)
    assert [c.column.index for c in proof.replica_column_proofs.exp_parents] == g.exp_parents(x)
    assert proof.comm_d_proofs.leaf_index == x and proof.comm_r_last_proof.leaf_index == x
    assert proof.replica_column_proofs.c_x.inclusion_proof.root == wp_sector.info.comm_c
    assert [lp.layer_index for lp in proof.labeling_proofs] == [1, 2]
    assert proof.encoding_proof.parents == proof.labeling_proofs[-1].parents
    # with the wrong graph the parents are wrong, and without prover/sector the binding is only noted
    assert verify_c1(wp_c1).checks_failed() == {"columns.index"}
    assert verify_c1(wp_c1, porep_id=WP_POREP).notes


def test_json_is_byte_exact_rust_order(wp_c1: SealCommitPhase1Output) -> None:
    raw = wp_c1.to_json()
    assert raw.startswith(
        b'{"registered_proof":"StackedDrg2KiBV1_1","vanilla_proofs":{"StackedDrg2KiBV1":[[{'
    )
    assert b'"comm_d_proofs":{"data":{"Single":{"root":[' in raw and b'"_h":null' in raw
    assert raw.endswith(b"]}") and b" " not in raw
    back = parse_c1(raw)
    assert back.to_json() == raw and back == wp_c1
    go = wp_c1.to_json(KeyOrder.GO)
    assert go.startswith(b'{"comm_d":[') and parse_c1(go) == wp_c1
    assert verify_c1(back, prover_id=WP_PROVER, sector=WP_SECTOR, porep_id=WP_POREP).ok


@pytest.mark.parametrize(
    "name",
    [
        "StackedDrg2KiBV1",
        "StackedDrg2KiBV1_1",
        "StackedDrg2KiBV1_1_Feat_SyntheticPoRep",
        "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
    ],
)
def test_every_2kib_flavour(name: str) -> None:
    rng = np.random.default_rng(len(name))
    piece = rng.integers(0, 256, size=2032, dtype=np.uint8).tobytes()
    sector = seal(name, prover_id(1000), 7, bytes([9]) * 32, piece=piece, miner=1000)
    seed = rng.integers(0, 256, size=32, dtype=np.uint8).tobytes()
    c1 = make_c1(sector, seed)
    pt = c1.proof_type
    assert len(c1.vanilla_proofs) == pt.partitions
    report = check_c1(c1, prover_id=prover_id(1000), sector=7)
    assert report.ok
    # a different seed gives different challenges (interactive, synthetic) or the same (NI: no seed)
    other = make_c1(sector, bytes(32))
    same = [p.encoding_proof.node for _, _, p in other.proofs()] == [
        p.encoding_proof.node for _, _, p in c1.proofs()
    ]
    assert same == pt.is_non_interactive
    assert verify_c1(other, prover_id=prover_id(1000), sector=7).ok
    # the same proofs presented with the other seed are for the wrong challenges
    swapped = _with(c1.arrays, "seed", lambda a: a.__setitem__(slice(None), 0))
    failed = verify_c1(swapped, prover_id=prover_id(1000), sector=7).checks_failed()
    assert failed == (set() if pt.is_non_interactive else {"challenges"})


# ------------------------------------------------------------------------------------------------ mutations


def _with(arrays: C1Arrays, name: str, mutate: Callable[[np.ndarray], object]) -> C1Arrays:
    fields = {k: v for k, v in arrays.fields.items()}
    arr = fields[name].copy()
    mutate(arr)
    fields[name] = arr
    return C1Arrays(arrays.proof_type, fields)


# (field, mutation, exactly the checks that must fail)
MUTATIONS: dict[str, tuple[str, Callable[[np.ndarray], None], set[str]]] = {
    "tree D sibling": ("d.base.hashes", flip((0, 0, 3, 0)), {"tree_d.path"}),
    "tree D leaf": ("d.leaf", flip((0, 1)), {"tree_d.path", "encoding.replica"}),
    "tree D root": ("d.root", flip((0, 0)), {"tree_d.path", "tree_d.root"}),
    "tree D position": ("d.base.index", add((0, 0, 2)), {"tree_d.index", "tree_d.path"}),
    "tree R sibling": ("r.base.hashes", flip((0, 1, 1, 4)), {"tree_r.path"}),
    "tree R leaf": ("r.leaf", flip((0, 0)), {"tree_r.path", "encoding.replica"}),
    "tree R root": ("r.root", flip((0, 1)), {"tree_r.path", "tree_r.root"}),
    "tree R position": ("r.base.index", add((0, 1, 0), -1), {"tree_r.index", "tree_r.path"}),
    "column sibling": ("col.base.hashes", flip((0, 0, 9, 1, 2)), {"columns.path"}),
    "column leaf": ("col.leaf", flip((0, 1, 4)), {"columns.leaf", "columns.path"}),
    "column root": ("col.root", flip((0, 1, 12)), {"columns.path", "columns.root"}),
    "c_x row": ("col.rows", flip((0, 0, 0, 1)), {"columns.leaf", "labeling.label", "encoding.key"}),
    "drg parent row (layer 1)": ("col.rows", flip((0, 1, 3, 0)), {"columns.leaf", "labeling.parents"}),
    "drg parent row (layer 2)": (
        "col.rows",
        flip((0, 1, 3, 1)),
        {"columns.leaf", "labeling.parents", "encoding.parents"},
    ),
    "exp parent row (layer 1)": (
        "col.rows",
        flip((0, 0, 10, 0)),
        {"columns.leaf", "labeling.parents", "encoding.parents"},
    ),
    "exp parent row (layer 2)": ("col.rows", flip((0, 0, 10, 1)), {"columns.leaf"}),
    "column node index": ("col.index", add((0, 0, 5)), {"columns.index", "columns.path_index"}),
    "column path position": ("col.base.index", add((0, 1, 8, 1)), {"columns.path_index", "columns.path"}),
    "labeling parent (layer 1)": (
        "lab.parents",
        flip((0, 0, 0, 17)),
        {"labeling.parents", "labeling.label"},
    ),
    "labeling parent (layer 2)": (
        "lab.parents",
        flip((0, 1, 1, 30)),
        {"labeling.parents", "labeling.label"},
    ),
    "labeling node": ("lab.node", add((0, 1, 0)), {"labeling.node", "labeling.label"}),
    "labeling layer": ("lab.layer_index", add((0, 0, 1)), {"labeling.layer_index", "labeling.label"}),
    "encoding parent": (
        "enc.parents",
        flip((0, 0, 36)),
        {"encoding.parents", "encoding.key", "encoding.replica"},
    ),
    "encoding node": ("enc.node", add((0, 0)), {"encoding.node", "encoding.key", "encoding.replica"}),
    "encoding layer": (
        "enc.layer_index",
        add((0, 1), -1),
        {"encoding.layer_index", "encoding.key", "encoding.replica"},
    ),
    "comm_r": ("comm_r", flip(()), {"commitments"}),
    "seed": ("seed", flip(()), {"challenges"}),
    "ticket": ("ticket", flip(()), {"header.replica_id"}),
    "comm_d": ("comm_d", flip(()), {"header.replica_id", "tree_d.root"}),
}


@pytest.mark.parametrize("label", list(MUTATIONS))
def test_mutation_is_rejected_for_the_right_reason(
    label: str, wp_sector: SealedSector, wp_c1: SealCommitPhase1Output
) -> None:
    name, mutate, want = MUTATIONS[label]
    bad = _with(wp_c1.arrays, name, mutate)
    assert not bad.same_as(wp_c1.arrays)
    failed = _verify(bad, wp_sector)
    assert failed == want, f"{label}: {sorted(failed)}"
    with pytest.raises(VanillaProofError):
        check_c1(bad, prover_id=WP_PROVER, sector=WP_SECTOR, porep_id=WP_POREP)


def test_replica_id_mutation(wp_sector: SealedSector, wp_c1: SealCommitPhase1Output) -> None:
    bad = _with(wp_c1.arrays, "replica_id", flip((), 5))
    failed = _verify(bad, wp_sector)
    assert {"header.replica_id", "challenges", "labeling.label", "encoding.key"} <= failed


def test_non_canonical_values_are_named(wp_sector: SealedSector, wp_c1: SealCommitPhase1Output) -> None:
    r_bytes = np.frombuffer(R.to_bytes(32, "little"), np.uint8)

    def set_r(index: tuple[int, ...]) -> Callable[[np.ndarray], None]:
        def f(a: np.ndarray) -> None:
            a[index] = r_bytes

        return f

    assert "columns.values" in _verify(_with(wp_c1.arrays, "col.rows", set_r((0, 0, 2, 1))), wp_sector)
    assert "tree_r.values" in _verify(_with(wp_c1.arrays, "r.base.hashes", set_r((0, 0, 0, 0))), wp_sector)
    assert "header.comm_r" in _verify(_with(wp_c1.arrays, "comm_r", set_r(())), wp_sector)
    top = _with(wp_c1.arrays, "lab.parents", lambda a: a.__setitem__((0, 0, 0, 0, 31), 0xFF))
    assert "labeling.values" in _verify(top, wp_sector)
    top_d = _with(wp_c1.arrays, "d.base.hashes", lambda a: a.__setitem__((0, 0, 0, 0, 31), 0xC0))
    assert "tree_d.values" in _verify(top_d, wp_sector)


def test_every_field_mutation_is_rejected(wp_sector: SealedSector, wp_c1: SealCommitPhase1Output) -> None:
    """Flip one random element of every field of the layout (bytes: a low bit; ints: +1)."""
    rng = np.random.default_rng(2024)
    layout = layout_for(wp_c1.proof_type, KeyOrder.RUST)
    names = [n for n in layout.fields if n not in layout.consts]
    assert set(names) == set(wp_c1.arrays.fields)
    for name in names:
        for _ in range(3):
            arr = wp_c1.arrays[name]
            if name in layout.byte_fields:
                idx = tuple(int(rng.integers(0, s)) for s in arr.shape[:-1])
                bad = _with(wp_c1.arrays, name, flip(idx, int(rng.integers(0, 31))))
            else:
                idx = tuple(int(rng.integers(0, s)) for s in arr.shape)
                bad = _with(wp_c1.arrays, name, add(idx))
            failed = _verify(bad, wp_sector)
            assert failed, f"mutation of {name}{list(idx)} was not detected"
            assert failed <= set(CHECKS)


def test_partition_errors_are_named() -> None:
    """NI 2KiB: 13 partitions; a mutation in partition 7 is reported there."""
    sector = seal(
        "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep", prover_id(5), 1, bytes(32), piece=b"x" * 2032
    )
    arrays = make_c1_arrays(sector, bytes(32))
    bad = _with(arrays, "col.base.hashes", flip((7, 1, 3, 0, 2)))
    report = verify_c1(bad, prover_id=prover_id(5), sector=1)
    assert [(f.check, f.partition, f.challenge) for f in report.failures] == [("columns.path", 7, 1)]
    text = str(report.failures[0])
    assert text.startswith("partition 7, challenge 1 (node ") and "drg_parents[2]" in text
    bad_r = _with(arrays, "r.root", flip((4, 0)))
    failed = {(f.check, f.partition) for f in verify_c1(bad_r, prover_id=prover_id(5), sector=1).failures}
    assert ("commitments", 4) in failed  # proofs[0] of partition 4 carries a wrong comm_r_last


def test_sector_directory_roundtrip(wp_sector: SealedSector, tmp_path: Path) -> None:
    wp_sector.save(tmp_path)
    again = SealedSector.load(tmp_path)
    assert make_c1(again, SEED).to_json() == make_c1(wp_sector, SEED).to_json()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["StackedDrg32GiBV1_1", "StackedDrg64GiBV1_1"])
def test_big_shapes_are_checked_not_crashed(name: str) -> None:
    """32GiB (8-8-0, 11 layers) and 64GiB (8-8-2) shaped C1s with random values: every challenge is
    rejected by name (no exception from the Sub/Top paths or the arity-11 column hashes)."""
    from porep.c1.synth import synth_arrays

    arrays = synth_arrays(name, seed=3)
    report = verify_c1(arrays)
    pt = arrays.proof_type
    assert (pt.partitions, pt.challenges_per_partition, pt.layers) == (10, 18, 11)
    per = {(f.partition, f.challenge) for f in report.failures if f.challenge is not None}
    assert per == {(k, i) for k in range(10) for i in range(18)}
    assert {
        "columns.leaf",
        "columns.path",
        "tree_r.path",
        "labeling.label",
        "commitments",
    } <= report.checks_failed()


# ------------------------------------------------------------------------ check groups (for the circuit)


def test_check_groups_are_verify_c1(wp_c1: SealCommitPhase1Output) -> None:
    """verify_c1 = check_header + CHECK_GROUPS over one Subject; the groups run alone give the same."""
    from porep.sdr.vanilla_verify import CHECK_GROUPS, Subject, check_header, check_labels

    arr = wp_c1.arrays
    rows = arr["col.rows"].copy()
    rows[0, 1, 4, 1, 0] ^= 1  # drg parent 3's layer-2 label: its column hash and a labeling proof break
    bad = C1Arrays(arr.proof_type, {**arr.fields, "col.rows": rows})
    s = Subject(bad, WP_POREP)
    header, notes = check_header(s, prover_id=WP_PROVER, sector=WP_SECTOR)
    assert header == [] and notes == []
    together = sorted(str(f) for group in CHECK_GROUPS for f in group(s))
    report = verify_c1(bad, prover_id=WP_PROVER, sector=WP_SECTOR, porep_id=WP_POREP)
    assert together == sorted(str(f) for f in report.failures) and together
    assert {f.check for f in check_labels(s)} == {"labeling.parents"}
    assert all(group(Subject(arr, WP_POREP)) == [] for group in CHECK_GROUPS)


def test_subject_quantities_match_the_sealed_sector(wp_c1: SealCommitPhase1Output) -> None:
    """The witness-side helpers recompute what the sector's C1 holds: parent labels, column leaves."""
    from porep.sdr.vanilla_verify import Subject, column_hashes, expected_parent_labels

    arr = wp_c1.arrays
    s = Subject(arr, WP_POREP)
    assert np.array_equal(expected_parent_labels(arr["col.rows"]), arr["lab.parents"])
    assert np.array_equal(s.expected_parent_labels[:, :, -1], arr["enc.parents"])
    assert np.array_equal(column_hashes(arr["col.rows"]), arr["col.leaf"])
    assert np.array_equal(s.expected_columns, arr["col.index"])
    assert np.array_equal(s.challenges, arr["enc.node"])


# ------------------------------------------------------------------------ messages and the CLI


def test_replica_id_mismatch_names_the_miner_and_sector(wp_c1: SealCommitPhase1Output) -> None:
    report = verify_c1(wp_c1, prover_id=prover_id(1000), sector=7, porep_id=WP_POREP)
    (failure,) = report.failures
    assert failure.check == "header.replica_id"
    assert "not for miner 1000, sector 7" in failure.detail and prover_id(1000).hex() not in failure.detail
    other = verify_c1(wp_c1, prover_id=bytes([9]) * 32, sector=7, porep_id=WP_POREP).failures[0]
    assert f"not for prover_id {'09' * 32}, sector 7" in other.detail  # not a miner's ID payload


def test_cli_check_formatting_canonical_and_lotus_bench(
    wp_c1: SealCommitPhase1Output, tmp_path: Path
) -> None:
    """c1 check accepts what serde_json accepts (with a note), --canonical refuses it, and a lotus-bench
    c1out.json envelope is unwrapped (its SectorNum binds the replica_id together with --prover-id)."""
    import base64
    import json

    from typer.testing import CliRunner

    from agent.cli import app

    runner = CliRunner()
    raw = wp_c1.to_json()
    ids_args = ["--prover-id", WP_PROVER.hex(), "--porep-id", WP_POREP.hex()]
    pretty = tmp_path / "pretty.json"
    pretty.write_bytes(json.dumps(json.loads(raw), indent=2).encode() + b"\n")
    res = runner.invoke(app, ["c1", "check", str(pretty), *ids_args, "--sector", str(WP_SECTOR)])
    assert res.exit_code == 0, res.output
    assert "not in a canonical encoding" in res.stderr and res.stdout.startswith("ok:")
    res = runner.invoke(
        app, ["c1", "check", str(pretty), *ids_args, "--sector", str(WP_SECTOR), "--canonical"]
    )
    assert res.exit_code == 1 and "--canonical demands the canonical bytes" in res.stderr
    assert "not valid" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    exact = tmp_path / "c1.json"
    exact.write_bytes(raw)
    res = runner.invoke(
        app, ["c1", "check", str(exact), *ids_args, "--sector", str(WP_SECTOR), "--canonical"]
    )
    assert res.exit_code == 0 and "canonical" not in res.stderr, res.output

    envelope = {"SectorNum": WP_SECTOR, "Phase1Out": base64.b64encode(raw).decode(), "SectorSize": 2048}
    c1out = tmp_path / "c1out.json"
    c1out.write_bytes(json.dumps(envelope, separators=(",", ":")).encode())
    res = runner.invoke(app, ["c1", "check", str(c1out), *ids_args, "--canonical", "--json"])
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.stdout)
    assert verdict["ok"] and verdict["canonical"] and verdict["notes"] == []  # replica_id was bound
    c1out.write_bytes(json.dumps({**envelope, "SectorNum": WP_SECTOR - 1}).encode())
    res = runner.invoke(app, ["c1", "check", str(c1out), *ids_args])
    assert res.exit_code == 1 and f"not for prover_id {WP_PROVER.hex()}, sector {WP_SECTOR - 1}" in res.stderr
    c1out.write_bytes(json.dumps({**envelope, "SectorSize": 8 << 20}).encode())
    res = runner.invoke(app, ["c1", "check", str(c1out)])
    # not a C1 of its proof type at all: bad input, one line and exit 2 (P32), like prove and snap check
    assert res.exit_code == 2 and "SectorSize 8388608 is not that of a StackedDrg2KiBV1_1 C1" in res.stderr
