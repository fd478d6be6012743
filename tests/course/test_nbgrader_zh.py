"""The Chinese edition graded with nbgrader, and its stub (tools/nbgrader_course.py
--lang zh, tools/i18n_build.py STUB).

- the Chinese student copies have the Chinese stub where a solution was, and the
  checkers still read it as "not implemented yet";
- `course DEST --lang zh` writes a course whose kernels speak Chinese;
  `generate_assignment` releases every Chinese lesson as its student copy in
  notebooks/zh/student/ (same cells and sources, links and stub included);
- `autograde` of Chinese lesson 01 scores a solved submission 4/4 and a wrong
  one 2/4 (exercise 1 left as the stub, a wrong shape in exercise 3), and
  `generate_feedback` shows the checkers' diagnoses in Chinese (slow, zh).
"""

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from helpers import checks
from tests.course.test_nbgrader import (
    BROKEN,
    _solution_sources,
    _text_of,
    run_nbgrader,
)
from tools import coursebuild, i18n_build
from tools.nbgrader_course import ZH_KERNEL, lessons, write_course

BIN = Path(sys.executable).parent
ZH_LESSON_01 = next(p for p in lessons("zh") if p.name.startswith("01_"))
CJK = re.compile(r"[\u4e00-\u9fff]")
TIMEOUT, IMPORT_TIMEOUT = 15, 60  # as tests/course/test_nbgrader.py says why


def _tags(cell):
    return cell.metadata.get("tags", [])


def _stub_lines(nb):
    return [
        line.strip()
        for cell in nb.cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if line.strip().startswith("raise NotImplementedError(")
    ]


@pytest.mark.parametrize("path", lessons("zh"), ids=lambda p: p.name)
def test_chinese_student_copy_has_the_chinese_stub(path):
    copy_ = nbformat.read(i18n_build.ZH_STUDENT / path.name, as_version=4)
    english = coursebuild.student_copy(
        nbformat.read(coursebuild.NOTEBOOKS / path.name, as_version=4)
    )
    stubs = _stub_lines(copy_)
    assert coursebuild.STUB not in "\n".join(stubs), path.name
    assert stubs == [i18n_build.STUB] * _stub_lines(english).count(coursebuild.STUB)


def test_chinese_stub_changes_only_the_stub_line():
    english = (
        f'def f():\n    """Docstring."""\n    {coursebuild.STUB}\n# {coursebuild.STUB}'
    )
    assert i18n_build.chinese_stub(english) == (
        f'def f():\n    """Docstring."""\n    {i18n_build.STUB}\n# {coursebuild.STUB}'
    )
    assert CJK.search(i18n_build.STUB)
    assert i18n_build.STUB.startswith("raise NotImplementedError(")


def _exercise(nb, number=1):
    """The source of the number-th solution cell of nb."""
    return [c.source for c in nb.cells if "solution" in _tags(c)][number - 1]


def _diagnosis(checker, source, name, lang, monkeypatch):
    """The first line of what checker says, in lang, about the function name
    that source defines."""
    monkeypatch.setenv("COURSE_LANG", lang)
    namespace = {}
    exec(source, namespace)
    with pytest.raises(AssertionError) as info:
        checker(namespace[name])
    return " ".join(str(info.value).strip().splitlines()[0].split())


def test_checker_reads_the_chinese_stub_as_not_implemented(monkeypatch):
    copy_ = nbformat.read(i18n_build.ZH_STUDENT / ZH_LESSON_01.name, as_version=4)
    stub = _exercise(copy_)
    assert i18n_build.STUB in stub
    zh = _diagnosis(checks.check_softmax, stub, "my_softmax", "zh", monkeypatch)
    en = _diagnosis(checks.check_softmax, stub, "my_softmax", "en", monkeypatch)
    assert "还没有实现" in zh and "raise NotImplementedError(...)" in zh, zh
    assert "is not implemented yet" in en, en


def test_chinese_course_config(tmp_path):
    write_course(tmp_path, [], lang="zh")
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert config.CourseDirectory.course_id == "attention-step-by-step-zh"
    assert config.ClearSolutions.code_stub == {"python": i18n_build.STUB}
    assert config.Execute.extra_arguments == [ZH_KERNEL]
    write_course(tmp_path, [])  # the English course: no Chinese kernels
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert config.CourseDirectory.course_id == "attention-step-by-step"
    assert config.ClearSolutions.code_stub == {"python": coursebuild.STUB}
    assert "extra_arguments" not in config.Execute
    with pytest.raises(ValueError, match="lang must be one of"):
        write_course(tmp_path, [], lang="fr")


def test_the_chinese_kernel_option_sets_course_lang(tmp_path, monkeypatch):
    """ZH_KERNEL, given to a kernel as nbgrader gives it, makes it speak Chinese
    before the first cell, in a folder not named zh, and leaves no name behind."""
    import nbclient

    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(coursebuild.REPO))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from helpers.i18n import language\nprint(language(), 'os' in dir())"
        )
    ]
    nbclient.NotebookClient(
        nb,
        extra_arguments=[ZH_KERNEL],
        resources={"metadata": {"path": str(tmp_path)}},
        timeout=IMPORT_TIMEOUT,
    ).execute()
    assert nb.cells[0].outputs[0]["text"] == "zh False\n"
    assert nb.cells[0].execution_count == 1


@pytest.fixture(scope="module")
def zh_course(tmp_path_factory):
    """An nbgrader course of the Chinese lessons, every lesson released."""
    from nbgrader.apps import NbGraderAPI

    root = tmp_path_factory.mktemp("nbgrader-zh")
    names = write_course(
        root, timeout=TIMEOUT, import_timeout=IMPORT_TIMEOUT, lang="zh"
    )
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{BIN}{os.pathsep}{path}"  # nbgrader runs alembic
    try:
        api = NbGraderAPI(config=config)
        for name in names:
            result = api.generate_assignment(name)
            assert result["success"], result["log"] + result.get("error", "")
        yield root, names
    finally:
        os.environ["PATH"] = path


@pytest.mark.slow  # as the English release of every lesson (test_nbgrader.py)
@pytest.mark.zh
def test_generate_assignment_equals_the_chinese_student_copy(zh_course):
    root, names = zh_course
    assert names == [f"lesson_{p.name[:2]}" for p in lessons("zh")]
    for path in lessons("zh"):
        released = nbformat.read(
            root / "release" / f"lesson_{path.name[:2]}" / path.name, as_version=4
        )
        student = nbformat.read(i18n_build.ZH_STUDENT / path.name, as_version=4)
        assert len(released.cells) == len(student.cells), path.name
        for i, (a, b) in enumerate(zip(released.cells, student.cells, strict=True)):
            where = f"{path.name} cell {i}"
            assert a.cell_type == b.cell_type, where
            assert a.source == b.source, f"{where}:\n{a.source}\n---\n{b.source}"
            if a.cell_type == "code":
                assert a.outputs == [] and a.execution_count is None, where
        assert released.metadata.get("language") == i18n_build.NB_LANGUAGE


def _submission(released, solutions, wrong):
    """The released lesson answered: every exercise solved, or (wrong) exercise 1
    left as the stub and a wrong shape in exercise 3."""
    nb = nbformat.read(released, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution"):
            continue
        number = int(meta["grade_id"].split("_")[1])
        if wrong and number == 1:
            continue
        cell.source = solutions[number - 1]
        if wrong and meta["grade_id"] in BROKEN:
            cell.source = BROKEN[meta["grade_id"]]
    return nb


@pytest.mark.slow
@pytest.mark.zh
def test_autograde_and_feedback_of_chinese_lesson_01(zh_course, monkeypatch):
    root, _ = zh_course
    released = root / "release" / "lesson_01" / ZH_LESSON_01.name
    solutions = _solution_sources(ZH_LESSON_01)
    for kind in ("solved", "wrong"):
        folder = root / "submitted" / kind / "lesson_01"
        folder.mkdir(parents=True)
        submission = _submission(released, solutions, wrong=kind == "wrong")
        nbformat.write(submission, folder / ZH_LESSON_01.name)
    run_nbgrader(root, "autograde", "lesson_01")
    run_nbgrader(root, "generate_feedback", "lesson_01")

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores = {
            kind: [
                gb.find_grade(f"check_{k}", ZH_LESSON_01.stem, "lesson_01", kind).score
                for k in (1, 2, 3, 4)
            ]
            for kind in ("solved", "wrong")
        }
    assert scores == {"solved": [1, 1, 1, 1], "wrong": [0, 1, 0, 1]}, scores

    def feedback(kind):
        page = root / "feedback" / kind / "lesson_01" / f"{ZH_LESSON_01.stem}.html"
        return _text_of(page.read_text())

    stub = _exercise(nbformat.read(released, as_version=4))
    assert i18n_build.STUB in stub  # nbgrader's own stub: the config's
    wrong = feedback("wrong")
    # the display wraps a long line, inside Chinese words too: compare without spaces
    bare = "".join(wrong.split())
    for checker, source, name in (
        (checks.check_softmax, stub, "my_softmax"),
        (
            checks.check_attention_one_query,
            BROKEN["exercise_3"],
            "my_attention_one_query",
        ),
    ):
        zh = _diagnosis(checker, source, name, "zh", monkeypatch)
        en = _diagnosis(checker, source, name, "en", monkeypatch)
        assert zh != en and CJK.search(zh), (zh, en)
        zh_bare, en_bare = "".join(zh.split()), "".join(en.split())
        assert zh_bare in bare, f"Chinese diagnosis {zh!r} not in the feedback"
        assert en_bare not in bare, f"English diagnosis {en!r} in the feedback"
    assert re.search(r"2(\.0)?\s*/\s*4", wrong)
    solved = feedback("solved")
    assert "Traceback (most recent call last)" not in solved
    assert re.search(r"4(\.0)?\s*/\s*4", solved)
