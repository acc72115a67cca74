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


def library(fmt, operations=0):
    """A library function (exp, sin, cos) of an exact input, within LIBRARY_ULPS
    ulps (one ulp ≤ 2u·|result|), then `operations` rounded ones, then stored."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    lib = 2 * LIBRARY_ULPS * fmt.u
    core = (1 + lib) * (1 + gamma(operations, fmt.u)) - 1 if operations else lib
    per_side = core + fmt.u_store * (1 + core)
    return Bound(2 * (LIBRARY_ULPS + operations) * fmt.tiny + 2 * fmt.tiny_store,
                 _relative(per_side))


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
