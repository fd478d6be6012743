"""The helpers' messages in Chinese (issue 24 item 3): catalogue, rule, kernels.

- the committed catalogue, locale/zh_CN/LC_MESSAGES/helpers.po, holds every
  template of the code (``python -m tools.i18n_messages extract`` is current),
  each translation keeps its msgid's ``{fields}``, and every
  ``_("...").format(...)`` call passes exactly its template's fields;
- the extraction refuses an f-string inside ``_`` or ``Mistake``, and carries
  a changed entry's translation over as fuzzy;
- the language rule: COURSE_LANG, else a notebook (JPY_SESSION_NAME) or a
  working directory in a folder named ``zh``; fuzzy and untranslated entries
  fall back to English;
- a checker given a known-wrong answer diagnoses it in Chinese in a Chinese
  kernel (a real Jupyter kernel started in a folder named ``zh``, and a Python
  with COURSE_LANG=zh), step by step, and still in English in an English one.
"""

import ast
import functools
import os
import re
import string
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import polib
import pytest
from nbclient import NotebookClient

from helpers import i18n
from tools import i18n_messages

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")

# the learner's known-wrong softmax: no max subtracted, so large inputs overflow
NAIVE_SOFTMAX = """
import numpy as np
from helpers import checks

def softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)

for attempt in (1, 2):
    try:
        checks.check_softmax(softmax)
    except AssertionError as err:
        print(err)
checks.hint("softmax")
"""


def test_catalogue_holds_every_template_of_the_code():
    code = set(i18n_messages.collect())
    po = polib.pofile(str(i18n_messages.CATALOGUE))
    catalogue = {e.msgid for e in po if not e.obsolete}
    missing, stale = sorted(code - catalogue), sorted(catalogue - code)
    assert not missing and not stale, (
        "helpers.po is not what the code holds: run "
        "`python -m tools.i18n_messages extract`. "
        f"Missing: {missing[:5]} ({len(missing)}); no longer in the code: "
        f"{stale[:5]} ({len(stale)})"
    )
    assert po.metadata["Language"] == "zh_CN"


def test_every_translation_keeps_the_fields_of_its_msgid():
    po = polib.pofile(str(i18n_messages.CATALOGUE))
    translated = [e for e in po if e.msgstr]
    broken = [
        (e.msgid, e.msgstr)
        for e in translated
        if i18n_messages.fields(e.msgid) != i18n_messages.fields(e.msgstr)
    ]
    assert translated, "the path the kernel tests use must be translated"
    assert not broken, broken[:5]


def test_helpers_catalogue_is_fully_translated():
    """The Chinese edition may not fall behind: no untranslated or fuzzy entry,
    and none that breaks a field, inline code, a number or a glossary term
    (``python -m tools.i18n_messages check`` lists them)."""
    po = polib.pofile(str(i18n_messages.CATALOGUE))
    found = i18n_messages.problems(po)
    kinds = sorted({what.split(" (")[0].split(":")[0] for _entry, what in found})
    assert not found, f"{len(found)} problems in helpers.po ({kinds}), e.g. " + (
        "; ".join(f"{what}: {entry.msgid[:50]!r}" for entry, what in found[:3])
    )


@pytest.mark.parametrize(
    ("msgid", "msgstr", "problem"),
    [
        ("{n} keys", "{m} 个键", "fields"),
        ("{n} keys", "{n!r} 个键", "fields"),
        ("use {{axis}}", "用 {axis}", "fields"),
        ("call `np.exp`", "调用 np.exp", "inline code"),
        ("the first 3 rows", "前几行", "number"),
        ("the queries", "询问", "term"),
        ("your mask", "你的遮罩", "term"),
    ],
)
def test_the_check_catches_a_broken_translation(msgid, msgstr, problem):
    entry = polib.POEntry(msgid=msgid, msgstr=msgstr)
    assert any(problem in what for what in i18n_messages.entry_problems(entry))


def test_the_check_accepts_code_it_does_not_translate():
    for msgid in ("np.where(mask, scores, -np.inf)", "use mask.any(axis=-1)"):
        entry = polib.POEntry(msgid=msgid, msgstr=msgid.replace("use", "用"))
        assert i18n_messages.entry_problems(entry) == []


def _format_calls(tree):
    """``(line, template, keywords, positional)`` of each _("...").format(...),
    and of each _(NAME).format(...) with NAME a module constant (N_("...")); a
    call whose template is held in a variable ``text = _(...)`` is not followed."""
    constants = i18n_messages._constants(tree)
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        inner = getattr(func, "value", None)
        if (
            isinstance(node, ast.Call)
            and isinstance(func, ast.Attribute)
            and func.attr == "format"
            and isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id == "_"
            and inner.args
        ):
            arg = inner.args[0]
            if isinstance(arg, ast.Name):
                template = constants.get(arg.id)
            else:
                template = arg.value if isinstance(arg, ast.Constant) else None
            if template is None:
                continue
            keywords = {k.arg for k in node.keywords}
            yield node.lineno, template, keywords, bool(node.args)


def test_every_format_call_passes_exactly_its_templates_fields():
    """A field the call does not pass would raise KeyError in the learner's face;
    one it passes but the template lacks is a value the message lost."""
    wrong = []
    for path, _text, tree in _helpers_modules():
        for line, template, keywords, positional in _format_calls(tree):
            names = {
                field.split(".")[0].split("[")[0]
                for _text, field, _spec, _conv in string.Formatter().parse(template)
                if field is not None
            }
            if names != keywords or positional:
                wrong.append(
                    f"{path.name}:{line}: {sorted(names)} vs {sorted(keywords)}"
                )
    assert not wrong, wrong


@functools.cache
def _helpers_modules():
    """``[(path, text, tree)]`` of every module under helpers/, parsed once."""
    found = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        found.append((path, text, ast.parse(text)))
    return found


def test_no_code_that_translates_rebinds_the_name_underscore():
    """``a, _ = f()`` in a function that calls ``_(...)`` makes the message a
    call of whatever f returned: a TypeError where the learner expects words."""
    found = []
    for path, text, tree in _helpers_modules():
        binds, calls, scopes = [], [], []
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store):
                binds.append(n.lineno)
            elif isinstance(n, ast.Call) and getattr(n.func, "id", "") == "_":
                calls.append(n.lineno)
            elif isinstance(n, ast.FunctionDef):
                scopes.append((n.lineno, n.end_lineno))
        if "from helpers.i18n import" in text:  # module level: shadows the import
            outside = [b for b in binds if not any(a <= b <= z for a, z in scopes)]
            found += [f"{path.name}:{b}" for b in outside]
        for start, end in scopes:
            if any(start <= c <= end for c in calls):
                found += [f"{path.name}:{b}" for b in binds if start <= b <= end]
    assert not found, sorted(set(found))


def test_extraction_refuses_text_it_cannot_know(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text(
        "from helpers.i18n import _\n"
        "def f(n):\n"
        '    return _(f"{n} keys")\n'
        "M = Mistake(symptom=f'{n} keys', why='fine')\n",
        encoding="utf-8",
    )
    with pytest.raises(i18n_messages.ExtractError) as err:
        i18n_messages.collect(tmp_path, root=tmp_path)
    assert "bad.py:3" in str(err.value) and "bad.py:4" in str(err.value)


def test_extraction_reads_templates_and_module_constants(tmp_path):
    (tmp_path / "good.py").write_text(
        '_RULE = "j <= i"\n'
        'A = _("{n} keys")\n'
        'M = Mistake(symptom="a {m}", why="b", fix=f"keep {_RULE}")\n'
        "B = _(name)  # a variable: its text is a template written elsewhere\n",
        encoding="utf-8",
    )
    found = i18n_messages.collect(tmp_path, root=tmp_path)
    assert list(found) == ["{n} keys", "a {m}", "b", "keep j <= i"]
    assert found["a {m}"] == [("good.py", "3")]


def test_a_changed_template_keeps_its_translation_as_fuzzy():
    old = polib.POFile()
    for msgid, msgstr in (
        ("your mask is flipped", "你的掩码反了"),
        ("the weights sum to {total}", "权重之和为 {total}"),
        ("a template that left the code", "已删除"),
    ):
        old.append(
            polib.POEntry(msgid=msgid, msgstr=msgstr, occurrences=[("a.py", "1")])
        )
    found = {
        "your mask is flipped": [("a.py", "3")],
        "the weights sum to {total}, not 1": [("a.py", "9")],
        "a new template": [("b.py", "1")],
    }
    po = i18n_messages.build(found, old)
    by_id = {e.msgid: e for e in po}
    assert set(by_id) == set(found)  # the one that left is dropped
    assert by_id["your mask is flipped"].msgstr == "你的掩码反了"
    assert "fuzzy" not in by_id["your mask is flipped"].flags
    changed = by_id["the weights sum to {total}, not 1"]
    assert changed.msgstr == "权重之和为 {total}" and "fuzzy" in changed.flags
    assert changed.previous_msgid == "the weights sum to {total}"
    assert by_id["a new template"].msgstr == ""
    assert "python-brace-format" in changed.flags


@pytest.fixture
def clean_language(monkeypatch):
    for name in ("COURSE_LANG", "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch
    i18n.reload()


def test_the_language_rule(clean_language, tmp_path):
    monkeypatch = clean_language
    monkeypatch.chdir(tmp_path)
    assert i18n.language() == "en"
    (tmp_path / "zh").mkdir()
    monkeypatch.chdir(tmp_path / "zh")  # a kernel started beside a Chinese notebook
    assert i18n.language() == "zh"
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "notebooks" / "01.ipynb"))
    assert i18n.language() == "en"  # the notebook's folder wins over the cwd
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/zh/01_one_query.ipynb")
    assert i18n.language() == "zh"
    monkeypatch.setenv("JPY_SESSION_NAME", "/c/notebooks/zh/student/01_one_query.ipynb")
    assert i18n.language() == "zh"  # a Chinese student copy
    monkeypatch.setenv("JPY_SESSION_NAME", "/zh/a/b/01_one_query.ipynb")
    assert i18n.language() == "en"  # a zh further up is not the notebook's
    monkeypatch.setenv("COURSE_LANG", "en")  # the variable wins over both
    assert i18n.language() == "en"
    for chinese in ("zh", "zh_CN", "zh-CN"):
        monkeypatch.setenv("COURSE_LANG", chinese)
        assert i18n.language() == "zh"
    monkeypatch.setenv("COURSE_LANG", "fr")
    with pytest.warns(UserWarning, match="COURSE_LANG='fr'"):
        i18n._WARNED.discard("COURSE_LANG='fr' is not 'zh' or 'en': using English")
        assert i18n.language() == "en"


def test_fuzzy_and_untranslated_entries_fall_back_to_english(clean_language, tmp_path):
    monkeypatch = clean_language
    po = polib.POFile()
    po.append(polib.POEntry(msgid="{n} keys", msgstr="{n} 个键"))
    po.append(polib.POEntry(msgid="stale", msgstr="旧的", flags=["fuzzy"]))
    po.append(polib.POEntry(msgid="not yet", msgstr=""))
    path = tmp_path / "helpers.po"
    po.save(str(path))
    monkeypatch.setitem(i18n._PO, "zh", path)
    i18n.reload()
    monkeypatch.setenv("COURSE_LANG", "zh")
    assert i18n._("{n} keys").format(n=3) == "3 个键"
    assert i18n._("stale") == "stale"
    assert i18n._("not yet") == "not yet"
    assert i18n._("not in the catalogue") == "not in the catalogue"
    monkeypatch.setenv("COURSE_LANG", "en")
    assert i18n._("{n} keys") == "{n} keys"


def _run_python(code, lang, folder):
    """Run ``code`` as the learner's file ``learner.py`` with COURSE_LANG=lang."""
    script = folder / "learner.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    env.update(COURSE_LANG=lang, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_checker_diagnoses_in_chinese_in_a_chinese_python_and_in_english_else(
    tmp_path,
):
    chinese = _run_python(NAIVE_SOFTMAX, "zh", tmp_path)
    first, second = chinese.split("check_softmax: ")[1:3]
    # step 1: the symptom, the case and where to look, in Chinese
    assert first.startswith(
        "输入很大时（元素接近 ±1000），你的 softmax 返回了 nan 或 inf"
    )
    assert "(用例 6/6：x (3, 4), 元素接近 ±1000)" in first
    assert "查看：softmax, learner.py, line 6: e = np.exp(x)" in first
    # step 2: the why, and where the fix is
    assert "原因：np.exp(1000) 上溢为 inf，而 inf / inf 得到 nan" in second
    assert 'checks.hint("softmax") 会给出修改方法。' in second
    # checks.hint: the fix
    assert "修改方法：取指数之前先减去沿该轴的最大值" in chinese
    english = _run_python(NAIVE_SOFTMAX, "en", tmp_path)
    assert "your softmax returns nan or inf for large inputs (entries near ±1000)" in (
        english
    )
    assert "(case 6 of 6: x (3, 4), entries near ±1000)" in english
    assert "Look at: softmax, learner.py, line 6: e = np.exp(x)" in english
    assert "Why: np.exp(1000) overflows to inf, and inf / inf is nan" in english
    assert "Fix: subtract the max along the axis before exponentiating" in english
    assert not CJK.search(english), english


def _run_kernel(folder, source):
    """Run ``source`` as one cell in a fresh Jupyter kernel whose working
    directory is ``folder``; return the cell's outputs."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    saved = os.environ.pop("COURSE_LANG", None)
    try:
        NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(folder)}},
        ).execute()
    finally:
        if saved is not None:
            os.environ["COURSE_LANG"] = saved
    return nb.cells[0].outputs


def test_a_kernel_beside_a_chinese_notebook_speaks_chinese(tmp_path):
    """A real kernel, no COURSE_LANG: a notebook in a folder named zh gets the
    Chinese diagnosis, as IPython shows a failed check (_render_traceback_).
    (English stays the default: the subprocess test's COURSE_LANG=en run, and
    every English lesson's nbval.)"""
    folder = "zh"
    (tmp_path / folder).mkdir()
    source = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np
        from helpers import checks

        def softmax(x, axis=-1):
            raise NotImplementedError("write your softmax here")

        checks.check_softmax(softmax)
        """
    )
    outputs = _run_kernel(tmp_path / folder, source)
    errors = [o for o in outputs if o.output_type == "error"]
    assert len(errors) == 1, outputs
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0].traceback))
    wanted = "✗ check_softmax: softmax 还没有实现：把 `raise NotImplementedError(...)`"
    assert wanted in shown and "查看：softmax (" in shown, shown
