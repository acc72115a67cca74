"""What the heatmap tests (test_svg.py, test_html.py, test_terminal.py) check
the tool against, written here once and apart from the C++: the viridis ramp,
the masked cells as a lesson file states them, and JSON's non-finite numbers.
"""
import math
import os
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Viridis at 0, 0.1, ..., 1 (matplotlib's table, sampled).
VIRIDIS = [(68, 1, 84), (72, 36, 117), (65, 68, 135), (53, 95, 141), (42, 120, 142),
           (33, 145, 140), (34, 168, 132), (68, 191, 112), (122, 209, 81), (189, 223, 38),
           (253, 231, 37)]


def ramp(t):
    """t in [0, 1] (clamped) -> (r, g, b), linear between the stops, unrounded."""
    x = min(max(t, 0.0), 1.0) * 10
    i = min(int(x), 9)
    f = x - i
    a, b = VIRIDIS[i], VIRIDIS[i + 1]
    return tuple(p + (q - p) * f for p, q in zip(a, b))


def rgb(t):
    """ramp(t) rounded to bytes (halves up)."""
    return tuple(int(math.floor(c + 0.5)) for c in ramp(t))


def hex_colour(t):
    return "#" + "".join(f"{c:02x}" for c in rgb(t))


def outside_pattern(model, i, j):
    """SPEC section 11: outside the window (0 with a stride alone), not a stride
    key, and neither i nor j a global token."""
    if "window" not in model and "stride" not in model:
        return False
    stride = model.get("stride")
    globals_ = model.get("global", [])
    return (abs(i - j) > model.get("window", 0) and
            not (stride and j % stride == stride - 1) and i not in globals_ and j not in globals_)


def mask_of(lesson, n, m):
    """The masked cells as the lesson file states them: causal, key padding, keep,
    and the window / global / stride pattern."""
    with open(os.path.join(ROOT, "lessons", lesson + ".toml"), "rb") as f:
        t = tomllib.load(f)
    model = t.get("model", {})
    causal = model.get("causal", False)
    padding = t.get("input", {}).get("key_padding", [False] * m)
    keep = t.get("input", {}).get("keep")
    return [[(causal and j > i) or padding[j] or (keep is not None and keep[i][j] == 0)
             or outside_pattern(model, i, j) for j in range(m)] for i in range(n)]


def number(v):
    """A JSON cell: a number, or "nan", "inf", "-inf"."""
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(v, v) if isinstance(v, str) else v
