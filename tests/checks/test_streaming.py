"""Lesson 03's build checker (helpers.checks.streaming) against wrong answers.

``streaming_attention(q, blocks) -> (y, log_Z)`` over a stream of (K_blk, V_blk)
blocks, written the ways a learner would; each slip of the running max, the
running sum and the accumulator is rejected with its diagnosis.
"""

import math

import numpy as np
import pytest

from helpers import attention_np as anp
from helpers import checks
from helpers.checks.streaming import Blocks
from tests.checks.catalogue import right, topic_tests, wrong
from tests.checks.staged import assert_staged


def stream_right(q, blocks):
    d_k = q.shape[0]
    run_max, run_sum, acc = -math.inf, 0.0, 0.0
    for K_blk, V_blk in blocks:
        x = K_blk @ q / math.sqrt(d_k)  # (b,)
        new_max = max(run_max, float(x.max()))
        p = np.exp(x - new_max)  # (b,)
        factor = math.exp(run_max - new_max)
        run_sum = run_sum * factor + p.sum()
        acc = acc * factor + p @ V_blk  # (d_v,)
        run_max = new_max
    return acc / run_sum, run_max + math.log(run_sum)


def stream_lists(q, blocks):
    """Collects every block first: not a stream, but the same numbers."""
    pairs = list(blocks)
    K = np.concatenate([k for k, _ in pairs])
    V = np.concatenate([v for _, v in pairs])
    x = K @ q / math.sqrt(q.shape[0])
    top = x.max()
    e = np.exp(x - top)
    return e @ V / e.sum(), top + math.log(e.sum())


def _loop(q, blocks, **slip):
    d_k = q.shape[0]
    run_max, run_sum, acc = -math.inf, 0.0, np.zeros(0)
    for K_blk, V_blk in blocks:
        x = K_blk @ q / (1.0 if slip.get("unscaled") else math.sqrt(d_k))
        new_max = max(run_max, float(x.max()))
        p = np.exp(x - new_max)
        factor = math.exp(run_max - new_max)
        if slip.get("flipped"):
            factor = 0.0 if run_max == -math.inf else math.exp(new_max - run_max)
        acc = acc if acc.size else np.zeros(V_blk.shape[1])
        run_sum = (1.0 if slip.get("keep_sum") else factor) * run_sum + p.sum()
        acc = (1.0 if slip.get("keep_acc") else factor) * acc + p @ V_blk
        run_max = new_max
    y = acc if slip.get("no_divide") else acc / run_sum
    log_Z = math.log(run_sum) if slip.get("no_max") else run_max + math.log(run_sum)
    return y, log_Z


def stream_acc_not_rescaled(q, blocks):
    return _loop(q, blocks, keep_acc=True)


def stream_nothing_rescaled(q, blocks):
    return _loop(q, blocks, keep_acc=True, keep_sum=True)


def stream_sum_not_rescaled(q, blocks):
    return _loop(q, blocks, keep_sum=True)


def stream_factor_flipped(q, blocks):
    return _loop(q, blocks, flipped=True)


def stream_not_divided(q, blocks):
    return _loop(q, blocks, no_divide=True)


def stream_log_l(q, blocks):
    return _loop(q, blocks, no_max=True)


def stream_unscaled(q, blocks):
    return _loop(q, blocks, unscaled=True)


def stream_z_then_log(q, blocks):
    y, log_Z = stream_right(q, blocks)
    with np.errstate(over="ignore"):
        return y, float(np.log(np.exp(np.float64(log_Z))))  # Z itself, then its log


def stream_indexing(q, blocks):
    return stream_right(q, [blocks[i] for i in range(3)])


def stream_copies(q, blocks):
    """Keeps copies of the blocks, so no block it was given stays alive."""
    pairs = [(k.copy(), v.copy()) for k, v in blocks]
    return stream_right(q, pairs)


def stream_grows(q, blocks):
    """Concatenates as it goes: one array, growing block after block."""
    K, V = None, None
    for K_blk, V_blk in blocks:
        K = K_blk.copy() if K is None else np.concatenate([K, K_blk])
        V = V_blk.copy() if V is None else np.concatenate([V, V_blk])
    return stream_right(q, [(K, V)])


def stream_twice(q, blocks):
    """Reads the stream once for the max, then again."""
    top = max(float((K_blk @ q).max()) for K_blk, _ in blocks)
    assert top > -math.inf
    return stream_right(q, blocks)


def stream_with_the_helper(q, blocks):
    """Each block's softmax from the course's helper."""
    run_max, acc, run_sum = -math.inf, 0.0, 0.0
    for K_blk, V_blk in blocks:
        x = K_blk @ q / math.sqrt(q.shape[0])
        new_max = max(run_max, float(x.max()))
        w = anp.softmax(x)  # sums to 1 over the block
        l_blk = float(np.exp(x - new_max).sum())
        factor = math.exp(run_max - new_max)
        acc = acc * factor + l_blk * (w @ V_blk)
        run_sum = run_sum * factor + l_blk
        run_max = new_max
    return acc / run_sum, run_max + math.log(run_sum)


RIGHT = [right(checks.check_streaming_attention, stream_right)]
WRONG = wrong(
    checks.check_streaming_attention,
    [
        (stream_acc_not_rescaled, "your accumulator keeps sums taken relative"),
        (stream_nothing_rescaled, "neither your running sum nor your accumulator"),
        (stream_sum_not_rescaled, "running sum l is not"),
        (stream_factor_flipped, "grows the old sums"),
        (stream_not_divided, "the accumulator itself"),
        (stream_log_l, "log l, the log of the shifted sum"),
        (stream_unscaled, "raw dot products"),
        (stream_z_then_log, "scores above 709"),
        (stream_indexing, "not subscriptable"),
        (stream_lists, "you kept 3 blocks at once"),
        (stream_copies, "you kept copies of the blocks"),
        (stream_grows, "you kept copies of the blocks"),
        (stream_twice, "you read the stream of blocks a second time"),
        (stream_with_the_helper, "you called anp.softmax"),
    ],
)
test_accepts_a_right_answer, test_rejects_a_wrong_answer_with_its_diagnosis = (
    topic_tests(RIGHT, WRONG)
)


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (stream_acc_not_rescaled, "accumulator keeps sums"),
        (stream_log_l, "log of the shifted sum"),
        (stream_z_then_log, "above 709"),
    ],
)
def test_hints_come_in_steps(fn, says, capsys):
    assert_staged(checks.check_streaming_attention, (fn,), says, capsys)


def test_the_cases_do_what_their_labels_say():
    """A rising max, several blocks, and scores past float64's exp."""
    from helpers.checks.streaming import _cases

    cases = _cases(np.random.default_rng(0))
    for case in cases:
        q, blocks = case.args
        pairs = blocks.replay()
        x = np.concatenate([K_blk @ q for K_blk, _ in pairs]) / math.sqrt(q.shape[0])
        assert x.shape == (sum(blocks.sizes),)
        if "rises" in case.label:
            block_max = [float((K_blk @ q).max()) for K_blk, _ in pairs]
            assert block_max == sorted(block_max) and len(set(block_max)) > 1
        if "709" in case.label:
            assert x.max() > 709
    assert not hasattr(Blocks, "__len__") and not hasattr(Blocks, "__getitem__")
    assert any(len(case.args[1].sizes) > 20 for case in cases)  # holding them shows


def test_a_stream_is_read_once():
    blocks = Blocks(np.zeros((4, 2)), np.zeros((4, 3)), [2, 2])
    assert len(list(zip(range(9), blocks, strict=False))) == 2
    with pytest.raises(RuntimeError, match="a second time"):
        iter(blocks)
