"""Stated lesson times follow from the content (tools/lesson_time.py, issue 11.16)."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tools import lesson_time

LESSONS = lesson_time.lesson_paths()


def _notebook(*cells):
    return new_notebook(cells=list(cells))


def test_reading_time_counts_words_at_the_stated_pace():
    words = " ".join(["word"] * (2 * lesson_time.READING_WPM))
    est = lesson_time.estimate(_notebook(new_markdown_cell(words)))
    assert est["words"] == 2 * lesson_time.READING_WPM
    assert est["reading"] == pytest.approx(2.0)
    assert est["code"] == 0 and est["exercises"] == 0


def test_code_time_per_cell_per_line_and_per_explorer():
    plain = new_code_cell("x = 1\n\ny = 2\nprint(x + y)")  # 3 non-blank lines
    explorer = new_code_cell("widgets.AttentionExplorer(seq_len=16)")
    est = lesson_time.estimate(_notebook(plain, explorer))
    expected = (
        2 * lesson_time.CODE_CELL_MIN
        + 4 * lesson_time.CODE_LINE_SEC / 60
        + lesson_time.EXPLORER_MIN
    )
    assert est["code"] == pytest.approx(expected)


def test_exercise_minutes_replace_the_exercise_cells():
    long_statement = " ".join(["word"] * 1000)  # would be 8 minutes of reading
    nb = _notebook(
        new_markdown_cell("# Lesson\n\nTime: about 5 minutes."),
        new_markdown_cell(
            f"### Exercise 1 ★☆☆ (about 7 min): a title\n\n{long_statement}"
        ),
        new_code_cell("def f():\n    pass", metadata={"tags": ["solution"]}),
        new_code_cell("check(f)", metadata={"tags": ["check"]}),
        new_markdown_cell("### Exercise 2 ★★☆ — another (12 min)"),
        new_markdown_cell("## Next\n\none two three"),
    )
    est = lesson_time.estimate(nb)
    assert est["exercises"] == 7 + 12
    assert est["code"] == 0, "solution and check cells are inside the exercise minutes"
    # "# Lesson" (2 words), "## Next one two three" (5); the Time sentence is not read
    assert est["words"] == 2 + 5
    assert est["total"] == 20 and est["lesson"] == 1


def test_total_is_rounded_up_and_split_into_lesson_and_exercises():
    nb = _notebook(
        new_markdown_cell(" ".join(["w"] * lesson_time.READING_WPM)),  # 1 minute
        new_markdown_cell("### Exercise 1 (3 min)"),
    )
    est = lesson_time.estimate(nb)
    assert est["total"] == lesson_time.ROUND_TO  # 4 minutes, rounded up
    assert est["lesson"] + est["exercises"] == est["total"]
    assert lesson_time.stated_line(est) == (
        "Time: about 5 minutes (2 for the lesson, 3 for the exercises)."
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "Time: about 35 minutes.",
        "Time: about 30 minutes with the exercises.",
        "Time: about 40 minutes (25 for the lesson, 15 for the exercises).",
    ],
)
def test_every_old_form_of_the_stated_time_is_found(sentence):
    nb = _notebook(new_markdown_cell(f"# L\n\n{sentence}\n\nMore text."))
    minutes, found = lesson_time.stated_in_notebook(nb)
    assert found == sentence and minutes == int(sentence.split()[2])


def test_write_updates_the_notebook_and_the_readme(tmp_path):
    path = tmp_path / "07_demo.ipynb"
    nb = _notebook(
        new_markdown_cell("# Demo\n\nTime: about 99 minutes. It follows lesson 06."),
        new_markdown_cell("### Exercise 1 (10 min)"),
    )
    nbformat.write(nb, path)
    est = lesson_time.estimate(nbformat.read(path, as_version=4))
    assert lesson_time.write_notebook(path, est)
    source = nbformat.read(path, as_version=4).cells[0].source
    assert lesson_time.stated_line(est) in source and source.endswith(
        "It follows lesson 06."
    )
    assert not lesson_time.write_notebook(path, est), "a second write changes nothing"

    readme = "| lesson | what | time |\n|---|---|---|\n"
    readme += "| [07_demo](07_demo.ipynb) | x | 99 min |\n"
    written = lesson_time.write_readme(readme, {"07_demo": est})
    assert lesson_time.stated_in_readme(written) == {"07_demo": est["total"]}


def test_a_wrong_stated_time_is_reported(tmp_path):
    path = tmp_path / "07_demo.ipynb"
    nbformat.write(_notebook(new_markdown_cell("# D\n\nTime: about 99 minutes.")), path)
    readme = tmp_path / "README.md"
    readme.write_text("| [07_demo](07_demo.ipynb) | x | 99 min |\n", encoding="utf-8")
    found = lesson_time.problems([path], readme=readme)
    assert len(found) == 2 and "07_demo" in found[0] and "README" in found[1]


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_stated_time_matches_the_content(path):
    """The lesson and notebooks/README.md state the time its content needs.

    Fix with `python -m tools.lesson_time --write` after changing a lesson.
    """
    assert lesson_time.problems([path]) == []


def test_an_exercise_heading_under_the_exercises_heading_counts():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(
            "## Exercises\n\n### Exercise 1 ★☆☆ (5 min)\n\nDo it."
        ),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("### Exercise 2 ★★☆ (15 min)"),
    ]
    assert lesson_time.estimate(nb)["exercises"] == 20
