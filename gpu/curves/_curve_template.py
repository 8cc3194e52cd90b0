# ruff: noqa
# mypy: ignore-errors
"""Template for the point arithmetic of a short-Weierstrass curve y^2 = x^3 + b (a = 0) over a field FF;
gpu/codegen.py instantiates it for G1 (over Fq) and G2 (over Fq2).

Placeholders: CC_ (curve prefix: g1_/g2_), FF_ (field prefix: fq_/fq2_), CCB (b in Montgomery form),
CCRLIMBS (the group order r as a tuple of 8 uint32 limbs).

Representations (all coordinates in Montgomery form):
  affine (x, y)            the identity is (0, 0), which is not on the curve, so unambiguous;
  Jacobian (X, Y, Z)       x = X/Z^2, y = Y/Z^3; the identity has Z = 0;
  XYZZ (X, Y, ZZ, ZZZ)     x = X/ZZ, y = Y/ZZZ with ZZ^3 = ZZZ^2; the identity has ZZ = 0.
Formulas are from the Explicit-Formulas Database (hyperelliptic.org/EFD/g1p/auto-shortw-*.html), a = 0;
each line names its step. Every function handles the identity and the P == Q / P == -Q cases.
"""

# --- TEMPLATE START ---

U32 = np.uint32


@jitable
def CC_b():
    """The curve constant b (Montgomery)."""
    return CCB


@jitable
def CC_affine_identity():
    return (FF_zero(), FF_zero())


@jitable
def CC_affine_is_identity(q):
    return FF_is_zero(q[0]) and FF_is_zero(q[1])


@jitable
def CC_affine_neg(q):
    if CC_affine_is_identity(q):
        return q
    return (q[0], FF_neg(q[1]))


@jitable
def CC_is_on_curve(q):
    """y^2 == x^3 + b, or the identity."""
    if CC_affine_is_identity(q):
        return True
    x, y = q
    return FF_eq(FF_sqr(y), FF_add(FF_mul(FF_sqr(x), x), CC_b()))


# ---------------------------------------------------------------- XYZZ


@jitable
def CC_xyzz_identity():
    return (FF_one(), FF_one(), FF_zero(), FF_zero())


@jitable
def CC_xyzz_identity_like(arr):
    """The identity; the argument (a point array of this group) only selects the group."""
    return CC_xyzz_identity()


@jitable
def CC_xyzz_is_identity(p):
    return FF_is_zero(p[2])


@jitable
def CC_xyzz_from_affine(q):
    if CC_affine_is_identity(q):
        return CC_xyzz_identity()
    return (q[0], q[1], FF_one(), FF_one())


@jitable
def CC_xyzz_neg(p):
    return (p[0], FF_neg(p[1]), p[2], p[3])


@jitable
def CC_xyzz_cneg(p, flag):
    """-p if flag else p (for signed bucket digits)."""
    if flag:
        return (p[0], FF_neg(p[1]), p[2], p[3])
    return p


@jitable
def CC_xyzz_dbl_affine(q):
    """2q for affine q (EFD mdbl-2008-s-1)."""
    if CC_affine_is_identity(q):
        return CC_xyzz_identity()
    x, y = q
    U = FF_dbl(y)  # U = 2*Y1
    V = FF_sqr(U)  # V = U^2
    W = FF_mul(U, V)  # W = U*V
    S = FF_mul(x, V)  # S = X1*V
    x2 = FF_sqr(x)
    M = FF_add(FF_dbl(x2), x2)  # M = 3*X1^2
    X3 = FF_sub(FF_sub(FF_sqr(M), S), S)  # X3 = M^2 - 2*S
    Y3 = FF_sub(FF_mul(M, FF_sub(S, X3)), FF_mul(W, y))  # Y3 = M*(S - X3) - W*Y1
    return (X3, Y3, V, W)  # ZZ3 = V, ZZZ3 = W


CC_xyzz_dbl_affine_cold = jitable_cold(CC_xyzz_dbl_affine)


@jitable
def CC_xyzz_dbl(p):
    """2p (EFD dbl-2008-s-1)."""
    if CC_xyzz_is_identity(p):
        return p
    X1, Y1, ZZ1, ZZZ1 = p
    U = FF_dbl(Y1)  # U = 2*Y1
    V = FF_sqr(U)  # V = U^2
    W = FF_mul(U, V)  # W = U*V
    S = FF_mul(X1, V)  # S = X1*V
    x2 = FF_sqr(X1)
    M = FF_add(FF_dbl(x2), x2)  # M = 3*X1^2 (+ a*ZZ1^2, a = 0)
    X3 = FF_sub(FF_sub(FF_sqr(M), S), S)  # X3 = M^2 - 2*S
    Y3 = FF_sub(FF_mul(M, FF_sub(S, X3)), FF_mul(W, Y1))  # Y3 = M*(S - X3) - W*Y1
    return (X3, Y3, FF_mul(V, ZZ1), FF_mul(W, ZZZ1))  # ZZ3 = V*ZZ1, ZZZ3 = W*ZZZ1


CC_xyzz_dbl_cold = jitable_cold(CC_xyzz_dbl)


@jitable
def CC_xyzz_add_affine(p, q):
    """p + q for XYZZ p and affine q (EFD madd-2008-s, 8M + 2S)."""
    if CC_affine_is_identity(q):
        return p
    if CC_xyzz_is_identity(p):
        return (q[0], q[1], FF_one(), FF_one())
    X1, Y1, ZZ1, ZZZ1 = p
    x2, y2 = q
    U2 = FF_mul(x2, ZZ1)  # U2 = X2*ZZ1
    S2 = FF_mul(y2, ZZZ1)  # S2 = Y2*ZZZ1
    P = FF_sub(U2, X1)  # P = U2 - X1
    R = FF_sub(S2, Y1)  # R = S2 - Y1
    if FF_is_zero(P):
        if FF_is_zero(R):
            return CC_xyzz_dbl_affine_cold(q)  # rare: a call, not inlined
        return CC_xyzz_identity()
    PP = FF_sqr(P)  # PP = P^2
    PPP = FF_mul(P, PP)  # PPP = P*PP
    Q = FF_mul(X1, PP)  # Q = X1*PP
    X3 = FF_sub(FF_sub(FF_sub(FF_sqr(R), PPP), Q), Q)  # X3 = R^2 - PPP - 2*Q
    Y3 = FF_sub(FF_mul(R, FF_sub(Q, X3)), FF_mul(Y1, PPP))  # Y3 = R*(Q - X3) - Y1*PPP
    return (X3, Y3, FF_mul(ZZ1, PP), FF_mul(ZZZ1, PPP))  # ZZ3 = ZZ1*PP, ZZZ3 = ZZZ1*PPP


@jitable
def CC_xyzz_add(p, q):
    """p + q for XYZZ p, q (EFD add-2008-s, 12M + 2S)."""
    if CC_xyzz_is_identity(q):
        return p
    if CC_xyzz_is_identity(p):
        return q
    X1, Y1, ZZ1, ZZZ1 = p
    X2, Y2, ZZ2, ZZZ2 = q
    U1 = FF_mul(X1, ZZ2)  # U1 = X1*ZZ2
    U2 = FF_mul(X2, ZZ1)  # U2 = X2*ZZ1
    S1 = FF_mul(Y1, ZZZ2)  # S1 = Y1*ZZZ2
    S2 = FF_mul(Y2, ZZZ1)  # S2 = Y2*ZZZ1
    P = FF_sub(U2, U1)  # P = U2 - U1
    R = FF_sub(S2, S1)  # R = S2 - S1
    if FF_is_zero(P):
        if FF_is_zero(R):
            return CC_xyzz_dbl_cold(p)  # rare: a call, not inlined
        return CC_xyzz_identity()
    PP = FF_sqr(P)  # PP = P^2
    PPP = FF_mul(P, PP)  # PPP = P*PP
    Q = FF_mul(U1, PP)  # Q = U1*PP
    X3 = FF_sub(FF_sub(FF_sub(FF_sqr(R), PPP), Q), Q)  # X3 = R^2 - PPP - 2*Q
    Y3 = FF_sub(FF_mul(R, FF_sub(Q, X3)), FF_mul(S1, PPP))  # Y3 = R*(Q - X3) - S1*PPP
    ZZ3 = FF_mul(FF_mul(ZZ1, ZZ2), PP)  # ZZ3 = ZZ1*ZZ2*PP
    ZZZ3 = FF_mul(FF_mul(ZZZ1, ZZZ2), PPP)  # ZZZ3 = ZZZ1*ZZZ2*PPP
    return (X3, Y3, ZZ3, ZZZ3)


CC_xyzz_add_cold = jitable_cold(CC_xyzz_add)
CC_xyzz_add_affine_cold = jitable_cold(CC_xyzz_add_affine)


@jitable
def CC_xyzz_to_affine(p):
    """Affine form (one inversion): 1/Z = ZZ/ZZZ, x = X*(1/Z)^2, y = Y/ZZZ."""
    if CC_xyzz_is_identity(p):
        return CC_affine_identity()
    X, Y, ZZ, ZZZ = p
    i = FF_inv(ZZZ)
    zi = FF_mul(ZZ, i)
    return (FF_mul(X, FF_sqr(zi)), FF_mul(Y, i))


@jitable
def CC_xyzz_eq(p, q):
    """Same point (cross-multiplied, no inversion)."""
    pi = CC_xyzz_is_identity(p)
    qi = CC_xyzz_is_identity(q)
    if pi or qi:
        return pi and qi
    return FF_eq(FF_mul(p[0], q[2]), FF_mul(q[0], p[2])) and FF_eq(FF_mul(p[1], q[3]), FF_mul(q[1], p[3]))


@jitable
def CC_xyzz_mul(q, k):
    """k*q for affine q and a canonical scalar k given as a tuple of 8 uint32 limbs (double-and-add)."""
    acc = CC_xyzz_identity()
    for w in range(7, -1, -1):
        kw = k[w]
        for b in range(31, -1, -1):
            acc = CC_xyzz_dbl_cold(acc)
            if (kw >> U32(b)) & U32(1):
                acc = CC_xyzz_add_affine_cold(acc, q)
    return acc


@jitable
def CC_xyzz_mul_small(p, k):
    """k*p for XYZZ p and a non-negative int k (used for bucket weights)."""
    acc = CC_xyzz_identity()
    nb = 0
    t = k
    while t > 0:
        nb += 1
        t >>= 1
    for b in range(nb - 1, -1, -1):
        acc = CC_xyzz_dbl_cold(acc)
        if (k >> b) & 1:
            acc = CC_xyzz_add_cold(acc, p)
    return acc


CC_xyzz_mul_small_cold = jitable_cold(CC_xyzz_mul_small)


@jitable
def CC_in_subgroup(q):
    """r*q == identity (q affine on the curve); the identity passes."""
    return CC_xyzz_is_identity(CC_xyzz_mul(q, CCRLIMBS))


# ---------------------------------------------------------------- Jacobian


@jitable
def CC_jac_identity():
    return (FF_one(), FF_one(), FF_zero())


@jitable
def CC_jac_is_identity(p):
    return FF_is_zero(p[2])


@jitable
def CC_jac_from_affine(q):
    if CC_affine_is_identity(q):
        return CC_jac_identity()
    return (q[0], q[1], FF_one())


@jitable
def CC_jac_neg(p):
    return (p[0], FF_neg(p[1]), p[2])


@jitable
def CC_jac_dbl(p):
    """2p (EFD dbl-2009-l, a = 0)."""
    if CC_jac_is_identity(p):
        return p
    X1, Y1, Z1 = p
    A = FF_sqr(X1)  # A = X1^2
    B = FF_sqr(Y1)  # B = Y1^2
    C = FF_sqr(B)  # C = B^2
    D = FF_dbl(FF_sub(FF_sub(FF_sqr(FF_add(X1, B)), A), C))  # D = 2*((X1+B)^2 - A - C)
    E = FF_add(FF_dbl(A), A)  # E = 3*A
    F = FF_sqr(E)  # F = E^2
    X3 = FF_sub(F, FF_dbl(D))  # X3 = F - 2*D
    C8 = FF_dbl(FF_dbl(FF_dbl(C)))
    Y3 = FF_sub(FF_mul(E, FF_sub(D, X3)), C8)  # Y3 = E*(D - X3) - 8*C
    Z3 = FF_dbl(FF_mul(Y1, Z1))  # Z3 = 2*Y1*Z1
    return (X3, Y3, Z3)


@jitable
def CC_jac_add_affine(p, q):
    """p + q for Jacobian p and affine q (EFD madd-2007-bl)."""
    if CC_affine_is_identity(q):
        return p
    if CC_jac_is_identity(p):
        return (q[0], q[1], FF_one())
    X1, Y1, Z1 = p
    x2, y2 = q
    Z1Z1 = FF_sqr(Z1)  # Z1Z1 = Z1^2
    U2 = FF_mul(x2, Z1Z1)  # U2 = X2*Z1Z1
    S2 = FF_mul(FF_mul(y2, Z1), Z1Z1)  # S2 = Y2*Z1*Z1Z1
    H = FF_sub(U2, X1)  # H = U2 - X1
    S2mY1 = FF_sub(S2, Y1)
    if FF_is_zero(H):
        if FF_is_zero(S2mY1):
            return CC_jac_dbl(p)
        return CC_jac_identity()
    HH = FF_sqr(H)  # HH = H^2
    I = FF_dbl(FF_dbl(HH))  # I = 4*HH
    J = FF_mul(H, I)  # J = H*I
    r = FF_dbl(S2mY1)  # r = 2*(S2 - Y1)
    V = FF_mul(X1, I)  # V = X1*I
    X3 = FF_sub(FF_sub(FF_sub(FF_sqr(r), J), V), V)  # X3 = r^2 - J - 2*V
    Y3 = FF_sub(FF_mul(r, FF_sub(V, X3)), FF_dbl(FF_mul(Y1, J)))  # Y3 = r*(V - X3) - 2*Y1*J
    Z3 = FF_sub(FF_sub(FF_sqr(FF_add(Z1, H)), Z1Z1), HH)  # Z3 = (Z1 + H)^2 - Z1Z1 - HH
    return (X3, Y3, Z3)


@jitable
def CC_jac_add(p, q):
    """p + q for Jacobian p, q (EFD add-2007-bl)."""
    if CC_jac_is_identity(q):
        return p
    if CC_jac_is_identity(p):
        return q
    X1, Y1, Z1 = p
    X2, Y2, Z2 = q
    Z1Z1 = FF_sqr(Z1)  # Z1Z1 = Z1^2
    Z2Z2 = FF_sqr(Z2)  # Z2Z2 = Z2^2
    U1 = FF_mul(X1, Z2Z2)  # U1 = X1*Z2Z2
    U2 = FF_mul(X2, Z1Z1)  # U2 = X2*Z1Z1
    S1 = FF_mul(FF_mul(Y1, Z2), Z2Z2)  # S1 = Y1*Z2*Z2Z2
    S2 = FF_mul(FF_mul(Y2, Z1), Z1Z1)  # S2 = Y2*Z1*Z1Z1
    H = FF_sub(U2, U1)  # H = U2 - U1
    S2mS1 = FF_sub(S2, S1)
    if FF_is_zero(H):
        if FF_is_zero(S2mS1):
            return CC_jac_dbl(p)
        return CC_jac_identity()
    I = FF_sqr(FF_dbl(H))  # I = (2*H)^2
    J = FF_mul(H, I)  # J = H*I
    r = FF_dbl(S2mS1)  # r = 2*(S2 - S1)
    V = FF_mul(U1, I)  # V = U1*I
    X3 = FF_sub(FF_sub(FF_sub(FF_sqr(r), J), V), V)  # X3 = r^2 - J - 2*V
    Y3 = FF_sub(FF_mul(r, FF_sub(V, X3)), FF_dbl(FF_mul(S1, J)))  # Y3 = r*(V - X3) - 2*S1*J
    Z3 = FF_mul(FF_sub(FF_sub(FF_sqr(FF_add(Z1, Z2)), Z1Z1), Z2Z2), H)  # Z3 = ((Z1+Z2)^2 - Z1Z1 - Z2Z2)*H
    return (X3, Y3, Z3)


@jitable
def CC_jac_to_affine(p):
    if CC_jac_is_identity(p):
        return CC_affine_identity()
    zi = FF_inv(p[2])
    zi2 = FF_sqr(zi)
    return (FF_mul(p[0], zi2), FF_mul(p[1], FF_mul(zi2, zi)))


@jitable
def CC_jac_to_xyzz(p):
    if CC_jac_is_identity(p):
        return CC_xyzz_identity()
    ZZ = FF_sqr(p[2])
    return (p[0], p[1], ZZ, FF_mul(ZZ, p[2]))


@jitable
def CC_xyzz_to_jac(p):
    """(X*ZZ^2, Y*ZZZ^2, ZZZ): valid because ZZ^3 = ZZZ^2."""
    if CC_xyzz_is_identity(p):
        return CC_jac_identity()
    X, Y, ZZ, ZZZ = p
    return (FF_mul(X, FF_sqr(ZZ)), FF_mul(Y, FF_sqr(ZZZ)), ZZZ)


@jitable
def CC_jac_mul(q, k):
    """k*q (Jacobian result) for affine q and a canonical scalar k as a tuple of 8 uint32 limbs."""
    acc = CC_jac_identity()
    for w in range(7, -1, -1):
        kw = k[w]
        for b in range(31, -1, -1):
            acc = CC_jac_dbl(acc)
            if (kw >> U32(b)) & U32(1):
                acc = CC_jac_add_affine(acc, q)
    return acc


# ---------------------------------------------------------------- array access (point layouts of the API)


@jitable
def CC_load_affine(arr, i):
    """Affine point i of a (n, 2, ...) array."""
    return (FF_load2(arr, i, 0), FF_load2(arr, i, 1))


@jitable
def CC_store_affine(arr, i, q):
    FF_store2(arr, i, 0, q[0])
    FF_store2(arr, i, 1, q[1])


@jitable
def CC_load_xyzz(arr, i):
    """XYZZ point i of a (n, 4, ...) array."""
    return (FF_load2(arr, i, 0), FF_load2(arr, i, 1), FF_load2(arr, i, 2), FF_load2(arr, i, 3))


@jitable
def CC_store_xyzz(arr, i, p):
    FF_store2(arr, i, 0, p[0])
    FF_store2(arr, i, 1, p[1])
    FF_store2(arr, i, 2, p[2])
    FF_store2(arr, i, 3, p[3])


@jitable
def CC_load_jac(arr, i):
    """Jacobian point i of a (n, 3, ...) array."""
    return (FF_load2(arr, i, 0), FF_load2(arr, i, 1), FF_load2(arr, i, 2))


@jitable
def CC_store_jac(arr, i, p):
    FF_store2(arr, i, 0, p[0])
    FF_store2(arr, i, 1, p[1])
    FF_store2(arr, i, 2, p[2])


@jitable
def CC_load_scalar(arr, i):
    """Canonical scalar i of a (n, 8) uint32 array as a tuple."""
    return (arr[i, 0], arr[i, 1], arr[i, 2], arr[i, 3], arr[i, 4], arr[i, 5], arr[i, 6], arr[i, 7])


# ---------------------------------------------------------------- CPU batch kernels


@njit(nogil=True, cache=cache_enabled())
def _CC_xyzz_to_affine_n(lo, hi, pts, out):
    # Batch normalisation: Montgomery's trick over the ZZZ coordinates of [lo, hi), one inversion.
    acc = FF_one()
    for i in range(lo, hi):
        p = CC_load_xyzz(pts, i)
        FF_store2(out, i, 0, acc)  # prefix product before i, kept in out[i, 0]
        if not CC_xyzz_is_identity(p):
            acc = FF_mul(acc, p[3])
    inv = FF_inv(acc)
    for i in range(hi - 1, lo - 1, -1):
        p = CC_load_xyzz(pts, i)
        if CC_xyzz_is_identity(p):
            CC_store_affine(out, i, CC_affine_identity())
            continue
        i3 = FF_mul(FF_load2(out, i, 0), inv)  # 1/ZZZ
        inv = FF_mul(inv, p[3])
        zi = FF_mul(p[2], i3)  # 1/Z = ZZ/ZZZ
        CC_store_affine(out, i, (FF_mul(p[0], FF_sqr(zi)), FF_mul(p[1], i3)))


@njit(nogil=True, cache=cache_enabled())
def _CC_jac_to_xyzz_n(lo, hi, pts, out):
    for i in range(lo, hi):
        CC_store_xyzz(out, i, CC_jac_to_xyzz(CC_load_jac(pts, i)))


@njit(nogil=True, cache=cache_enabled())
def _CC_mul_n(lo, hi, pts, scalars, out):
    for i in range(lo, hi):
        CC_store_xyzz(out, i, CC_xyzz_mul(CC_load_affine(pts, i), CC_load_scalar(scalars, i)))


@njit(nogil=True, cache=cache_enabled())
def _CC_add_affine_n(lo, hi, a, b, out):
    for i in range(lo, hi):
        p = CC_xyzz_from_affine(CC_load_affine(a, i))
        CC_store_xyzz(out, i, CC_xyzz_add_affine(p, CC_load_affine(b, i)))


@njit(nogil=True, cache=cache_enabled())
def _CC_dbl_affine_n(lo, hi, a, out):
    for i in range(lo, hi):
        CC_store_xyzz(out, i, CC_xyzz_dbl_affine(CC_load_affine(a, i)))


@njit(nogil=True, cache=cache_enabled())
def _CC_check_n(lo, hi, pts, subgroup, out):
    # out[i]: 0 ok, 1 not on the curve, 2 on the curve but not in the r-torsion subgroup.
    for i in range(lo, hi):
        q = CC_load_affine(pts, i)
        if not CC_is_on_curve(q):
            out[i] = 1
        elif subgroup and not CC_in_subgroup(q):
            out[i] = 2
        else:
            out[i] = 0


@njit(nogil=True, cache=cache_enabled())
def _CC_sum_xyzz(pts):
    acc = CC_xyzz_identity()
    for i in range(pts.shape[0]):
        acc = CC_xyzz_add(acc, CC_load_xyzz(pts, i))
    return acc
