#!/usr/bin/python3
"""The encoder-layer lessons against PyTorch: nn.TransformerEncoderLayer in eval
mode, float64, loaded with each lesson's weights, must give the golden file's
`output` (the attention sub-layer) and `layer.output` to 1e-12.

Usage: torch_oracle.py [--lessons DIR] [--golden DIR] [--tol 1e-12]

Every lesson with a [layer] table is compared; the largest absolute difference
of each is printed. PyTorch's nn.Linear stores weights as (out, in) and
computes x·Wᵀ, while lessons write row-vector weights (in, out): every matrix
is transposed on the way in. Exit 77 (skipped) when this Python has no torch
(apt-get install python3-torch).
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
    return None


def golden_step(golden, step_id):
    for step in golden["step"]:
        if step["id"] == step_id:
            return np.array(step["data"], dtype=float).reshape(step["shape"])
    raise KeyError(f"golden file has no step {step_id}")


def compare(lesson, golden):
    """The largest |difference| of `output` and of `layer.output`, PyTorch vs golden."""
    torch_layer = encoder_layer(lesson)
    X = tensor(lesson["input"]["X"]).unsqueeze(0)  # (batch 1, n, d_model)
    with torch.no_grad():
        y = torch_layer(X)[0].numpy()
        attn_in = torch_layer.norm1(X) if torch_layer.norm_first else X
        out = torch_layer.self_attn(attn_in, attn_in, attn_in, need_weights=False)[0][0].numpy()
    return (np.abs(out - golden_step(golden, "output")).max(),
            np.abs(y - golden_step(golden, "layer.output")).max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--golden", default=ROOT / "golden")
    parser.add_argument("--tol", type=float, default=1e-12)
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
        d_out, d_layer = compare(lesson, golden)
        ok = d_out <= args.tol and d_layer <= args.tol
        failures += not ok
        compared += 1
        print(f"{'ok  ' if ok else 'FAIL'} {lesson_id}: max |torch - golden| output {d_out:.3g}, "
              f"layer.output {d_layer:.3g}")
    if compared == 0:
        print("no encoder-layer lesson was compared")
        return 1
    print(f"{compared} lesson(s) compared at tolerance {args.tol:g}; {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
