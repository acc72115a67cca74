// `export --to pytorch`: the trace as one runnable Python script that rebuilds
// every step with PyTorch (float64, plain tensor ops named like the step ids)
// from the tool's values of the steps it reads, and asserts each agrees with
// the tool's value, which the script carries, within what floating point
// allows two correct results of that operation in any summation order (the
// script's own bound helpers, docs/pytorch.md). Nothing is computed here: each
// step's code and bound are written from the operation the trace recorded for
// it (Step::made), its numbers from the trace.
//
// Shape key: n queries, m keys, d_model (d_mem for memory), h heads, d_k, d_v.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/costs.hpp"
#include "core/error.hpp"
#include "core/golden.hpp"
#include "core/number_text.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// A double as Python reads it back bit for bit: the shortest decimal that
// rounds to it (never more than 17 significant digits), always a float
// literal ("1.0", "-0.0"), and inf / -inf / nan as the script names them.
std::string py_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// A Python string literal: "..." with \, " and control characters escaped.
std::string py_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"')
      out += fmt::format("\\{}", c);
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out + "\"";
}

// Text for a one-line comment: line breaks and control characters become spaces.
std::string comment_text(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

// The Python variable of a step: "head0.scores" -> head0_scores, "X+PE" -> X_plus_PE.
std::string py_name(std::string_view id) {
  std::string out;
  for (const char c : id) {
    if (c == '.')
      out += '_';
    else if (c == '+')
      out += "_plus_";
    else
      out += c;
  }
  return out;
}

// The section of the script a matrix of the lesson is given in.
const char* given_section(Given given) {
  switch (given) {
    case Given::X:
    case Given::memory:
      return "Inputs";
    case Given::W_Q:
    case Given::b_Q:
    case Given::W_K:
    case Given::b_K:
    case Given::W_V:
    case Given::b_V:
      return "Projections";
    case Given::W_O:
    case Given::b_O:
      return "Heads side by side, output projection";
    case Given::ln1_gamma:
    case Given::ln1_beta:
    case Given::ln2_gamma:
    case Given::ln2_beta:
    case Given::W_1:
    case Given::b_1:
    case Given::W_2:
    case Given::b_2:
      return "Encoder layer";
    case Given::target:
      return "Backward pass";
  }
  return "Encoder layer";
}

std::string py_row(const arma::rowvec& row) {
  std::string out = "[";
  for (arma::uword j = 0; j < row.n_elem; ++j) out += (j ? ", " : "") + py_number(row(j));
  return out + "]";
}

std::string py_shape(const arma::mat& M) {
  return fmt::format("({}, {})", M.n_rows, M.n_cols);
}

bool is_identity(const arma::mat& M) {
  return M.is_square() && M.n_rows > 0 &&
         arma::approx_equal(M, arma::eye(M.n_rows, M.n_cols), "absdiff", 0.0);
}

// Why nn.MultiheadAttention cannot compute this lesson as the trace does, or
// "" when it can: it projects queries, keys and values to one width
// (embed_dim = h·d_k, also d_model), divides by √head_dim, masks with -inf and
// leaves a query with every key masked NaN, and projects back embed_dim wide.
std::string why_not_multihead(const Lesson& lesson, const Trace& trace) {
  if (lesson.attention == AttentionKind::linear)
    return "it computes softmax attention, but this lesson's heads use linear attention "
           "(attention = \"linear\")";
  const arma::mat& W_Q = trace.at("W_Q").value;
  const std::size_t embed = W_Q.n_cols;
  if (lesson.kv_head_count() != lesson.heads)
    return fmt::format(
        "it gives every query head its own key and value head, but this lesson shares {} K/V "
        "head(s) among {} query heads (kv_heads = {}); torch 1.13 has no such flag, so the "
        "steps above repeat K and V per group instead (repeat_interleave)",
        lesson.kv_head_count(), lesson.heads, lesson.kv_head_count());
  if (lesson.positional_encoding == PositionalEncoding::rope)
    return "it has no rotary positions: the steps above rotate q and k themselves";
  if (lesson.positional_encoding == PositionalEncoding::alibi)
    return "it replaces a masked score instead of adding a per-head bias to every score: the "
           "steps above add ALiBi's bias themselves";
  if (lesson.d_v != lesson.d_k)
    return fmt::format(
        "its values are as wide as its queries and keys (head_dim for all three), but this "
        "lesson has d_k = {} and d_v = {}",
        lesson.d_k, lesson.d_v);
  if (W_Q.n_rows != embed)
    return fmt::format(
        "its queries come in and go out embed_dim wide (W_Q embed_dim × embed_dim), but this "
        "lesson's W_Q is {} (d_model {}, h·d_k {})",
        shape_str(W_Q.n_rows, W_Q.n_cols), W_Q.n_rows, embed);
  if (const Step* W_O = trace.find("W_O");
      W_O && (W_O->value.n_rows != embed || W_O->value.n_cols != embed))
    return fmt::format("its out_proj is embed_dim × embed_dim ({}), but this lesson's W_O is {}",
                       shape_str(embed, embed), shape_str(W_O->value.n_rows, W_O->value.n_cols));
  if (trace.scale != std::sqrt(static_cast<double>(lesson.d_k)))
    return fmt::format(
        "it always divides the scores by √head_dim = √{}, but this lesson divides by {}",
        lesson.d_k, short_number(trace.scale));
  const bool any_masked = arma::any(arma::vectorise(trace.mask));
  if (any_masked && lesson.mask_fill != -arma::datum::inf)
    return fmt::format(
        "it masks a score by adding -inf (or a float mask you give), but this lesson replaces "
        "masked scores by the fill {}, which no added mask does",
        short_number(lesson.mask_fill));
  const bool row_all_masked = arma::any(arma::all(trace.mask != 0u, 1));
  if (row_all_masked && lesson.masked_row != MaskedRowPolicy::nan)
    return fmt::format(
        "a query with every key masked gets NaN weights there, but this lesson sets them to {} "
        "(masked_row = \"{}\")",
        lesson.masked_row == MaskedRowPolicy::zero ? "0" : "1/m",
        lesson.masked_row == MaskedRowPolicy::zero ? "zero" : "uniform");
  return "";
}

// Comparing with the tool's steps: compare(), the bound helpers, fail().
constexpr const char* kCompareHelpers = R"PY(checked = set()


def compare(label, value, step_id, bound=0.0):
    """`value` against the tool's step `step_id`: its shape, NaN and ±inf in the
    same cells, every other cell within `bound` (how far two correct results may
    be apart: the bound helpers below; 0, exactly). Prints one line; exits with 1
    at the first difference; returns the tool's value, for the steps after it."""
    want = TOOL[step_id]
    got = value.detach().to(torch.float64)
    if got.dim() == 1:  # a bias or a LayerNorm parameter: the trace holds one row
        got = got.unsqueeze(0)
    if isinstance(want, tuple):  # a large given matrix, not repeated in this file
        if tuple(got.shape) != want:
            fail(label, f"shape {tuple(got.shape)}, the tool's {want}")
        print(f"ok   {label:<30} {got.shape[0]}x{got.shape[1]:<8} given (its numbers are the lesson's)")
        return value
    want = torch.tensor(want, dtype=torch.float64)
    if got.shape != want.shape:
        fail(label, f"shape {tuple(got.shape)}, the tool's {tuple(want.shape)}")
    bound = torch.as_tensor(bound, dtype=torch.float64)
    bound = (bound.unsqueeze(0) if bound.dim() == 1 else bound).expand_as(want)
    same = (got == want) | (got.isnan() & want.isnan())
    finite = got.isfinite() & want.isfinite()
    apart = (got - want).abs()
    same |= finite & (apart <= bound)
    if not bool(same.all()):
        i, j = (int(k) for k in (~same).nonzero()[0])
        fail(label, f"cell ({i}, {j}): PyTorch {got[i, j].item()!r}, the tool {want[i, j].item()!r}"
                    + (f", apart by {apart[i, j].item():.3g} > {bound[i, j].item():.3g}"
                       if bool(finite[i, j]) else ""))
    worst = float(apart[finite].max()) if bool(finite.any()) else 0.0
    share = float((apart / bound)[finite & (apart > 0)].max()) if bool((finite & (apart > 0)).any()) else 0.0
    print(f"ok   {label:<30} {got.shape[0]}x{got.shape[1]:<8} max |diff| {worst:.1e} ({share:.2g} of its bound)")
    return want if value.dim() == 2 else want[0]


def check(step_id, value, bound=0.0):
    """One step of the trace, computed here from the tool's values of the steps it
    reads, against the tool's; the tool's value, for the steps after it."""
    checked.add(step_id)
    return compare(step_id, value, step_id, bound)


def fail(label, why):
    print(f"FAIL {label}: {why}")
    sys.exit(1)


def finish():
    missing = [step_id for step_id in TOOL if step_id not in checked]
    if missing:
        fail("trace", f"steps not rebuilt here: {', '.join(missing)}")
    print(f"all {len(checked)} steps equal the tool's, each within its bound")


# How far two correct float64 results of one operation, from the same inputs, may
# be apart, whatever order each adds in: the `bound` of each check (docs/pytorch.md).


def gamma(k):
    """γ_k = k·u / (1 − k·u): how far k roundings can move a result, relatively."""
    return k * U / (1 - k * U)


def within(value, relative):
    """Both results within `relative`·|exact| of the exact one: apart by at most
    2·relative·|exact| ≤ 2·relative·|value| / (1 − relative)."""
    return 2 * relative / (1 - relative) * value.abs()


def rounded(value, operations=1):
    """`operations` correctly rounded operations (+ − × ÷ √) on the same numbers."""
    return within(value, gamma(operations))


def library(value):
    """exp, sin, cos or erf of the same numbers: LIBRARY_ULPS ulps of the result."""
    return within(value, 2 * LIBRARY_ULPS * U)


def product(A, B, bias=None):
    """A @ B (+ bias) from the same A and B: a cell, a sum of k products added in any
    order, with or without fused multiply-adds, is within γ_k·Σ|terms| of the exact
    sum. A result that cancels to nearly 0 may differ by many of its own ulps."""
    terms = A.abs() @ B.abs()
    k = A.shape[-1]
    if bias is not None:
        terms, k = terms + bias.abs(), k + 1
    return 2 * gamma(k + 1) * terms  # k + 1: this sum of |terms| is rounded too


def sums(E, extra=0):
    """Σ_j E[i, j] from the same E: m terms in any order, `extra` more roundings each."""
    return 2 * gamma(E.shape[-1] + 1 + extra) * E.abs().sum(dim=-1, keepdim=True)


def elu_bound(value):
    """elu(x) + 1 (expm1, then + 1) against exp(x) or x + 1: a library call and two
    roundings, on |value| + 1 (the + 1 may cancel most of expm1's result)."""
    return 2 * (LIBRARY_ULPS + 2) * U * (value.abs() + 1)


def tile_exp(S, m):
    """exp(S − m) of a block, 0 where m = −inf (nothing open yet), and how far two
    correct results are apart relatively: the difference's rounding, moved by exp
    by |S − m| ulps, and the library's exp."""
    open_row = m > -math.inf
    d = torch.where(open_row, S - m, torch.full_like(S, -math.inf))
    P = torch.exp(d)
    spread = torch.where(P > 0, d.abs(), torch.zeros_like(d))
    return P, (LIBRARY_ULPS + 1) * U + U * spread


def tile_max(S, m_old):
    m = S.max(dim=-1, keepdim=True).values
    return m if m_old is None else torch.maximum(m, m_old)


def tile_rescale(m, m_old):
    if m_old is None:
        m_old = torch.full_like(m, -math.inf)
    alpha, relative = tile_exp(m_old, m)
    alpha = torch.where(m == -math.inf, torch.ones_like(m), alpha)
    return alpha, within(alpha, relative)


def tile_sum(S, m, alpha, l_old):
    P, relative = tile_exp(S, m)
    total = P.sum(dim=-1, keepdim=True)
    terms = total
    if l_old is not None:
        total, terms = alpha * l_old + total, alpha * l_old + terms
    return total, within(terms, gamma(S.shape[-1] + 2) + relative.max())


def tile_acc(S, m, alpha, V_block, O_old):
    P, relative = tile_exp(S, m)
    total, terms = P @ V_block, P @ V_block.abs()
    if O_old is not None:
        total, terms = alpha * O_old + total, alpha * O_old.abs() + terms
    return total, within(terms, gamma(S.shape[-1] + 2) + relative.max())


def softmax_bound(x, weights):
    """The stable softmax of each row of the same x; `weights` one result. Relative
    to w_j, each side errs by u·|x_j − max| + LIBRARY_ULPS ulps (the shift, then exp),
    by the sum's γ_m and its terms' errors weighted by w, and by 2u (÷ Σ, or × 1/Σ)."""
    lib = 2 * LIBRARY_ULPS * U
    shift = (x.amax(dim=-1, keepdim=True) - x).nan_to_num(0.0, 0.0, 0.0)  # -inf keys: 0
    own = torch.expm1(U * shift) + lib
    spread = (weights.nan_to_num(0.0) * own).sum(dim=-1, keepdim=True) + lib + gamma(x.shape[-1])
    return within(weights, ((1 + own) * (1 + spread) * (1 + gamma(2)) - 1).clamp(max=0.5))
)PY";

// The sinusoidal table, as tutorials write it.
constexpr const char* kPositionHelpers = R"PY(

def sinusoidal(n, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(the same): (n, d)."""
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)  # (n, 1): the positions
    two_i = (torch.arange(d) // 2 * 2).to(torch.float64)  # (d,): 0, 0, 2, 2, 4, ...
    angle = pos / torch.pow(10000.0, two_i / d)  # (n, d)
    return torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle))


def positions(n, d):
    """sinusoidal(n, d) computed twice: the angle within 16u of itself (2i/d, pow's
    ulps and its condition ln 10000·2i/d ≤ 9.22, the division), and sin or cos
    LIBRARY_ULPS ulps of a number ≤ 1."""
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    angle = pos / torch.pow(10000.0, (torch.arange(d) // 2 * 2).to(torch.float64) / d)
    return 2 * ((16 + 2 * LIBRARY_ULPS) * U * angle + 2 * LIBRARY_ULPS * U)
)PY";

// The encoder layer's bounds: LayerNorm and GELU.
constexpr const char* kLayerHelpers = R"PY(

def layer_norm_bound(x, gamma_, beta, eps):
    """F.layer_norm of the same x, to first order, per side: the mean within
    γ_{d+1}·mean|x|, the variance within 4·γ_{d+4}·mean(x²) (the two-pass, Welford's
    and the E[x²] − μ² algorithms alike), the normalisation a few u, γ·n + β two terms."""
    d = x.shape[-1]
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    sigma = torch.sqrt(var + eps)
    n = (x - mu) / sigma
    e_mean = gamma(d + 1) * x.abs().mean(dim=-1, keepdim=True)
    e_var = 4 * gamma(d + 4) * (x ** 2).mean(dim=-1, keepdim=True)
    own = (e_mean + U * (x - mu).abs()) / sigma + n.abs() * (e_var / (2 * (var + eps)) + 4 * U)
    return 2 * (1 + 1e-3) * (gamma_.abs() * own + gamma(2) * ((gamma_ * n).abs() + beta.abs()))


def gelu_bound(x, value):
    """F.gelu of the same x: x/√2 moves erf by ≤ u, erf errs by LIBRARY_ULPS ulps of a
    number ≤ 1, 1 + erf by 2u, all times |x|/2; then the product's rounding."""
    return 2 * (4 + LIBRARY_ULPS) * U * x.abs() + rounded(value)
)PY";

// Bounds carried through the modules that compute many steps in one call.
constexpr const char* kCarriedHelpers = R"PY(

# nn.MultiheadAttention and nn.TransformerEncoderLayer compute many steps in one
# call, from the lesson's own numbers: each carried_* step is the value and how far
# any float64 computation of everything that made it may be from the exact result,
# to first order (the margins cover the rest). The module and the tool are two such
# computations: they may be apart by twice that.


def carried_product(A, eA, B, eB, bias=None, divisor=1.0, extra=0):
    """A±eA @ B±eB (+ bias) (÷ divisor, with `extra` roundings of its own): another
    computation's A and B lie within 2·eA, 2·eB of these; its own sum within
    γ_k·Σ|terms|."""
    k = A.shape[-1] + extra + (bias is not None)
    terms = A.abs() @ B.abs() + (0.0 if bias is None else bias.abs())
    spread = eA @ B.abs() + A.abs() @ eB + 3 * (eA @ eB)
    value = A @ B + (0.0 if bias is None else bias)
    g = gamma(k + 1)
    return value / divisor, (spread * (1 + 3 * g) + g * terms) / divisor


def carried_softmax(x, e):
    """The softmax of each row of x±e (-inf keys exact): moving x by e moves w_j by at
    most w_j·expm1(e_j + max_k e_k); then its own rounding."""
    w = torch.softmax(x, dim=-1)
    e = torch.where(x.isfinite(), e, torch.zeros_like(e))
    moved = torch.expm1(e + e.amax(dim=-1, keepdim=True))
    return w, (w.abs() * moved + softmax_bound(x, w) / 2 * (1 + moved)) * (1 + 1e-6)


def carried_attention(query, e_query, source, e_source, lesson):
    """Attention from query±e_query and source±e_source: every head's weights and the
    output (concat, or concat @ W_O + b_O), each with its carried error."""
    W, b = lesson["weights"], lesson["biases"]
    zero = torch.zeros_like
    Q, eQ = carried_product(query, e_query, W["Q"], zero(W["Q"]), b["Q"])
    K, eK = carried_product(source, e_source, W["K"], zero(W["K"]), b["K"])
    V, eV = carried_product(source, e_source, W["V"], zero(W["V"]), b["V"])
    d_k, d_v = lesson["d_k"], lesson["d_v"]
    weights, contexts, errors = [], [], []
    for h in range(lesson["heads"]):
        qk, v = slice(h * d_k, (h + 1) * d_k), slice(h * d_v, (h + 1) * d_v)
        # ÷ √d_k before or after the sum (PyTorch scales q first), the root rounded
        s, es = carried_product(Q[:, qk], eQ[:, qk], K[:, qk].T, eK[:, qk].T,
                                divisor=lesson["scale"], extra=3)
        w, ew = carried_softmax(s.masked_fill(lesson["blocked"], -inf),
                                es.masked_fill(lesson["blocked"], 0.0))
        weights.append((w, ew))
        c, ec = carried_product(w, ew, V[:, v], eV[:, v])
        contexts.append(c)
        errors.append(ec)
    concat, e_concat = torch.cat(contexts, dim=-1), torch.cat(errors, dim=-1)
    if W["O"] is None:
        return weights, (concat, e_concat)
    return weights, carried_product(concat, e_concat, W["O"], zero(W["O"]), b["O"])
)PY";

// The same for nn.TransformerEncoderLayer.
constexpr const char* kCarriedLayerHelpers = R"PY(

def carried_layer_norm(x, e, gamma_, beta, eps):
    """LayerNorm of each row of x±e: to first order δn_j = (δx_j − mean δx)/σ −
    n_j·δσ/σ, with |δσ/σ| ≤ mean(|n|·e)/σ; then its own rounding."""
    mu = x.mean(dim=-1, keepdim=True)
    sigma = torch.sqrt(((x - mu) ** 2).mean(dim=-1, keepdim=True) + eps)
    n = (x - mu) / sigma
    moved = (e + e.mean(dim=-1, keepdim=True)
             + n.abs() * (n.abs() * e).mean(dim=-1, keepdim=True)) / sigma
    y = F.layer_norm(x, (x.shape[-1],), gamma_, beta, eps=eps)
    return y, gamma_.abs() * moved * (1 + 1e-3) + layer_norm_bound(x, gamma_, beta, eps) / 2


def carried_add(a, ea, b, eb):
    """a±ea + b±eb: one rounding more."""
    return a + b, (ea + eb) * (1 + 2 * U) + U * (a + b).abs()


def carried_encoder_layer(X, lesson):
    """nn.TransformerEncoderLayer's output from X (exact), with its carried error:
    Post-LN y = LN2(h + FFN(h)), h = LN1(X + attention(X)); Pre-LN y = h +
    FFN(LN2(h)), h = X + attention(LN1(X)). |GELU'| ≤ 1.13, ReLU moves nothing more."""
    W, b, eps = lesson["weights"], lesson["biases"], lesson["eps"]
    zero = torch.zeros_like(X)

    def norm(k, x, e):
        return carried_layer_norm(x, e, lesson["gamma"][k], lesson["beta"][k], eps)

    def ffn(x, e):
        x, e = carried_product(x, e, W["1"], torch.zeros_like(W["1"]), b["1"])
        if lesson["gelu"]:
            x, e = F.gelu(x), 1.13 * e * (1 + 1e-6) + gelu_bound(x, F.gelu(x)) / 2
        else:
            x = F.relu(x)
        return carried_product(x, e, W["2"], torch.zeros_like(W["2"]), b["2"])

    if lesson["norm_first"]:
        a, ea = norm(1, X, zero)
        h, eh = carried_add(X, zero, *carried_attention(a, ea, a, ea, lesson)[1])
        return carried_add(h, eh, *ffn(*norm(2, h, eh)))
    h, eh = norm(1, *carried_add(X, zero, *carried_attention(X, zero, X, zero, lesson)[1]))
    return norm(2, *carried_add(h, eh, *ffn(h, eh)))
)PY";

// The script, written top to bottom.
class ScriptWriter {
 public:
  ScriptWriter(const Lesson& lesson, const Trace& trace)
      : lesson_(lesson), trace_(trace), why_not_mha_(why_not_multihead(lesson, trace)) {}

  std::string write() {
    header();
    helpers();
    out_ += "\n\ndef main():\n";
    line(
        fmt::format("print(\"{} rebuilt in PyTorch\", torch.__version__, \"(float64), every step "
                    "against attn-trace's value\")",
                    comment_text(trace_.lesson_id)));
    shape_key();
    for (const Step& step : trace_.steps) emit(step);
    if (why_not_mha_.empty())
      multihead_attention();
    else
      comment_block(
          fmt::format("nn.MultiheadAttention is not run here: {}. The plain tensor ops "
                      "above are the whole computation.",
                      why_not_mha_));
    dtype_note_check();
    out_ += "\n";
    line("finish()");
    data();
    out_ += "\n\nif __name__ == \"__main__\":\n    main()\n";
    return std::move(out_);
  }

 private:
  // --- writing lines -------------------------------------------------------

  void line(std::string_view text, int indent = 1) {
    out_.append(static_cast<std::size_t>(4 * indent), ' ');
    out_ += text;
    out_ += '\n';
  }

  // A comment wrapped at 88 columns, each line starting "# ".
  void comment(std::string_view text, int indent = 1) {
    const std::size_t width = 88 - static_cast<std::size_t>(4 * indent) - 2;
    std::string current;
    std::size_t pos = 0;
    const std::string clean = comment_text(text);
    while (pos < clean.size()) {
      std::size_t end = clean.find(' ', pos);
      if (end == std::string::npos) end = clean.size();
      const std::string word = clean.substr(pos, end - pos);
      pos = end + 1;
      if (word.empty()) continue;
      // Unicode letters count once, not once per byte.
      const auto columns = [](const std::string& s) {
        return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
          return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
        }));
      };
      if (!current.empty() && columns(current) + 1 + columns(word) > width) {
        line("# " + current, indent);
        current.clear();
      }
      current += (current.empty() ? "" : " ") + word;
    }
    if (!current.empty()) line("# " + current, indent);
  }

  void comment_block(std::string_view text) {
    out_ += "\n";
    comment(text);
  }

  // A section heading in main(): "# --- 2. Projections ---".
  void section(std::string_view title) {
    out_ += "\n";
    const std::string head = fmt::format("# --- {} ", title);
    std::size_t columns = 0;
    for (const char c : head) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    line(head + std::string(columns < 84 ? 84 - columns : 3, '-'));
  }

  // The step against the tool's value within `bound` (a Python expression; none:
  // exactly), the script going on from the tool's value (a given step is the
  // lesson's own number on both sides).
  void check(const Step& step, std::string_view bound = "") {
    const std::string args =
        fmt::format("{}, {}{}{}", py_string(step.id), var(step), bound.empty() ? "" : ", ", bound);
    if (step.made.op == Op::given)
      line(fmt::format("check({})", args));
    else
      line(fmt::format("{} = check({})", var(step), args));
  }

  std::string var(const Step& step) const { return py_name(step.id); }
  std::string var(std::string_view id) const { return py_name(id); }

  // --- the parts of the script ---------------------------------------------

  void header() {
    // Line 2 is the tool's own: Python reads an encoding declaration from lines
    // 1 and 2, and a title such as "positional encoding: ..." would be one.
    out_ += "#!/usr/bin/env python3\n";
    out_ += fmt::format("# Written by `attn-trace export {} --to pytorch`.\n", trace_.lesson_id);
    out_ += fmt::format("# {}{}\n", comment_text(trace_.lesson_id),
                        lesson_.title.empty() ? "" : " — " + comment_text(lesson_.title));
    const std::string intro =
        "The lesson rebuilt in PyTorch, in float64, step by step: every step attn-trace traces is "
        "computed here with plain tensor ops, in a variable named like its step id (head0.scores "
        "is head0_scores), and compared with the tool's value, which this file carries at its "
        "end, exact to the last bit. Each step is computed from the tool's values of the steps "
        "it reads, so that every operation is compared alone. A step passes when it has the "
        "tool's shape, NaN and ±inf in the same cells, and every other cell within what floating "
        "point allows two correct results of that operation, whatever order each adds in (the "
        "bound helpers below: 2·γ_k·Σ|terms| for a sum of k products, a few units of roundoff "
        "for one operation, a library's ulps for exp). Run it with a Python that has PyTorch "
        "(python3 FILE, whatever this file is named): it prints one line per step and stops "
        "with exit code 1 at the first step that differs. It needs nothing but torch and the "
        "standard library.";
    out_ += "#\n";
    comment(intro, 0);
    out_ += "#\n";
    comment(
        "Conventions that differ between the lesson and PyTorch, each explained where it is "
        "used: nn.Linear stores its weight out × in and computes x·weightᵀ, while the lesson "
        "writes W in × out and computes X·W (so weight = W.T); PyTorch's boolean masks mean True "
        "= blocked, while the lesson's keep means 1 = may attend; PyTorch splits heads with "
        "view and transpose, which are the lesson's blocks of columns.",
        0);
    if (!trace_.warnings.empty()) {
      out_ += "#\n# The tool's warnings about this trace:\n";
      for (const std::string& w : english_warnings(trace_)) comment("- " + w, 0);
    }
    if (lesson_.dtype != Dtype::f64) {
      out_ += "#\n";
      comment(fmt::format(
                  "Number format: the lesson asks for {} ([model] dtype = \"{}\"), which "
                  "attn-trace emulates exactly, rounding every number as the format does. This "
                  "script rebuilds the same lesson in float64 (what `attn-trace run {} --dtype "
                  "f64` shows): PyTorch's {} kernels add in their own order (and torch 1.13 has "
                  "no float16 matrix product on the CPU), so their results may differ from the "
                  "tool's by a unit in the last place of that format, far beyond float64's bounds. "
                  "What the format does to the mask fill is checked at the end.",
                  torch_dtype(lesson_.dtype), dtype_name(lesson_.dtype), trace_.lesson_id,
                  torch_dtype(lesson_.dtype)),
              0);
    }
    out_ += "\nimport math\nimport sys\n\nimport torch\nimport torch.nn.functional as F\n\n";
    out_ +=
        "torch.set_default_dtype(torch.float64)  # IEEE double, as attn-trace computes\n"
        "torch.set_num_threads(1)  # a small lesson gains nothing from threads\n"
        "inf, nan = math.inf, math.nan\n"
        "U = 2.0 ** -53  # float64's unit roundoff: a correctly rounded operation errs by "
        "u·|result|\n"
        "LIBRARY_ULPS = 4  # exp, sin, cos, erf: within 4 ulps (glibc's < 1, SLEEF's 1)\n";
  }

  static std::string torch_dtype(Dtype dtype) {
    switch (dtype) {
      case Dtype::f32:
        return "float32";
      case Dtype::f16:
        return "float16";
      case Dtype::bf16:
        return "bfloat16";
      case Dtype::f64:
        break;
    }
    return "float64";
  }

  void helpers() {
    out_ += kCompareHelpers;
    if (trace_.find("PE") || trace_.find("memory+PE")) out_ += kPositionHelpers;
    if (lesson_.layer) out_ += kLayerHelpers;
    if (why_not_mha_.empty()) carried_helpers();
  }

  // What the comparisons with PyTorch's modules need: they see only the end of
  // a computation, so its bound is carried through every step from the exact
  // numbers the lesson gives.
  void carried_helpers() {
    out_ += kCarriedHelpers;
    if (lesson_.layer) out_ += kCarriedLayerHelpers;
  }

  void shape_key() {
    const std::size_t d_mem = lesson_.memory ? lesson_.memory->n_cols : lesson_.X.n_cols;
    out_ += "\n";
    comment(
        fmt::format("Shape key: n queries, m keys, d_model features per token{}, heads, d_k "
                    "(query and key width per head), d_v (value width per head).",
                    lesson_.memory ? ", d_mem per memory token" : ""));
    line(fmt::format("n, m, d_model, heads, d_k, d_v = {}, {}, {}, {}, {}, {}", lesson_.queries(),
                     lesson_.keys(), lesson_.X.n_cols, lesson_.heads, lesson_.d_k, lesson_.d_v));
    if (lesson_.memory) line(fmt::format("d_mem = {}", d_mem));
  }

  // The section a step belongs to (a heading is written when it changes).
  std::string section_of(const Step& step) const {
    if (step.head >= 0 && step.decoding < 0 && step.kind != StepKind::decode_check)
      return fmt::format("Head {}", step.head);
    switch (step.kind) {
      case StepKind::input:
        return given_section(step.step_id.given_part());
      case StepKind::positional:
        return "Inputs";
      case StepKind::projection:
        return "Projections";
      case StepKind::head_summary:
        return "How the heads compare";
      case StepKind::concat:
      case StepKind::output:
        return "Heads side by side, output projection";
      case StepKind::residual:
      case StepKind::norm:
      case StepKind::ffn:
      case StepKind::layer_output:
        return "Encoder layer";
      default:
        return "Decoding with a KV cache";
    }
  }

  // The section `step` belongs to, started when it is a new one.
  void enter_section(const Step& step) {
    std::string title = section_of(step);
    if (title.rfind("Head ", 0) == 0) {
      if (!attention_setup_) attention_setup();
      attention_setup_ = true;
      title = fmt::format("Attention, head {} of {}", step.head, lesson_.heads);
    }
    if (title == "Encoder layer" && !projected_)
      title = "Encoder layer, Pre-LN: LayerNorm 1 of the input comes first";
    if (step.id == "Q") projected_ = true;
    if (title != section_) {
      section(title);
      section_ = title;
    }
  }

  // A step of a LayerNorm: its row means, variances, normalised rows, γ and β.
  void emit_layer_norm_step(const Step& step) {
    switch (step.made.op) {
      case Op::row_mean:
        return emit_row_mean(step);
      case Op::row_var:
        return emit_row_var(step);
      case Op::normalise:
        return emit_normalise(step);
      default:
        return layer_norm(step);
    }
  }

  void emit(const Step& step) {
    if (is_backward_step(step)) return;  // not exported (docs/pytorch.md)
    if (step.decoding >= 0 || step.kind == StepKind::decode_check) {
      if (!decoded_) decode_loop();
      decoded_ = true;
      return;
    }
    enter_section(step);
    switch (step.made.op) {
      case Op::given:
        return given(step);
      case Op::positional:
      case Op::rotate:  // RoPE, ALiBi and the shift check: emit_position()
      case Op::alibi:
      case Op::row_max_abs_diff:
        return emit_positional(step);
      case Op::add_positions:
        return emit_add_positions(step);
      case Op::matmul:
        return product(step);
      case Op::matmul_t:
        return emit_matmul_t(step);
      case Op::slice:
        return slice(step);
      case Op::divide:
        return emit_divide(step);
      case Op::mask:
        return emit_mask(step);
      case Op::exp:
        return emit_exp(step);
      case Op::row_sum:
        return emit_row_sum(step);
      case Op::softmax:
        return softmax(step);
      case Op::mean:
      case Op::max:
        return over_heads(step);
      case Op::concat:
        return concat(step);
      case Op::add:
        return emit_add(step);
      case Op::row_mean:
      case Op::row_var:
      case Op::normalise:
      case Op::scale_shift:
        return emit_layer_norm_step(step);
      case Op::relu:
        return emit_relu(step);
      case Op::gelu:
        return emit_gelu(step);
      case Op::identity:
        return emit_identity(step);
      case Op::rows:
      case Op::max_abs_diff:
        break;  // decoding steps: decode_loop()
      case Op::efficient:
        return emit_efficient(step);
      case Op::backward:  // skipped above
        return;
    }
    throw std::logic_error("export: no PyTorch code for step " + step.id);
  }

  // RoPE's and ALiBi's steps.
  void emit_position(const Step& step) {
    if (step.made.op == Op::rotate) return emit_rotate(step);
    if (step.made.op == Op::alibi) return emit_alibi(step);
    return emit_row_max_abs_diff(step);
  }

  // RoPE: pairs (2i, 2i+1) of row p turned by (p + shift)·10000^(−2i/d_k).
  void emit_rotate(const Step& step) {
    const std::string x = var(step.made.inputs[0]);
    line(fmt::format("angle = (torch.arange({}, dtype=torch.float64) + {}).unsqueeze(1) * "
                     "torch.pow(10000.0, -torch.arange(0, {}, 2, dtype=torch.float64) / {})",
                     step.value.n_rows, step.made.offset, step.value.n_cols, step.value.n_cols));
    line(fmt::format("{} = torch.empty_like({})  # RoPE: each pair (2i, 2i+1) rotated", var(step),
                     x));
    line(fmt::format("{0}[:, 0::2] = {1}[:, 0::2] * angle.cos() - {1}[:, 1::2] * angle.sin()",
                     var(step), x));
    line(fmt::format("{0}[:, 1::2] = {1}[:, 0::2] * angle.sin() + {1}[:, 1::2] * angle.cos()",
                     var(step), x));
    // two products and a sum of numbers each within a few ulps (the angle, sin, cos)
    return check(step, fmt::format("2 * (2 * LIBRARY_ULPS + 24) * U * ({0}.abs() @ "
                                   "torch.ones({1}, {1}, dtype=torch.float64)) * (1 + angle.abs().amax())",
                                   x, step.value.n_cols));
  }

  // ALiBi: −m_h·|i − j|, m_h = 2^(−8(h+1)/H).
  void emit_alibi(const Step& step) {
    line(fmt::format("{} = -{} * (torch.arange({}).unsqueeze(1) - torch.arange({})).abs()"
                     ".to(torch.float64)  # ALiBi, slope 2^(-8·{}/{})",
                     var(step), py_number(step.made.slope), step.value.n_rows, step.value.n_cols,
                     step.head + 1, lesson_.heads));
    return check(step, fmt::format("rounded({})", var(step)));
  }

  // max_j |shifted − scores|, row by row.
  void emit_row_max_abs_diff(const Step& step) {
    line(fmt::format("{} = ({} - {}).abs().amax(dim=-1, keepdim=True)  # (n, 1)", var(step),
                     var(step.made.inputs[1]), var(step.made.inputs[0])));
    return check(step);
}

  // A step of the tiles or of linear attention.
  void emit_efficient(const Step& step) {
    switch (step.made.efficient) {
      case EfficientOp::divide_rows:
        return emit_divide_rows(step);
      case EfficientOp::row_diff:
        return emit_row_diff(step);
      case EfficientOp::elu_plus_one:
        line(fmt::format("{} = F.elu({}) + 1  # φ(x) = elu(x) + 1 > 0", var(step),
                         var(step.made.inputs[0])));
        return check(step, fmt::format("elu_bound({})", var(step)));
      case EfficientOp::matmul_tn:
        line(fmt::format("{} = {}.T @ {}  # d_k × d_v", var(step), var(step.made.inputs[0]),
                         var(step.made.inputs[1])));
        return check(step, fmt::format("product({}.T, {})", var(step.made.inputs[0]),
                                       var(step.made.inputs[1])));
      case EfficientOp::normaliser:
        return emit_normaliser(step);
      case EfficientOp::tile_block:
      case EfficientOp::running_max:
      case EfficientOp::rescale:
      case EfficientOp::running_sum:
      case EfficientOp::running_acc:
        return emit_tile(step);
    }
  }

  // A step of the tiled softmax: the block, m, α, ℓ and O, from the tool's
  // values of the steps it reads (tile_* helpers above).
  void emit_tile(const Step& step) {
    const std::vector<std::string>& in = step.made.inputs;
    std::vector<std::string> args;
    for (const std::string& id : in) args.push_back(var(id));
    const std::size_t r0 = step.made.offset, c0 = step.made.col_offset;
    switch (step.made.efficient) {
      case EfficientOp::tile_block:
        line(fmt::format("{} = {}[{}:{}, {}:{}]  # one block of the masked scores", var(step),
                         args[0], r0, r0 + step.value.n_rows, c0, c0 + step.value.n_cols));
        return check(step);
      case EfficientOp::running_max:
        line(fmt::format("{} = tile_max({}, {})", var(step), args[0],
                         in.size() > 1 ? args[1] : "None"));
        return check(step);
      case EfficientOp::rescale:
        line(fmt::format("{}, bound = tile_rescale({}, {})", var(step), args[0],
                         in.size() > 1 ? args[1] : "None"));
        return check(step, "bound");
      case EfficientOp::running_sum:
        line(fmt::format("{}, bound = tile_sum({}, {}, {}, {})", var(step), args[0], args[1],
                         args[2], in.size() > 3 ? args[3] : "None"));
        return check(step, "bound");
      default:
        line(fmt::format("{}, bound = tile_acc({}, {}, {}, {}[{}:{}], {})", var(step), args[0],
                         args[1], args[2], args[3], c0, c0 + trace_.input(step, 0).value.n_cols,
                         in.size() > 4 ? args[4] : "None"));
        return check(step, "bound");
    }
  }

  // O / ℓ of each query block stacked (the tiled context), or one quotient.
  void emit_divide_rows(const Step& step) {
    std::vector<std::string> parts;
    for (std::size_t b = 0; b + 1 < step.made.inputs.size(); b += 2)
      parts.push_back(
          fmt::format("{} / {}", var(step.made.inputs[b]), var(step.made.inputs[b + 1])));
    line(fmt::format("{} = torch.cat([{}])  # row by row", var(step), fmt::join(parts, ", ")));
    if (step.step_id.family() == StepFamily::tiled && lesson_.masked_row != MaskedRowPolicy::nan)
      line(fmt::format("{0} = torch.where({0}.isnan(), {1}, {0})  # masked_row", var(step),
                       lesson_.masked_row == MaskedRowPolicy::zero
                           ? std::string("0.0")
                           : var(head_step_id(step.head, HeadStep::V)) + ".mean(dim=0)"));
    return check(step, fmt::format("rounded({})", var(step)));
  }

  void emit_row_diff(const Step& step) {
    line(fmt::format("{} = ({} - {}).abs().nan_to_num(0.0).max(dim=-1, keepdim=True).values",
                     var(step), var(step.made.inputs[0]), var(step.made.inputs[1])));
    return check(step, fmt::format("rounded({})", var(step)));
  }

  void emit_normaliser(const Step& step) {
    const std::string q = var(step.made.inputs[0]), k = var(step.made.inputs[1]);
    line(fmt::format("{} = {} @ {}.sum(dim=0, keepdim=True).T  # φ(q_i)·Σ_j φ(k_j)", var(step), q,
                     k));
    return check(step, fmt::format("2 * gamma({1}.shape[0] + {0}.shape[1] + 1) * ({0}.abs() @ "
                                   "{1}.abs().sum(dim=0, keepdim=True).T)",
                                   q, k));
  }

  void emit_positional(const Step& step) {
    if (step.made.op != Op::positional) return emit_position(step);
    comment(
        "Sinusoidal positions (see sinusoidal() above); PyTorch has no built-in table, "
        "tutorials write it this way.");
    line(fmt::format("{} = sinusoidal(n, d_model)  # (n, d_model)", var(step)));
    return check(step, "positions(n, d_model)");
  }

  void emit_add_positions(const Step& step) {
    if (step.made.inputs.size() > 1) {
      line(fmt::format("{} = {} + {}  # the positions added to the embeddings", var(step),
                       var(step.made.inputs[0]), var(step.made.inputs[1])));
      return check(step);  // one addition of the same numbers: exactly the tool's
    }
    line(fmt::format("{} = {} + sinusoidal(m, d_mem)  # a table of its own size", var(step),
                     var(step.made.inputs[0])));
    return check(step, fmt::format("positions(m, d_mem) + rounded({})", var(step)));
  }

  void emit_matmul_t(const Step& step) {
    line(fmt::format("{} = {} @ {}.T  # {}·{} -> {}", var(step), var(step.made.inputs[0]),
                     var(step.made.inputs[1]), py_shape(trace_.input(step, 0).value),
                     py_shape(arma::mat(trace_.input(step, 1).value.t())), py_shape(step.value)));
    return check(
        step, fmt::format("product({}, {}.T)", var(step.made.inputs[0]), var(step.made.inputs[1])));
  }

  void emit_divide(const Step& step) {
    line(fmt::format("{} = {} / scale", var(step), var(step.made.inputs[0])));
    // a division, or a product by a rounded 1/scale
    return check(step, fmt::format("rounded({}, 2)", var(step)));
  }

  void emit_mask(const Step& step) {
    line(fmt::format("{} = {}.masked_fill(blocked, fill)  # True = blocked gets the fill",
                     var(step), var(step.made.inputs[0])));
    return check(step);
  }

  void emit_exp(const Step& step) {
    line(fmt::format("{} = torch.exp({})  # exp(-inf) = 0", var(step), var(step.made.inputs[0])));
    return check(step, fmt::format("library({})", var(step)));
  }

  void emit_row_sum(const Step& step) {
    line(fmt::format("{} = {}.sum(dim=-1, keepdim=True)  # (n, 1)", var(step),
                     var(step.made.inputs[0])));
    return check(step, fmt::format("sums({})", var(step.made.inputs[0])));
  }

  void emit_add(const Step& step) {
    if (step.kind == StepKind::alibi_biased) {
      line(fmt::format("{} = {} + {}  # ALiBi's bias added to the scaled scores", var(step),
                       var(step.made.inputs[0]), var(step.made.inputs[1])));
      return check(step, fmt::format("rounded({})", var(step)));
    }
    line(fmt::format("{} = {} + {}  # residual sum; dropout is the identity in eval mode",
                     var(step), var(step.made.inputs[0]), var(step.made.inputs[1])));
    return check(step);  // one addition of the same numbers: exactly the tool's
  }

  void emit_row_mean(const Step& step) {
    line(fmt::format("{} = {}.mean(dim=-1, keepdim=True)  # (n, 1): each token's mean", var(step),
                     var(step.made.inputs[0])));
    return check(step, fmt::format("sums({}, 1) / d_model", var(step.made.inputs[0])));
  }

  void emit_row_var(const Step& step) {
    line(fmt::format("{} = (({} - {}) ** 2).mean(dim=-1, keepdim=True)", var(step),
                     var(step.made.inputs[0]), var(step.made.inputs[1])));
    comment(
        fmt::format("biased, as LayerNorm uses it: = {}.var(dim=-1, unbiased=False, "
                    "keepdim=True)",
                    var(step.made.inputs[0])));
    return check(step, fmt::format("sums(({} - {}) ** 2, 4) / d_model", var(step.made.inputs[0]),
                                   var(step.made.inputs[1])));
  }

  void emit_normalise(const Step& step) {
    line(fmt::format("{} = ({} - {}) / torch.sqrt({} + {})", var(step), var(step.made.inputs[0]),
                     var(step.made.inputs[1]), var(step.made.inputs[2]), py_number(step.made.eps)));
    return check(step, fmt::format("rounded({}, 4)", var(step)));
  }

  void emit_relu(const Step& step) {
    line(fmt::format("{} = F.relu({})  # max(0, x)", var(step), var(step.made.inputs[0])));
    return check(step);
  }

  void emit_gelu(const Step& step) {
    line(
        fmt::format("{} = F.gelu({})  # exact: x·Φ(x) = x·(1 + erf(x/√2))/2, PyTorch's "
                    "default approximate=\"none\"",
                    var(step), var(step.made.inputs[0])));
    return check(step, fmt::format("gelu_bound({}, {})", var(step.made.inputs[0]), var(step)));
  }

  void emit_identity(const Step& step) {
    line(fmt::format("{} = {}  # the layer's result, the input of a next layer", var(step),
                     var(step.made.inputs[0])));
    return check(step);
  }

  // A step the lesson gives: X, memory, a weight, a bias, a LayerNorm parameter.
  void given(const Step& step) {
    const arma::mat& M = step.value;
    const std::string name = var(step);
    if (is_row_parameter(step)) {
      const bool bias = is_bias(step.step_id);
      const bool gamma = is_layer_norm_scale(step.step_id);
      line(fmt::format("{} = torch.tensor({})  # ({},): {}", name, py_row(M.row(0)), M.n_cols,
                       bias    ? "one number per output column, added to every row"
                       : gamma ? "LayerNorm's scale γ, one per feature"
                               : "LayerNorm's shift β, one per feature"));
      return check(step);
    }
    if (is_weight(step.step_id)) weight_comment(step);
    if (is_identity(M)) {
      line(fmt::format("{} = torch.eye({})  # the identity, {}", name, M.n_rows, py_shape(M)));
      return check(step);
    }
    line(fmt::format("{} = torch.tensor([", name));
    for (arma::uword i = 0; i < M.n_rows; ++i) {
      const std::string label = i < step.rows.size() && step.kind == StepKind::input &&
                                        (step.id == "X" || step.id == "memory")
                                    ? "  # " + comment_text(step.rows[i])
                                    : "";
      line(py_row(M.row(i)) + "," + label, 2);
    }
    line(fmt::format("])  # {}{}", py_shape(M),
                     step.id == "X"        ? ": one row per query token"
                     : step.id == "memory" ? ": one row per memory token, the keys' source"
                                           : ""));
    check(step);
  }

  // What a weight is in the lesson and in nn.Linear.
  void weight_comment(const Step& step) {
    const arma::mat& W = step.value;
    if (!linear_explained_) {
      comment(fmt::format(
          "{0} in the lesson's convention: in × out = {1}×{2}, one row per input feature, so "
          "that the lesson computes X·{0} (a lesson file with layout = \"out_in\" writes its "
          "transpose). nn.Linear(in, out) stores its weight the other way round, out × in, and "
          "computes x·weightᵀ + bias; so {0} is nn.Linear's weight = {3}.T ({2}×{1}), and "
          "F.linear(x, {3}.T, b) = x @ {3} + b. Copying a square weight from one to the other "
          "without .T silently transposes it.",
          step.id, W.n_rows, W.n_cols, var(step)));
      linear_explained_ = true;
    } else {
      comment(fmt::format("{}: in × out = {}×{}; as nn.Linear's weight it is {}.T", step.id,
                          W.n_rows, W.n_cols, var(step)));
    }
  }

  // in·W (+ b) with W a given weight: nn.Linear's computation; else a plain product.
  void product(const Step& step) {
    const std::vector<std::string>& in = step.made.inputs;
    const Step& left = trace_.input(step, 0);
    const Step& right = trace_.input(step, 1);
    const std::string bound = fmt::format("product({}, {}{})", var(in[0]), var(in[1]),
                                          in.size() > 2 ? ", " + var(in[2]) : "");
    if (right.made.op == Op::given) {
      line(fmt::format("{} = F.linear({}, {}.T{})  # = {} @ {}{}: {}·{} -> {}", var(step),
                       var(in[0]), var(in[1]), in.size() > 2 ? ", " + var(in[2]) : "", var(in[0]),
                       var(in[1]), in.size() > 2 ? " + " + var(in[2]) : "", py_shape(left.value),
                       py_shape(right.value), py_shape(step.value)));
      return check(step, bound);
    }
    line(fmt::format("{} = {} @ {}  # {}·{} -> {}", var(step), var(in[0]), var(in[1]),
                     py_shape(left.value), py_shape(right.value), py_shape(step.value)));
    check(step, bound);
  }

  // head{h}.Q / .K / .V: head h's block of columns, as PyTorch splits heads.
  void slice(const Step& step) {
    const Step& full = trace_.input(step, 0);
    const std::size_t width = step.value.n_cols;
    const std::size_t heads = lesson_.heads;
    const std::string whole = var(full);
    const std::string range =
        fmt::format("{}[:, {}:{}]", whole, step.made.offset, step.made.offset + width);
    if (full.value.n_cols == heads * width && step.made.offset % width == 0) {
      const std::string split = whole + "_heads";
      if (!split_.contains(full.id)) {
        split_.insert(full.id);
        if (split_.size() == 1)
          comment(fmt::format(
              "Heads are blocks of columns: head h owns columns h·{0} … (h+1)·{0} − 1 of {1}. "
              "PyTorch splits them without copying: {1}.view(rows, heads, {0}) cuts each row "
              "into its heads' blocks, .transpose(0, 1) puts the head first, (heads, rows, {0}), "
              "and {2}[h] is head h's block.",
              width == lesson_.d_k ? "d_k" : "d_v", whole, split));
        const char* rows = full.id == "Q" ? "n" : "m";
        const char* cols = width == lesson_.d_k && full.id != "V" ? "d_k" : "d_v";
        line(fmt::format("{} = {}.view({}, heads, {}).transpose(0, 1)  # (heads, {}, {})", split,
                         whole, rows, cols, rows, cols));
      }
      line(fmt::format("{} = {}[{}]  # = {}", var(step), split, step.made.offset / width, range));
    } else {
      line(fmt::format("{} = {}", var(step), range));
    }
    check(step);
  }

  // Before head 0: the divisor, the masks turned to PyTorch's polarity, the fill.
  void attention_setup() {
    section("Attention: the scale and the masks");
    switch (lesson_.scale_kind) {
      case ScaleKind::sqrt_dk:
        line(fmt::format("scale = math.sqrt(d_k)  # √d_k = √{}", lesson_.d_k));
        break;
      case ScaleKind::none:
        line("scale = 1.0  # scale = \"none\": the scores are not divided");
        break;
      case ScaleKind::number:
        line(fmt::format("scale = {}  # the lesson's divisor", py_number(trace_.scale)));
        break;
    }
    comment(
        "Masks. The lesson says where a query MAY look: keep 1 = may attend, 0 = masked (the "
        "documents' masked_fill(mask == 0, ...)). PyTorch's boolean masks (masked_fill, "
        "attn_mask, key_padding_mask) say where it may NOT: True = blocked. So keep is turned "
        "round, blocked = (keep == 0). The lesson's key_padding already has PyTorch's polarity "
        "(True = a padded key = blocked).");
    std::vector<std::string> parts;
    if (lesson_.causal) {
      line(
          "causal_blocked = torch.ones(n, m, dtype=torch.bool).triu(diagonal=1)  # key j after "
          "query i");
      parts.push_back("causal_blocked");
    }
    if (!lesson_.key_padding.empty()) {
      std::string list;
      for (std::size_t j = 0; j < lesson_.key_padding.size(); ++j)
        list += fmt::format("{}{}", j ? ", " : "", lesson_.key_padding[j] ? "True" : "False");
      line(fmt::format("key_padding_mask = torch.tensor([{}])  # (m,): True = padded key", list));
      parts.push_back("key_padding_mask");  // (m,) broadcasts over the rows
    }
    if (lesson_.mask_pattern().sparse()) {
      pattern_lines();
      parts.push_back("pattern_blocked");
    }
    if (lesson_.keep) {
      line("keep = torch.tensor([  # (n, m), the lesson's: 1 = may attend, 0 = masked");
      for (arma::uword i = 0; i < lesson_.keep->n_rows; ++i) {
        std::string row = "[";
        for (arma::uword j = 0; j < lesson_.keep->n_cols; ++j)
          row += fmt::format("{}{}", j ? ", " : "", (*lesson_.keep)(i, j));
        line(row + "],  # " + comment_text(lesson_.tokens.at(i)), 2);
      }
      line("])");
      parts.push_back("(keep == 0)");
    }
    if (parts.empty()) {
      line("blocked = torch.zeros(n, m, dtype=torch.bool)  # nothing is masked");
    } else {
      std::string expression;
      for (const std::string& p : parts) expression += (expression.empty() ? "" : " | ") + p;
      line(fmt::format("blocked = {}  # (n, m): True = query i may not attend to key j",
                       expression));
    }
    line(fmt::format("fill = {}  # what a masked score is replaced by (it is not added)",
                     py_number(lesson_.mask_fill)));
  }

  // The lesson's window / stride / global pattern as a boolean (n, n) tensor.
  void pattern_lines() {
    const MaskPattern p = lesson_.mask_pattern();
    line("i, j = torch.arange(n)[:, None], torch.arange(m)[None, :]  # query and key positions");
    line(fmt::format("pattern_blocked = (i - j).abs() > {}  # outside the window{}",
                     p.local_width(), p.window ? "" : " (a stride alone keeps the diagonal)"));
    if (p.stride)
      line(fmt::format("pattern_blocked &= j % {0} != {0} - 1  # not a stride key", *p.stride));
    if (!p.global.empty()) {
      line(fmt::format("is_global = torch.zeros(n, dtype=torch.bool); is_global[[{}]] = True",
                       fmt::join(p.global, ", ")));
      line("pattern_blocked &= ~(is_global[:, None] | is_global[None, :])  # global tokens: "
           "exempt");
    }
  }

  // Rows whose every key is masked, with a fill of -inf: the softmax is 0/0 there.
  bool has_row_without_keys() const {
    return lesson_.mask_fill == -arma::datum::inf && arma::any(arma::all(trace_.mask != 0u, 1));
  }

  void softmax(const Step& step) {
    const std::string in = var(step.made.inputs[0]);
    const std::string bound = fmt::format("softmax_bound({}, {})", in, var(step));
    if (step.made.inputs.size() < 3) {
      line(fmt::format("{} = torch.softmax({}, dim=-1)", var(step), in));
      return check(step, bound);
    }
    comment(
        fmt::format("softmax row by row = {} / {}, computed stably: torch.softmax subtracts "
                    "each row's max first, which changes nothing but keeps exp() from "
                    "overflowing",
                    var(step.made.inputs[1]), var(step.made.inputs[2])));
    line(fmt::format("{} = torch.softmax({}, dim=-1)", var(step), in));
    if (has_row_without_keys()) {
      switch (lesson_.masked_row) {
        case MaskedRowPolicy::nan:
          comment(
              "A query with every key masked: exp(-inf) = 0 for every key, so its row is 0/0 = "
              "NaN, what PyTorch's softmax gives (masked_row = \"nan\").");
          break;
        case MaskedRowPolicy::zero:
        case MaskedRowPolicy::uniform: {
          const bool zero = lesson_.masked_row == MaskedRowPolicy::zero;
          comment(
              fmt::format("A query with every key masked would be 0/0 = NaN; the lesson sets "
                          "that row to {} (masked_row = \"{}\").",
                          zero ? "0" : "1/m", zero ? "zero" : "uniform"));
          line(fmt::format("no_key = {}.amax(dim=-1, keepdim=True) == -inf  # (n, 1)", in));
          line(fmt::format("{} = {}.masked_fill(no_key, {})", var(step), var(step),
                           zero ? "0.0" : "1 / m"));
          break;
        }
      }
    } else if (lesson_.mask_fill != -arma::datum::inf &&
               arma::any(arma::all(trace_.mask != 0u, 1))) {
      comment(
          "A query with every key masked: with a finite fill its scores are all equal, so the "
          "stable softmax gives 1/m per key (exp and row_sum above may still show 0: exp(fill) "
          "underflows).");
    }
    check(step, bound);
  }

  void over_heads(const Step& step) {
    std::string list;
    for (const std::string& id : step.made.inputs) list += (list.empty() ? "" : ", ") + var(id);
    const bool mean = step.made.op == Op::mean;
    line(fmt::format("{} = torch.stack([{}]).{}(dim=0)  # (h, n, m) -> (n, m)", var(step), list,
                     mean ? "mean" : "amax"));
    // the mean: h terms, then ÷ h (or × a rounded 1/h); the max: exactly
    if (mean)
      return check(step, fmt::format("sums(torch.stack([{}], dim=-1), 1).squeeze(-1) / {}", list,
                                     step.made.inputs.size()));
    check(step);
  }

  void concat(const Step& step) {
    std::string list;
    for (const std::string& id : step.made.inputs) list += (list.empty() ? "" : ", ") + var(id);
    comment(
        "The heads' contexts side by side: (n, h·d_v). nn.MultiheadAttention does the same with "
        "contexts.transpose(0, 1).reshape(n, h·d_v), the inverse of the split above.");
    line(fmt::format("{} = torch.cat([{}], dim=-1)", var(step), list));
    check(step);
  }

  // layer.ln{k} = γ ⊙ normalised + β: F.layer_norm of the LayerNorm's input.
  void layer_norm(const Step& step) {
    const Step& normalised = trace_.input(step, 0);
    const std::string x = normalised.made.inputs.at(0);
    comment(fmt::format(
        "F.layer_norm is the LayerNorm of nn.TransformerEncoderLayer: the same mean, biased "
        "variance and eps as the steps above; = {} * {} + {}",
        var(step.made.inputs[1]), var(normalised), var(step.made.inputs[2])));
    line(fmt::format("{} = F.layer_norm({}, (d_model,), {}, {}, eps={})", var(step), var(x),
                     var(step.made.inputs[1]), var(step.made.inputs[2]),
                     py_number(normalised.made.eps)));
    check(step, fmt::format("layer_norm_bound({}, {}, {}, {})", var(x), var(step.made.inputs[1]),
                            var(step.made.inputs[2]), py_number(normalised.made.eps)));
  }

  // Every decode.* step: token by token, the cache growing by one row.
  void decode_loop() {
    section("Decoding with a KV cache");
    const Step& Q = trace_.at("Q");
    const Step& K = trace_.at("K");
    const Step& V = trace_.at("V");
    const auto projection = [&](const Step& p, const char* name) {
      return fmt::format("{}(x_t, {}{}{})", name, var(p.made.inputs.at(1)),
                         std::string_view(name) == "F.linear" ? ".T" : "",
                         p.made.inputs.size() > 2 ? ", " + var(p.made.inputs[2]) : "");
    };
    comment(
        "A decoder writes one token at a time. At step t only token t is new: its query, key "
        "and value come from its own row alone, and the keys and values of tokens 0..t-1 are "
        "read from a cache that grows by one row per step. No later token exists yet, so "
        "nothing is masked. Each step's context must equal row t of the full causal "
        "computation above (decode.head{h}.check). Each check hands back the tool's value, "
        "so the cache holds the tool's rows.");
    line("K_cache = [torch.zeros(0, d_k) for _ in range(heads)]  # per head: (t+1, d_k) at step t");
    line("V_cache = [torch.zeros(0, d_v) for _ in range(heads)]");
    line("decoded = [[] for _ in range(heads)]  # per head, each step's context");
    line("for t in range(n):");
    line(fmt::format("x_t = {}[t:t + 1]  # (1, d_model): the token just written",
                     var(Q.made.inputs.at(0))),
         2);
    line(fmt::format("q_t = {}  # (1, h·d_k): its query, every head", projection(Q, "F.linear")),
         2);
    line(fmt::format("k_t = {}  # its key, computed once and cached", projection(K, "F.linear")),
         2);
    line(fmt::format("v_t = {}  # its value", projection(V, "F.linear")), 2);
    line(fmt::format("q_bound, k_bound, v_bound = {}, {}, {}", projection(Q, "product"),
                     projection(K, "product"), projection(V, "product")),
         2);
    decode_heads();
    decode_checks();
  }

  // Inside the loop over t: each head's step t, every value checked.
  void decode_heads() {
    line("for h in range(heads):", 2);
    // With grouped K/V heads, query head h caches the columns of K/V head h ÷ (heads / kv_heads).
    const std::size_t group = lesson_.heads / lesson_.kv_head_count();
    line(group == 1 ? "qk = kk = slice(h * d_k, (h + 1) * d_k)"
                    : fmt::format("qk, g = slice(h * d_k, (h + 1) * d_k), h // {}  # its K/V head",
                                  group),
         3);
    if (group != 1) line("kk = slice(g * d_k, (g + 1) * d_k)", 3);
    line(group == 1 ? "v = slice(h * d_v, (h + 1) * d_v)" : "v = slice(g * d_v, (g + 1) * d_v)", 3);
    line("step = f\"decode.t{t}.head{h}\"", 3);
    line("q = check(step + \".q\", q_t[:, qk], q_bound[:, qk])  # (1, d_k)", 3);
    line("# row t appended; the rows before it are the tool's, handed back by earlier checks", 3);
    line("K_cache[h] = torch.cat([K_cache[h], k_t[:, kk]])", 3);
    line(
        "K_cache[h] = check(step + \".K_cache\", K_cache[h], "
        "torch.cat([torch.zeros(t, d_k), k_bound[:, kk]]))",
        3);
    line("V_cache[h] = torch.cat([V_cache[h], v_t[:, v]])", 3);
    line(
        "V_cache[h] = check(step + \".V_cache\", V_cache[h], "
        "torch.cat([torch.zeros(t, d_v), v_bound[:, v]]))",
        3);
    line("scores = q @ K_cache[h].T  # (1, t+1)", 3);
    line("scores = check(step + \".scores\", scores, product(q, K_cache[h].T))", 3);
    line("scaled = scores / scale", 3);
    line("scaled = check(step + \".scaled\", scaled, rounded(scaled, 2))", 3);
    line("weights = torch.softmax(scaled, dim=-1)", 3);
    line("weights = check(step + \".weights\", weights, softmax_bound(scaled, weights))", 3);
    line("context = weights @ V_cache[h]  # (1, d_v)", 3);
    line("context = check(step + \".context\", context, product(weights, V_cache[h]))", 3);
    line("decoded[h].append(context)", 3);
  }

  // After the loop: each decoding step's context against row t of the full one.
  void decode_checks() {
    std::string contexts;
    for (std::size_t h = 0; h < lesson_.heads; ++h)
      contexts += (h ? ", " : "") + var(head_step_id(h, HeadStep::context));
    line(fmt::format("for h, full in enumerate([{}]):", contexts));
    line("# row t: the largest |difference| between step t's context and row t of the full one", 2);
    line("diff = torch.stack([(decoded[h][t][0] - full[t]).abs().max() for t in range(n)])", 2);
    line("check(f\"decode.head{h}.check\", diff.unsqueeze(1))  # (n, 1)", 2);
  }

  // nn.MultiheadAttention with the lesson's weights and masks: its output and
  // per-head weights against the tool's.
  void multihead_attention() {
    mha_module();
    const std::string attn_mask = mha_attn_mask();
    mha_call(attn_mask);
    mha_compare();
    mha_mean_weights(attn_mask);
    if (lesson_.layer) encoder_layer(attn_mask);
  }

  // nn.MultiheadAttention built with the lesson's weights.
  void mha_module() {
    const Step& Q = trace_.at("Q");
    const Step& K = trace_.at("K");
    const Step& V = trace_.at("V");
    const std::size_t embed = Q.value.n_cols;
    const std::size_t d_kv = trace_.input(K, 0).value.n_cols;
    const bool packed = d_kv == embed;
    const Step* W_O = trace_.find("W_O");
    const auto bias_of = [&](const Step& p) {
      return p.made.inputs.size() > 2 ? var(p.made.inputs[2])
                                      : fmt::format("torch.zeros({})", p.value.n_cols);
    };
    section("The same attention with nn.MultiheadAttention");
    comment(fmt::format(
        "nn.MultiheadAttention(embed_dim = h·d_k = {}, num_heads = {}) computes every step above "
        "in one call. It splits heads of head_dim = embed_dim / num_heads = d_k, divides by "
        "√head_dim, and {}. Its weights are nn.Linear's, out × in: {}. A missing bias is 0{}.",
        embed, lesson_.heads,
        lesson_.is_cross() ? "takes the keys and values from the memory"
                           : "takes queries, keys and values from the same tokens",
        packed ? "in_proj_weight stacks the three, [W_Q.T; W_K.T; W_V.T], (3·embed_dim, "
                 "embed_dim), and in_proj_bias the three biases"
               : "the memory's width differs from embed_dim (kdim = vdim = d_mem), so it keeps "
                 "q_proj_weight, k_proj_weight and v_proj_weight apart, and still one in_proj_bias",
        W_O ? ""
            : "; the lesson has no W_O, so out_proj is the identity and its output is concat"));
    line(fmt::format("mha = torch.nn.MultiheadAttention({}, {}{}, batch_first=True)", embed,
                     lesson_.heads, packed ? "" : fmt::format(", kdim={}, vdim={}", d_kv, d_kv)));
    line("with torch.no_grad():");
    if (packed) {
      line(fmt::format("mha.in_proj_weight.copy_(torch.cat([{}.T, {}.T, {}.T]))",
                       var(Q.made.inputs[1]), var(K.made.inputs[1]), var(V.made.inputs[1])),
           2);
    } else {
      line(fmt::format("mha.q_proj_weight.copy_({}.T)", var(Q.made.inputs[1])), 2);
      line(fmt::format("mha.k_proj_weight.copy_({}.T)", var(K.made.inputs[1])), 2);
      line(fmt::format("mha.v_proj_weight.copy_({}.T)", var(V.made.inputs[1])), 2);
    }
    if (Q.made.inputs.size() + K.made.inputs.size() + V.made.inputs.size() == 6)
      line("mha.in_proj_bias.zero_()  # the lesson has no b_Q, b_K or b_V", 2);
    else
      line(fmt::format("mha.in_proj_bias.copy_(torch.cat([{}, {}, {}]))", bias_of(Q), bias_of(K),
                       bias_of(V)),
           2);
    if (W_O) {
      const Step& output = trace_.at("output");
      line("mha.out_proj.weight.copy_(W_O.T)", 2);
      line(fmt::format("mha.out_proj.bias.copy_({})", bias_of(output)), 2);
    } else {
      line(fmt::format("mha.out_proj.weight.copy_(torch.eye({}))", embed), 2);
      line("mha.out_proj.bias.zero_()", 2);
    }
    line("mha.eval()  # dropout off (it is 0 here anyway); eval is how the tool computes");
  }

  // The module's queries, its keys' and values' source, and its key_padding_mask.
  struct MhaInputs {
    std::string queries, source, padding;
  };
  MhaInputs mha_inputs() {
    return {var(trace_.at("Q").made.inputs[0]), var(trace_.at("K").made.inputs[0]),
            lesson_.key_padding.empty() ? "None" : "key_padding_mask[None]"};
  }

  // The module's attn_mask: the causal and keep masks, True = blocked.
  std::string mha_attn_mask() const {
    std::vector<std::string> attn_parts;
    if (lesson_.causal) attn_parts.push_back("causal_blocked");
    if (lesson_.mask_pattern().sparse()) attn_parts.push_back("pattern_blocked");
    if (lesson_.keep) attn_parts.push_back("(keep == 0)");
    std::string attn_mask = "None";
    if (!attn_parts.empty()) {
      attn_mask.clear();
      for (const std::string& p : attn_parts) attn_mask += (attn_mask.empty() ? "" : " | ") + p;
    }
    return attn_mask;
  }

  // The module called on the lesson's tokens, every head's weights kept.
  void mha_call(const std::string& attn_mask) {
    const auto [queries, source, padding] = mha_inputs();
    comment(
        "attn_mask (n, m) and key_padding_mask (batch, m): True = blocked, the lesson's keep "
        "turned round. batch_first=True: tensors are (batch, tokens, features), here a batch "
        "of one, [None].");
    line("attn_output, attn_weights = mha(");
    line(fmt::format("{0}[None], {1}[None], {1}[None],  # query, key, value", queries, source), 2);
    line(fmt::format("attn_mask={}, key_padding_mask={},", attn_mask, padding), 2);
    line("need_weights=True, average_attn_weights=False)  # every head's weights", 2);
  }

  // The module's output and weights against the tool's, within twice the error
  // carried through the steps.
  void mha_compare() {
    const Step& Q = trace_.at("Q");
    const Step& K = trace_.at("K");
    const Step& V = trace_.at("V");
    const Step* W_O = trace_.find("W_O");
    const auto [queries, source, padding] = mha_inputs();
    const std::string target = W_O ? "output" : "concat";
    const auto bias_or_none = [&](const Step& p) {
      return p.made.inputs.size() > 2 ? var(p.made.inputs[2]) : std::string("None");
    };
    comment(
        "How far the module's results may be from the tool's: both are float64 computations "
        "of the same steps from the same numbers, each within the error carried through them "
        "(carried_attention above), so twice it.");
    line(
        fmt::format("parts = {{\"weights\": {{\"Q\": {}, \"K\": {}, \"V\": {}, \"O\": {}}}, "
                    "\"biases\": {{\"Q\": {}, \"K\": {}, \"V\": {}, \"O\": {}}},",
                    var(Q.made.inputs[1]), var(K.made.inputs[1]), var(V.made.inputs[1]),
                    W_O ? var(*W_O) : "None", bias_or_none(Q), bias_or_none(K), bias_or_none(V),
                    W_O ? bias_or_none(trace_.at("output")) : "None"));
    line("\"heads\": heads, \"d_k\": d_k, \"d_v\": d_v, \"scale\": scale, \"blocked\": blocked}",
         3);
    line(
        fmt::format("carried_weights, (_, output_error) = carried_attention({0}, "
                    "torch.zeros_like({0}), {1}, torch.zeros_like({1}), parts)",
                    queries, source));
    line(
        fmt::format("compare(\"nn.MultiheadAttention: attn_output = {0}\", attn_output[0], "
                    "\"{0}\", 2 * output_error)",
                    target));
    line("for h in range(heads):  # attn_weights: (batch, h, n, m)");
    line(
        "compare(f\"nn.MultiheadAttention: attn_weights[{h}] = head{h}.weights\", "
        "attn_weights[0, h], f\"head{h}.weights\", 2 * carried_weights[h][1])",
        2);
  }

  // average_attn_weights=True against heads.mean.
  void mha_mean_weights(const std::string& attn_mask) {
    if (lesson_.heads <= 1) return;
    const auto [queries, source, padding] = mha_inputs();
    line(
        fmt::format("_, mean_weights = mha({0}[None], {1}[None], {1}[None], attn_mask={2}, "
                    "key_padding_mask={3})",
                    queries, source, attn_mask, padding));
    comment(
        "average_attn_weights=True, the default: the heads' weights averaged; each within "
        "its carried error, and the mean's own rounding",
        1);
    line("mean_error = sum(e for _, e in carried_weights) / heads");
    line(
        "mean_error += sums(torch.stack([w for w, _ in carried_weights], dim=-1), 1).squeeze(-1) "
        "/ heads / 2");
    line(
        "compare(\"nn.MultiheadAttention: averaged weights = heads.mean\", mean_weights[0], "
        "\"heads.mean\", 2 * mean_error)");
  }

  // nn.TransformerEncoderLayer with the lesson's weights: its result against layer.output.
  void encoder_layer(const std::string& attn_mask) {
    const EncoderLayer& layer = *lesson_.layer;
    const Step& hidden = trace_.at(layer_step_id(LayerStep::ffn_hidden));
    const Step& out = trace_.at(layer_step_id(LayerStep::ffn_out));
    const auto bias_of = [&](const Step& p) {
      return p.made.inputs.size() > 2 ? var(p.made.inputs[2])
                                      : fmt::format("torch.zeros({})", p.value.n_cols);
    };
    const Step& residual1 = trace_.at(layer_step_id(LayerStep::residual1));
    section("The whole encoder layer with nn.TransformerEncoderLayer");
    comment(fmt::format(
        "nn.TransformerEncoderLayer: self_attn is the module above, linear1 and linear2 the "
        "FFN (nn.Linear: weight = W_1.T, W_2.T), norm1 and norm2 the LayerNorms, "
        "norm_first={} ({}). It is called with gradients on, so that PyTorch runs the layer "
        "op by op as written in its source, not its fused inference kernel.",
        layer.norm == NormPlacement::pre ? "True" : "False",
        layer.norm == NormPlacement::pre ? "Pre-LN" : "Post-LN, the 2017 paper's"));
    line(
        fmt::format("encoder = torch.nn.TransformerEncoderLayer(d_model, heads, "
                    "dim_feedforward={}, activation=\"{}\", layer_norm_eps={}, "
                    "batch_first=True, norm_first={})",
                    hidden.value.n_cols, layer.activation == Activation::gelu ? "gelu" : "relu",
                    py_number(layer.eps), layer.norm == NormPlacement::pre ? "True" : "False"));
    line("with torch.no_grad():");
    line("encoder.self_attn.load_state_dict(mha.state_dict())", 2);
    line("encoder.linear1.weight.copy_(W_1.T)", 2);
    line(fmt::format("encoder.linear1.bias.copy_({})", bias_of(hidden)), 2);
    line("encoder.linear2.weight.copy_(W_2.T)", 2);
    line(fmt::format("encoder.linear2.bias.copy_({})", bias_of(out)), 2);
    line(
        "for norm, gamma, beta in ((encoder.norm1, ln1_gamma, ln1_beta), "
        "(encoder.norm2, ln2_gamma, ln2_beta)):",
        2);
    line("norm.weight.copy_(gamma)", 3);
    line("norm.bias.copy_(beta)", 3);
    line("encoder.eval()");
    line(fmt::format("y = encoder({}[None], src_mask={}, src_key_padding_mask={})",
                     var(residual1.made.inputs.at(0)), attn_mask,
                     lesson_.key_padding.empty() ? "None" : "key_padding_mask[None]"));
    const auto bias_or_none = [&](const Step& p) {
      return p.made.inputs.size() > 2 ? var(p.made.inputs[2]) : std::string("None");
    };
    comment(
        "Its error carried through the layer from the lesson's numbers (carried_encoder_layer).");
    line(
        fmt::format("parts[\"weights\"].update({{\"1\": W_1, \"2\": W_2}}); "
                    "parts[\"biases\"].update({{\"1\": {}, \"2\": {}}})",
                    bias_or_none(hidden), bias_or_none(out)));
    line(fmt::format(
        "parts.update(eps={}, gelu={}, norm_first={}, gamma={{1: ln1_gamma, 2: ln2_gamma}}, "
        "beta={{1: ln1_beta, 2: ln2_beta}})",
        py_number(layer.eps), layer.activation == Activation::gelu ? "True" : "False",
        layer.norm == NormPlacement::pre ? "True" : "False"));
    line(fmt::format("_, layer_error = carried_encoder_layer({}, parts)",
                     var(residual1.made.inputs.at(0))));
    line(
        "compare(\"nn.TransformerEncoderLayer: output = layer.output\", y[0], \"layer.output\", "
        "2 * layer_error)");
  }

  // A lesson in a narrower format: what the format makes of the fill.
  void dtype_note_check() {
    if (lesson_.dtype == Dtype::f64) return;
    const std::string name = torch_dtype(lesson_.dtype);
    const double fill = lesson_.mask_fill;
    const double rounded = round_to(lesson_.dtype, fill);
    section(fmt::format("The lesson's {}", name));
    comment(fmt::format(
        "In {} the fill {} is {}: the tool rounds it as the format does, and so does PyTorch.{}",
        name, short_number(fill), short_number(rounded),
        std::isinf(rounded) && !std::isinf(fill)
            ? " A row whose every key is masked is then 0/0 = NaN, where a finite fill gives 1/m."
            : ""));
    line(fmt::format("fill_in_format = torch.tensor({}).to(torch.{}).item()", py_number(fill),
                     name));
    line(fmt::format("if fill_in_format != {}:  # the tool's", py_number(rounded)));
    line(fmt::format("fail(\"{}\", f\"the fill is {{fill_in_format!r}}, the tool's {}\")", name,
                     py_number(rounded)),
         2);
    line(
        fmt::format("print(f\"ok   {}: the fill {} is {{fill_in_format!r}}, as the tool rounds "
                    "it\")",
                    name, py_number(fill)));
  }

  // The tool's values, at the end of the file: every step, or the shape of a
  // large given matrix (the lesson's own numbers, written above).
  void data() {
    out_ += "\n\n";
    comment(fmt::format("The tool's value of every step (`attn-trace run {} --format json`{}), "
                        "exact: each number is the shortest decimal that reads back as the same "
                        "double. A given matrix of more than {} numbers is not repeated: only "
                        "its shape.",
                        trace_.lesson_id, lesson_.dtype != Dtype::f64 ? " --dtype f64" : "",
                        kGoldenGivenCells),
            0);
    out_ += "TOOL = {\n";
    for (const Step& step : trace_.steps) {
      if (is_backward_step(step)) continue;
      if (!kept_in_golden(step)) {
        out_ += fmt::format("    {}: ({}, {}),\n", py_string(step.id), step.value.n_rows,
                            step.value.n_cols);
        continue;
      }
      out_ += fmt::format("    {}: [\n", py_string(step.id));
      for (arma::uword i = 0; i < step.value.n_rows; ++i)
        out_ += "        " + py_row(step.value.row(i)) + ",\n";
      out_ += "    ],\n";
    }
    out_ += "}\n";
  }

  const Lesson& lesson_;
  const Trace& trace_;
  const std::string why_not_mha_;
  std::string out_;
  std::string section_;
  std::set<std::string> split_;  // the projections already split into heads
  bool attention_setup_ = false;
  bool linear_explained_ = false;
  bool decoded_ = false;
  bool projected_ = false;  // Q is written (what comes before it is a Pre-LN LayerNorm)
};

}  // namespace

std::string render_pytorch(const Lesson& lesson, const Trace& trace) {
  if (trace.dtype != Dtype::f64)
    throw std::logic_error("render_pytorch: the trace must be computed in f64");
  return ScriptWriter(lesson, trace).write();
}

}  // namespace attn
