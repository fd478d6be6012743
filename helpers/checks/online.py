"""Checker for the online softmax of lesson 08 (FlashAttention's forward pass).

The learner writes two functions. ``update(m, l, acc, scores_block, V_block)``
folds one block of already scaled scores (n, b) and its values (b, d_v) into the
running state: the running max ``m`` (n, 1), the running sum ``l`` (n, 1) of
exp(score - m), and the unnormalised accumulator ``acc`` (n, d_v) of
exp(score - m) @ V. ``finish(m, l, acc)`` returns ``(out, lse)``: the output
acc / l (n, d_v) and the logsumexp m + log(l) (n, 1) that the backward pass
keeps. Each step is checked from the reference state, so a message points at
the one step that went wrong.
"""

from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.i18n import _

__all__ = ["check_online_softmax"]

_FA1 = ck.Mistake(
    symptom="your acc is already divided by l (FlashAttention-1 style: "
    "renormalise at every step)",
    why="this course keeps acc unnormalised, as FlashAttention-2 does: one "
    "division at the end instead of one per block",
    fix="acc = correction * acc + P @ V_block, and divide by l once, in finish",
    line=r"/\s*l",
)
_L_NOT_RESCALED = ck.Mistake(
    symptom="your l is not rescaled when the running max grows",
    why="l holds sums of exp(score - old max); after the max moves they must be "
    "relative to the new one",
    fix="multiply it by correction = np.exp(m - m_new) before adding "
    "P.sum(axis=1, keepdims=True)",
    line=r"\bl\b\s*(\+)?=",
)
_ACC_NOT_RESCALED = ck.Mistake(
    symptom="your acc is not rescaled when the running max grows",
    why="acc was built with the old max: its terms are exp(score - old max) v",
    fix="multiply it by correction = np.exp(m - m_new) before adding P @ V_block",
    line=r"acc\s*(\+)?=",
)
_CORRECTION_INVERTED = ck.Mistake(
    symptom="your correction is upside down: it grows the old sums",
    why="the old sums move from the old max to the larger new one by shrinking",
    fix="np.exp(m - m_new) <= 1, not np.exp(m_new - m)",
    line=r"exp",
)
_OLD_MAX = ck.Mistake(
    symptom="your P uses the old max",
    why="every term of the state must be relative to the same max, the new one",
    fix="P = np.exp(scores_block - m_new), with m_new = np.maximum(m, block max)",
    line=r"exp",
)
_WRONG_SHIFT = ck.Mistake(
    symptom="your l and acc are both off by one factor per query: the "
    "exponentials are shifted by something other than the new max",
    why="l and acc must be relative to the running max m_new, the one you return",
    fix="P = np.exp(scores_block - m_new) and correction = np.exp(m - m_new), "
    "with m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))",
    line=r"exp",
)
_M_NOT_UPDATED = ck.Mistake(
    symptom="you returned the old m",
    why="m is the running max: after a block it is the max of everything seen",
    fix="return the new running max, m_new = np.maximum(m, "
    "scores_block.max(axis=1, keepdims=True))",
    line=r"return",
)
_SUM_ALL = ck.Mistake(
    symptom="your l adds the sum of the whole block, P.sum()",
    why="each query keeps its own sum, one per row",
    fix="P.sum(axis=1, keepdims=True), shape (n, 1)",
    line=r"sum\(",
)
_FINISH_NO_DIVIDE = ck.Mistake(
    symptom="your out is acc itself",
    why="acc is unnormalised: it still has to be divided by the running sum",
    fix="divide once at the end, out = acc / l",
    line=r"return",
)
_LSE_NO_M = ck.Mistake(
    symptom="your lse is log(l)",
    why="l is relative to the running max: log(l) is logsumexp - m",
    fix="logsumexp = m + np.log(l)",
    line=r"log",
)
_LSE_NO_LOG = ck.Mistake(
    symptom="your lse is m + l: the sum needs its log",
    why="logsumexp = log(sum e^x) = m + log(sum e^(x - m))",
    fix="lse = m + np.log(l)",
    line=r"\bm\s*\+",
)
_LSE_M = ck.Mistake(
    symptom="your lse is the max m alone",
    why="logsumexp = m + log(l), and l >= 1 adds to it",
    fix="add the log of the sum: lse = m + np.log(l)",
    line=r"return",
)
_KEEPS_STATE = ck.Mistake(
    symptom="each step matches, but the whole loop does not",
    why="the loop calls update once per block with the state it returned; "
    "anything kept between calls (a global, a default argument) breaks it",
    fix="keep all state in (m, l, acc): take it in, return it, keep nothing else",
)


def _update_variant(
    m,
    l,
    acc,
    scores_block,
    V_block,
    *,
    fa1=False,
    rescale_l=True,
    rescale_acc=True,
    inverted=False,
    old_max=False,
    keep_m=False,
    sum_all=False,
):
    """The reference update, or one with a common mistake switched on."""
    m_new = np.maximum(m, scores_block.max(axis=1, keepdims=True))  # (n, 1)
    P = np.exp(scores_block - (m if old_max else m_new))  # (n, b)
    correction = np.exp(m_new - m) if inverted else np.exp(m - m_new)  # (n, 1)
    block_sum = P.sum() if sum_all else P.sum(axis=1, keepdims=True)
    l_new = (correction * l if rescale_l else l) + block_sum  # (n, 1)
    if fa1:  # acc holds the normalised output so far
        acc_new = (correction * l * acc + P @ V_block) / l_new
    else:
        acc_new = (correction * acc if rescale_acc else acc) + P @ V_block
    return (m if keep_m else m_new), l_new, acc_new


def _finish(m, l, acc):
    return acc / l, m + np.log(l)  # (n, d_v), (n, 1)


def _trials(rng):
    """Per trial: scores (n, m), V (m, d_v) and the cut points of the blocks."""
    trials = []
    for trial in range(4):
        n, m, d_v = 5, int(rng.integers(6, 30)), 3
        scores = rng.normal(scale=3.0, size=(n, m))
        if trial >= 2:
            scores = scores * 300 + np.linspace(0, 2000, m)  # large, rising maxima
        V = rng.standard_normal((m, d_v))
        cuts = np.sort(rng.choice(np.arange(1, m), size=3, replace=False))
        trials.append((scores, V, cuts))
    return trials


def _update_cases(trials):
    cases, finals = [], []
    for number, (scores, V, cuts) in enumerate(trials, 1):
        n, d_v = scores.shape[0], V.shape[1]
        state = (np.full((n, 1), -np.inf), np.zeros((n, 1)), np.zeros((n, d_v)))
        blocks = list(
            zip(np.split(scores, cuts, axis=1), np.split(V, cuts), strict=True)
        )
        for k, (block, values) in enumerate(blocks, 1):
            note = _("block {k} of {count} of sequence {number}").format(
                k=k, count=len(blocks), number=number
            )
            if k == 1:
                note += _(", from the start state (-inf, 0, 0)")
            if number > 2:
                note += _(", scores in the thousands")
            cases.append(
                ck.make_case(
                    ("m", "l", "acc", "scores_block", "V_block"),
                    *state,
                    block,
                    values,
                    note=note,
                )
            )
            state = _update_variant(*state, block, values)
        finals.append(
            ck.make_case(
                ("m", "l", "acc"),
                *state,
                note=_("sequence {number}").format(number=number),
            )
        )
    return cases, finals


def _diagnose_update(case, got, expected):
    if not all(np.isfinite(g).all() for g in got):
        return ck.Mistake(
            symptom="your state has nan or inf",
            why="on the first block m is -inf: only differences with the new max "
            "stay finite (np.exp(-inf) = 0)",
            fix="exponentiate only scores minus the new max, np.exp(scores_block - "
            "m_new), and np.exp(m - m_new) for the correction",
            line=r"exp",
        )
    if not ck.same(got[0], expected[0]):
        return _M_NOT_UPDATED.replace(
            "you returned the old m", "your m is not the running max"
        )
    ratio = got[1] / expected[1]  # (n, 1): l and acc off by one factor per row
    if not ck.same(ratio, 1.0 + 0 * ratio) and ck.same(got[2], ratio * expected[2]):
        return _WRONG_SHIFT
    return None


def _whole_loop_problem(update, finish, scores, V, cuts):
    """Why update and finish, chained, miss softmax @ V and lse ("" if they don't)."""
    n = scores.shape[0]
    state = (np.full((n, 1), -np.inf), np.zeros((n, 1)), np.zeros((n, V.shape[1])))
    step = "update"
    try:
        for block, values in zip(
            np.split(scores, cuts, axis=1), np.split(V, cuts), strict=True
        ):
            state = update(*state, block, values)
        step = "finish"
        out, lse = (np.asarray(x, dtype=float) for x in finish(*state))
    except Exception as err:  # each step passed alone: the chaining broke
        message = (
            "each step matches on its own, but in the whole loop your "
            f"{step} raised {type(err).__name__}: {err}"
        )
        kinds = [type(x).__name__ for x in state] if isinstance(state, tuple) else []
        if any(kind != "ndarray" for kind in kinds):
            message += (
                f". Your update returns ({', '.join(kinds)}): return NumPy arrays "
                "of shapes (n, 1), (n, 1) and (n, d_v), since the next update and "
                "finish receive them"
            )
        return message
    top = scores.max(axis=1, keepdims=True)
    want_lse = top + np.log(np.exp(scores - top).sum(axis=1, keepdims=True))
    if ck.same(out, anp.softmax(scores) @ V, (1e-9, 1e-12)) and ck.same(
        lse, want_lse, (1e-9, 1e-9)
    ):
        return ""
    return _KEEPS_STATE


def _check_updates(update, cases):
    v = partial(partial, _update_variant)
    variants = [
        (_FA1, v(fa1=True)),
        (_CORRECTION_INVERTED, v(inverted=True)),
        (_OLD_MAX, v(old_max=True)),
        (_M_NOT_UPDATED, v(keep_m=True)),
        (_SUM_ALL, v(sum_all=True)),
        (_L_NOT_RESCALED, v(rescale_l=False)),
        (_ACC_NOT_RESCALED, v(rescale_acc=False)),
    ]
    ck.run(
        "check_online_softmax (update)",
        update,
        cases,
        _update_variant,
        (ck.Out("m", "(n, 1)"), ck.Out("l", "(n, 1)"), ck.Out("acc", "(n, d_v)")),
        variants,
        _diagnose_update,
        signature="update(m, l, acc, scores_block, V_block)",
        hint=ck.Mistake(
            symptom="m and l are (n, 1), acc (n, d_v), scores_block (n, b), V_block "
            "(b, d_v): a block's max and sum keep one column per query",
            fix="reduce the block with axis=1, keepdims=True",
        ),
        tol=(1e-9, 1e-12),
        mutable=("m", "l", "acc"),
        announce=False,
    )


def _check_finishes(finish, finals):
    variants = [
        (_FINISH_NO_DIVIDE, lambda m, l, acc: (acc, m + np.log(l))),
        (_LSE_NO_M, lambda m, l, acc: (acc / l, np.log(l))),
        (_LSE_NO_LOG, lambda m, l, acc: (acc / l, m + l)),
        (_LSE_M, lambda m, l, acc: (acc / l, m)),
    ]
    ck.run(
        "check_online_softmax (finish)",
        finish,
        finals,
        _finish,
        (
            ck.Out("out", "(n, d_v)", "out = acc / l."),
            ck.Out("lse", "(n, 1)", "lse = m + np.log(l), one per query, like m."),
        ),
        variants,
        signature="finish(m, l, acc)",
        tol=(1e-9, 1e-12),
        announce=False,
    )


def check_online_softmax(update, finish, *, seed=0):
    """Check ``update(m, l, acc, scores_block, V_block) -> (m, l, acc)`` and
    ``finish(m, l, acc) -> (out, lse)``.

    m, l (n, 1); acc (n, d_v), unnormalised; scores_block (n, b); V_block
    (b, d_v); out = acc / l (n, d_v); lse = m + log(l) (n, 1). Cases: four
    sequences cut into four blocks of random sizes, two with scores in the
    thousands; then the whole loop, compared with softmax(scores) @ V.
    """
    ck.require_function("check_online_softmax", update)
    ck.require_function("check_online_softmax", finish)
    trials = _trials(np.random.default_rng(seed))
    cases, finals = _update_cases(trials)
    _check_updates(update, cases)
    _check_finishes(finish, finals)
    for scores, V, cuts in trials:  # the whole loop, as the lesson runs it
        problem = ck.quietly(_whole_loop_problem, update, finish, scores, V, cuts)
        if problem != "":  # None: the checker itself failed; say what it checks
            raise ck.CheckFailed(
                "check_online_softmax",
                problem or _KEEPS_STATE,
                f"scores {scores.shape}, blocks cut at {cuts.tolist()}",
                ck.look_at(update, problem or _KEEPS_STATE),
            )
    print(
        _(
            "✓ check_online_softmax: the whole loop equals "
            "softmax(scores) @ V, and m + log(l) equals the logsumexp, "
            "for {count} sequences"
        ).format(count=len(trials))
    )
    return True
