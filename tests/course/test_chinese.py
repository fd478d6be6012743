"""The Chinese edition cannot fall behind the English one silently.

Every lesson's catalogue (locale/zh_CN/LC_MESSAGES/NN_x.po) must hold exactly
the text the lesson has now, every entry translated and not fuzzy, with its
markup intact and the glossary's terms; every Chinese notebook
(notebooks/zh/NN_x.ipynb) must be what lesson + catalogue build, its code
cells the English ones apart from comments, and its student copy current.
While translations are incomplete these tests FAIL: that is their job (the
Chinese edition is then not ready). The machinery itself (extract, merge,
build, the checks) is tested on temporary copies, each check shown failing.
"""

import re
import shutil

import nbformat
import polib
import pytest

from tools import i18n, i18n_build, i18n_terms, i18n_text

REPO = i18n.REPO
LESSONS = i18n.lessons()
IDS = [p.stem[:2] for p in LESSONS]


def _catalogue(lesson):
    path = i18n.catalogue_path(lesson)
    assert path.exists(), f"{path} is missing: python -m tools.i18n extract"
    return polib.pofile(str(path))


# -- the committed catalogues and Chinese notebooks ------------------------------------


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_catalogue_holds_the_lessons_text_now(lesson, tmp_path):
    """Re-extracting changes nothing: no English text is missing or left over."""
    fresh = i18n.lesson_entries(nbformat.read(lesson, as_version=4), lesson.name)
    want = {(e.msgctxt, e.msgid) for e in fresh}
    have = {(e.msgctxt, e.msgid) for e in _catalogue(lesson) if not e.obsolete}
    assert not want - have, f"not in the catalogue (make extract-zh): {want - have}"
    assert not have - want, f"no longer in the lesson (make extract-zh): {have - want}"


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_catalogue_is_translated_with_markup_and_terms_intact(lesson):
    """No untranslated or fuzzy entry, no broken markup, the glossary's terms."""
    problems = i18n.check_catalogue(i18n.catalogue_path(lesson))
    shown = "\n".join(problems[:15])
    assert not problems, f"{len(problems)} problem(s) (make check-zh):\n{shown}"


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_chinese_notebook_is_what_the_catalogue_builds(lesson):
    problems = i18n_build.stale(lesson)
    assert not problems, "\n".join(problems[:10]) + "\n(make notebooks-zh)"


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_chinese_code_cells_are_the_english_ones_apart_from_comments(lesson):
    path = i18n_build.zh_path(lesson)
    assert path.exists(), f"{path} is missing (make notebooks-zh)"
    en = nbformat.read(lesson, as_version=4)
    zh = nbformat.read(path, as_version=4)
    assert [c.get("id") for c in zh.cells] == [c.get("id") for c in en.cells]
    for ours, theirs in zip(zh.cells, en.cells, strict=True):
        assert ours.cell_type == theirs.cell_type, ours.get("id")
        if ours.cell_type == "code":
            assert i18n_text.without_comments(ours.source) == (
                i18n_text.without_comments(theirs.source)
            ), f"cell {ours.get('id')}: code differs from the English lesson"


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_chinese_student_copy_is_current(lesson):
    zh_path = i18n_build.zh_path(lesson)
    copy_path = i18n_build.ZH_STUDENT / lesson.name
    assert zh_path.exists() and copy_path.exists(), "make notebooks-zh"
    zh = nbformat.read(zh_path, as_version=4)
    expected = i18n_build.student_copy(zh, nbformat.read(lesson, as_version=4))
    assert nbformat.read(copy_path, as_version=4) == expected, "make student-zh"


# -- terminology -----------------------------------------------------------------------


def _glossary():
    """{English column: Chinese column} of notebooks/glossary.md's table."""
    rows = {}
    for line in (REPO / "notebooks" / "glossary.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("English", "---"):
            rows[cells[0]] = cells[1]
    return rows


def test_every_required_term_is_the_glossarys():
    glossary = _glossary()
    assert len(glossary) > 40
    for term in i18n_terms.TERMS:
        rows = [zh for en, zh in glossary.items() if en.startswith(term.english)]
        word = rf"\b{re.escape(term.english)}\b"
        rows = rows or [zh for en, zh in glossary.items() if re.search(word, en)]
        assert rows, f"{term.english!r} is not in notebooks/glossary.md"
        assert any(term.chinese.lower() in zh.lower() for zh in rows), (
            f"{term.english}: {term.chinese} is not the glossary's {rows}"
        )
        for variant in term.forbidden:
            assert not any(re.search(variant, zh) for zh in rows), variant


def test_terms_check_flags_a_drifting_translation():
    problems = i18n_terms.term_problems
    assert problems("Each query has its own $Z$.", "每个查询都有自己的 $Z$。") == []
    assert problems("Each query has its own $Z$.", "每个询问都有自己的 $Z$。")
    assert problems("the causal mask", "因果遮罩") != []
    assert problems("the key idea", "关键的想法") == []  # "key" is also a word
    assert problems("keys and values", "钥匙和值") != []
    # code and maths are not prose: `query` in backticks needs no 查询
    assert problems("Call `query(x)`.", "调用 `query(x)`。") == []


# -- the checks of one translation -----------------------------------------------------


def test_markup_check_accepts_a_faithful_translation():
    msgid = (
        "The score of key $k_2$ is `1.5` ([lesson 04](04_why_sqrt_dk.ipynb)), "
        "<kbd>Shift</kbd> and **5** keys; see {name}."
    )
    msgstr = (
        "键 $k_2$ 的分数是 `1.5`（[第 04 课](04_why_sqrt_dk.ipynb)），"
        "<kbd>Shift</kbd>，**5** 个键；见 {name}。"
    )
    assert i18n_text.markup_problems(msgid, msgstr) == []


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        (
            "键 $k_3$ 的分数是 `1.5`（[第 04 课](04_why_sqrt_dk.ipynb)）5 {name}",
            "maths",
        ),
        ("键 $k_2$ 的分数是 `2.5`（[第 04 课](04_why_sqrt_dk.ipynb)）5 {name}", "code"),
        (
            "键 $k_2$ 的分数是 `1.5`（[第 04 课](04_masks.ipynb)）5 {name}",
            "link target",
        ),
        (
            "键 $k_2$ 的分数是 `1.5`（[第 04 课](04_why_sqrt_dk.ipynb)）五 {name}",
            "number",
        ),
        (
            "键 $k_2$ 的分数是 `1.5`（[第 04 课](04_why_sqrt_dk.ipynb)）5 {名字}",
            "placeholder",
        ),
        (
            "键 $k_2$ 的分数是 `1.5（[第 04 课](04_why_sqrt_dk.ipynb)）5 {name}",
            "backticks",
        ),
        ("键 $k_2 的分数是 `1.5`（[第 04 课](04_why_sqrt_dk.ipynb)）5 {name}", "maths"),
    ],
)
def test_markup_check_catches(broken, reason):
    msgid = "The score of $k_2$ is `1.5` ([lesson 04](04_why_sqrt_dk.ipynb)), 5 {name}"
    problems = i18n_text.markup_problems(msgid, broken)
    assert any(reason in p for p in problems), problems


def test_markup_check_keeps_headings_lists_and_one_line_comments():
    check = i18n_text.markup_problems
    assert check("## Exercises", "练习")  # the heading's ## lost
    assert check("- one\n- two", "- 一和二")  # a list item lost
    assert check("a comment", "一行\n两行", "trailing")
    assert check("a comment", "一行\n两行", "block") == []


# -- extraction: blocks, comments, merge -----------------------------------------------


def test_every_lesson_splits_and_joins_back():
    for lesson in LESSONS:
        for cell in nbformat.read(lesson, as_version=4).cells:
            same = (
                i18n_text.translate_markdown
                if cell.cell_type == "markdown"
                else (i18n_text.translate_code)
            )
            if cell.cell_type in ("markdown", "code"):
                assert same(cell.source, lambda text: text) == cell.source, cell.id


def test_blocks_keep_lists_fences_tables_and_display_maths_whole():
    source = (
        "Intro **bold** text\nover two lines.\n\n"
        "- item one\n\n- item two\n  continued\n\n"
        "$$\nx = 1\n\ny = 2\n$$\n\n"
        "```python\nprint(1)\n\nprint(2)\n```\n\n"
        "| term | meaning |\n|---|---|\n| query | 查询 |\n\n"
        "Last."
    )
    blocks = [t for t, is_block in i18n_text.split_markdown(source) if is_block]
    assert blocks[0] == "Intro **bold** text\nover two lines."
    assert blocks[1] == "- item one\n\n- item two\n  continued"
    assert blocks[2] == "$$\nx = 1\n\ny = 2\n$$"
    assert blocks[3].startswith("```python") and blocks[3].endswith("```")
    assert blocks[4].count("\n") == 2 and blocks[5] == "Last."
    # display maths and code alone have nothing to translate
    assert i18n_text.markdown_blocks(source) == [
        blocks[0],
        blocks[1],
        blocks[4],
        "Last.",
    ]


def test_comments_are_extracted_and_replaced_not_code_or_strings():
    source = (
        "x = 1  # the question\n"
        "s = '# not a comment'\n"
        "# BEGIN SOLUTION\n"
        "# Two lines of\n"
        "# explanation here\n"
        "y = x  # (d_k,)\n"
        "# END SOLUTION\n"
        "%timeit x  # magics are read as blank lines\n"
    )
    assert i18n_text.comment_texts(source) == [
        ("the question", True),
        ("Two lines of\nexplanation here", False),
    ]
    zh = i18n_text.translate_code(
        source,
        {"the question": "问题", "Two lines of\nexplanation here": "一行说明"}.get,
    )
    assert "x = 1  # 问题\n" in zh and "\n# 一行说明\ny = x  # (d_k,)\n" in zh
    assert "'# not a comment'" in zh and "# BEGIN SOLUTION" in zh
    assert i18n_text.without_comments(zh) == i18n_text.without_comments(source)
    assert i18n_text.without_comments(zh.replace("y = x", "y = 2 * x")) != (
        i18n_text.without_comments(source)
    )


def _translate_all(po_path):
    po = polib.pofile(str(po_path))
    for entry in po:
        entry.msgstr, entry.flags, entry.previous_msgid = "译" + entry.msgid, [], None
    po.save()


def test_reextraction_keeps_translations_and_marks_changes_fuzzy(tmp_path):
    lesson = tmp_path / "01_one_query.ipynb"
    shutil.copy(LESSONS[1], lesson)
    po_path, _ = i18n.extract_one(lesson, tmp_path)
    _translate_all(po_path)
    nb = nbformat.read(lesson, as_version=4)
    cell = next(c for c in nb.cells if "begins with a formula" in c.source)
    removed = next(c for c in nb.cells if c.cell_type == "markdown" and c is not cell)
    cell.source = cell.source.replace("begins with a formula", "opens with a formula")
    nb.cells.remove(removed)
    nbformat.write(nb, lesson)
    _, counts = i18n.extract_one(lesson, tmp_path)
    po = polib.pofile(str(po_path))
    fuzzy = [e for e in po if "fuzzy" in e.flags]
    assert len(fuzzy) == 1 and counts["fuzzy"] == 1
    (entry,) = fuzzy
    assert "opens with a formula" in entry.msgid
    assert "begins with a formula" in entry.previous_msgid
    assert entry.msgstr == "译" + entry.previous_msgid  # the old one, to revise
    assert entry.msgctxt == cell.id
    assert not any(e.msgctxt == removed.id for e in po)  # obsolete: dropped
    assert all(e.msgstr == "译" + e.msgid for e in po if e is not entry)
    assert po.metadata["Language"] == "zh_CN"
    assert po.metadata["Content-Type"] == "text/plain; charset=UTF-8"
    assert "plural=" in po.metadata["Plural-Forms"]
    assert f"#: 01_one_query.ipynb:{cell.id}" in po_path.read_text()
    assert i18n.check_catalogue(po_path)  # the fuzzy entry is a problem


# -- build: strict, and a changed English sentence is caught ---------------------------


def _built(tmp_path):
    """A translated copy of lesson 01, built (and marked run) in tmp_path/zh."""
    lesson = tmp_path / "01_one_query.ipynb"
    shutil.copy(LESSONS[1], lesson)
    po_path, _ = i18n.extract_one(lesson, tmp_path)
    zh_dir = tmp_path / "zh"
    with pytest.raises(i18n_build.Untranslated, match="115|entries not translated"):
        i18n_build.build_lesson(lesson, locale=tmp_path, dest=zh_dir)
    _translate_all(po_path)
    out = i18n_build.build_lesson(lesson, locale=tmp_path, dest=zh_dir)
    nb = i18n_build.coursebuild.add_slide_metadata(nbformat.read(out, as_version=4))
    for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = count + 1  # as the run leaves it
    nbformat.write(nb, out)
    return lesson, po_path, zh_dir


def test_build_translates_text_and_comments_only(tmp_path):
    lesson, _, zh_dir = _built(tmp_path)
    en = nbformat.read(lesson, as_version=4)
    zh = nbformat.read(zh_dir / lesson.name, as_version=4)
    assert zh.metadata["language"] == "zh-CN"
    title = zh.cells[0].source
    assert title.startswith("译# Lesson 01") and "\n\n译*One question" in title
    assert any("# 译(d_k,)  the question" in c.source for c in zh.cells)
    for ours, theirs in zip(zh.cells, en.cells, strict=True):
        assert ours.get("id") == theirs.get("id")
        if ours.cell_type == "code":
            assert i18n_text.without_comments(ours.source) == (
                i18n_text.without_comments(theirs.source)
            )
    assert i18n_build.stale(lesson, zh_dir, tmp_path) == []


def test_a_changed_english_sentence_makes_the_chinese_edition_fail(tmp_path):
    lesson, po_path, zh_dir = _built(tmp_path)
    assert i18n_build.stale(lesson, zh_dir, tmp_path) == []
    assert not [p for p in i18n.check_catalogue(po_path) if "untranslated" in p]
    nb = nbformat.read(lesson, as_version=4)
    cell = next(c for c in nb.cells if "begins with a formula" in c.source)
    cell.source = cell.source.replace("begins with a formula", "opens with a formula")
    nbformat.write(nb, lesson)
    # the stored Chinese notebook is no longer what the build gives
    stale = i18n_build.stale(lesson, zh_dir, tmp_path)
    assert stale == [f"01_one_query.ipynb: cell {cell.id} differs from the build"]
    # and the strict build refuses: the sentence has no translation
    with pytest.raises(i18n_build.Untranslated, match="not in the catalogue"):
        i18n_build.build_lesson(lesson, locale=tmp_path, dest=zh_dir)
    # re-extracted, the entry is fuzzy: the catalogue check fails until revised
    i18n.extract_one(lesson, tmp_path)
    assert any("fuzzy" in p for p in i18n.check_catalogue(po_path))


def test_links_without_a_chinese_copy_point_at_the_english_file():
    source = (
        "See [the glossary](glossary.md), [lesson 02](02_matrix_form.ipynb#top), "
        "[the README](../README.md), [web](https://example.org) and "
        '<img src="figures/x.png">.'
    )
    zh = i18n_build.relink(source)
    assert "(../glossary.md)" in zh and "(02_matrix_form.ipynb#top)" in zh
    assert "(../../README.zh-CN.md)" in zh and "(https://example.org)" in zh
    assert 'src="../figures/x.png"' in zh


def test_line_breaks_inside_chinese_prose_are_joined():
    join = i18n_build.join_cjk_lines
    assert (
        join("后面的单元格会用到\n前面定义的名字。")
        == "后面的单元格会用到前面定义的名字。"
    )
    assert join("- 第一项，\n  接着写\n- 第二项") == "- 第一项，接着写\n- 第二项"
    assert join("调用 `f`\n然后") == "调用 `f`\n然后"  # a space beside code is wanted
    assert join("```\n中\n文\n```") == "```\n中\n文\n```"


def test_refresh_puts_new_text_in_without_a_run_but_not_new_code(tmp_path):
    lesson, po_path, zh_dir = _built(tmp_path)
    nb = nbformat.read(lesson, as_version=4)
    cell = next(c for c in nb.cells if "begins with a formula" in c.source)
    cell.source = cell.source.replace("begins with a formula", "opens with a formula")
    nbformat.write(nb, lesson)
    i18n.extract_one(lesson, tmp_path)
    _translate_all(po_path)  # the translator revises the fuzzy entry
    assert i18n_build.stale(lesson, zh_dir, tmp_path)
    assert i18n_build.refresh(lesson, tmp_path, zh_dir)
    assert i18n_build.stale(lesson, zh_dir, tmp_path) == []
    code = next(c for c in nb.cells if c.cell_type == "code" and "m, d_k" in c.source)
    code.source = code.source.replace("m, d_k = K.shape", "m, d_k = K.shape  # same")
    nbformat.write(nb, lesson)
    i18n.extract_one(lesson, tmp_path)
    _translate_all(po_path)
    assert i18n_build.refresh(lesson, tmp_path, zh_dir)  # a comment is text
    code.source += "\nprint(m)"
    nbformat.write(nb, lesson)
    assert not i18n_build.refresh(lesson, tmp_path, zh_dir)  # new code: build, run
