"""Wrong implementations nobody wrote by hand: mutants of the right source code.

Each right answer's source is parsed and changed in one place at a time, the
way a learner slips: another axis, keepdims dropped, operands swapped, a
division made a product, a subtraction dropped, max made min, sqrt dropped, a
negation dropped, a constant changed, a comparison made strict, an index
forgotten, one argument used for another, the returned values reordered. Every
mutant must make its checker fail with ``CheckFailed`` (or pass, if every
answer it gave was right); never crash, never accept a wrong answer. The
right answers are those of the topic files.
"""

import ast
import inspect
import textwrap

import pytest

from helpers import checks
from tests.checks.catalogue import simple_sdpa, simple_softmax
from tests.checks.harness import Watched, assert_fails_cleanly
from tests.checks.test_attention import attention, shuffle, simple_one_query
from tests.checks.test_heads import loop_mha, simple_split
from tests.checks.test_logsumexp import logsumexp, merge_stats
from tests.checks.test_masks import simple_causal
from tests.checks.test_online import finish, update
from tests.checks.test_scale import find_temperature, jacobian
from tests.checks.test_self_attention import self_attention
from tests.checks.test_softmax import masked_softmax

SUBJECTS = {
    "softmax": (checks.check_softmax, simple_softmax),
    "one_query": (checks.check_attention_one_query, simple_one_query),
    "attention": (checks.check_attention, attention),
    "sdpa": (checks.check_scaled_dot_product_attention, simple_sdpa),
    "shuffle": (checks.check_shuffle_keys_and_values, shuffle),
    "masked_softmax": (checks.check_masked_softmax, masked_softmax),
    "logsumexp": (checks.check_logsumexp, logsumexp),
    "merge_stats": (checks.check_merge_stats, merge_stats),
    "jacobian": (checks.check_softmax_jacobian, jacobian),
    "temperature": (checks.check_find_temperature, find_temperature),
    "causal_mask": (checks.check_causal_mask, simple_causal),
    "self_attention": (checks.check_self_attention, self_attention),
    "split_heads": (checks.check_split_heads, simple_split),
    "mha": (checks.check_multi_head_attention, loop_mha),
    "online_update": (lambda fn: checks.check_online_softmax(fn, finish), update),
    "online_finish": (lambda fn: checks.check_online_softmax(update, fn), finish),
}

_OTHER_REDUCTION = {"max": "min", "min": "max", "sum": "mean", "maximum": "minimum"}


class Mutator(ast.NodeTransformer):
    """Change the ``target``-th mutation site of a function; count the sites."""

    def __init__(self, target):
        self.target, self.sites, self.params = target, 0, []

    def hit(self):
        self.sites += 1
        return self.sites - 1 == self.target

    def visit_FunctionDef(self, node):
        self.params = [a.arg for a in node.args.args]
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.params[:-1]:
            if len(self.params) > 1 and self.hit():  # the neighbouring argument
                return ast.Name(self.params[self.params.index(node.id) + 1], node.ctx)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        other = {ast.LtE: ast.Lt, ast.Lt: ast.LtE, ast.GtE: ast.Gt, ast.Gt: ast.GtE}
        if type(node.ops[0]) in other and self.hit():
            node.ops = [other[type(node.ops[0])]()]
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.slice, ast.Name) and self.hit():
            return node.value  # the indexing forgotten
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Sub, ast.Div, ast.MatMult)) and self.hit():
            return ast.BinOp(node.right, node.op, node.left)  # operands swapped
        if isinstance(node.op, ast.Div) and self.hit():
            return ast.BinOp(node.left, ast.Mult(), node.right)  # / became *
        if isinstance(node.op, (ast.Sub, ast.Div)) and self.hit():
            return node.left  # the subtraction or division forgotten
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        if node.arg == "axis" and self.hit():
            node.value = ast.Constant(0)
        elif node.arg == "keepdims" and self.hit():
            node.value = ast.Constant(False)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _OTHER_REDUCTION and self.hit():
                func.attr = _OTHER_REDUCTION[func.attr]
            elif func.attr in ("sqrt", "exp") and len(node.args) == 1 and self.hit():
                return node.args[0]  # the sqrt or exp forgotten
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Invert, ast.USub)) and self.hit():
            return node.operand
        return node

    def visit_Constant(self, node):
        if type(node.value) in (int, float) and self.hit():
            return ast.Constant(node.value + 1)
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Tuple) and self.hit():
            node.value.elts = node.value.elts[::-1]
        return node


def mutants(fn):
    """Every one-site mutant of ``fn``, as (source, function)."""
    source = textwrap.dedent(inspect.getsource(fn))
    counter = Mutator(-1)
    counter.visit(ast.parse(source))
    found = []
    for target in range(counter.sites):
        tree = Mutator(target).visit(ast.parse(source))
        ast.fix_missing_locations(tree)
        namespace = dict(fn.__globals__)
        exec(compile(tree, f"<mutant {target} of {fn.__name__}>", "exec"), namespace)
        found.append((ast.unparse(tree), namespace[fn.__name__]))
    return found


@pytest.mark.parametrize("name", SUBJECTS)
def test_every_mutant_fails_cleanly_or_is_right(name, capsys):
    checker, right = SUBJECTS[name]
    found = mutants(right)
    assert len(found) >= 2, f"only {len(found)} mutation sites in {right.__name__}"
    caught = 0
    for source, mutant in found:
        try:
            caught += assert_fails_cleanly(checker, Watched(right, mutant)) is not None
        except AssertionError as err:
            raise AssertionError(f"{err}\nmutant:\n{source}") from None
    assert caught >= len(found) // 2, "most mutants should be wrong answers"
