#!/usr/bin/env python3
"""P31: Curio's golden 32GiB vanilla PoSt proof, through the strict check and the vectorised witness,
satisfies the whole 32GiB WindowPoSt R1CS (every one of its 125,279,217 rows), on the CPU, in bounded memory.

    python benchmarks/post_r1cs_check.py [--fixtures ../shared/fixtures] [--cache-dir D] [--proof-type 8]
        [--mutate] [--rows-per-chunk N]

Stages, each timed and printed on its own line: ``post.vproof`` decoded and checked strictly against
``postpub.json`` (randomness, sector 1 and its SealedCID's comm_r; ``porep.post.verify.check_post``); the
R1CS from the PCE (``post_r1cs(pt, cache_dir)``: one sector recorded, 2349 tiled); the full assignment
(``post_assignment``: the one real sector, then the 2348 padding copies Rust makes); the chunked check
(``R1CS.unsatisfied``: the witness converted to Montgomery form in place, then a, b, c and a·b = c a row
block at a time); the public inputs computed from the public values only equal the assignment's inputs. Exit
0 only when every row is satisfied (``--mutate``: one aux value bumped first, which must be FOUND).

Memory: the compact matrices (~1.15 G entries, ~6.9 GB) + their row pointers (3.0 GB) + the witness (4.1 GB):
~14 GB, printed at the end as the peak RSS.
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path

import numpy as np
from _stages import line, now_rss_gib, rss_gib, timed

DEFAULT_CACHE = Path("/tmp/psagent-post-check")
REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--fixtures", type=Path, default=REPO.parent / "shared" / "fixtures")
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--proof-type", type=int, default=None, help="RegisteredPoStProof (default: postpub's)")
    ap.add_argument("--mutate", action="store_true", help="bump one aux value: the check must FAIL")
    ap.add_argument("--rows-per-chunk", type=int, default=1 << 20)
    a = ap.parse_args()

    from gpu.arith.cpupool import cpu_threads
    from gpu.arith.fields import fr_from_ints, fr_to_ints
    from gpu.arith.fields.constants import R_MODULUS
    from porep.commcid import cid_to_comm_r
    from porep.post.partition import post_assignment, post_public_inputs, post_r1cs
    from porep.post.verify import check_post

    golden = a.fixtures / "curio" / "testgolden"
    vproof = (golden / "post.vproof").read_bytes()
    pub = json.loads((golden / "postpub.json").read_text())
    randomness = base64.b64decode(pub["Randomness"])
    expected = [(s["SectorNumber"], cid_to_comm_r(s["SealedCID"]["/"])) for s in pub["ChallengedSectors"]]
    pid = a.proof_type if a.proof_type is not None else pub["Proofs"][0]["PoStProof"]
    line(f"golden post.vproof ({len(vproof):,} B), PoStProof {pid}, prover {pub['Prover']}, sectors "
         f"{[s for s, _ in expected]}, {cpu_threads()} CPU threads, cache {a.cache_dir}")
    checked, dt, _ = timed(lambda: check_post(pid, randomness, [vproof], expected=expected).checked())
    pt = checked.proof_type
    line(f"strict vanilla check ({pt.name}): ok in {dt:.2f} s; challenges {list(checked.challenges[0])}")

    a.cache_dir.mkdir(parents=True, exist_ok=True)
    r1cs, dt, cpu = timed(post_r1cs, pt, a.cache_dir)
    nnz = (r1cs.a.nnz, r1cs.b.nnz, r1cs.c.nnz)
    line(f"R1CS (PCE: one sector recorded or loaded, {pt.circuit_sectors} tiled): {dt:.2f} s wall, "
         f"{cpu:.2f} s CPU; rows {r1cs.num_constraints:,} (+{r1cs.num_inputs:,} input rows), aux "
         f"{r1cs.num_aux:,}, nnz {nnz[0]:,} / {nnz[1]:,} / {nnz[2]:,}; RSS {now_rss_gib():.2f} GiB")

    buf = np.empty((r1cs.num_vars, 8), np.uint32)
    _, t_w, c_w = timed(post_assignment, checked, out=buf)
    line(f"witness (1 sector + {pt.circuit_sectors - 1} padding copies): {t_w:.2f} s wall / {c_w:.2f} s "
         f"CPU; RSS {now_rss_gib():.2f} GiB")
    xs = post_public_inputs(checked)
    got = fr_to_ints(buf[1 : r1cs.num_inputs])
    same = list(got) == xs
    line(f"public inputs from the public values == the assignment's {len(xs):,} inputs: {same}")
    var = -1
    if a.mutate:
        var = r1cs.num_inputs + 777_777
        old = fr_to_ints(buf[var : var + 1])[0]
        buf[var] = fr_from_ints([(old + 1) % R_MODULUS])[0]
        line(f"MUTATED: aux variable {var:,} bumped {old} -> {(old + 1) % R_MODULUS}")
    bad, t_c, c_c = timed(r1cs.unsatisfied, buf, rows_per_chunk=a.rows_per_chunk, work=buf)
    if len(bad):
        row = int(bad[0])
        av, bv, cv = r1cs.row_values(row, buf)
        what = f"UNSATISFIED: constraint {row:,} (a={av:#x}, b={bv:#x}, c={cv:#x})"
    else:
        what = f"all {r1cs.num_constraints:,} constraints satisfied"
    line(f"check: {t_c:.2f} s wall / {c_c:.2f} s CPU; {what}; RSS {now_rss_gib():.2f} GiB")
    ok = (bool(len(bad)) if a.mutate else not len(bad)) and same
    line(f"{'PASS' if ok else 'FAIL'}: peak RSS {rss_gib():.2f} GiB")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
