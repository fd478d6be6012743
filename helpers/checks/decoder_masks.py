"""Checkers for lesson 05's new exercises: a mask convention converted to ours,
and the mask of a batched, cached decoder step built from a blank cell.

Both compare masks after broadcasting them against the scores (batch,
num_heads, n, m), so any shape that broadcasts right is right. (The causal
mask and the zero-weight prediction live in ``helpers.checks.masks``.) See
``helpers.checks``.
"""

import dataclasses
import inspect
import re

import numpy as np

from helpers import attention_np as anp
from helpers.checks import _engine as ck
from helpers.checks._refuse import refusing
from helpers.checks._where import _place
from helpers.i18n import N_, _

__all__ = ["check_mask_conversion", "check_decoder_mask"]

# --------------------------------------------------------------------------
# check_mask_conversion (lesson 05, exercise 5.2)
# --------------------------------------------------------------------------

_CONV_FLIPPED = ck.Mistake(
    symptom="your {convention!r} conversion is True exactly where attending is "
    "blocked: the polarity is flipped",
    why="{meaning}; ours is True = may attend",
    fix="{fix}",
)
_CONV_AXES = ck.Mistake(
    symptom="your {convention!r} mask has shape {shape}, which lines up against "
    "the scores (batch, num_heads, n, m) = {scores} from the right: {landing}",
    why="broadcasting matches trailing axes first: each of your axes must sit "
    "under the scores' axis it means, so a (batch, m) mask needs size-1 axes for "
    "the heads and the queries in between, and the keys last",
    fix="{fix}",
)
_CONV_DTYPE = ck.Mistake(
    symptom="your {convention!r} conversion returns dtype {dtype}, not bool",
    why="a float or integer 0/1 mask is another convention again; the helpers "
    "refuse anything but booleans",
    fix="{fix}",
)
_AXIS_NAMES = ("batch", "heads", "query", "key")
_AXIS_WORDS = {  # the axis names in words, for a message
    "batch": N_("batch"),
    "heads": N_("heads"),
    "query": N_("query"),
    "key": N_("key"),
}
_CONVENTIONS = {
    "seed003": (
        N_("a 1 in seed 003's mask blocks a key (it adds mask * -1e9)"),
        "mask == 0",
    ),
    "additive": (
        N_(
            "an additive mask is 0 where attending is allowed and -inf "
            "where it is blocked"
        ),
        "mask == 0",
    ),
    "key_padding": (
        N_("nn.MultiheadAttention's key_padding_mask is True at the padding (ignore)"),
        "~mask[:, None, None, :]",
    ),
    "mha_attn_mask": (
        N_(
            "nn.MultiheadAttention's bool attn_mask is True where "
            "attending is not allowed"
        ),
        "~mask",
    ),
    "keep_01": (
        N_("a tokenizer's attention_mask is 1 at a real token"),
        "(mask == 1)[:, None, None, :]",
    ),
}


def _conversion_cases(rng, batch=4, num_heads=2, n=3, m=5):
    """{convention: (their mask, our truth)}: padding from random lengths, causal."""
    lengths = rng.permutation([m, 2, 4, 1])[:batch]  # (batch,) unequal lengths
    keep = np.arange(m) < lengths[:, None]  # (batch, m), True = real token
    allowed = anp.causal_mask(n, m)  # (n, m)
    pad = keep[:, None, None, :]  # (batch, 1, 1, m)
    cases = {
        "seed003": ((~pad).astype(float), pad),
        "additive": (np.where(allowed, 0.0, -np.inf), allowed),
        "key_padding": (~keep, pad),
        "mha_attn_mask": (~allowed, allowed),
        "keep_01": (keep.astype(np.int64), pad),
    }
    return cases, (batch, num_heads, n, m), lengths


def _landing(shape, scores):
    """Where each of a mask's axes lands on the scores, in words, or None if right.

    The sizes of the scores' axes differ (4, 2, 3, 5), so an axis's size says
    which axis it is; a size-1 axis broadcasts anywhere.
    """
    if len(shape) > len(scores):
        return _("it has {axes} axes, more than the scores' {scores_axes}").format(
            axes=len(shape), scores_axes=len(scores)
        )
    offset = len(scores) - len(shape)
    wrong = []
    for k, size in enumerate(shape):
        if size == 1:
            continue
        meaning = [a for a, s in zip(_AXIS_NAMES, scores, strict=True) if s == size]
        lands = _AXIS_NAMES[offset + k]
        if meaning and meaning[0] != lands:
            wrong.append(
                _(
                    "its {axis} axis (size {size}) lands on the {lands} axis "
                    "(size {other})"
                ).format(
                    axis=_(_AXIS_WORDS[meaning[0]]),
                    size=size,
                    lands=_(_AXIS_WORDS[lands]),
                    other=scores[offset + k],
                )
            )
    return _("; ").join(wrong) or None


def _conversion_problem(convention, got, truth, scores):
    meaning, fix = _CONVENTIONS[convention]
    facts = {
        "convention": convention,
        "meaning": _(meaning),
        "fix": fix,
        "shape": tuple(got.shape),
        "scores": scores,
        "dtype": got.dtype,
    }

    def told(mistake):  # one key per (kind of mistake, convention): own steps
        return dataclasses.replace(
            mistake.filled(facts), key=f"{mistake.key} ({convention})"
        )

    if got.dtype != np.bool_:
        return told(_CONV_DTYPE)
    landing = _landing(tuple(got.shape), scores)
    if landing is not None:
        facts["landing"] = landing
        return told(_CONV_AXES)
    try:
        wide = np.broadcast_to(got, np.broadcast_shapes(got.shape, scores))
    except ValueError:
        return _(
            "your {convention!r} mask has shape {shape}, which "
            "does not broadcast against the scores (batch, num_heads, n, "
            "m) = {scores}"
        ).format(convention=convention, shape=tuple(got.shape), scores=scores)
    if wide.shape != scores:
        return _(
            "your {convention!r} mask has shape {shape}, which "
            "broadcasts the scores {scores} up to {wide}: keep the "
            "scores' shape"
        ).format(
            convention=convention,
            shape=tuple(got.shape),
            scores=scores,
            wide=wide.shape,
        )
    truth = np.broadcast_to(truth, scores)
    if np.array_equal(wide, truth):
        return None
    if np.array_equal(wide, ~truth):
        return told(_CONV_FLIPPED)
    cells = np.argwhere(wide != truth)[:3].tolist()
    return _(
        "your {convention!r} conversion is wrong at (batch, head, query, key) {cells}"
    ).format(convention=convention, cells=cells)


def _convention_line(fn, convention):
    """The learner's line that returns ``convention``'s conversion, else their function.

    The first line that names the convention in quotes, then the first line from
    there on that returns (``if c == "x": return ...`` is one line); a learner
    who wrote it another way (a dict of functions) is shown their function.
    """
    code = getattr(fn, "__code__", None)
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return ck.defined_at(fn)
    quoted = re.compile(rf"""["']{re.escape(convention)}["']""")
    named = [k for k, text in enumerate(lines) if quoted.search(text)]
    for k in range(named[0], len(lines)) if named else ():
        if re.search(r"\breturn\b", lines[k]):
            place = _place(code.co_filename, max(start, 1) + k)
            return f"{ck.fn_name(fn)}, {place}: {lines[k].strip()}"
    return ck.defined_at(fn)


def check_mask_conversion(fn, *, seed=7):
    """Check ``fn(mask, convention) -> bool mask`` for every convention of 5.2.

    Each convention's mask is built from one known mask (random padding lengths,
    a causal mask with n != m) and the answer, broadcast against the scores
    (batch, num_heads, n, m) = (4, 2, 3, 5), must equal it.
    """
    name = "check_mask_conversion"
    ck.require_function(name, fn)
    cases, scores, lengths = _conversion_cases(np.random.default_rng(seed))
    for convention, (theirs, truth) in cases.items():
        case = ck.make_case(
            ("mask", "convention"),
            theirs,
            convention,
            note=_("padding lengths {lengths}").format(
                lengths=tuple(int(x) for x in lengths)
            ),
        )
        got = ck.to_arrays(
            ck.call(name, fn, case, "to_ours(mask, convention)", ""),
            (ck.Out("mask", "broadcasts to (batch, num_heads, n, m)"),),
            fn,
        )
        message = (
            got
            if isinstance(got, str)
            else ck.quietly(_conversion_problem, convention, got[0], truth, scores)
        )
        if message is not None:
            where = _convention_line(fn, convention)
            raise ck.CheckFailed(name, message, case.label, where)
    print(
        _("✓ {name}: all {count} conventions converted").format(
            name=name, count=len(cases)
        )
    )
    return True


# --------------------------------------------------------------------------
# check_decoder_mask (lesson 05, exercise 5.4, the build exercise)
# --------------------------------------------------------------------------

_DEC_UPPER_LEFT = ck.Mistake(
    symptom="your new queries see only the first keys: query i of {n_new} new ones "
    "stops at key i, although {cache_len} keys sit in the cache before it",
    why="the n_new queries are the last positions, cache_len .. cache_len + n_new "
    "- 1: query i is at position cache_len + i (lower-right alignment)",
    fix="key j is allowed when j <= cache_len + i (and j < lengths[b])",
    line=r"^(?!.*\blengths\b).*(<=|tril)",
)
_DEC_PAD_QUERIES = ck.Mistake(
    symptom="in a sequence shorter than the batch your mask blocks whole rows "
    "(queries) instead of columns (keys): the padding is on the wrong axis",
    why="padding is about which keys exist: a padded key must get no weight from "
    "any query; a padded query still computes an output, which the loss ignores",
    fix="the padding test compares the key index j with lengths[b], on the last axis",
    line=r"(?=.*\blengths\b).*[<>]",
)
_DEC_FLIPPED = ck.Mistake(
    symptom="your mask is True exactly where attending is blocked: the polarity "
    "is flipped",
    why="the course's one convention: True = may attend",
    fix="negate it (~mask)",
    line=r"~|>|return",
)
_DEC_OFF_BY_ONE = ck.Mistake(
    symptom="your causal boundary is one key off: compare the last query's row "
    "with the number of keys there are (cache_len = {cache_len}, n_new = {n_new})",
    why="query i sits at position cache_len + i and may see itself, so its last "
    "allowed key is j = cache_len + i: neither one before nor one after",
    fix="j <= cache_len + i",
    line=r"^(?!.*\blengths\b).*(<|>|tril|\+\s*1|-\s*1)",
)
# one mistake (one key: its steps count together), told in two whole sentences
_DEC_PAD_KEY = (
    "your padding boundary is one key off: with lengths = {lengths}, sequence b's "
    "real keys are the first lengths[b] positions, and your mask {which}"
)
_DEC_PAD_ONE_MORE = ck.Mistake(
    symptom="your padding boundary is one key off: with lengths = {lengths}, "
    "sequence b's real keys are the first lengths[b] positions, and your mask "
    "also lets them read key lengths[b]",
    why="positions start at 0, so sequence b's real keys are j = 0 .. lengths[b] "
    "- 1: key j = lengths[b] is already the first padded one",
    fix="real keys: j < lengths[b] (strictly less)",
    line=r"(?=.*\blengths\b).*(<|>|\+\s*1|-\s*1)",
    key=_DEC_PAD_KEY,
)
_DEC_PAD_ONE_LESS = dataclasses.replace(
    _DEC_PAD_ONE_MORE,
    symptom="your padding boundary is one key off: with lengths = {lengths}, "
    "sequence b's real keys are the first lengths[b] positions, and your mask "
    "blocks their last real key",
)
_DEC_NO_PADDING = ck.Mistake(
    symptom="your mask lets queries attend to padded keys (j >= lengths[b])",
    why="padded positions are filler, not tokens: no query may read them",
    fix="& with j < lengths[b] along the keys",
    line=r"return|&",
)
_DEC_NO_CAUSAL = ck.Mistake(
    symptom="your mask lets a new query attend to the new tokens after it",
    why="the causal rule holds inside the n_new new tokens too: query i may not "
    "read the tokens after position cache_len + i",
    fix="& with j <= cache_len + i",
    line=r"return|&",
)
_DEC_KEYS = ck.Mistake(
    symptom="your mask has {got_m} columns; the keys are the cached ones and the "
    "new ones, {m} in all",
    why="the n_new new tokens are written to the cache before attention, so they "
    "are keys too: m = cache_len + n_new",
    fix="shape (batch, 1, n_new, cache_len + n_new)",
    line=r"cache_len|m\s*=",
)


def _decoder(
    lengths,
    n_new,
    cache_len,
    *,
    offset=0,
    query_padding=False,
    causal=True,
    padding=True,
    upper_left=False,
    pad_offset=0,
    m=None,
):
    """The decoder mask, with one of the common mistakes switched on."""
    lengths = np.asarray(lengths)
    m = cache_len + n_new if m is None else m
    i = np.arange(n_new)[:, None]  # (n_new, 1)
    j = np.arange(m)[None, :]  # (1, m)
    last = i if upper_left else i + cache_len + offset  # last key each query sees
    mask = np.broadcast_to(
        j <= last if causal else np.ones((n_new, m), bool), (len(lengths), 1, n_new, m)
    )
    if padding and query_padding:
        position = (i + cache_len)[None, None]  # (1, 1, n_new, 1)
        mask = mask & (position < lengths[:, None, None, None])
    elif padding:
        mask = mask & (j[None, None] < lengths[:, None, None, None] + pad_offset)
    return np.ascontiguousarray(mask)  # (batch, 1, n_new, m)


def _decoder_cases():
    cases = []
    for lengths, n_new, cache_len in [
        ([6, 4, 5], 2, 4),
        ([7, 3], 3, 4),
        ([5, 5, 2, 4], 1, 4),
        ([4, 2], 4, 0),
    ]:
        lengths = np.array(lengths)
        m = cache_len + n_new
        case = ck.make_case(
            ("lengths", "n_new", "cache_len"),
            lengths,
            n_new,
            cache_len,
            sizes={"batch": len(lengths), "n_new": n_new, "m": m},
            facts={
                "n_new": n_new,
                "cache_len": cache_len,
                "m": m,
                "got_m": cache_len,
                "lengths": lengths.tolist(),
            },
        )
        case.label = f"lengths={lengths.tolist()}, n_new={n_new}, cache_len={cache_len}"
        cases.append(case)
    return cases


def check_decoder_mask(fn):
    """Check ``fn(lengths, n_new, cache_len) -> bool (batch, 1, n_new, m)``.

    m = cache_len + n_new keys; sequence b has real keys j < lengths[b]; new
    query i sits at position cache_len + i and may attend key j when j <=
    cache_len + i and j is real. Cases: unequal lengths, several new tokens,
    one new token, an empty cache.
    """

    learner = refusing(
        fn,
        anp,
        ("causal_mask", "padding_mask"),
        _(
            "this exercise builds the mask from index comparisons (your own "
            "my_causal_mask from exercise 5.1 is fine)"
        ),
    )

    variants = [
        (_DEC_FLIPPED, lambda *a: ~_decoder(*a)),
        (_DEC_UPPER_LEFT, lambda *a: _decoder(*a, upper_left=True)),
        (_DEC_PAD_QUERIES, lambda *a: _decoder(*a, query_padding=True)),
        (_DEC_OFF_BY_ONE, lambda *a: _decoder(*a, offset=-1)),
        (_DEC_OFF_BY_ONE, lambda *a: _decoder(*a, offset=1)),
        (_DEC_PAD_ONE_MORE, lambda *a: _decoder(*a, pad_offset=1)),
        (_DEC_PAD_ONE_LESS, lambda *a: _decoder(*a, pad_offset=-1)),
        (_DEC_NO_PADDING, lambda *a: _decoder(*a, padding=False)),
        (_DEC_NO_CAUSAL, lambda *a: _decoder(*a, causal=False)),
        (_DEC_KEYS, lambda lengths, n, c: _decoder(lengths, n, c, m=c)),
    ]
    ck.run(
        "check_decoder_mask",
        _Learner(learner, fn),
        _decoder_cases(),
        _decoder,
        (ck.Out("mask", "(batch, 1, n_new, m)", "m = cache_len + n_new keys.", True),),
        variants,
        signature="decoder_mask(lengths, n_new, cache_len)",
        hint="the mask is (batch, 1, n_new, m): a rule built from the lengths "
        "needs the batch first and size-1 axes for the heads, queries and keys, so "
        "that it broadcasts against the mask",
    )
    return True


class _Learner:
    """Calls ``call``, but reads as ``fn`` in the messages (name and cell)."""

    def __init__(self, call, fn):
        self._call = call
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__code__ = getattr(fn, "__code__", None)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)
