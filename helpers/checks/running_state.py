"""Checker for lesson 12's exercise 12.2: causal linear attention, a running state.

``check_causal_linear_attention`` runs the learner's ``causal_linear_attention(
phi_Q, phi_K, V)`` on seeded cases (n == m, n < m, one query), with
``anp.linear_attention`` and the causal masks refused, then on a long sequence,
where an answer that builds the (n, m) matrix is refused by its peak memory. The
pieces 12.3's checker shares (the refusals, the memory probe's call) are here too.
"""

import inspect
import re
import sys
from functools import partial

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks._refuse import refusing
from helpers.i18n import N_, _
from helpers.measure import traced_call

__all__ = ["check_causal_linear_attention"]

TOL = (1e-9, 1e-12)
BIG = 2048  # n = m of the memory probe: an (n, m) float64 array is 32 MB
BIG_LIMIT = 8 * 2**20  # bytes a running-state answer stays far below

_TORCH = ck.Mistake(
    symptom="your function calls torch on NumPy arrays: the check passes NumPy "
    "inputs, and a torch function such as F.elu takes only tensors",
    why="this exercise is written in NumPy, like helpers.attention_np; every "
    "torch step has a NumPy twin",
    fix="elu(x) + 1 in NumPy is np.where(x > 0, x + 1, np.exp(x)); use np.* for "
    "the other steps too",
    line=r"\b(torch|F|nn)\.",
)


def _refuse_helpers(fn, reason):
    """``fn`` with anp's (and, if loaded, atn's) ready-made answers refused."""
    fn = refusing(fn, anp, ("linear_attention", "causal_mask"), reason)
    atn = sys.modules.get("helpers.attention_torch")  # never imported here
    if atn is not None:
        fn = refusing(fn, atn, ("linear_attention", "causal_mask"), reason)
    return fn


def _torch_on_numpy(name, fn, err):
    """A CheckFailed naming torch called on NumPy inputs, or None."""
    cause = err.__cause__
    if isinstance(cause, TypeError) and "Tensor" in str(cause):
        where = ck.raised_at(cause) or ck.look_at(fn, _TORCH)
        return ck.CheckFailed(name, _TORCH, err.case, where)
    return None


def _peak_and_result(name, fn, case, signature):
    """``fn`` on ``case`` under tracemalloc: (its result, the peak in bytes)."""
    return traced_call(ck.call, name, fn, case, signature, "")


def _long_mismatch(name, fn, where):
    return ck.CheckFailed(
        name,
        _(
            "your output on a long sequence differs from the reference, though "
            "the small cases matched: look for a step that depends on the length"
        ),
        where,
        ck.defined_at(fn),
    )


# --------------------------------------------------------------------------
# check_causal_linear_attention (exercise 12.2): a running state, lower-right
# --------------------------------------------------------------------------

_NO_Z = ck.Mistake(
    symptom="your output is phi(q_i) S without dividing by the normaliser "
    "Z_i = phi(q_i) . z: the rows are weighted sums, not weighted averages",
    why="softmax attention divides by Z = sum_j exp(score_j); linear attention "
    "divides by Z_i = sum_j phi(q_i) . phi(k_j), kept as the running sum z",
    fix="keep z = sum of phi(k_j) beside S, and return phi(q_i) S / (phi(q_i) . z)",
    line=r"out\[.*\]\s*=[^=]|return",
)
_READ_BEFORE_WRITE = ck.Mistake(
    symptom="each query misses its own key: query i sees keys j < i + (m - n), "
    "one fewer than causal attention allows; with n = m query 0 reads an empty "
    "state (0 / 0)",
    why="the causal mask lets a query attend to its own position, so the state "
    "must hold key j's write before the query at position j reads it",
    fix="at each position, first add phi(k_j) v_j^T to S and phi(k_j) to z, then "
    "read the query there",
    line=r"out\[.*\]\s*=[^=]",
)
_OFF_BY_ONE = ck.Mistake(
    symptom="query i sees one key fewer than it may, j < i + (m - n), and with "
    "n = m query 0 is never read: the offset between a key's position and its "
    "query is m - n - 1, one off",
    why="the n queries are the last n of m positions, so query i sits at position "
    "i + (m - n): the key there is its own, written just before it reads",
    fix="i = j - (m - n), read right after key j's write",
    line=r"m\s*-\s*n|\bi\s*=[^=]",
)
_UPPER_LEFT = ck.Mistake(
    symptom="with n={n} queries and m={m} keys your query i sees keys j <= i: "
    "aligned upper-left",
    why="the n queries are the last n positions (the m - n keys before them are a "
    "cache), so query i sits at position i + (m - n) and sees every key up to it",
    fix="run the state over all m keys and let query i read it after key "
    "i + (m - n) was written",
    line=r"m\s*-\s*n|\bi\s*=[^=]|for\b",
)
_Z_NOT_ACCUMULATED = ck.Mistake(
    symptom="your normaliser uses only the newest key: z holds phi(k_j), not the "
    "sum over the keys so far",
    why="Z_i sums the similarities of every key query i may see, like S sums their "
    "weighted values",
    fix="z = z + phi(k_j), a running sum like S",
    line=r"\bz\s*=[^=]",
)
_S_NOT_ACCUMULATED = ck.Mistake(
    symptom="your state holds only the newest key's phi(k_j) v_j^T: each output "
    "is (nearly) that key's value",
    why="the state is a running sum: S_j = S_(j-1) + phi(k_j) v_j^T",
    fix="S = S + outer(phi(k_j), v_j)",
    line=r"\bS\s*=[^=]",
)
_NOT_CAUSAL = ck.Mistake(
    symptom="every query sees every key, including later ones: the output is not "
    "causal",
    why="query i may only see keys j <= i + (m - n); in a running state that means "
    "reading it at position i + (m - n), before later keys are written",
    fix="loop over the key positions and read each query's output inside the loop",
    line=r"\bS\s*=[^=]|@",
)


def _causal_variant(
    phi_Q,
    phi_K,
    V,
    *,
    normalise=True,
    offset=0,
    aligned=True,
    z_sum=True,
    s_sum=True,
    causal=True,
    empty=0.0,
):
    """The reference, or a common mistake: via masks on phi(Q) phi(K)^T.

    ``empty`` is a query's row when it sees no key: 0 (never read), nan (0 / 0).
    """
    n, m = phi_Q.shape[0], phi_K.shape[0]
    A = phi_Q @ phi_K.T  # (n, m)
    shift = (m - n) if aligned else 0
    keep = np.arange(m)[None, :] <= np.arange(n)[:, None] + shift - offset
    if not causal:
        keep = np.ones((n, m), dtype=bool)
    last = np.where(keep.any(axis=1), keep.sum(axis=1) - 1, 0)  # newest key seen
    only_last = np.arange(m)[None, :] == last[:, None]
    num = (A * (keep if s_sum else only_last & keep)) @ V  # (n, d_v)
    Z = (A * (keep if z_sum else only_last & keep)).sum(axis=1, keepdims=True)
    if not normalise:
        return num
    return np.where(Z > 0, num / np.where(Z > 0, Z, 1.0), empty)


def _causal_cases(rng):
    cases = []
    for n, m, r, d_v in ((5, 5, 3, 2), (3, 6, 4, 5), (1, 4, 3, 2), (4, 7, 2, 3)):
        phi_Q = np.exp(rng.standard_normal((n, r)))  # positive features
        phi_K = np.exp(rng.standard_normal((m, r)))
        V = rng.standard_normal((m, d_v))
        note = (
            N_("n == m")
            if n == m
            else _("the last n={n} of m={m} positions").format(n=n, m=m)
        )
        cases.append(
            ck.make_case(
                ("phi_Q", "phi_K", "V"),
                phi_Q,
                phi_K,
                V,
                sizes={"n": n, "m": m, "r": r, "d_v": d_v} if n != m else {"r": r},
                facts={"n": n, "m": m},
                note=note,
            )
        )
    return cases


def check_causal_linear_attention(fn, *, seed=0):
    """Check ``fn(phi_Q, phi_K, V) -> (n, d_v)``: causal linear attention.

    phi_Q (n, r) and phi_K (m, r) are positive features, V (m, d_v). Query i
    sees keys j <= i + (m - n) (lower-right, n <= m): y_i = phi(q_i) S / phi(q_i)
    . z with S and z the running sums of phi(k_j) v_j^T and phi(k_j) up to that
    key. Cases: n == m, n < m (a cache of earlier keys), one query.
    """
    v = partial(partial, _causal_variant)
    variants = [
        (_NO_Z, v(normalise=False)),
        (_READ_BEFORE_WRITE, v(offset=1, empty=np.nan)),
        (_OFF_BY_ONE, v(offset=1)),
        (_UPPER_LEFT, v(aligned=False)),
        (_NOT_CAUSAL, v(causal=False)),
        (_Z_NOT_ACCUMULATED, v(z_sum=False)),
        (_S_NOT_ACCUMULATED, v(s_sum=False)),
    ]
    name = "check_causal_linear_attention"
    reason = N_(
        "12.2 asks for the running state itself: anp.linear_attention already "
        "is one, and a causal mask needs the (n, m) matrix the exercise does without"
    )
    fn = _refuse_helpers(fn, reason)
    cases = _causal_cases(np.random.default_rng(seed))
    try:
        ck.run(
            name,
            fn,
            cases,
            _causal_variant,
            (ck.Out("output", "(n, d_v)", "One row per query."),),
            variants,
            signature="causal_linear_attention(phi_Q, phi_K, V)",
            hint=ck.Mistake(
                symptom="S is (r, d_v) and z is (r,); one query's read of S is (d_v,)",
                fix="phi_Q[i] @ S is (d_v,)",
            ),
            tol=TOL,
            announce=False,
        )
    except ck.CheckFailed as err:
        told = _read_first_or_off_by_one(name, fn, err) or _torch_on_numpy(
            name, fn, err
        )
        raise told or err from err.__cause__
    _causal_memory_probe(name, fn)
    print(
        _(
            "✓ {name}: {count} cases passed; a long sequence too, in small memory"
        ).format(name=name, count=len(cases))
    )
    return True


_SHIFTED = re.compile(r"\bm\s*-\s*n\s*\)?\s*-\s*1|\bn\s*-\s*m\s*\)?\s*\+\s*1")


def _read_first_or_off_by_one(name, fn, err):
    """Tell a read before the write from an offset m - n - 1: the same numbers.

    Both make query i see keys j < i + (m - n). With n = m, reading first
    divides query 0's empty state 0 / 0 (nan): that variant matches only then.
    A guarded read gives 0, as an offset that never reads query 0 does; then the
    learner's code tells: an offset written with a - 1 (or n - m + 1) is the slip.
    """
    if err.mistake is None or err.mistake.key != _OFF_BY_ONE.key:
        return None
    try:
        source = inspect.getsource(inspect.unwrap(fn))
    except (OSError, TypeError):
        return None
    if _SHIFTED.search(source):
        return None
    mistake = _READ_BEFORE_WRITE
    return ck.CheckFailed(name, mistake, err.case, ck.look_at(fn, mistake))


_QUADRATIC = ck.Mistake(
    symptom="your function builds an (n, m) array: with n = m = {big} it needed "
    "{peak_mb:.0f} MB at its peak, where a running state needs well under 1 MB",
    why="the recurrent form keeps only S (r, d_v) and z (r,), whatever the length; "
    "masking phi(Q) phi(K)^T gives the same numbers at n times m the memory",
    fix="loop over the keys: write key j into S and z, then read the query at "
    "that position",
    line=r"@\s*(np\.)?(swapaxes|transpose|moveaxis)\(|@\s*[\w().\[\]]+\.(T|mT|"
    r"swapaxes|transpose)\b|einsum\(.*->\.*nm|tril|mask",
)


def _causal_memory_probe(name, fn):
    """Refuse a 12.2 answer that builds (n, m) on a long sequence; compare it."""
    rng = np.random.default_rng(1)
    phi_Q, phi_K = np.exp(0.5 * rng.standard_normal((2, BIG, 2)))  # (n, r), (m, r)
    V = rng.standard_normal((BIG, 2))  # (m, d_v)
    case = ck.make_case(
        ("phi_Q", "phi_K", "V"),
        phi_Q,
        phi_K,
        V,
        note=_("a long sequence, n = m = {n}").format(n=BIG),
    )
    got, peak = _peak_and_result(
        name, fn, case, "causal_linear_attention(phi_Q, phi_K, V)"
    )
    where = _("inputs: {label}").format(label=case.label)
    if peak > BIG_LIMIT:
        facts = {"big": BIG, "peak_mb": peak / 2**20}
        raise ck.CheckFailed(
            name, _QUADRATIC.filled(facts), where, ck.look_at(fn, _QUADRATIC)
        )
    want = anp.linear_attention(phi_Q, phi_K, V, feature_map=_identity, causal=True)
    if not ck.same(np.asarray(got), want, TOL):
        raise _long_mismatch(name, fn, where)


def _identity(x):
    return x
