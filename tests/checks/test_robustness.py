"""No checker crashes: generated wrong implementations all fail with CheckFailed.

Each right implementation is wrapped by a mutation that perturbs what it
returns (transposed, wrong axis renormalised, a dimension dropped, scaled,
noisy, NaN, the wrong dtype, a list, None, too few or too many values, ...) or
what it receives (transposed, swapped, truncated or cast inputs), or that
raises. Whatever the mutation, the checker either accepts the answer (when the
mutation happens to keep it right, e.g. a transpose of a scalar) or raises
``CheckFailed`` with a message; never another exception, and never a
``CheckerBugWarning`` (a diagnosis step that raised inside the checker; the
folder's conftest.py makes it an error).
Hypothesis then composes several mutations at random.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import attention_np as anp
from helpers import checks
from helpers.checks import _engine as ck
from tests.checks.harness import Watched, assert_fails_cleanly
from tests.checks.test_attention import attention, shuffle
from tests.checks.test_heads import mha_by_hand, simple_split
from tests.checks.test_logsumexp import logsumexp, merge_stats
from tests.checks.test_masks import zero_weights
from tests.checks.test_online import finish, update
from tests.checks.test_scale import find_temperature, jacobian
from tests.checks.test_self_attention import self_attention
from tests.checks.test_softmax import masked_softmax

# --------------------------------------------------------------------------
# Right answers: the references themselves, or those of the topic files
# --------------------------------------------------------------------------


# name -> (run the checker on fn, the right fn)
CHECKERS = {
    "softmax": (checks.check_softmax, anp.softmax),
    "one_query": (checks.check_attention_one_query, anp.attention_one_query),
    "attention": (checks.check_attention, attention),
    "sdpa": (
        checks.check_scaled_dot_product_attention,
        anp.scaled_dot_product_attention,
    ),
    "shuffle": (checks.check_shuffle_keys_and_values, shuffle),
    "masked_softmax": (checks.check_masked_softmax, masked_softmax),
    "logsumexp": (checks.check_logsumexp, logsumexp),
    "merge_stats": (checks.check_merge_stats, merge_stats),
    "jacobian": (checks.check_softmax_jacobian, jacobian),
    "temperature": (checks.check_find_temperature, find_temperature),
    "causal_mask": (checks.check_causal_mask, anp.causal_mask),
    "zero_weights": (checks.check_zero_weights, zero_weights),
    "self_attention": (checks.check_self_attention, self_attention),
    "split_heads": (checks.check_split_heads, simple_split),  # the helper is refused
    "mha": (checks.check_multi_head_attention, mha_by_hand),
    "online_update": (lambda fn: checks.check_online_softmax(fn, finish), update),
    "online_finish": (lambda fn: checks.check_online_softmax(update, fn), finish),
}

# --------------------------------------------------------------------------
# Mutations of one returned array
# --------------------------------------------------------------------------


def _renormalise_other_axis(x):
    if x.ndim < 2:
        return x / 2
    return x / x.sum(axis=0, keepdims=True)


def _one_nan(x):
    x = np.array(x, dtype=float)
    x.flat[x.size // 2] = np.nan
    return x


ARRAY_MUTATIONS = {
    "transpose": lambda x: np.swapaxes(x, -1, -2) if x.ndim >= 2 else x[::-1],
    "reverse_axes": lambda x: x.T,
    "renormalise_axis_0": _renormalise_other_axis,
    "drop_first_axis": lambda x: x[0] if x.ndim else x,
    "drop_last_axis": lambda x: x[..., 0] if x.ndim else x,
    "sum_last_axis": lambda x: x.sum(axis=-1) if x.ndim else x,
    "extra_axis": lambda x: x[None],
    "flatten": lambda x: np.ravel(x),
    "scale_2": lambda x: x * 2,
    "plus_1": lambda x: x + 1,
    "negate": lambda x: -x,
    "noise": lambda x: (
        x + np.random.default_rng(0).normal(scale=1e-3, size=np.shape(x))
    ),
    "one_nan": _one_nan,
    "all_nan": lambda x: np.full(np.shape(x), np.nan),
    "all_inf": lambda x: np.full(np.shape(x), np.inf),
    "zeros": lambda x: np.zeros_like(x, dtype=float),
    "float16": lambda x: np.asarray(x).astype(np.float16),
    "float32": lambda x: np.asarray(x).astype(np.float32),
    "int": lambda x: np.asarray(x).astype(int),
    "bool": lambda x: np.asarray(x).astype(bool),
    "complex": lambda x: np.asarray(x).astype(complex),
    "object": lambda x: np.asarray(x).astype(object),
    "string": lambda x: np.asarray(x).astype(str),
    "tolist": lambda x: np.asarray(x).tolist(),
    "scalar": lambda x: 0.0,
    "empty": lambda x: np.empty((0,)),
    "ragged": lambda x: [[1.0, 2.0], [3.0]],
    "text": lambda x: "weights",
    "dict": lambda x: {"value": x},
}

# Mutations of the whole return value
RESULT_MUTATIONS = {
    "none": lambda r: None,
    "list": lambda r: list(r) if isinstance(r, tuple) else [r],
    "drop_last": lambda r: r[:-1] if isinstance(r, tuple) else (r, r),
    "extra_value": lambda r: (*r, 0.0) if isinstance(r, tuple) else (r, 0.0),
    "reversed": lambda r: r[::-1] if isinstance(r, tuple) else r,
    "first_only": lambda r: r[0] if isinstance(r, tuple) else r,
    "generator": lambda r: (x for x in (r if isinstance(r, tuple) else (r,))),
}

RAISES = [
    ValueError,
    IndexError,
    TypeError,
    KeyError,
    ZeroDivisionError,
    AssertionError,
    RuntimeError,
    NotImplementedError,
    np.linalg.LinAlgError,
]

# Mutations of one input
INPUT_MUTATIONS = {
    "transpose": lambda a: np.swapaxes(a, -1, -2) if np.ndim(a) >= 2 else a,
    "drop_last_column": lambda a: a[..., :-1] if np.ndim(a) >= 1 else a,
    "float16": lambda a: np.asarray(a).astype(np.float16) if np.ndim(a) else a,
    "negate": lambda a: -a if not isinstance(a, (np.random.Generator, bool)) else a,
    "double": lambda a: a * 2 if isinstance(a, (np.ndarray, float)) else a,
}


def _map_outputs(result, mutate, index):
    """Apply ``mutate`` to output ``index`` of a single value or a tuple."""
    if not isinstance(result, tuple):
        return mutate(np.asarray(result))
    items = list(result)
    items[index % len(items)] = mutate(np.asarray(items[index % len(items)]))
    return tuple(items)


def output_mutant(right, mutate, index):
    def mutant(*args, **kwargs):
        with np.errstate(all="ignore"):
            result = right(*args, **kwargs)
            mutant.outputs = len(result) if isinstance(result, tuple) else 1
            return _map_outputs(result, mutate, index)

    mutant.outputs = None  # how many values right returns, once called
    return Watched(right, mutant)


def input_mutant(right, mutate, index):
    def mutant(*args, **kwargs):
        mutant.arity = len(args)
        args = list(args)
        if args:
            args[index % len(args)] = mutate(args[index % len(args)])
        with np.errstate(all="ignore"):
            return right(*args, **kwargs)

    mutant.arity = None  # how many positional arguments it gets, once called
    return Watched(right, mutant)


def raising(error):
    def mutant(*args, **kwargs):
        raise error("something went wrong inside")

    return mutant


# --------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CHECKERS)
def test_the_right_answer_passes(name, capsys):
    checker, right = CHECKERS[name]
    assert checker(right) is True
    assert "✓" in capsys.readouterr().out


@pytest.mark.parametrize("mutation", ARRAY_MUTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_a_mutated_output_never_crashes_the_checker(name, mutation, capsys):
    checker, right = CHECKERS[name]
    # each returned value in turn; index 1 of a single value is its second
    # telling (the why added), and a third run would only repeat it
    for index in range(3):
        fn = output_mutant(right, ARRAY_MUTATIONS[mutation], index)
        assert_fails_cleanly(checker, fn)
        if index == 1 and fn.mutant.outputs == 1:
            break


@pytest.mark.parametrize("mutation", RESULT_MUTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_a_mutated_return_value_never_crashes_the_checker(name, mutation, capsys):
    checker, right = CHECKERS[name]
    mutate = RESULT_MUTATIONS[mutation]

    def mutant(*args, **kwargs):
        return mutate(right(*args, **kwargs))

    assert_fails_cleanly(checker, Watched(right, mutant))


@pytest.mark.parametrize("error", RAISES, ids=lambda e: e.__name__)
@pytest.mark.parametrize("name", CHECKERS)
def test_an_exception_inside_becomes_a_diagnosis(name, error):
    checker, _ = CHECKERS[name]
    err = assert_fails_cleanly(checker, raising(error))
    if error is NotImplementedError:
        assert "not implemented yet" in str(err)
        assert err.where.startswith("mutant (test_robustness.py, line")
    else:  # the learner's own line that raised
        assert error.__name__ in str(err) and "something went wrong" in str(err)
        assert err.where.startswith("mutant, test_robustness.py, line")
        assert err.where.endswith('raise error("something went wrong inside")')


@pytest.mark.parametrize("mutation", INPUT_MUTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_mutated_inputs_never_crash_the_checker(name, mutation, capsys):
    checker, right = CHECKERS[name]
    # each positional argument in turn (index modulo their number), each told
    # twice (a second telling adds the why); later runs would repeat these
    for index in range(6):
        fn = input_mutant(right, INPUT_MUTATIONS[mutation], index)
        assert_fails_cleanly(checker, fn)
        if fn.mutant.arity is not None and index + 1 >= 2 * fn.mutant.arity:
            break


KEYWORD_MUTATIONS = {
    "ignored": lambda kwargs: {},
    "flipped_mask": lambda kwargs: {
        k: ~v if k == "mask" else v for k, v in kwargs.items()
    },
    "truncated": lambda kwargs: {
        k: v[..., :-1] if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    },
    "scale_squared": lambda kwargs: {
        k: v**2 if k == "scale" else v for k, v in kwargs.items()
    },
}


@pytest.mark.parametrize("mutation", KEYWORD_MUTATIONS)
@pytest.mark.parametrize("name", ["sdpa", "one_query", "mha", "softmax"])
def test_mutated_keyword_arguments_never_crash_the_checker(name, mutation):
    """A learner who ignores or mishandles mask=, scale=, kv= or axis=."""
    checker, right = CHECKERS[name]
    mutate = KEYWORD_MUTATIONS[mutation]

    def mutant(*args, **kwargs):
        with np.errstate(all="ignore"):
            return right(*args, **mutate(kwargs))

    assert_fails_cleanly(checker, Watched(right, mutant))


def test_a_function_that_is_not_callable_is_named():
    with pytest.raises(ck.CheckFailed, match="needs your function itself"):
        checks.check_softmax(np.zeros(3))


def test_a_checker_given_the_wrong_arity_explains_the_signature():
    err = assert_fails_cleanly(checks.check_attention, lambda Q, K: (Q, K))
    assert "attention(Q, K, V)" in str(err)


MUTATION_NAMES = sorted(ARRAY_MUTATIONS)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(sorted(CHECKERS)),
    steps=st.lists(
        st.tuples(st.sampled_from(MUTATION_NAMES), st.integers(0, 2)),
        min_size=1,
        max_size=3,
    ),
)
def test_random_compositions_of_mutations_never_crash(name, steps, capsys):
    checker, right = CHECKERS[name]
    fn = right
    for mutation, index in steps:
        fn = output_mutant(fn, ARRAY_MUTATIONS[mutation], index).mutant
    assert_fails_cleanly(checker, Watched(right, fn))


def test_the_harness_catches_a_checker_that_accepts_a_wrong_answer():
    def lenient(fn):
        fn(np.array([1.0, 2.0]))
        return True

    with pytest.raises(AssertionError, match="a wrong answer was accepted"):
        assert_fails_cleanly(lenient, output_mutant(anp.softmax, lambda x: x * 2, 0))
    assert (
        assert_fails_cleanly(lenient, output_mutant(anp.softmax, np.float32, 0)) is None
    )


@pytest.mark.parametrize("name", CHECKERS)
def test_passing_a_result_instead_of_the_function_is_named(name):
    checker, _ = CHECKERS[name]
    with pytest.raises(ck.CheckFailed, match="needs your function itself"):
        checker(np.zeros((3, 4)))
