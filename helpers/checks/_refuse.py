"""Switch a helper off while the learner's code runs: the exercise's own rules.

An exercise that says "without calling ``anp.split_heads``" or "without
building an ``nn.MultiheadAttention``" is passed by construction if the helper
answers it. :func:`refused` replaces such helpers, for the length of a ``with``
block, by stubs that raise :class:`Refused`; :func:`refusing` wraps a learner's
function so the helpers are off only while that function runs (the checker's
own reference may use them). :class:`Refused` carries a ``ck.Mistake``: the
engine shows it as a known mistake (the symptom, the learner's line that made
the call, the why on a repeat), never as a traceback or a class name.
"""

import contextlib

from helpers.checks._failure import Mistake


class Refused(RuntimeError):
    """A call (or an allocation) the exercise asks the learner to do without.

    ``mistake`` is what the learner is told; ``str()`` is its symptom.
    """

    def __init__(self, mistake):
        super().__init__(mistake.symptom)
        self.mistake = mistake


def _stub(label, reason):
    mistake = Mistake(
        symptom="you called {label}, which this exercise asks you to do without",
        why=reason,
        fix="write the steps yourself instead of calling {label}",
        key=f"refused {label}",
    ).format(label=label)

    def refused_helper(*args, **kwargs):
        raise Refused(mistake)

    return refused_helper


@contextlib.contextmanager
def refused(module, names, reason, *, scope=None):
    """Inside the block, ``module.<name>`` raises :class:`Refused` for each name.

    ``reason`` says why the exercise forbids it (the why of the message).
    ``scope``, a namespace dict such as a learner's function's ``__globals__``,
    has any name bound to one of these helpers switched off too, so ``from
    helpers.attention_np import split_heads`` is refused as well.
    """
    prefix = getattr(module, "__name__", "")
    short = {
        "helpers.attention_np": "anp",
        "helpers.attention_torch": "atn",
        "helpers.induction": "induction",
        "torch.nn": "nn",
    }.get(prefix, prefix)
    saved = {name: getattr(module, name) for name in names}
    stubs = {name: _stub(f"{short}.{name}", reason) for name in names}
    aliases = {}
    if scope is not None:
        originals = {id(value): name for name, value in saved.items()}
        for key, value in list(scope.items()):
            if id(value) in originals:
                aliases[key] = value
    try:
        for name, stub in stubs.items():
            setattr(module, name, stub)
        for key, value in aliases.items():
            scope[key] = stubs[originals[id(value)]]
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
        for key, value in aliases.items():
            scope[key] = value


class refusing:  # noqa: N801 - used like a function: refusing(fn, module, ...)
    """The learner's ``fn``, called as itself, with the helpers refused inside.

    It keeps ``fn``'s name and code, so the checks' messages still name and
    point at the learner's function.
    """

    def __init__(self, fn, module, names, reason):
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__code__ = getattr(fn, "__code__", None)
        self._refusal = (module, tuple(names), reason)

    def __call__(self, *args, **kwargs):
        module, names, reason = self._refusal
        scope = getattr(self.__wrapped__, "__globals__", None)
        with refused(module, names, reason, scope=scope):
            return self.__wrapped__(*args, **kwargs)

    def __getattr__(self, name):  # only for names the instance does not have
        wrapped = self.__dict__.get("__wrapped__")
        if wrapped is None:
            raise AttributeError(name)
        return getattr(wrapped, name)


class within_memory:  # noqa: N801 - used like a function, as refusing is
    """The learner's ``fn``, called as itself, refused if it allocates too much.

    While ``fn`` runs, ``tracemalloc`` (which NumPy reports its arrays to)
    records the peak of the memory allocated; above ``limit`` bytes the call
    raises :class:`Refused` with ``mistake`` (its ``{peak_mib}`` filled in).
    Cheap: one large allocation is enough to cross the limit.
    """

    def __init__(self, fn, limit, mistake):
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "your function")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__code__ = getattr(fn, "__code__", None)
        self._limit = limit
        self._mistake = mistake

    def __call__(self, *args, **kwargs):
        from helpers.measure import traced_call

        result, peak = traced_call(self.__wrapped__, *args, **kwargs)
        if peak > self._limit:
            raise Refused(self._mistake.format(peak_mib=f"{peak / 2**20:.1f}"))
        return result

    def __getattr__(self, name):  # only for names the instance does not have
        wrapped = self.__dict__.get("__wrapped__")
        if wrapped is None:
            raise AttributeError(name)
        return getattr(wrapped, name)
