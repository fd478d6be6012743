"""Which earlier cells of a notebook a chosen set of code cells needs.

Read from the code, not run: a cell is needed when it binds, or changes in
place, a name that a needed cell after it reads; its own reads are then needed
too. Used to run a student copy's exercise section (tests/course/test_student_copies.py)
and a lesson's explorers in JupyterLab (tests/browser/) without the whole lesson,
which nbval runs anyway. A missed dependency cannot pass silently: the run ends
in a NameError.
"""

import ast
import builtins
import copy
import symtable
from typing import NamedTuple

from IPython.core.inputtransformer2 import TransformerManager

BUILTINS = frozenset(dir(builtins))


def _statements(body):
    """Statements in execution order, the bodies of for/while/if/with/try opened."""
    for stmt in body:
        if isinstance(stmt, ast.For | ast.While | ast.If | ast.With | ast.Try):
            if not isinstance(stmt, ast.Try):
                head = copy.copy(stmt)  # the loop header, condition or context
                head.body, head.orelse = [ast.Pass()], []
                yield head
            for name in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(stmt, name, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _statements(handler.body)
        else:
            yield stmt


def _global_reads(table):
    """Global names read anywhere inside a symbol table's functions and classes."""
    names = set()
    for child in table.get_children():
        names |= {
            s.get_name()
            for s in child.get_symbols()
            if s.is_global() and s.is_referenced()
        }
        names |= _global_reads(child)
    return names


def _changed_in_place(stmt):
    """Names a statement may change in place: x.f(...), x[i] = ..., x.a = ..."""
    changed = set()
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            changed.add(func.value.id)
    targets = getattr(stmt, "targets", []) + [getattr(stmt, "target", None)]
    for target in targets:
        if isinstance(target, ast.Subscript | ast.Attribute):
            while isinstance(target, ast.Subscript | ast.Attribute):
                target = target.value
            if isinstance(target, ast.Name):
                changed.add(target.id)
    return changed


class Names(NamedTuple):
    """What one code cell does with names at the notebook's top level."""

    reads: set  # used before the cell binds them itself (inside functions too)
    binds: set  # assigned, defined or imported
    changes: set  # may be modified in place
    imports: set  # bound by an import


def cell_names(source, stop_at=frozenset(), bodies=True):
    """The Names of one code cell; built-ins are left out.

    ``stop_at``: names whose use raises (a stubbed exercise), so that nothing
    after the first statement that uses one of them (outside a function
    body) runs. ``bodies=False``:
    leave out what function bodies read (a stub raises before reading it).
    """
    tree = ast.parse(TransformerManager().transform_cell(source))
    names = Names(set(), set(), set(), set())
    for stmt in _statements(tree.body):
        table = symtable.symtable(ast.unparse(stmt), "<cell>", "exec")
        top = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
        used = top | _global_reads(table) if bodies else top
        names.reads.update(used - names.binds - BUILTINS)
        for symbol in table.get_symbols():
            if symbol.is_assigned() or symbol.is_imported():
                names.binds.add(symbol.get_name())
            if symbol.is_imported():
                names.imports.add(symbol.get_name())
        names.changes.update(_changed_in_place(stmt))
        if top & stop_at:  # called here, not in a function defined here
            break
    return names


def with_dependencies(nb, chosen):
    """The code cells ``chosen`` and the earlier ones they need, as sorted indices.

    ``chosen``: {index: Names} for the cells to run, with their names as they
    will run (a stubbed exercise reads less). Walking back from the last chosen
    cell: another code cell is needed if it binds, or changes in place, a name
    that a needed cell after it reads; its own reads are then needed too.
    Modules (imports) do not count as changed by calls such as
    ``np.set_printoptions``.
    """
    last = max(chosen)
    others = {
        i: cell_names(cell.source)
        for i, cell in enumerate(nb.cells[:last])
        if cell.cell_type == "code" and i not in chosen
    }
    imported = set().union(*(names.imports for names in others.values()))
    picked, needed = set(chosen), set()
    for i in range(last, -1, -1):
        if i in chosen:
            names = chosen[i]
        elif i in others and (
            others[i].binds & needed or (others[i].changes - imported) & needed
        ):
            names = others[i]
            picked.add(i)
        else:
            continue
        needed = (needed - names.binds) | names.reads
    return sorted(picked)
