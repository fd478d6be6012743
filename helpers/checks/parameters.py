"""Checker for lesson 07's prediction: the parameters of a multi-head layer.

``check_parameter_count`` runs the learner's ``my_parameter_count(d_model,
num_heads, bias)`` on several layers and compares it with the count of an
actual ``torch.nn.MultiheadAttention`` built inside the checker (torch is
imported when the check runs, so ``helpers.checks`` never loads it). The
answer is never in the notebook's check cell.
"""

from helpers.checks import _engine as ck
from helpers.checks._refuse import refusing
from helpers.i18n import N_, _

__all__ = ["check_parameter_count"]

_PER_HEAD = ck.Mistake(
    symptom="your count grows with num_heads: for num_heads = {num_heads} it is "
    "num_heads times too large",
    why="the heads do not bring matrices of their own: each head is a slice of "
    "d_k columns of the same W_Q, W_K, W_V and d_k rows of the same W_O",
    fix="count the four (d_model, d_model) matrices once",
    line=r"num_heads|\bh\b",
)
_HEAD_SIZED = ck.Mistake(
    symptom="your count shrinks with num_heads: you counted (d_k, d_k) matrices "
    "per head, with d_k = d_model / num_heads = {d_k}",
    why="each head's projection maps all d_model input features to its d_k "
    "columns: a (d_model, d_k) slice, and num_heads of them make the whole matrix",
    fix="four (d_model, d_model) matrices, whatever num_heads is",
    line=r"//|/",
)
_NO_W_O = ck.Mistake(
    symptom="your count holds three (d_model, d_model) matrices: the output "
    "projection is missing",
    why="after the heads are merged, W_O (out_proj) mixes them: a fourth matrix",
    fix="W_Q, W_K, W_V and W_O",
    line=r"3 *\*|\* *3\b",
)
_NO_BIAS = ck.Mistake(
    symptom="your count is right without biases but this layer has bias=True",
    why="with bias=True each of the four projections adds one bias vector of "
    "d_model numbers",
    fix="add 4 * d_model when bias is True",
    line=r"return",
)
_THREE_BIASES = ck.Mistake(
    symptom="your count holds four (d_model, d_model) matrices but only three "
    "bias vectors",
    why="the output projection W_O (out_proj) has a bias of its own too: with "
    "bias=True every one of the four projections adds d_model numbers",
    fix="add 4 * d_model when bias is True",
    line=r"3 *\*|\* *3\b",
)
_BIAS_ALWAYS = ck.Mistake(
    symptom="your count adds biases to a layer built with bias=False",
    why="bias=False leaves out the four bias vectors",
    fix="add 4 * d_model only when bias is True",
    line=r"bias|return",
)


def _cases():
    cases = []
    for d_model, num_heads, bias in [
        (512, 8, False),
        (512, 1, False),
        (96, 12, True),
        (64, 4, False),
        (48, 3, True),
    ]:
        sizes = {"d_model": d_model, "num_heads": num_heads}
        facts = {"d_k": d_model // num_heads}
        cases.append(
            ck.make_case(
                ("d_model", "num_heads", "bias"),
                d_model,
                num_heads,
                bias,
                sizes=sizes,
                facts=facts,
            )
        )
    return cases


def _layer_count(d_model, num_heads, bias):
    """The parameters of an actual nn.MultiheadAttention, counted."""
    from torch import nn

    layer = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True)
    return sum(p.numel() for p in layer.parameters())


def check_parameter_count(fn):
    """Check ``fn(d_model, num_heads, bias)`` against nn.MultiheadAttention layers.

    Steps: list the layer's weight matrices and bias vectors with their shapes,
    add up their sizes, and print your count for d_model = 512 with 1 and with
    8 heads, and with bias=True and False: which of those should change it?

    Cases: d_model 512 with 8 heads and 1, smaller layers, with and without
    biases. While ``fn`` runs, ``torch.nn.MultiheadAttention`` refuses to be
    built: the exercise counts without building one.
    """
    variants = [
        (_PER_HEAD, lambda d, h, bias: h * (4 * d * d + 4 * d * bias)),
        (_HEAD_SIZED, lambda d, h, bias: 4 * h * (d // h) ** 2 + 4 * d * bias),
        (_NO_W_O, lambda d, h, bias: 3 * d * d + 3 * d * bias),
        (_NO_W_O, lambda d, h, bias: 3 * d * d + 4 * d * bias),
        (_NO_BIAS, lambda d, h, bias: 4 * d * d),
        (_BIAS_ALWAYS, lambda d, h, bias: 4 * d * d + 4 * d),
        (_THREE_BIASES, lambda d, h, bias: 4 * d * d + 3 * d * bias),
    ]
    from torch import nn

    reason = N_(
        "the exercise asks for the count without building a layer: work it out "
        "from the shapes of the four projections and their biases"
    )
    fn = refusing(fn, nn, ("MultiheadAttention",), reason)
    return ck.run(
        "check_parameter_count",
        fn,
        _cases(),
        _layer_count,
        (ck.Out("count", "()", "Return one whole number."),),
        variants,
        signature="my_parameter_count(d_model, num_heads, bias)",
        inspect=_whole_number,
    )


def _whole_number(case, got):
    value = got[0]
    if value.dtype.kind not in "iu":
        return _(
            "return the count as a whole number (an int); got a {dtype} value"
        ).format(dtype=value.dtype)
    return None
