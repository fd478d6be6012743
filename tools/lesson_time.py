"""Estimate each lesson's time from its content, and check or write the stated times.

    python -m tools.lesson_time            # print the table; exit 1 if a time is off
    python -m tools.lesson_time --write    # update the lessons and notebooks/README.md
    python tools/lesson_time.py notebooks/04_why_sqrt_dk.ipynb   # some lessons only

The estimate is the sum of three parts:

- reading: the words of the lesson's markdown (formulas included, token by token)
  at READING_WPM words per minute, a pace for technical prose with formulas;
- code: CODE_CELL_MIN per code cell (read it, run it, look at what it prints or
  draws) plus CODE_LINE_SEC per source line, and EXPLORER_MIN more for a cell
  that builds a slider explorer;
- exercises: the minutes each exercise states in its heading, e.g.
  "### Exercise 2 ★★☆ (10 min)". Those minutes cover the exercise's own cells
  (statement, solution, check), so they are not counted again.

The total is rounded up to a multiple of ROUND_TO minutes. A lesson states it in
its first cell as "Time: about N minutes (L for the lesson, E for the
exercises)." and notebooks/README.md repeats N in its table.
"""

import argparse
import math
import re
import sys
from pathlib import Path

import nbformat

READING_WPM = 120  # words per minute for technical prose (100-150 is typical)
CODE_CELL_MIN = 0.75  # per code cell: read, run, look at the output
CODE_LINE_SEC = 3.0  # per line of code read
EXPLORER_MIN = 3.0  # dragging the sliders of an explorer
ROUND_TO = 5  # minutes

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
README = NOTEBOOKS / "README.md"

# "(10 min)", "(about 15 min)", "15 min" in an exercise heading
EXERCISE_MINUTES = re.compile(r"(\d+)\s*min\b")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
# The stated time, in any of the forms the lessons have used:
# "Time: about 35 minutes.", "Time: about 30 minutes with the exercises.",
# "Time: about 40 minutes (25 for the lesson, 15 for the exercises)."
STATED = re.compile(
    r"Time: about (\d+) minutes(?: \([^)]*\)| with the exercises)?\.", re.MULTILINE
)
README_ROW = re.compile(r"^(\| \[(\d\d_\w+)\]\(\2\.ipynb\) \|.*\| )(\d+) min \|$")


def lesson_paths(paths=None):
    """The lessons to look at: the given paths, or every notebooks/NN_*.ipynb."""
    if paths:
        return [Path(p) for p in paths]
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _is_heading(cell):
    return cell.cell_type == "markdown" and bool(HEADING.match(cell.source))


def _exercise_minutes(cell):
    """Minutes the exercise headings of a cell state; None for other cells.

    A cell may open with "## Exercises" and hold the first exercise's own
    heading below it, so every heading line of the cell is read.
    """
    if not _is_heading(cell):
        return None
    headings = [
        line
        for line in cell.source.splitlines()
        if line.startswith("#") and "exercise" in line.lower()
    ]
    if not headings:
        return None
    found = [EXERCISE_MINUTES.search(line) for line in headings]
    minutes = [int(match.group(1)) for match in found if match]
    return sum(minutes) if minutes else None


def _words(markdown):
    """Whitespace-separated tokens of a markdown cell, without HTML tags."""
    text = STATED.sub("", markdown)
    text = re.sub(r"<[^>]+>", " ", text)
    return len(text.split())


def _code_minutes(cell):
    lines = [line for line in cell.source.splitlines() if line.strip()]
    minutes = CODE_CELL_MIN + CODE_LINE_SEC * len(lines) / 60
    if "Explorer(" in cell.source:
        minutes += EXPLORER_MIN
    return minutes


def estimate(nb):
    """Minutes of a notebook: dict with reading, code, exercises, lesson and total.

    ``lesson`` and ``total`` are whole minutes, ``total`` a multiple of ROUND_TO
    and ``lesson = total - exercises``; reading and code are unrounded.
    """
    words, code, exercises = 0, 0.0, 0
    in_exercise = False
    for cell in nb.cells:
        minutes = _exercise_minutes(cell)
        if minutes is not None:
            in_exercise = True
            exercises += minutes
            continue
        if _is_heading(cell):
            in_exercise = False  # the next section ends the exercise
        tags = cell.metadata.get("tags", [])
        if in_exercise or "solution" in tags or "check" in tags:
            continue
        if cell.cell_type == "markdown":
            words += _words(cell.source)
        elif cell.cell_type == "code":
            code += _code_minutes(cell)
    reading = words / READING_WPM
    total = ROUND_TO * math.ceil((reading + code + exercises) / ROUND_TO)
    return {
        "words": words,
        "reading": reading,
        "code": code,
        "exercises": exercises,
        "lesson": total - exercises,
        "total": total,
    }


def stated_line(est):
    """The sentence a lesson states its time with."""
    if est["exercises"]:
        return (
            f"Time: about {est['total']} minutes ({est['lesson']} for the lesson, "
            f"{est['exercises']} for the exercises)."
        )
    return f"Time: about {est['total']} minutes."


def stated_in_notebook(nb):
    """(minutes, sentence) of the first "Time: about N minutes" in the notebook."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = STATED.search(cell.source)
            if found:
                return int(found.group(1)), found.group(0)
    return None, None


def stated_in_readme(text):
    """{lesson stem: minutes} from the table of notebooks/README.md."""
    return {
        row.group(2): int(row.group(3))
        for row in map(README_ROW.match, text.splitlines())
        if row
    }


def write_notebook(path, est):
    """Put the estimate into the lesson's "Time:" sentence; True if it changed."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and STATED.search(cell.source):
            new = STATED.sub(stated_line(est), cell.source, count=1)
            if new == cell.source:
                return False
            cell.source = new
            nbformat.write(nb, path)
            return True
    raise ValueError(f"{path}: no 'Time: about N minutes.' sentence to update")


def write_readme(text, estimates):
    """README text with the time column set from {stem: estimate}."""
    lines = []
    for line in text.splitlines():
        row = README_ROW.match(line)
        if row and row.group(2) in estimates:
            line = f"{row.group(1)}{estimates[row.group(2)]['total']} min |"
        lines.append(line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def problems(paths=None, readme=README):
    """Every lesson whose stated time differs from its estimate, as messages."""
    found = []
    readme_times = stated_in_readme(readme.read_text(encoding="utf-8"))
    for path in lesson_paths(paths):
        est = estimate(nbformat.read(path, as_version=4))
        minutes, sentence = stated_in_notebook(nbformat.read(path, as_version=4))
        if sentence != stated_line(est):
            found.append(
                f"{path.name}: states {sentence!r}, content says {stated_line(est)!r}"
            )
        if readme_times.get(path.stem) != est["total"]:
            found.append(
                f"README.md: {path.stem} is {readme_times.get(path.stem)} min, "
                f"content says {est['total']} min"
            )
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="lessons (default: all)")
    parser.add_argument("--write", action="store_true", help="update the stated times")
    args = parser.parse_args(argv)
    estimates = {}
    header = ("lesson", "words", "read", "code", "ex", "total")
    print("{:28s} {:>6s} {:>5s} {:>5s} {:>4s} {:>6s}".format(*header))
    for path in lesson_paths(args.paths):
        est = estimate(nbformat.read(path, as_version=4))
        estimates[path.stem] = est
        print(
            f"{path.stem:28s} {est['words']:6d} {est['reading']:5.1f}"
            f" {est['code']:5.1f} {est['exercises']:4d} {est['total']:6d}"
        )
        if args.write and write_notebook(path, est):
            print(f"  updated {path}")
    if args.write:
        text = README.read_text(encoding="utf-8")
        new = write_readme(text, estimates)
        if new != text:
            README.write_text(new, encoding="utf-8")
            print(f"  updated {README}")
        return 0
    found = problems(args.paths)
    for message in found:
        print(message)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
