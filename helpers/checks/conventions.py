"""Checkers for the course's conventions: lesson 00.

A seeded draw from ``make_tensor``, the shape vocabulary read off the arrays
(``n``, ``m``, ``d_k``, ``d_v``, counted from the end) and seed 003's additive mask
turned into the course's boolean one (True = may attend). Every known mistake is a
:class:`~helpers.checks._engine.Mistake`; see ``helpers.checks``.
"""

import numpy as np

from helpers._validate import fmt
from helpers.checks import _engine as ck
from helpers.i18n import _
from helpers.tensors import make_tensor

__all__ = ["check_make_queries", "check_shape_names", "check_course_mask"]

# --------------------------------------------------------------------------
# check_make_queries (exercise 0.1)
# --------------------------------------------------------------------------

_SHAPE = (2, 3, 4)  # (batch, n, d_k)
_SEED = 7

_UNIFORM = ck.Mistake(
    symptom="every number you drew lies in [0, 1): that is a uniform draw, not a "
    "standard normal one",
    why="make_tensor's default mode is the uniform one; a standard normal draw has "
    "both signs and no bounds",
    fix='make_tensor([2, 3, 4], mode="randn", seed=7, backend="numpy")',
)
_TORCH = ck.Mistake(
    symptom="you returned a torch.Tensor; the exercise asks for a NumPy array",
    why="make_tensor returns a torch tensor unless you ask for another backend",
    fix='add backend="numpy" to the make_tensor call',
)
_OTHER_SEED = ck.Mistake(
    symptom="your numbers are make_tensor's standard normal draw, but with "
    "seed={seed}, not the seed the exercise asks for",
    why="a seed picks one reproducible draw; another seed gives other numbers",
    fix="pass seed=7",
)
_NOT_MAKE_TENSOR = ck.Mistake(
    symptom="your numbers are not make_tensor's draw for any seed from 0 to 99 "
    "(nor the unseeded global generator's)",
    why="the check compares your array with make_tensor's own draw, number for "
    "number, so it must come from make_tensor itself",
    fix='make_tensor([2, 3, 4], mode="randn", seed=7, backend="numpy")',
)


def _draw(**kwargs):
    return make_tensor(list(_SHAPE), backend="numpy", **kwargs)


def _diagnose_draw(array):
    if array.min() >= 0 and array.max() < 1:
        return _UNIFORM
    for seed in range(100):
        if ck.same(array, _draw(mode="randn", seed=seed)):
            return _OTHER_SEED.filled({"seed": seed})
    return _NOT_MAKE_TENSOR


def check_make_queries(fn):
    """Check ``fn() -> Q``: make_tensor's standard normal (2, 3, 4) NumPy draw, seed 7.

    The comparison is number for number with make_tensor's own draw.
    """
    name = "check_make_queries"
    ck.require_function(name, fn)
    case = ck.make_case((), sizes={"batch": 2, "n": 3, "d_k": 4})
    result = ck.call(name, fn, case, "make_my_queries()", "")
    expected = (_draw(mode="randn", seed=_SEED),)
    outputs = (ck.Out("my_Q", "(batch, n, d_k)", "Order the axes (batch, n, d_k)."),)
    if type(result).__module__.startswith("torch"):
        message = _TORCH
    else:
        got = ck.to_arrays(result, outputs, fn)
        message = got if isinstance(got, str) else None
        if message is None:
            message = ck.shape_problem(got, expected, outputs, case, (ck.RTOL, ck.ATOL))
        if message is None and not ck.same(got[0], expected[0]):
            message = _diagnose_draw(got[0])
    if message is not None:
        raise ck.CheckFailed(name, message, "", ck.defined_at(fn))
    print(
        _("✓ {name}: the same numbers as the seeded draw, shape {shape}").format(
            name=name, shape=fmt(_SHAPE)
        )
    )
    return True


# --------------------------------------------------------------------------
# check_shape_names (exercise 0.2)
# --------------------------------------------------------------------------

_FROM_THE_FRONT = ck.Mistake(
    symptom="with a batch axis in front, your n is {batch}, the batch size: you "
    "counted the axes from the front",
    why="extra leading axes (batch, num_heads) come along in front, so only the "
    "last two axes of Q are always (n, d_k)",
    fix="read every size from the end: n = Q.shape[-2], d_k = Q.shape[-1], "
    "m = K.shape[-2], d_v = V.shape[-1]",
)
_M_FROM_Q = ck.Mistake(
    symptom="your m is {n}, the number of queries; m counts the keys",
    why="queries and keys may differ in number: m is how many rows K (and V) have",
    fix="m = K.shape[-2]",
)
_D_V_FROM_K = ck.Mistake(
    symptom="your d_v is {d_k}, the width of a key; d_v is the width of a value",
    why="keys and values may differ in width: d_v is the last axis of V",
    fix="d_v = V.shape[-1]",
)
_D_K_FROM_V = ck.Mistake(
    symptom="your d_k is {d_v}, the width of a value; d_k is the width of a query "
    "or key",
    why="queries and keys share d_k (they are compared by a dot product); V may "
    "have another width",
    fix="d_k = Q.shape[-1]",
)
_N_M_SWAPPED = ck.Mistake(
    symptom="your n and m are swapped: you returned n={m} and m={n}",
    why="n counts the queries (rows of Q), m the keys (rows of K)",
    fix="n = Q.shape[-2], m = K.shape[-2]",
)


def _sizes(Q, K, V):
    return Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]


def _shape_cases(rng):
    cases = []
    for batch, n, m, d_k, d_v in [
        ((), 4, 6, 3, 5),
        ((2,), 3, 7, 4, 2),
        ((2, 3), 5, 2, 6, 4),
        ((), 1, 9, 2, 7),
    ]:
        sizes = {"n": n, "m": m, "d_k": d_k, "d_v": d_v}
        if batch:
            sizes["batch"] = batch[0]
        cases.append(
            ck.make_case(
                ("Q", "K", "V"),
                rng.normal(size=batch + (n, d_k)),
                rng.normal(size=batch + (m, d_k)),
                rng.normal(size=batch + (m, d_v)),
                sizes=sizes,
            )
        )
    return cases


def check_shape_names(fn, *, seed=0):
    """Check ``fn(Q, K, V) -> (n, m, d_k, d_v)``, the sizes read off the arrays.

    Cases: no batch axis, one and two batch axes, a single query; n != m and
    d_v != d_k throughout.
    """
    variants = [
        (
            _FROM_THE_FRONT,
            lambda Q, K, V: (Q.shape[0], K.shape[0], *_sizes(Q, K, V)[2:]),
        ),
        (
            _FROM_THE_FRONT,
            lambda Q, K, V: (Q.shape[0], K.shape[-2], *_sizes(Q, K, V)[2:]),
        ),
        (
            _N_M_SWAPPED,
            lambda Q, K, V: (K.shape[-2], Q.shape[-2], *_sizes(Q, K, V)[2:]),
        ),
        (_M_FROM_Q, lambda Q, K, V: (Q.shape[-2], Q.shape[-2], *_sizes(Q, K, V)[2:])),
        (_D_V_FROM_K, lambda Q, K, V: (*_sizes(Q, K, V)[:3], K.shape[-1])),
        (_D_K_FROM_V, lambda Q, K, V: (*_sizes(Q, K, V)[:2], V.shape[-1], V.shape[-1])),
    ]
    outputs = tuple(
        ck.Out(size, "()", "Each size is a single whole number.")
        for size in ("n", "m", "d_k", "d_v")
    )
    return ck.run(
        "check_shape_names",
        fn,
        _shape_cases(np.random.default_rng(seed)),
        _sizes,
        outputs,
        variants,
        signature="shape_names(Q, K, V)",
    )


# --------------------------------------------------------------------------
# check_course_mask (exercise 0.3)
# --------------------------------------------------------------------------

_POLARITY = ck.Mistake(
    symptom="your mask is True exactly where seed 003's mask blocks a key",
    why="seed 003 writes 1 = blocked; the course writes True = may attend, the "
    "opposite meaning",
    fix="compare with 0: seed_mask == 0 (or negate the boolean version with ~)",
)
_NOT_BOOLEAN = ck.Mistake(
    symptom="your mask has dtype {dtype}, holding the right pattern as numbers; "
    "the course's masks are boolean",
    why="a float mask is ambiguous (1 could mean attend or blocked), so the course's "
    "functions refuse anything but dtype bool",
    fix="build it with a comparison, which gives dtype bool: seed_mask == 0",
)
_ADDITIVE = ck.Mistake(
    symptom="your mask holds {value:g}: that is seed 003's additive offset "
    "(mask * -1e9), not a mask",
    why="the course's mask says which keys a query may see; it is not added to "
    "the scores",
    fix="return a boolean array: seed_mask == 0",
)
_MASK_SHAPE = "Keep seed 003's shape: one entry per (query, key) pair."


def _course_mask(seed_mask):
    return seed_mask == 0


def _inspect_mask(case, got):
    (mask,) = got
    if mask.dtype == np.bool_:
        return None
    if mask.shape == case.args[0].shape:
        big = mask[np.abs(mask) > 1]
        if big.size:
            return _ADDITIVE.filled({"value": float(big.flat[0])})
    return _NOT_BOOLEAN.filled({"dtype": mask.dtype.name})


def _mask_cases(rng):
    cases = []
    for shape, dtype, note in [
        ((4, 6), np.float64, "float 0/1"),
        ((3, 3), np.int64, "integer 0/1"),
        ((2, 1, 1, 5), np.float32, "a padding mask for 2 sequences"),
    ]:
        blocked = (rng.random(shape) < 0.4).astype(dtype)
        blocked.flat[0], blocked.flat[-1] = 0, 1  # at least one of each
        cases.append(ck.make_case(("seed_mask",), blocked, note=note))
    return cases


def check_course_mask(fn, *, seed=0):
    """Check ``fn(seed_mask) -> mask``: seed 003's 1 = blocked as True = may attend.

    Cases: float and integer 0/1 masks, and a (batch, 1, 1, m) padding mask.
    """
    variants = [
        (_POLARITY, lambda seed_mask: seed_mask.astype(bool)),
        (_POLARITY, lambda seed_mask: seed_mask == 1),
    ]
    return ck.run(
        "check_course_mask",
        fn,
        _mask_cases(np.random.default_rng(seed)),
        _course_mask,
        (ck.Out("mask", "the shape of seed_mask", _MASK_SHAPE),),
        variants,
        signature="course_mask(seed_mask)",
        inspect=_inspect_mask,
    )
