"""Random satisfiable R1CS instances for the Groth16 tests (Python integers; tiny sizes)."""

from __future__ import annotations

import random

import numpy as np

from gpu.arith.fields import fr_from_ints
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.groth16.r1cs import CSR, R1CS


def random_circuit(
    seed: int, num_public: int = 2, num_constraints: int = 12
) -> tuple[R1CS, np.ndarray, list[int]]:
    """(r1cs, witness limbs, public inputs) with random sparse rows; each constraint defines a fresh aux z
    with C = c z + noise, so the witness satisfies every row; every variable appears somewhere."""
    rnd = random.Random(seed)
    ni = 1 + num_public
    n0 = 3  # free aux variables
    wit = [1] + [rnd.randrange(R) for _ in range(num_public)] + [rnd.randrange(R) for _ in range(n0)]
    a_rows, b_rows, c_rows = [], [], []
    for k in range(num_constraints):
        nv = len(wit)

        def row(nterms: int, nv: int = nv) -> list[tuple[int, int]]:
            cols = rnd.sample(range(nv), min(nv, nterms))
            return [(c, rnd.randrange(1, R)) for c in cols]

        ar, br = row(rnd.randint(1, 3)), row(rnd.randint(1, 3))
        if k < n0 and all(c != ni + k for c, _ in ar):  # make sure the free aux variables are used
            ar.append((ni + k, 1))
        noise = row(rnd.randint(0, 2))
        av = sum(c * wit[j] for j, c in ar) % R
        bv = sum(c * wit[j] for j, c in br) % R
        nz = sum(c * wit[j] for j, c in noise) % R
        coef = rnd.randrange(1, R)
        z = (av * bv - nz) * pow(coef, R - 2, R) % R
        z_col = len(wit)
        wit.append(z)
        a_rows.append(ar)
        b_rows.append(br)
        c_rows.append(noise + [(z_col, coef)])
    nvars = len(wit)
    r1cs = R1CS(ni, nvars - ni, CSR.from_rows(a_rows), CSR.from_rows(b_rows), CSR.from_rows(c_rows))
    return r1cs, fr_from_ints(wit), wit[1:ni]
