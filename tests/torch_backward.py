#!/usr/bin/python3
"""The backward pass against PyTorch autograd (float64): every `grad.*` step of
every lesson with a [backward] table in lessons/ and of seeded random lessons
(tests/numpy_backward.py draws them: heads and K/V groups, causal / padding /
keep / window masks, cross-attention, biases, W_O or none, sinusoidal / RoPE /
ALiBi positions, Post-LN and Pre-LN encoder layers with ReLU or GELU, an
upstream gradient or the half_sq loss).

The forward pass is built from the lesson's numbers with torch ops, every
weight, bias, gamma, beta, X and memory a leaf with requires_grad, and every
intermediate step (Q, K, V, each head's slices, rotations, scores, scaled,
biased, masked, weights, context, concat, output, the layer's steps) kept with
retain_grad(); the loss (Σ upstream ⊙ result, or ½‖result − target‖²) is
differentiated by loss.backward(), and each tensor's .grad is the expected
`grad.<its id>`. Forward steps must equal attn-trace's to 1e-12 first (that
validates this model of each lesson key), then every gradient step, and
grad.head{h}.row_dot and grad.head{h}.jacobian by their formulas from autograd's
dA and the weights. A difference is measured against the scale of the step:
|attn-trace − PyTorch| ≤ 1e-12 · max(1, the step's largest finite |value|);
NaN and ±inf must sit in the same cells. --self-test moves a gradient of the
tool by 1e-9 (grad.head0.scores, grad.W_Q, grad.X of three lessons) and must
see each caught. Exit 77 (skipped) without torch.

Usage: torch_backward.py [BINARY] [--random N] [--seed S] [--lessons DIR]
                         [--no-backward] [--self-test]
"""
import sys
import tempfile

try:
    import numpy as np
    import torch
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-torch)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

import numpy_backward as nb


class TorchOps:
    """The forward's array operations on float64 tensors; leaves require grad."""

    def leaf(self, name, value):
        return torch.tensor(value, dtype=torch.float64, requires_grad=True)

    def const(self, value):
        return torch.as_tensor(np.asarray(value))

    def where(self, cond, a, b):
        return torch.where(cond.bool(), a.to(torch.float64), b)

    def softmax(self, x):
        return torch.softmax(x, dim=1)

    def cat(self, parts):
        return torch.cat(parts, dim=1)

    def sqrt(self, x):
        return torch.sqrt(x)

    def relu(self, x):
        return torch.relu(x)

    def erf(self, x):
        return torch.erf(x)

    def mean(self, x):
        return x.mean(dim=1, keepdim=True)

    def detach(self, x):
        return x.detach().numpy()


def torch_oracle(model, given):
    """(forward steps, autograd's gradient of every step that has one)."""
    found = {}

    def record(name, value):
        if value.requires_grad and not value.is_leaf:
            value.retain_grad()
        found.setdefault(name, value)
        return value

    result = nb.forward(model, given, TorchOps(), record)
    forward = {k: v.detach().numpy() for k, v in found.items()}
    if not model.backward:
        return forward, None
    table = model.backward
    if table.get("loss") == "half_sq":
        loss = 0.5 * ((result - torch.tensor(table["target"], dtype=torch.float64)) ** 2).sum()
    else:
        loss = (torch.tensor(table["upstream"], dtype=torch.float64) * result).sum()
    loss.backward()
    grads = {"grad." + k: v.grad.numpy() for k, v in found.items()
             if v.requires_grad and v.grad is not None}
    return forward, grads


def main():
    torch.set_num_threads(1)
    args = nb.common_arguments(__doc__)
    if args.self_test:
        return nb.self_test(torch_oracle, "PyTorch", args.binary, args)
    tallies = (nb.Tally("PyTorch forward"), nb.Tally("PyTorch gradients"))
    with tempfile.TemporaryDirectory() as tmp:
        lessons = nb.lesson_files(args, tmp)
        print(nb.summary(lessons))
        for path, lesson in lessons:
            try:
                nb.check_lesson(torch_oracle, tallies, path, lesson, args.binary)
            except RuntimeError as error:
                tallies[0].problems.append(str(error))
    for tally in tallies:
        tally.report()
    return 0 if not any(t.problems for t in tallies) else 1


if __name__ == "__main__":
    sys.exit(main())
