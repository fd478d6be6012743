"""Checker for lesson 02's shuffle exercise: permute keys and values together.

The learner's ``fn(K, V, rng)`` must move each (key, value) pair to a new
position with one permutation; attention is then unchanged. See ``helpers.checks``.
"""

import numpy as np

from helpers import attention_np as anp
from helpers._validate import fmt
from helpers.checks import _engine as ck
from helpers.i18n import _

__all__ = ["check_shuffle_keys_and_values"]


# --------------------------------------------------------------------------
# check_shuffle_keys_and_values (lesson 02, exercise 3)
# --------------------------------------------------------------------------


_UNSHUFFLED = ck.Mistake(
    symptom="K and V come back unshuffled",
    why="the exercise moves the (key, value) pairs to new positions",
    fix="return K[perm], V[perm]",
)
_KEYS_ONLY = ck.Mistake(
    symptom="you shuffled the keys but not the values",
    why="each key must keep its own value: a (key, value) pair is one memory slot",
    fix="index both with the same perm, K[perm] and V[perm]",
    line=r"\bV\b",
)
_VALUES_ONLY = ck.Mistake(
    symptom="you shuffled the values but not the keys: K_shuffled is K as it was",
    why="each value must keep its own key: a (key, value) pair is one memory slot, "
    "and moving only the values hands every key someone else's value",
    fix="index both with the same perm, K[perm] and V[perm]",
    line=r"\bK\b",
)
_SECOND_PERM = ck.Mistake(
    symptom="V_shuffled is not V[perm]: did you draw a second permutation for V?",
    why="two permutations separate each key from its value",
    fix="use the same perm for both, so each (key, value) pair stays together",
    line=r"permutation",
)
_INVERSE_PERM = ck.Mistake(
    symptom="you returned the inverse of perm (K_shuffled[perm] == K)",
    why="the perm you return must be the one that produced K_shuffled",
    fix="return K[perm], V[perm] with the perm you return",
    line=r"argsort|perm",
)


def _shuffle_problem(K, V, K_sh, V_sh, perm):
    """What is wrong with a shuffle of the (key, value) pairs, or None."""
    m = K.shape[0]
    if perm.dtype.kind not in "iu":
        return _(
            "perm must hold integer row numbers (rng.permutation(m) "
            "gives them); yours has dtype {dtype}"
        ).format(dtype=perm.dtype)
    if perm.shape != (m,) or sorted(perm.tolist()) != list(range(m)):
        return ck.Mistake(
            symptom="perm must be a permutation of 0 .. m - 1 = {last}, shape "
            "({m},); yours has shape {shape}",
            why="each of the m (key, value) rows must appear exactly once",
            fix="perm = rng.permutation(K.shape[0])",
            line=r"perm\s*=",
            key="perm is not a permutation of the rows",
        ).format(last=m - 1, m=m, shape=fmt(perm.shape))
    if (perm == np.arange(m)).all():
        return _("your perm is 0, 1, 2, ...: that permutation changes nothing")
    for name, got, rows in (("K_shuffled", K_sh, K), ("V_shuffled", V_sh, V)):
        if got.shape != rows.shape:
            return _("`{name}` has shape {shape}; it must be {expected}").format(
                name=name, shape=fmt(got.shape), expected=fmt(rows.shape)
            )
    if ck.same(K_sh, K) and ck.same(V_sh, V):
        return _UNSHUFFLED
    if ck.same(K_sh, K[perm]) and ck.same(V_sh, V):
        return _KEYS_ONLY
    if ck.same(K_sh, K) and not ck.same(V_sh, V):
        return _VALUES_ONLY
    if ck.same(K_sh, K[perm]) and not ck.same(V_sh, V[perm]):
        return _SECOND_PERM
    inverse = np.argsort(perm)
    if ck.same(K_sh, K[inverse]) and ck.same(V_sh, V[inverse]):
        return _INVERSE_PERM
    if not ck.same(K_sh, K[perm]):
        return _("K_shuffled must be K[perm], the rows of K in the order perm gives")
    return None


def _attention_unchanged(Q, K, V, K_sh, V_sh, perm):
    """None if attention is unchanged by the shuffle and changed by keys alone."""
    output, weights = anp.scaled_dot_product_attention(Q, K, V)
    output_sh, weights_sh = anp.scaled_dot_product_attention(Q, K_sh, V_sh)
    keys_only, _weights = anp.scaled_dot_product_attention(Q, K_sh, V)
    if not (ck.same(output_sh, output) and ck.same(weights_sh, weights[:, perm])):
        return ck.Mistake(
            symptom="attention's output changed after your shuffle",
            why="attention is a weighted sum over (key, value) pairs: reordering "
            "whole pairs changes nothing, splitting them does",
            fix="K[perm], V[perm], with the one perm you return",
        )
    if ck.same(keys_only, output):
        return _("shuffling the keys alone did not change the output: shuffle again")
    return None


def check_shuffle_keys_and_values(fn, *, seed=0):
    """Check ``fn(K, V, rng) -> (K_shuffled, V_shuffled, perm)``.

    The checker draws Q, K, V (m != d_k != d_v) and the ``rng``; then asserts that
    perm is a real permutation, the rows moved together, attention's output is
    unchanged, each weight moved with its key, and shuffling keys alone changes
    the output.
    """
    name = "check_shuffle_keys_and_values"
    ck.require_function(name, fn)
    rng = np.random.default_rng(seed)
    cases = []
    for n, m, d_k, d_v, draw in [(4, 6, 3, 5, 3), (2, 9, 4, 2, 7)]:
        Q, K, V = (rng.normal(size=s) for s in ((n, d_k), (m, d_k), (m, d_v)))
        case = ck.make_case(("K", "V", "rng"), K, V, np.random.default_rng(draw))
        cases.append((Q, case))
    outputs = tuple(ck.Out(x, "") for x in ("K_shuffled", "V_shuffled", "perm"))
    for number, (Q, case) in enumerate(cases, 1):
        K, V = case.args[:2]
        where = _("case {number} of {count}: {label}").format(
            number=number, count=len(cases), label=case.label
        )
        got = ck.to_arrays(
            ck.call(name, fn, case, "shuffle_keys_and_values(K, V, rng)", ""),
            outputs,
            fn,
        )
        message = (
            got if isinstance(got, str) else ck.quietly(_shuffle_problem, K, V, *got)
        )
        if message is None:
            message = ck.quietly(_attention_unchanged, Q, K, V, *got)
        if message is not None:
            raise ck.CheckFailed(name, message, where, ck.look_at(fn, message))
    print(
        _(
            "✓ {name}: {count} cases passed; the output is unchanged "
            "when (key, value) pairs move together, and changes when the "
            "keys move alone"
        ).format(name=name, count=len(cases))
    )
    return True
