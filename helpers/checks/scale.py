"""Checkers for lesson 04 (why divide by sqrt(d_k)): the softmax's Jacobian and
a temperature found by bisection.

Each ``check_*`` runs the learner's function on seeded cases, compares it with
a reference and names the likely mistake; see ``helpers.checks``.
"""

import math

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.i18n import _

__all__ = ["check_softmax_jacobian", "check_find_temperature"]

# --------------------------------------------------------------------------
# check_softmax_jacobian (lesson 04, exercise 2)
# --------------------------------------------------------------------------

_JAC_NO_OUTER = ck.Mistake(
    symptom="your Jacobian is only diag(a) (up to the temperature): its off-diagonal "
    "entries are 0",
    why="the weights share one Z, so raising one score also lowers every other "
    "weight: d a_s / d x_t = -a_s a_t for s != t",
    fix="J = (diag(a) - a a^T) / T, (np.diag(a) - np.outer(a, a)) / T",
    line=r"diag",
)
_JAC_ELEMENTWISE = ck.Mistake(
    symptom="you subtracted a * a (elementwise, broadcast along the rows) instead "
    "of the outer product a a^T",
    why="J[s, t] = a_s (delta_st - a_t) needs every product a_s a_t, one per "
    "(s, t) pair",
    fix="(np.diag(a) - np.outer(a, a)) / T",
    line=r"\ba\s*\*\s*a\b|\*\*\s*2",
)
_JAC_DIAGONAL_ONLY = ck.Mistake(
    symptom="your Jacobian has only its diagonal, a_s (1 - a_s) (up to the "
    "temperature)",
    why="the off-diagonal entries are -a_s a_t: every weight depends on every "
    "score through Z",
    fix="J = (np.diag(a) - np.outer(a, a)) / T",
    line=r"diag",
)
_JAC_SCALAR = ck.Mistake(
    symptom="you subtracted one number from every entry: a @ a is the scalar "
    "sum_t a_t^2, so your off-diagonal entries are all the same",
    why="J[s, t] = a_s (delta_st - a_t): the entry (s, t) needs its own product "
    "a_s a_t, one per pair, a whole (m, m) table",
    fix="(np.diag(a) - np.outer(a, a)) / T",
    line=r"@",
)
_JAC_IDENTITY = ck.Mistake(
    symptom="your diagonal is 1 - a_s^2, not a_s (1 - a_s) (up to the temperature): "
    "where diag(a) belongs you have the identity",
    why="d a_s / d x_s = a_s (1 - a_s): the derivative of a weight is proportional "
    "to the weight itself, so the diagonal carries a_s, not 1",
    fix="(np.diag(a) - np.outer(a, a)) / T",
    line=r"eye|identity",
)
_JAC_NO_T = ck.Mistake(
    symptom="at T = {T:g} your Jacobian is section 3's, the one at T = 1: the "
    "temperature is missing",
    why="the softmax sees x = s / T, so moving s_t by a little moves x_t by that "
    "over T: the chain rule multiplies section 3's Jacobian by 1 / T",
    fix="J = (np.diag(a) - np.outer(a, a)) / T",
    line=r"return",
)
_JAC_TIMES_T = ck.Mistake(
    symptom="at T = {T:g} your Jacobian is T times section 3's: the temperature "
    "multiplies where it should divide",
    why="x = s / T, so d x_t / d s_t = 1 / T: a higher temperature makes the "
    "weights less sensitive to the scores, not more",
    fix="J = (np.diag(a) - np.outer(a, a)) / T",
    line=r"\*\s*T\b|\bT\s*\*",
)
_JAC_ROWS = ck.Mistake(
    symptom="the rows of your J do not sum to 0, but they must",
    why="the weights always sum to 1, so moving score t cannot change their total: "
    "each column of J, sum_s d a_s / d s_t, is 0; J is symmetric, so its rows sum "
    "to 0 too",
    fix="J = (np.diag(a) - np.outer(a, a)) / T",
)
_JAC_SIGN = ck.Mistake(
    symptom="your Jacobian has the wrong sign: it is (a a^T - diag(a)) / T",
    why="raising score s raises its own weight (positive diagonal) and lowers the "
    "others (negative off-diagonal)",
    fix="J = (diag(a) - a a^T) / T",
    line=r"outer",
)


def _jacobian(a, T):
    return (np.diag(a) - np.outer(a, a)) / T


def check_softmax_jacobian(fn, *, seed=0):
    """Check ``fn(a, T) -> J (m, m)``, the Jacobian d a / d s of a = softmax(s / T).

    ``a`` (m,) are the weights, ``T`` the temperature. Cases: m = 2, 5 and 32
    with weights from random scores and T = 1, 0.5 and 4, and a near one-hot a
    at T = 2.
    """
    rng = np.random.default_rng(seed)
    cases = [
        ck.make_case(
            ("a", "T"),
            anp.softmax(3 * rng.standard_normal(m)),
            T,
            sizes={"m": m},
            facts={"T": T},
        )
        for m, T in ((2, 1.0), (5, 0.5), (32, 4.0))
    ]
    cases.append(
        ck.make_case(
            ("a", "T"),
            anp.softmax(np.array([9.0, 0.0, -1.0])),
            2.0,
            facts={"T": 2.0},
            note="near one-hot",
        )
    )
    variants = [
        (_JAC_NO_T, lambda a, T: _jacobian(a, 1.0)),
        (_JAC_TIMES_T, lambda a, T: _jacobian(a, 1 / T)),
        (_JAC_NO_OUTER, lambda a, T: np.diag(a) / T),
        (_JAC_NO_OUTER, lambda a, T: np.diag(a)),
        (_JAC_ELEMENTWISE, lambda a, T: (np.diag(a) - a * a) / T),
        (_JAC_ELEMENTWISE, lambda a, T: np.diag(a) - a * a),
        (_JAC_DIAGONAL_ONLY, lambda a, T: np.diag(a - a * a) / T),
        (_JAC_DIAGONAL_ONLY, lambda a, T: np.diag(a - a * a)),
        (_JAC_SIGN, lambda a, T: -_jacobian(a, T)),
        (_JAC_SIGN, lambda a, T: -_jacobian(a, 1.0)),
        (_JAC_SCALAR, lambda a, T: (np.diag(a) - a @ a) / T),
        (_JAC_SCALAR, lambda a, T: np.diag(a) - a @ a),
        (_JAC_IDENTITY, lambda a, T: (np.eye(len(a)) - np.outer(a, a)) / T),
        (_JAC_IDENTITY, lambda a, T: np.eye(len(a)) - np.outer(a, a)),
    ]

    def diagnose(case, got, expected):
        (J,) = got
        if not np.allclose(J.sum(axis=1), 0.0):
            return _JAC_ROWS
        return None

    return ck.run(
        "check_softmax_jacobian",
        fn,
        cases,
        _jacobian,
        (ck.Out("J", "(m, m)", "J[s, t] = d a_s / d s_t, one row per weight."),),
        variants,
        diagnose,
        signature="softmax_jacobian(a, T)",
        tol=(1e-9, 1e-12),
    )


# --------------------------------------------------------------------------
# check_find_temperature (lesson 04, exercise 3)
# --------------------------------------------------------------------------

_T_EDGE = ck.Mistake(
    symptom="T = {T:.4g} hit the edge of the bracket [low, high] = [0.01, 1000]: "
    "the comparison sends the bracket the wrong way",
    why="the entropy grows with T: when the entropy at mid is below the target "
    "the weights are too sharp and T must go up",
    fix="when the entropy at mid is below the target, low = mid; otherwise high = mid",
    line=r"\bif\b.*[<>]",
)
_T_MULTIPLIED = ck.Mistake(
    symptom="T = {T:.4g} hit the edge of the bracket [low, high] = [0.01, 1000]: you "
    "multiply the scores by the temperature",
    why="the temperature divides the scores, softmax(raw_scores / T): a larger T "
    "flattens the weights; multiplied, a larger T sharpens them, and the search "
    "runs off the end of the bracket",
    fix="the entropy at mid is that of softmax(raw_scores / mid)",
    line=r"raw_scores\s*\*[^*]|[^*]\*\s*raw_scores|[^*]\*\s*mid\b|\bmid\s*\*[^*]",
)
_T_SUM = ck.Mistake(
    symptom="at your T = {T:.4g} the entropy summed over the {rows} rows is the "
    "target, {target:.4f} nats: the mean entropy is {rows} times smaller",
    why="the target is the mean entropy of a row; a sum over the rows grows with "
    "their number",
    fix="compare the mean over the rows, e.g. entropies.mean(), with the target",
    line=r"\.sum\(|np\.sum\(",
)
_T_EARLY = ck.Mistake(
    symptom="your T = {T:.4g} is where the bisection stands after {steps} steps: "
    "the mean entropy there is {reached:.4f} nats, not the target {target:.4f}",
    why="bisection halves the bracket each step: stopping early leaves T "
    "anywhere in it",
    fix="T = {expected:.4g} reaches it. Bisect until the bracket is narrow "
    "(e.g. 60 steps)",
    line=r"range|steps",
)
_T_INVERSE = ck.Mistake(
    symptom="you returned 1/T",
    why="the temperature divides the scores, softmax(raw_scores / T); your value "
    "is the factor that multiplies them",
    fix="return the T with softmax(raw_scores / T) at the target entropy",
    line=r"return",
)
_T_ENTROPY = ck.Mistake(
    symptom="you returned an entropy, not a temperature",
    why="the function searches for the T at which the mean entropy equals the "
    "target; the entropy is what you compare, not the answer",
    fix="return mid (or (low + high) / 2) after the bisection",
    line=r"return",
)


def _mean_entropy(scores):
    """Mean over rows of the entropy (nats) of softmax(scores) along the last axis."""
    log_a = scores - scores.max(axis=-1, keepdims=True)
    log_a = log_a - np.log(np.exp(log_a).sum(axis=-1, keepdims=True))
    return float(-(np.exp(log_a) * log_a).sum(axis=-1).mean())


def _temperature(raw_scores, target_entropy):
    low, high = 1e-2, 1e3
    for _step in range(200):
        mid = math.sqrt(low * high)
        if _mean_entropy(raw_scores / mid) < target_entropy:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)


def _steps_to(T, raw_scores, target, low=1e-2, high=1e3):
    """The number of steps after which a bisection's midpoint is T, or None.

    Both midpoints a learner may take (geometric and arithmetic) are tried, and
    T may be the midpoint of the bracket before or after the last step.
    """
    for middle in (math.sqrt, None):
        lo, hi = low, high
        for step in range(61):
            mid = math.sqrt(lo * hi) if middle else (lo + hi) / 2
            if math.isclose(T, mid, rel_tol=1e-6):
                return step
            if _mean_entropy(raw_scores / mid) < target:
                lo = mid
            else:
                hi = mid
    return None


def check_find_temperature(fn, *, seed=0):
    """Check ``fn(raw_scores, target_entropy) -> T`` (bisection on T).

    ``raw_scores`` is (num_rows, m); T is right when the mean entropy of
    softmax(raw_scores / T) over the rows equals ``target_entropy`` (nats).
    Cases: m = 32 and 10, targets a quarter, a half and three quarters of log m.
    """
    rng = np.random.default_rng(seed)
    cases = []
    for m, d_k, fraction in [(32, 64, 0.5), (32, 16, 0.25), (10, 64, 0.75)]:
        raw = rng.standard_normal((40, m)) * math.sqrt(d_k)  # unscaled q.k
        target = fraction * math.log(m)
        cases.append(
            ck.make_case(
                ("raw_scores", "target_entropy"), raw, target, note=f"{fraction} log m"
            )
        )

    def diagnose(case, got, expected):
        T = float(got[0])
        if not np.isfinite(T) or T <= 0:
            return _("T must be a positive number")
        if min(abs(math.log(T / 1e-2)), abs(math.log(T / 1e3))) < 0.01:
            multiplied = ck.line_of(fn, _T_MULTIPLIED.line) != ck.defined_at(fn)
            edge = _T_MULTIPLIED if multiplied else _T_EDGE
            return edge.replace("{T:.4g}", f"{T:.4g}")
        if abs(T * float(expected[0]) - 1) < 1e-2:
            return _T_INVERSE
        if abs(T - case.args[1]) < 1e-2:
            return _T_ENTROPY
        raw, target = case.args
        reached = _mean_entropy(raw / T)
        facts = {
            "T": T,
            "reached": reached,
            "target": target,
            "rows": len(raw),
            "expected": float(expected[0]),
        }
        if math.isclose(reached * len(raw), target, rel_tol=1e-2):
            return _T_SUM.filled(facts)
        steps = _steps_to(T, raw, target)
        if steps is not None:
            return _T_EARLY.filled({**facts, "steps": steps})
        return _(
            "at your T = {T:.4g} the mean entropy is {reached:.4f} nats, "
            "not the target {target:.4f}"
        ).format(T=T, reached=reached, target=target)

    return ck.run(
        "check_find_temperature",
        fn,
        cases,
        _temperature,
        (ck.Out("T", "()", "Return one number, the temperature."),),
        (),
        diagnose,
        signature="find_temperature(raw_scores, target_entropy, low=1e-2, "
        "high=1e3, steps=60)",
        tol=(1e-3, 0.0),
    )
