#!/usr/bin/python3
"""The stack_grad_norm claim (docs/lesson-format.md) recomputed by hand with
numpy: the same seeded draws (SplitMix64 and Box–Muller, as
src/teach/qk_stats.cpp's NormalStream), k encoder layers shaped like the
lesson's (no biases, γ = 1, β = 0, weights of standard deviation
d_model^(−1/2)), the forward pass layer after layer and the backward pass
written out with the chain rule (no autograd), the gradient's Frobenius norm
at every layer's input. Each claim's computed_exact from `attn-trace check
--format json` must agree to 1e-10 (relative): the tool and this file add in
different orders, and twelve layers of LayerNorm carry the rounding along.

Lessons: a Post-LN ReLU lesson with k = 2 (with and without residual sums), a
Pre-LN GELU one with k = 3, and lessons/residual-gradient.toml's own claims.
Also asserted, on a d_model 4 lesson over seeds 1 to 10: the median ratio at
layer 1 of 12 without residual sums is under a tenth of the median with them
(the contrast 000 section 6.1 describes; single seeds scatter widely).

Usage: stack_grad.py BINARY
"""
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import tomllib

try:
    import numpy as np
except ModuleNotFoundError:
    print(f"SKIPPED: {sys.executable} has no numpy")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

ROOT = pathlib.Path(__file__).resolve().parent.parent
MASK = (1 << 64) - 1


class Normals:
    """NormalStream(seed): SplitMix64, then Box–Muller, cos first, sin second."""

    def __init__(self, seed):
        self.state, self.spare = seed, None

    def bits(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def next(self):
        if self.spare is not None:
            out, self.spare = self.spare, None
            return out
        u1 = ((self.bits() >> 11) + 1) * 2.0 ** -53
        u2 = (self.bits() >> 11) * 2.0 ** -53
        r = math.sqrt(-2.0 * math.log(u1))
        self.spare = r * math.sin(2 * math.pi * u2)
        return r * math.cos(2 * math.pi * u2)

    def matrix(self, rows, cols, scale):
        return np.array([[scale * self.next() for _ in range(cols)] for _ in range(rows)])


def ln_forward(x, eps):
    mu = x.mean(1, keepdims=True)
    var = ((x - mu) ** 2).mean(1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps), (x - mu, var + eps)


def ln_backward(dy, cache):
    xc, v = cache
    d = xc.shape[1]
    s = 1.0 / np.sqrt(v)
    xhat = xc * s
    return s * (dy - dy.mean(1, keepdims=True) - xhat * (dy * xhat).mean(1, keepdims=True))


def act(h, gelu):
    if not gelu:
        return np.maximum(h, 0), (h > 0).astype(float)
    phi = np.vectorize(lambda t: 0.5 * (1 + math.erf(t / math.sqrt(2))))(h)
    return h * phi, phi + h * np.exp(-h * h / 2) / math.sqrt(2 * math.pi)


def attention(x, w, heads):
    q, k, v = x @ w["Q"], x @ w["K"], x @ w["V"]
    d_k = q.shape[1] // heads
    parts, cache = [], []
    for h in range(heads):
        s = slice(h * d_k, (h + 1) * d_k)
        z = q[:, s] @ k[:, s].T / math.sqrt(d_k)
        a = np.exp(z - z.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        parts.append(a @ v[:, s])
        cache.append(a)
    return np.hstack(parts) @ w["O"], (x, q, k, v, np.hstack(parts), cache)


def attention_back(dout, w, heads, cache):
    x, q, k, v, concat, probs = cache
    d_k = q.shape[1] // heads
    dc = dout @ w["O"].T
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for h, a in enumerate(probs):
        s = slice(h * d_k, (h + 1) * d_k)
        da = dc[:, s] @ v[:, s].T
        dv[:, s] = a.T @ dc[:, s]
        dz = a * (da - (da * a).sum(1, keepdims=True)) / math.sqrt(d_k)
        dq[:, s], dk[:, s] = dz @ k[:, s], dz.T @ q[:, s]
    return dq @ w["Q"].T + dk @ w["K"].T + dv @ w["V"].T


def layer(x, w, shape, r):
    """(output, backward: d output -> d x) of one encoder layer."""
    heads, post, gelu, eps = shape["heads"], shape["post"], shape["gelu"], shape["eps"]
    if post:
        a, ca = attention(x, w, heads)
        h, c1 = ln_forward(r * x + a, eps)
        f, dact = act(h @ w["1"], gelu)
        y, c2 = ln_forward(r * h + f @ w["2"], eps)

        def back(dy):
            d2 = ln_backward(dy, c2)
            dh = r * d2 + ((d2 @ w["2"].T) * dact) @ w["1"].T
            d1 = ln_backward(dh, c1)
            return r * d1 + attention_back(d1, w, heads, ca)
        return y, back
    n1, c1 = ln_forward(x, eps)
    a, ca = attention(n1, w, heads)
    h = r * x + a
    n2, c2 = ln_forward(h, eps)
    f, dact = act(n2 @ w["1"], gelu)

    def back(dy):
        dh = r * dy + ln_backward(((dy @ w["2"].T) * dact) @ w["1"].T, c2)
        return r * dh + ln_backward(attention_back(dh, w, heads, ca), c1)
    return r * h + f @ w["2"], back


def stack_norms(lesson, layers, seed, residual):
    """‖dL/d(input of layer l)‖ for l = 1..layers."""
    x = np.array(lesson["input"]["X"], dtype=float)
    heads = lesson.get("model", {}).get("heads", 1)
    wt, lay = lesson["weights"], lesson["layer"]
    d, width = x.shape[1], np.array(wt["W_Q"]).shape[1]
    d_ff = np.array(wt["W_1"]).shape[1]
    shape = {"heads": heads, "post": lay.get("norm", "post") == "post",
             "gelu": lay.get("activation", "relu") == "gelu", "eps": float(lay.get("eps", 1e-5))}
    z, scale = Normals(seed), d ** -0.5
    backs = []
    for _ in range(layers):
        w = {"Q": z.matrix(d, width, scale), "K": z.matrix(d, width, scale),
             "V": z.matrix(d, width, scale), "O": z.matrix(width, d, scale),
             "1": z.matrix(d, d_ff, scale), "2": z.matrix(d_ff, d, scale)}
        x, back = layer(x, w, shape, 1.0 if residual else 0.0)
        backs.append(back)
    g, norms = z.matrix(x.shape[0], d, 1.0), []
    for back in reversed(backs):
        g = back(g)
        norms.append(float(np.linalg.norm(g)))
    return norms[::-1]


def test_lesson(heads, norm, activation, d_ff, claims, seed):
    r = np.random.default_rng(seed)
    mat = lambda a, b: "[" + ", ".join("[" + ", ".join(f"{v:.2f}" for v in row) + "]"  # noqa: E731
                                       for row in r.uniform(-1, 1, (a, b))) + "]"
    d = 4
    lines = ['[lesson]\nid = "stack-test"\n', f"[model]\nheads = {heads}\n",
             f'[input]\nX = {mat(3, d)}\n', "[weights]"]
    lines += [f"{k} = {mat(d, d)}" for k in ("W_Q", "W_K", "W_V", "W_O")]
    lines += [f"W_1 = {mat(d, d_ff)}", f"W_2 = {mat(d_ff, d)}"]
    lines += ["", '[layer]\nkind = "encoder"', f'norm = "{norm}"', f'activation = "{activation}"']
    for k, at, s, res in claims:
        lines += ["", "[[claim]]", 'quantity = "stack_grad_norm"', f"layers = {k}", f"at = {at}",
                  f"seed = {s}", f"residual = {'true' if res else 'false'}", "value = 0",
                  "tolerance = 1e9", 'says = "test"']
    return "\n".join(lines) + "\n"


def tool_values(binary, path):
    run = subprocess.run([binary, "check", str(path), "--format", "json"], capture_output=True,
                         text=True, check=False)
    if run.returncode not in (0, 1):
        sys.exit(f"attn-trace check {path} exited {run.returncode}: {run.stderr}")
    return [c for c in json.loads(run.stdout)["quantity_claims"]
            if c["kind"] == "stack_grad_norm"]


def compare(binary, path, lesson, problems):
    claims = [c for c in lesson.get("claim", []) if c.get("quantity") == "stack_grad_norm"]
    found = tool_values(binary, path)
    assert len(found) == len(claims) > 0, f"{path}: {len(found)} of {len(claims)} claims"
    for claim, tool in zip(claims, found):
        norms = stack_norms(lesson, claim["layers"], claim.get("seed", 1),
                            claim.get("residual", True))
        want = norms[claim["at"] - 1] / norms[-1]
        got = tool["computed_exact"]
        ok = abs(got - want) <= 1e-10 * max(1.0, abs(want))
        print(f"{path.name}: layers {claim['layers']} at {claim['at']} residual "
              f"{claim.get('residual', True)}: tool {got:.12g}, numpy {want:.12g}"
              f"{'' if ok else '  DIFFERENT'}")
        if not ok:
            problems.append(f"{path.name}: {claim}")
    return found


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "attn-trace")
    problems = []
    cases = [(1, "post", "relu", 8, [(2, 1, 7, True), (2, 1, 7, False), (2, 2, 3, True)]),
             (2, "pre", "gelu", 5, [(3, 1, 11, True), (3, 2, 11, False)]),
             (2, "post", "relu", 16, [(12, 1, s, res) for res in (True, False)
                                      for s in range(1, 11)])]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (heads, norm, activation, d_ff, claims) in enumerate(cases):
            text = test_lesson(heads, norm, activation, d_ff, claims, i)
            path = pathlib.Path(tmp) / f"stack-{i}.toml"
            path.write_text(text, encoding="utf-8")
            found = compare(binary, path, tomllib.loads(text), problems)
            if i == 2:  # 000 section 6.1: without residual sums the gradient fades
                ratios = [c["computed_exact"] for c in found]
                with_r, without = np.median(ratios[:10]), np.median(ratios[10:])
                print(f"12 layers, layer 1 over layer 12, median of seeds 1-10: with residual "
                      f"sums {with_r:.3g}, without {without:.3g}")
                if not without < 0.1 * with_r:
                    problems.append(f"12 layers: with residual {with_r}, without {without}")
    lesson_path = ROOT / "lessons" / "residual-gradient.toml"
    if lesson_path.exists():
        compare(binary, lesson_path, tomllib.loads(lesson_path.read_text(encoding="utf-8")),
                problems)
    for p in problems:
        print("FAIL", p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
