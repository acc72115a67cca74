#!/usr/bin/python3
"""The encoder-layer lessons against PyTorch: nn.TransformerEncoderLayer in eval
mode, float64, loaded with each lesson's weights, must give the golden file's
`output` (the attention sub-layer) and `layer.output`, every cell within twice
the error a float64 computation of the layer can make in any summation order
(tests/bounds.py's Carried: each operation's rounding bound, carried through
the layer from the lesson's exact numbers). Both PyTorch and the tool are such
computations: OpenBLAS's kernels, PyTorch's fused softmax and its Welford
LayerNorm add in their own orders, so a tolerance that does not follow from
the arithmetic would hold on one machine and not on another.

Usage: torch_oracle.py [--lessons DIR] [--golden DIR] [--self-test]

Every lesson with a [layer] table is compared; the largest difference of each
is printed as a fraction of its bound. PyTorch's nn.Linear stores weights as
(out, in) and computes x·Wᵀ, while lessons write row-vector weights (in, out):
every matrix is transposed on the way in. --self-test moves one golden value
by 1.5 times its bound and must see the comparison fail. Exit 77 (skipped)
when this Python has no torch (apt-get install python3-torch).
"""
import argparse
import pathlib
import sys
import tomllib

try:
    import numpy as np
    import torch
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-torch)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

import bounds  # noqa: E402  (the order-independent bounds, shared by the Python tests)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def tensor(value):
    return torch.tensor(np.array(value, dtype=float), dtype=torch.float64)


def encoder_layer(lesson):
    """nn.TransformerEncoderLayer holding the lesson's weights (eval mode, float64)."""
    w, layer = lesson["weights"], lesson["layer"]
    heads = lesson.get("model", {}).get("heads", 1)
    W_Q, W_K, W_V, W_O = (tensor(w[k]) for k in ("W_Q", "W_K", "W_V", "W_O"))
    d_model = W_Q.shape[0]
    W_1, W_2 = tensor(w["W_1"]), tensor(w["W_2"])
    torch_layer = torch.nn.TransformerEncoderLayer(
        d_model, heads, dim_feedforward=W_1.shape[1], dropout=0.1,
        activation=layer.get("activation", "relu"), layer_norm_eps=float(layer.get("eps", 1e-5)),
        batch_first=True, norm_first=layer.get("norm", "post") == "pre", dtype=torch.float64)
    zeros = lambda size: [0.0] * size  # noqa: E731 (an absent bias is 0)
    ones = lambda size: [1.0] * size  # noqa: E731 (an absent gamma is 1)
    with torch.no_grad():
        attn = torch_layer.self_attn
        attn.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T]))
        attn.in_proj_bias.copy_(torch.cat([tensor(w.get(k, zeros(d_model)))
                                           for k in ("b_Q", "b_K", "b_V")]))
        attn.out_proj.weight.copy_(W_O.T)
        attn.out_proj.bias.copy_(tensor(w.get("b_O", zeros(d_model))))
        torch_layer.linear1.weight.copy_(W_1.T)
        torch_layer.linear1.bias.copy_(tensor(w.get("b_1", zeros(W_1.shape[1]))))
        torch_layer.linear2.weight.copy_(W_2.T)
        torch_layer.linear2.bias.copy_(tensor(w.get("b_2", zeros(d_model))))
        for k, norm in ((1, torch_layer.norm1), (2, torch_layer.norm2)):
            norm.weight.copy_(tensor(w.get(f"ln{k}_gamma", ones(d_model))))
            norm.bias.copy_(tensor(w.get(f"ln{k}_beta", zeros(d_model))))
    return torch_layer.eval()


def why_not_comparable(lesson):
    """A reason PyTorch's layer cannot be this lesson, or None."""
    model, inp, w = lesson.get("model", {}), lesson["input"], lesson["weights"]
    if model.get("scale", "sqrt_dk") != "sqrt_dk":
        return "PyTorch always divides by √d_k"
    if model.get("positional_encoding", "none") != "none":
        return "positions are added outside the layer"
    if any(k in inp for k in ("keep", "key_padding")) or model.get("causal", False):
        return "masks are not compared here"
    if any(isinstance(w[k], str) for k in ("W_Q", "W_K", "W_V", "W_O")):
        return "\"identity\" weights are not read here"
    if not lesson["layer"].get("residual", True):
        return "nn.TransformerEncoderLayer always adds its residual sums"
    return None


def golden_step(golden, step_id):
    for step in golden["step"]:
        if step["id"] == step_id:
            return np.array(step["data"], dtype=float).reshape(step["shape"])
    raise KeyError(f"golden file has no step {step_id}")


def carried_layer(lesson):
    """The lesson's encoder layer computed here with bounds.Carried from its
    exact numbers: (output, layer.output), each with the error any float64
    computation of it can make, in any order."""
    w, layer = lesson["weights"], lesson["layer"]
    heads = lesson.get("model", {}).get("heads", 1)
    C = bounds.Carried
    X = C(np.array(lesson["input"]["X"], dtype=float))
    d = X.value.shape[1]
    eps = float(layer.get("eps", 1e-5))

    def row(name, default):
        return np.array(w.get(name, [default] * d), dtype=float)

    def linear(x, weight, bias):
        W = np.array(w[weight], dtype=float)
        b = np.array(w[bias], dtype=float) if bias in w else np.zeros(W.shape[1])
        return bounds.carried_product(x, C(W), bias=b)

    def attention(x):
        Q, K, V = linear(x, "W_Q", "b_Q"), linear(x, "W_K", "b_K"), linear(x, "W_V", "b_V")
        d_k = Q.value.shape[1] // heads
        contexts = []
        for h in range(heads):
            cols = slice(h * d_k, (h + 1) * d_k)
            Qh, Kh, Vh = (C(M.value[:, cols], M.error[:, cols]) for M in (Q, K, V))
            # ÷ √d_k before or after the sum (PyTorch scales q), the root rounded: 3 roundings
            scaled = bounds.carried_product(Qh, Kh.T, divisor=np.sqrt(d_k), extra=3)
            contexts.append(bounds.carried_product(bounds.carried_softmax(scaled), Vh))
        concat = C(np.hstack([c.value for c in contexts]), np.hstack([c.error for c in contexts]))
        return linear(concat, "W_O", "b_O")

    def ffn(x):
        hidden = linear(x, "W_1", "b_1")
        act = (bounds.carried_gelu(hidden) if layer.get("activation", "relu") == "gelu"
               else bounds.carried_relu(hidden))
        return linear(act, "W_2", "b_2")

    def norm(k, x):
        return bounds.carried_layer_norm(x, row(f"ln{k}_gamma", 1.0), row(f"ln{k}_beta", 0.0), eps)

    if layer.get("norm", "post") == "pre":
        out = attention(norm(1, X))
        h = bounds.carried_add(X, out)
        return out, bounds.carried_add(h, ffn(norm(2, h)))
    out = attention(X)
    h = norm(1, bounds.carried_add(X, out))
    return out, norm(2, bounds.carried_add(h, ffn(h)))


def compare(lesson, golden):
    """For `output` and `layer.output`: (cells beyond twice the carried error,
    largest |torch − golden| as a fraction of it)."""
    torch_layer = encoder_layer(lesson)
    X = tensor(lesson["input"]["X"]).unsqueeze(0)  # (batch 1, n, d_model)
    with torch.no_grad():
        y = torch_layer(X)[0].numpy()
        attn_in = torch_layer.norm1(X) if torch_layer.norm_first else X
        out = torch_layer.self_attn(attn_in, attn_in, attn_in, need_weights=False)[0][0].numpy()
    carried_out, carried_y = carried_layer(lesson)
    found = []
    for step, theirs, carried in (("output", out, carried_out), ("layer.output", y, carried_y)):
        bad, worst = bounds.compare(theirs, golden_step(golden, step),
                                    bounds.Bound(2 * carried.error))
        found.append((int(bad.sum()), worst))
    return found


def with_golden_value(golden, step_id, change):
    """A copy of a golden file's table with cell (0, 0) of `step_id` changed."""
    copy = {**golden, "step": [dict(s) for s in golden["step"]]}
    for step in copy["step"]:
        if step["id"] == step_id:
            data = np.array(step["data"], dtype=float).reshape(step["shape"])
            data[0, 0] = change(data[0, 0])
            step["data"] = data.tolist()
    return copy


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--golden", default=ROOT / "golden")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    failures, compared = 0, 0
    print(f"torch {torch.__version__}, nn.TransformerEncoderLayer, eval mode, float64")
    for path in sorted(pathlib.Path(args.lessons).glob("*.toml")):
        lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        if "layer" not in lesson:
            continue
        lesson_id = lesson["lesson"].get("id", path.stem)
        reason = why_not_comparable(lesson)
        if reason:
            print(f"not compared {lesson_id}: {reason}")
            continue
        golden = tomllib.loads((pathlib.Path(args.golden) / f"{lesson_id}.toml")
                               .read_text(encoding="utf-8"))
        if args.self_test:
            # layer.output's cell (0, 0) moved 1.5 times its bound from PyTorch's
            _, carried_y = carried_layer(lesson)
            torch_layer = encoder_layer(lesson)
            with torch.no_grad():
                theirs = torch_layer(tensor(lesson["input"]["X"]).unsqueeze(0))[0].numpy()
            moved = theirs[0, 0] + 1.5 * 2 * carried_y.error[0, 0]
            golden = with_golden_value(golden, "layer.output", lambda _: moved)
        (bad_out, worst_out), (bad_layer, worst_layer) = compare(lesson, golden)
        ok = bad_out == 0 and bad_layer == 0
        failures += not ok
        compared += 1
        print(f"{'ok  ' if ok else 'FAIL'} {lesson_id}: |torch - golden| output {worst_out:.3g}, "
              f"layer.output {worst_layer:.3g} of the bound"
              + (f" ({bad_out + bad_layer} cells beyond it)" if not ok else ""))
    if compared == 0:
        print("no encoder-layer lesson was compared")
        return 1
    if args.self_test:
        caught = failures == compared
        print(f"self-test: a golden layer.output moved 1.5 bounds fails in {failures} of "
              f"{compared} lessons: {'detected' if caught else 'NOT detected'}")
        return 0 if caught else 1
    print(f"{compared} lesson(s) compared within twice the carried error bound; {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
