# ruff: noqa
# mypy: ignore-errors
"""Template for the generic part of a prime-field module; gpu/codegen.py instantiates it for Fr and Fq.

Placeholders: FF_ (name prefix, e.g. fr_), FFNAME, FFLIMBS (limb count), FFPM2 (limbs of modulus - 2).
Everything after the marker is copied into gpu/arith/_generated/<field>.py below the straight-line core (FF_mul,
FF_add, ... defined there).
"""

# --- TEMPLATE START ---

# ---------------------------------------------------------------- exponentiation (device + CPU)

FF_PM2 = FFPM2  # modulus - 2, the Fermat exponent for inversion


@jitable
def FF_pow(a, e):
    """a^e for a Montgomery element a and a 1-D uint32 array e of little-endian exponent limbs."""
    r = FF_one()
    nbits = e.shape[0] * 32
    for k in range(nbits - 1, -1, -1):
        r = FF_sqr(r)
        if (e[k >> 5] >> U32(k & 31)) & U32(1):
            r = FF_mul(r, a)
    return r


@jitable
def FF_inv(a):
    """a^-1 (Fermat, a^(p-2)); the inverse of 0 is reported as 0."""
    return FF_pow(a, FF_PM2)


# ---------------------------------------------------------------- CPU batch kernels, (n, FFLIMBS) uint32 arrays


@njit(nogil=True, cache=cache_enabled())
def _FF_mul_n(lo, hi, a, b, out):
    for i in range(lo, hi):
        FF_store(out, i, FF_mul(FF_load(a, i), FF_load(b, i)))


@njit(nogil=True, cache=cache_enabled())
def _FF_mul_scalar_n(lo, hi, a, b, out):
    s = FF_load(b, 0)
    for i in range(lo, hi):
        FF_store(out, i, FF_mul(FF_load(a, i), s))


@njit(nogil=True, cache=cache_enabled())
def _FF_sqr_n(lo, hi, a, out):
    for i in range(lo, hi):
        FF_store(out, i, FF_sqr(FF_load(a, i)))


@njit(nogil=True, cache=cache_enabled())
def _FF_add_n(lo, hi, a, b, out):
    for i in range(lo, hi):
        FF_store(out, i, FF_add(FF_load(a, i), FF_load(b, i)))


@njit(nogil=True, cache=cache_enabled())
def _FF_sub_n(lo, hi, a, b, out):
    for i in range(lo, hi):
        FF_store(out, i, FF_sub(FF_load(a, i), FF_load(b, i)))


@njit(nogil=True, cache=cache_enabled())
def _FF_neg_n(lo, hi, a, out):
    for i in range(lo, hi):
        FF_store(out, i, FF_neg(FF_load(a, i)))


@njit(nogil=True, cache=cache_enabled())
def _FF_pow_n(lo, hi, a, e, out):
    for i in range(lo, hi):
        FF_store(out, i, FF_pow(FF_load(a, i), e))


@njit(nogil=True, cache=cache_enabled())
def _FF_inv_n(lo, hi, a, out):
    for i in range(lo, hi):
        FF_store(out, i, FF_inv(FF_load(a, i)))


@njit(nogil=True, cache=cache_enabled())
def _FF_batch_inv_n(lo, hi, a, out):
    # Montgomery's trick over [lo, hi): one inversion and 3(n-1) multiplications; zeros map to zero.
    acc = FF_one()
    for i in range(lo, hi):
        FF_store(out, i, acc)
        x = FF_load(a, i)
        if not FF_is_zero(x):
            acc = FF_mul(acc, x)
    inv = FF_inv(acc)
    for i in range(hi - 1, lo - 1, -1):
        x = FF_load(a, i)
        if FF_is_zero(x):
            FF_store(out, i, FF_zero())
        else:
            FF_store(out, i, FF_mul(FF_load(out, i), inv))
            inv = FF_mul(inv, x)


# ---------------------------------------------------------------- host API

FF_BYTES = FFLIMBS * 4
_FF_MOD_LIMBS = np.array([(MODULUS >> (32 * j)) & 0xFFFFFFFF for j in range(FFLIMBS)], dtype=np.uint32)
_FF_R2 = np.array([FF_r2()], dtype=np.uint32)
_FF_RAW1 = np.array([FF_raw_one()], dtype=np.uint32)


def _FF_arr(a, name="a"):
    a = np.ascontiguousarray(a)
    if a.dtype != np.uint32 or a.ndim != 2 or a.shape[1] != FFLIMBS:
        raise ValueError(f"{name} must be a (n, FFLIMBS) uint32 array, got {a.dtype} {a.shape}")
    return a


def _FF_out(out, n):
    if out is None:
        return np.empty((n, FFLIMBS), dtype=np.uint32)
    return _FF_arr(out, "out")


def FF_mul_batch(a, b, out=None):
    """Element-wise Montgomery product of two (n, FFLIMBS) arrays; b may also be a single (1, FFLIMBS) row."""
    a, b = _FF_arr(a), _FF_arr(b, "b")
    out = _FF_out(out, a.shape[0])
    if b.shape[0] == 1 and a.shape[0] != 1:
        parallel_for(_FF_mul_scalar_n, a.shape[0], a, b, out)
    else:
        if b.shape != a.shape:
            raise ValueError(f"shape mismatch {a.shape} vs {b.shape}")
        parallel_for(_FF_mul_n, a.shape[0], a, b, out)
    return out


def FF_sqr_batch(a, out=None):
    """Element-wise Montgomery square."""
    a = _FF_arr(a)
    out = _FF_out(out, a.shape[0])
    parallel_for(_FF_sqr_n, a.shape[0], a, out)
    return out


def FF_add_batch(a, b, out=None):
    """Element-wise a + b mod p (any form: addition commutes with the Montgomery map)."""
    a, b = _FF_arr(a), _FF_arr(b, "b")
    if b.shape != a.shape:
        raise ValueError(f"shape mismatch {a.shape} vs {b.shape}")
    out = _FF_out(out, a.shape[0])
    parallel_for(_FF_add_n, a.shape[0], a, b, out)
    return out


def FF_sub_batch(a, b, out=None):
    """Element-wise a - b mod p."""
    a, b = _FF_arr(a), _FF_arr(b, "b")
    if b.shape != a.shape:
        raise ValueError(f"shape mismatch {a.shape} vs {b.shape}")
    out = _FF_out(out, a.shape[0])
    parallel_for(_FF_sub_n, a.shape[0], a, b, out)
    return out


def FF_neg_batch(a, out=None):
    """Element-wise -a mod p."""
    a = _FF_arr(a)
    out = _FF_out(out, a.shape[0])
    parallel_for(_FF_neg_n, a.shape[0], a, out)
    return out


def FF_pow_batch(a, e, out=None):
    """Element-wise a^e (Montgomery in and out) for a non-negative Python int exponent e."""
    a = _FF_arr(a)
    if e < 0:
        raise ValueError("negative exponent: invert first")
    nl = max(1, (e.bit_length() + 31) // 32)
    ex = np.array([(e >> (32 * j)) & 0xFFFFFFFF for j in range(nl)], dtype=np.uint32)
    out = _FF_out(out, a.shape[0])
    parallel_for(_FF_pow_n, a.shape[0], a, ex, out)
    return out


def FF_inv_batch(a, out=None, *, method="montgomery"):
    """Element-wise inverse (0 maps to 0). method="montgomery": Montgomery's batch trick, one Fermat
    inversion per parallel chunk; method="fermat": one exponentiation per element."""
    a = _FF_arr(a)
    out = _FF_out(out, a.shape[0])
    if a.shape[0] == 0:
        return out
    if method == "fermat":
        parallel_for(_FF_inv_n, a.shape[0], a, out)
    elif method == "montgomery":
        parallel_for(_FF_batch_inv_n, a.shape[0], a, out, min_chunk=256)
    else:
        raise ValueError(f"unknown method {method!r}")
    return out


def FF_is_canonical(a):
    """Boolean mask of rows whose integer value is below the modulus."""
    a = _FF_arr(a)
    lt = np.zeros(a.shape[0], dtype=bool)
    eq = np.ones(a.shape[0], dtype=bool)
    for j in range(FFLIMBS - 1, -1, -1):
        lt |= eq & (a[:, j] < _FF_MOD_LIMBS[j])
        eq &= a[:, j] == _FF_MOD_LIMBS[j]
    return lt


def FF_from_ints(values):
    """Canonical (not Montgomery) limbs of integers in [0, modulus); raises ValueError otherwise."""
    values = list(values)
    for v in values:
        if not 0 <= v < MODULUS:
            raise ValueError(f"{v:#x} is not a canonical FFNAME element")
    buf = b"".join(v.to_bytes(FF_BYTES, "little") for v in values)
    return np.frombuffer(buf, dtype="<u4").astype(np.uint32).reshape(len(values), FFLIMBS)


def FF_to_ints(a):
    """Integers of a (n, FFLIMBS) array of canonical limbs."""
    a = _FF_arr(a)
    raw = a.astype("<u4").tobytes()
    return [int.from_bytes(raw[i * FF_BYTES : (i + 1) * FF_BYTES], "little") for i in range(a.shape[0])]


def FF_to_mont(a, out=None):
    """Canonical limbs -> Montgomery form (x -> xR mod p)."""
    return FF_mul_batch(a, _FF_R2, out)


def FF_from_mont(a, out=None):
    """Montgomery form -> canonical limbs (xR -> x)."""
    return FF_mul_batch(a, _FF_RAW1, out)


def FF_encode(values):
    """Python integers -> Montgomery (n, FFLIMBS) array."""
    return FF_to_mont(FF_from_ints(values))


def FF_decode(a):
    """Montgomery (n, FFLIMBS) array -> Python integers."""
    return FF_to_ints(FF_from_mont(a))


def FF_from_bytes(data, byteorder="little", *, reduce=False):
    """Canonical limbs from concatenated FF_BYTES-byte encodings. Non-canonical values raise ValueError
    unless reduce=True, which reduces them modulo the modulus (for hash outputs and the like)."""
    data = bytes(data)
    if len(data) % FF_BYTES:
        raise ValueError(f"length {len(data)} is not a multiple of {FF_BYTES}")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, FF_BYTES)
    if byteorder == "big":
        raw = raw[:, ::-1]
    elif byteorder != "little":
        raise ValueError("byteorder must be 'little' or 'big'")
    a = np.ascontiguousarray(raw).view("<u4").astype(np.uint32)
    ok = FF_is_canonical(a)
    if not ok.all():
        if not reduce:
            raise ValueError(f"{int((~ok).sum())} non-canonical FFNAME encodings")
        bad = np.nonzero(~ok)[0]
        fixed = FF_from_ints([v % MODULUS for v in FF_to_ints(a[bad])])
        a[bad] = fixed
    return a


def FF_to_bytes(a, byteorder="little"):
    """Concatenated FF_BYTES-byte encodings of canonical limbs."""
    a = _FF_arr(a)
    raw = a.astype("<u4").view(np.uint8).reshape(-1, FF_BYTES)
    if byteorder == "big":
        raw = raw[:, ::-1]
    elif byteorder != "little":
        raise ValueError("byteorder must be 'little' or 'big'")
    return np.ascontiguousarray(raw).tobytes()


def FF_random(n, rng=None):
    """n uniformly random canonical elements (limbs), from a numpy Generator."""
    rng = np.random.default_rng() if rng is None else rng
    out = np.empty((0, FFLIMBS), dtype=np.uint32)
    while out.shape[0] < n:
        cand = rng.integers(0, 1 << 32, size=(2 * (n - out.shape[0]) + 8, FFLIMBS), dtype=np.uint64).astype(np.uint32)
        top_bits = int(_FF_MOD_LIMBS[FFLIMBS - 1]).bit_length()
        cand[:, FFLIMBS - 1] &= np.uint32((1 << top_bits) - 1)
        out = np.concatenate([out, cand[FF_is_canonical(cand)]])
    return np.ascontiguousarray(out[:n])
