"""How far two correct implementations of one floating-point operation may
differ, whatever order each adds in (docs/numerics.md, "Comparing with another
implementation"). Every Python test that compares attn-trace with another
implementation (numpy, PyTorch, plain Python) bounds each cell with these.

Each bound is for ONE operation computed by both sides from the same inputs
(the tool's own values of the steps it reads), so that an error never carries
from one step into the next. A bound is `absolute + relative·(|a| + |b|)`, cell
by cell, for the two results a and b:

- a sum of k products, in a format with unit roundoff u, is within
  γ_k·Σ|terms| of the exact sum in any order, with or without fused
  multiply-adds (Higham, Accuracy and Stability of Numerical Algorithms,
  §3.1), γ_k = k·u / (1 − k·u); both sides err, so |a − b| ≤ 2·γ_k·Σ|terms|;
- a result rounded to a narrower format (f16, bf16) after an f32 computation
  adds u of that format times the result, per side;
- an operation done once, correctly rounded, errs by u·|result| per side;
- exp (and sin, cos, pow) come from a library: LIBRARY_ULPS ulps per call;
- NaN and ±inf are never within a bound: `compare` wants them in the same
  cells, exactly.

Nothing here knows which implementation is right: a bound only says how far
two right ones can be apart, and a cell beyond it is wrong on one side.
"""
import math
from typing import NamedTuple

import numpy as np


class Format(NamedTuple):
    name: str
    u: float  # unit roundoff of the arithmetic (f32 for f16 and bf16: they compute in f32)
    u_store: float  # unit roundoff of the stored result (0: stored as computed)
    tiny: float  # half the smallest subnormal of the arithmetic: an underflow's error
    tiny_store: float  # the same for the stored format


FORMATS = {
    "f64": Format("f64", 2.0**-53, 0.0, 2.0**-1075, 0.0),
    "f32": Format("f32", 2.0**-24, 0.0, 2.0**-150, 0.0),
    "f16": Format("f16", 2.0**-24, 2.0**-11, 2.0**-150, 2.0**-25),
    "bf16": Format("bf16", 2.0**-24, 2.0**-8, 2.0**-150, 2.0**-134),
}

# ulps of a library's exp, sin, cos or pow, per call: glibc's double exp is
# within 0.52 ulp, SLEEF's u10 functions (PyTorch's vectorised float exp, the
# forward plan's) within 1 ulp; numpy's AVX-512 double exp is documented to
# 2.52 ulps (2 from glibc's measured here). 4 holds for all of them.
LIBRARY_ULPS = 4


def gamma(k, u):
    """γ_k = k·u / (1 − k·u): the relative error of k roundings (Higham's γ)."""
    if k * u >= 1:
        raise ValueError(f"γ_{k} does not exist for u = {u:g}: k·u ≥ 1")
    return k * u / (1 - k * u)


def _rounded_from_double(fmt):
    """Relative error of a double rounded to fmt's stored numbers: once to the
    arithmetic's format, then to the stored one (f16: through f32 or not)."""
    if fmt.name == "f64":
        return 0.0
    return fmt.u + fmt.u_store + fmt.u * fmt.u_store


class Bound:
    """|a − b| ≤ absolute + relative·(|a| + |b|), cell by cell (numpy arrays or
    numbers that broadcast to the step's shape)."""

    def __init__(self, absolute=0.0, relative=0.0):
        self.absolute = absolute
        self.relative = relative

    def limit(self, a, b):
        return self.absolute + self.relative * (np.abs(a) + np.abs(b))

    def where(self, cells, other):
        """This bound in `cells`, `other` elsewhere."""
        shape = np.shape(cells)
        return Bound(np.where(cells, np.broadcast_to(self.absolute, shape), other.absolute),
                     np.where(cells, np.broadcast_to(self.relative, shape), other.relative))


def _relative(per_side):
    """Both sides within `per_side`·|exact| of the exact value: |a − b| ≤
    2·per_side·|exact| ≤ per_side·(|a| + |b|)/(1 − per_side)."""
    return per_side / (1 - per_side)


def exact():
    """Both sides must agree bit for bit (copies, masks, max, the same rounding
    of the same double)."""
    return Bound()


def given(fmt):
    """A number from the lesson, a double rounded to the format by each side
    (PyTorch rounds f64 → f32 → f16, the tool once: they may differ by one unit)."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    r = _rounded_from_double(fmt)
    return Bound(2 * fmt.tiny_store + 2 * fmt.tiny, _relative(r))


def computed_in_double(fmt, error):
    """A value each side computes in double within `error` (absolute, per side)
    of the exact one, then rounds to the format."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    r = _rounded_from_double(fmt)
    return Bound(2 * np.asarray(error) / (1 - r) + 2 * (fmt.tiny + fmt.tiny_store), _relative(r))


def elementwise(fmt, operations=1):
    """A value each side computes with `operations` correctly rounded operations
    (+ − × ÷ √) in the arithmetic's format, each erring relative to its own
    result, then stores: per side (1 + u)^ops·(1 + u_store) − 1."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    per_side = gamma(operations, fmt.u) + fmt.u_store * (1 + gamma(operations, fmt.u))
    return Bound(2 * operations * fmt.tiny + 2 * fmt.tiny_store, _relative(per_side))


def library(fmt):
    """A library function (exp, sin, cos) of an exact input, within LIBRARY_ULPS
    ulps (one ulp ≤ 2u·|result|), then stored."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    lib = 2 * LIBRARY_ULPS * fmt.u
    per_side = lib + fmt.u_store * (1 + lib)
    return Bound(2 * LIBRARY_ULPS * fmt.tiny + 2 * fmt.tiny_store, _relative(per_side))


def _abs_terms(A, B):
    """Σ_t |A[i,t]·B[t,j]|: (n,k)·(k,p) -> (n,p), computed in double, raised by
    its own worst rounding (every term is ≥ 0, so γ_k of the result)."""
    A, B = np.abs(np.asarray(A, dtype=float)), np.abs(np.asarray(B, dtype=float))
    k = A.shape[1]
    return (A @ B) * (1 + gamma(k + 1, 2.0**-53))


def sum_of_terms(terms, fmt, count, stores=1):
    """A sum of `count` rounded terms whose |terms| add up to `terms` (an
    array): per side within γ_count·terms of the exact sum, in any order; each
    of `stores` roundings to a narrower format adds u_store·terms."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    terms = np.asarray(terms, dtype=float)
    per_side = (gamma(count, fmt.u) + stores * fmt.u_store * (1 + gamma(count, fmt.u))) * terms
    # one more rounding of the result (the last store) is relative to |a|, |b|
    # too, but |result| ≤ Σ|terms| makes it part of per_side already.
    return Bound(2 * per_side + 2 * count * fmt.tiny + 2 * stores * fmt.tiny_store)


def product(A, B, fmt, bias=None, stores=1):
    """A·B (+ bias, a row added to every row) from the same A and B: each cell a
    sum of k products (k + 1 terms with the bias), in any order, FMA or not."""
    terms = _abs_terms(A, B)
    count = np.shape(A)[1]
    if bias is not None:
        terms = terms + np.abs(np.asarray(bias, dtype=float)).reshape(1, -1)
        count += 1
    return sum_of_terms(terms, fmt, max(count, 1), stores)


def row_sum(E, fmt):
    """Σ_j E[i, j] (n,m) -> (n,1): m terms, any order."""
    E = np.asarray(E, dtype=float)
    terms = np.abs(E).sum(axis=1, keepdims=True) * (1 + gamma(E.shape[1] + 1, 2.0**-53))
    return sum_of_terms(terms, fmt, max(E.shape[1], 1))


def mean(values, fmt):
    """The mean over the first axis of `values` (h,n,m) -> (n,m): h terms
    summed, then one division (or a multiplication by 1/h, rounded itself)."""
    values = np.asarray(values, dtype=float)
    h = values.shape[0]
    terms = np.abs(values).sum(axis=0) / h * (1 + gamma(h + 1, 2.0**-53))
    return sum_of_terms(terms, fmt, h + 2)


def softmax(x, fmt, divide_operations=2):
    """The stable row softmax of x (n,m), the same x on both sides: per side,
    w_j = exp(x_j − M) / Σ_k exp(x_k − M), M the row max (exact). Relative
    error per side of w_j, to first order:
      u·|x_j − M| + lib          (the subtraction's rounding, amplified by exp)
    + Σ_k w_k·(u·|x_k − M| + lib) + γ_m   (the sum: a weighted mean of its terms' errors)
    + divide_operations·u        (÷ Σ, or × a rounded 1/Σ)
    then stored. Rows with no finite max (every key -inf) are the caller's."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    x = np.asarray(x, dtype=float)
    m = x.shape[1]
    u, lib = fmt.u, 2 * LIBRARY_ULPS * fmt.u
    with np.errstate(invalid="ignore", over="ignore"):
        top = x.max(axis=1, keepdims=True)
        shifted = np.where(np.isfinite(x), np.abs(x - top), 0.0)
        w = np.exp(-shifted) * np.isfinite(x)
        w = w / np.maximum(w.sum(axis=1, keepdims=True), 1.0)
    # The exact exp(u·d) − 1, not u·d: for a fill like -1e9, u·d is large, and
    # then the weight is 0 on both sides anyway.
    own = np.expm1(u * shifted * (1 + u)) + lib
    total = (w * own).sum(axis=1, keepdims=True) * (1 + 1e-6) + lib + gamma(m, u)
    core = (1 + own) * (1 + total) * (1 + gamma(divide_operations, u)) - 1
    per_side = core + fmt.u_store * (1 + core)
    # an exp that underflows errs by `tiny` absolutely; the sum is ≥ 1.
    absolute = 2 * ((LIBRARY_ULPS + 2) * fmt.tiny + fmt.tiny_store)
    return Bound(absolute, _relative(np.minimum(per_side, 0.5)))


def positional_error(n, d):
    """Per side, the absolute error of PE(pos, j) computed in double:
    angle = pos / 10000^(2i/d) is within 16u·angle (the division 2i/d, pow's
    ulps and its condition ln(10000)·(2i/d) ≤ 9.22, the division by it), and
    sin or cos adds LIBRARY_ULPS ulps of a number ≤ 1. (n, d) -> (n, d)."""
    u = 2.0**-53
    two_i = (np.arange(d) - np.arange(d) % 2).astype(float)
    angle = np.arange(n, dtype=float)[:, None] / 10000.0 ** (two_i / d)[None, :]
    return (16 + 2 * LIBRARY_ULPS) * u * angle + 2 * LIBRARY_ULPS * u


def compare(got, want, bound):
    """Cells of `got` beyond `bound` from `want` (a boolean array), and the
    largest |got − want| / limit among finite cells (0 when all are equal).
    NaN must meet NaN and ±inf the same infinity, exactly."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(got) & np.isfinite(want)
        special = (np.isnan(got) & np.isnan(want)) | (~finite & (got == want))
        diff = np.where(finite, np.abs(got - want), 0.0)
        limit = np.broadcast_to(bound.limit(np.where(finite, got, 0.0),
                                            np.where(finite, want, 0.0)), got.shape)
        bad = ~(special | (finite & (diff <= limit)))
        ratio = np.where(finite & (diff > 0), diff / np.where(limit > 0, limit, np.inf), 0.0)
        ratio = np.where(finite & (diff > 0) & (limit == 0), np.inf, ratio)
    return bad, float(ratio.max()) if ratio.size else 0.0


def gelu(x, fmt="f64"):
    """The exact GELU 0.5·x·(1 + erf(x/√2)) of the same x: per side, the
    argument's two roundings move erf by ≤ u (erf'(z)·|z| ≤ 0.49), erf errs by
    LIBRARY_ULPS ulps of a number ≤ 1, 1 + erf by u·2: (8 + 2·LIBRARY_ULPS)/2·u·|x|
    in all, then the product's rounding u·|result|."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    x = np.abs(np.asarray(x, dtype=float))
    return Bound(2 * (4 + LIBRARY_ULPS) * fmt.u * x + 4 * fmt.tiny, _relative(fmt.u))


def row_mean(x, fmt="f64"):
    """The mean of each row of x (n,d) -> (n,1): d terms, then ÷ d."""
    x = np.asarray(x, dtype=float)
    d = x.shape[1]
    terms = np.abs(x).sum(axis=1, keepdims=True) / d * (1 + gamma(d + 1, 2.0**-53))
    return sum_of_terms(terms, fmt, d + 1)


def row_var(x, mean_column, fmt="f64"):
    """The biased variance of each row of x about the same mean (n,1) -> (n,1):
    d terms (x − mean)² / d, each with three roundings of its own (the
    subtraction counted twice: it is squared)."""
    x = np.asarray(x, dtype=float)
    d = x.shape[1]
    terms = ((x - mean_column) ** 2).sum(axis=1, keepdims=True) / d
    return sum_of_terms(terms * (1 + gamma(d + 4, 2.0**-53)), fmt, d + 4)


def normalise(fmt="f64"):
    """(x − mean) / √(var + eps) from the same numbers: four roundings, each
    relative to its own result, so relative to the cell's."""
    return elementwise(fmt, 4)


def scale_shift(gamma_row, normalised, beta_row, fmt="f64"):
    """γ ⊙ normalised + β: a sum of two terms per cell."""
    terms = np.abs(np.asarray(gamma_row) * np.asarray(normalised)) + np.abs(np.asarray(beta_row))
    return sum_of_terms(terms * (1 + 2 * 2.0**-53), fmt, 2)


class Carried:
    """A computed value (the cells of one step) with a bound on its distance
    from the exact result of the whole computation that made it, which holds
    for every implementation of the same formula in any summation order, the
    given numbers exact: two implementations differ by at most twice `error`.
    The carried_* functions are the operations, each adding its own rounding
    (the per-operation bounds above) to what its inputs carry, to first order
    (the second-order terms are smaller than the margins each keeps)."""

    def __init__(self, value, error=None):
        self.value = np.asarray(value, dtype=float)
        self.error = np.zeros_like(self.value) if error is None else np.asarray(error, dtype=float)

    @property
    def T(self):
        return Carried(self.value.T, self.error.T)


U64 = FORMATS["f64"].u


def carried_product(A, B, bias=None, divisor=1.0, extra=0):
    """Â±eA · B̂±eB (+ an exact bias row) (÷ divisor), with `extra` roundings
    besides the sum's (a scale). Another implementation's Â, B̂ lie within 2eA,
    2eB of these: |its result − exact| ≤ eA·|B̂| + |Â|·eB + 3·eA·eB (the inputs)
    + γ_k·(|Â| + 2eA)·(|B̂| + 2eB) (its own sum of k terms)."""
    absA, absB = np.abs(A.value), np.abs(B.value)
    spread = A.error @ absB + absA @ B.error + 3 * (A.error @ B.error)
    terms = absA @ absB
    value = A.value @ B.value
    k = A.value.shape[1] + extra
    if bias is not None:
        bias = np.asarray(bias, dtype=float).reshape(1, -1)
        terms, value, k = terms + np.abs(bias), value + bias, k + 1
    g = gamma(k + 1, U64)  # +1: these sums, done in double
    return Carried(value / divisor,
                   (spread * (1 + 3 * g) + g * terms) / divisor + k * FORMATS["f64"].tiny)


def carried_add(A, B):
    """Â + B̂, one rounding: each input's error, and u of the result."""
    value = A.value + B.value
    spread = A.error + B.error
    return Carried(value, spread * (1 + 2 * U64) + U64 * np.abs(value))


def carried_softmax(S):
    """The stable row softmax of Ŝ±e (-inf cells exact): the exact softmax of Ŝ
    is within w_j·expm1(e_j + max_k e_k) of that of S, and an implementation
    within `softmax`'s rounding of the exact softmax of its own Ŝ."""
    x = S.value
    with np.errstate(invalid="ignore", over="ignore"):
        top = x.max(axis=1, keepdims=True)
        w = np.exp(x - top)
        w = w / w.sum(axis=1, keepdims=True)
    finite = np.isfinite(x)
    spread = np.where(finite, S.error, 0.0).max(axis=1, keepdims=True)
    moved = np.expm1(np.where(finite, S.error, 0.0) + spread)
    local = softmax(x, "f64")
    error = np.abs(w) * ((1 + moved) * (1 + local.relative) - 1) * (1 + 1e-6) + local.absolute
    return Carried(w, np.where(finite, error, 0.0))


def carried_relu(x):
    """max(0, x): exact, and 1-Lipschitz."""
    return Carried(np.maximum(x.value, 0.0), x.error)


def carried_gelu(x):
    """The exact GELU: |GELU'| ≤ 1.13, and gelu()'s rounding per side."""
    erf = np.vectorize(math.erf)
    value = 0.5 * x.value * (1 + erf(x.value / math.sqrt(2)))
    local = gelu(np.abs(x.value) + x.error)
    return Carried(value, 1.13 * x.error * (1 + 1e-6) + local.absolute / 2
                   + local.relative * np.abs(value) * 2)


def carried_layer_norm(x, gamma_row, beta_row, eps):
    """LayerNorm of each row of x̂±e, γ and β exact: (n,d) -> (n,d).
    Input errors, to first order: δn_j = (δx_j − mean δx)/σ − n_j·δσ/σ with
    |δσ/σ| ≤ mean(|n|·e)/σ. The implementation's own rounding: the mean within
    γ_{d+1}·mean|x|; the variance within 4·γ_{d+4}·mean(x²), which holds for
    the two-pass, Welford's and the one-pass E[x²] − μ² algorithms alike; the
    normalisation a few u; γ·n + β a sum of two terms."""
    v, e = x.value, x.error
    d = v.shape[1]
    mu = v.mean(axis=1, keepdims=True)
    var = ((v - mu) ** 2).mean(axis=1, keepdims=True)
    sigma = np.sqrt(var + eps)
    n = (v - mu) / sigma
    gamma_row = np.asarray(gamma_row, dtype=float).reshape(1, -1)
    beta_row = np.asarray(beta_row, dtype=float).reshape(1, -1)
    y = gamma_row * n + beta_row
    if np.any(e.max(axis=1, keepdims=True) > 1e-6 * sigma):
        raise ValueError("carried_layer_norm: the input's error is not small beside σ")
    carried_in = ((e + e.mean(axis=1, keepdims=True)) / sigma
                  + np.abs(n) * (np.abs(n) * e).mean(axis=1, keepdims=True) / sigma)
    e_mean = gamma(d + 1, U64) * np.abs(v).mean(axis=1, keepdims=True)
    e_var = 4 * gamma(d + 4, U64) * (v ** 2).mean(axis=1, keepdims=True)
    own = ((e_mean + U64 * np.abs(v - mu)) / sigma
           + np.abs(n) * (e_var / (2 * (var + eps)) + 4 * U64))
    error = (np.abs(gamma_row) * (carried_in + own) * (1 + 1e-3)
             + gamma(2, U64) * (np.abs(gamma_row * n) + np.abs(beta_row)))
    return Carried(y, error)


def rope(x, shift):
    """RoPE's rotation of x (n, d) at positions p + shift, computed in double by
    each side: the angle (p + shift)·10000^(−2i/d) within 16u·angle (as
    positional_error's), sin and cos within LIBRARY_ULPS ulps plus the angle's
    error, then two products and a sum (3 roundings), each cell a combination
    of the pair (x, y) of its row: per side (|x| + |y|)·(16·angle + 2·LIBRARY_ULPS
    + 4)·u. (n, d) -> Bound."""
    u = 2.0**-53
    n, d = x.shape
    two_i = (np.arange(d) - np.arange(d) % 2).astype(float)
    angle = (np.arange(n, dtype=float)[:, None] + shift) / 10000.0 ** (two_i / d)[None, :]
    pair = np.abs(x[:, 0::2]) + np.abs(x[:, 1::2])
    magnitude = np.repeat(pair, 2, axis=1)
    return Bound(2 * magnitude * (16 * angle + 2 * LIBRARY_ULPS + 4) * u)


def alibi():
    """ALiBi's bias −m·|i − j|, m = 2^(−8(h+1)/H): exp2 within LIBRARY_ULPS ulps
    (exact where the exponent is a whole number), then one product."""
    return elementwise("f64", 2 * LIBRARY_ULPS + 1)
