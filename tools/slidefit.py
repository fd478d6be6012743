"""Lay a lesson out for a 1280x800 screen before it becomes a reveal.js deck.

The lessons are written for reading; a deck is shown from the back of a room.
At export time (the lessons themselves are never changed) this module decides
what each slide shows, cell type by cell type:

- a code cell longer than ``CODE_LINES`` lines is split at its top-level blank
  lines into parts, each on its own sub-slide ("continued");
- a markdown cell too tall for one slide is split between paragraphs (never
  inside a list, a ``$$`` block, a code fence or a ``<details>``);
- a code cell whose source and output do not fit together shows its output on
  the next sub-slide, the code hidden there (tag ``course-output-only``);
- long text output is cut to ``TEXT_LINES`` lines, with a line saying how many
  more the notebook shows;
- a cell that would push the current slide past ``BUDGET`` pixels starts a new
  sub-slide: one idea per slide, and no slide scrolls.

Heights are estimated from the CSS the deck template sets (fonts, line
heights, the image height cap); the deck's fit script is the last guard and the
browser test measures every slide.
"""

import base64
import copy
import math
import re
import struct

WIDTH, HEIGHT = 1280, 800
BUDGET = 680  # px of content per slide (the rest: margins and reveal controls)
CODE_LINES = 18  # a longer code cell is split into parts
TEXT_LINES = 12  # a longer text output is cut
MD_CHARS = 92  # characters per markdown line at 22px
CODE_LINE_PX = 23
TEXT_LINE_PX = 20
MD_LINE_PX = 31
IMAGE_MAX_PX = 460  # .reveal .jp-OutputArea img {max-height} in the template
OUTPUT_ONLY = "course-output-only"  # tag: the input is hidden on this slide
NBVAL = re.compile(r"^\s*#\s*NBVAL_\w+")


def strip_test_markers(source):
    """Drop an ``# NBVAL_...`` line and the comment lines right after it.

    Those comments give reviewers the reason an output is not compared; they
    stay in the notebook, where reviewers read them, and never reach a reader.
    """
    lines = source.splitlines()
    out, dropping = [], False
    for line in lines:
        if NBVAL.match(line):
            dropping = True
            continue
        if dropping and line.lstrip().startswith("#"):
            continue
        dropping = False
        out.append(line)
    return "\n".join(out)


def _png_size(b64):
    raw = base64.b64decode(b64[:64] + "=" * (-len(b64[:64]) % 4))
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        return 800, 400
    return struct.unpack(">II", raw[16:24])


def output_height(output):
    """Estimated pixels one output takes on a slide."""
    if output.output_type == "stream":
        return 12 + TEXT_LINE_PX * len(output.text.splitlines())
    data = output.get("data", {})
    if "image/png" in data:
        width, height = _png_size(data["image/png"])
        scale = min(1.0, (WIDTH - 80) / max(width, 1))
        return 16 + min(IMAGE_MAX_PX, height * scale)
    if "text/html" in data:
        html = data["text/html"]
        rows = html.count("<tr") or html.count("<br") + html.count("<p") + 1
        return 16 + 30 * rows + (460 if "<img" in html else 0)
    if "text/plain" in data:
        return 12 + TEXT_LINE_PX * len(data["text/plain"].splitlines())
    return 0


def code_height(source):
    return 24 + CODE_LINE_PX * max(1, len(source.splitlines()))


def markdown_height(source):
    """Estimated pixels of a markdown cell: wrapped lines, headings, math."""
    height, in_math = 0, False
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("$$"):
            in_math = not in_math if text.count("$$") == 1 else in_math
            height += 48
            continue
        if in_math:
            height += 30
            continue
        if not text:
            height += 12
        elif text.startswith("# "):
            height += 64
        elif text.startswith("## "):
            height += 52
        elif text.startswith("#"):
            height += 42
        elif text.startswith("|"):
            height += 36
        else:
            plain = re.sub(r"\$[^$]*\$", "xxxxxx", text)
            plain = re.sub(r"\]\([^)]*\)", "]", plain)
            height += MD_LINE_PX * math.ceil(len(plain) / MD_CHARS)
    return height + 16


def _blocks(source):
    """Markdown split at blank lines that are safe to cut at."""
    blocks, current, depth, fence, math_open = [], [], 0, False, False
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("```"):
            fence = not fence
        if text.count("$$") % 2:
            math_open = not math_open
        depth += line.count("<details") - line.count("</details>")
        safe = not (fence or math_open or depth > 0)
        if not text and safe and current:
            blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    # a list item or indented line continues the block before it
    merged = []
    for block in blocks:
        if merged and re.match(r"\s*([-*+]|\d+\.)\s|\s{2,}", block):
            merged[-1] += "\n\n" + block
        else:
            merged.append(block)
    return merged


def split_markdown(source, budget=BUDGET):
    """Parts of a markdown cell, each estimated to fit ``budget``."""
    parts, current = [], []
    for block in _blocks(source):
        trial = "\n\n".join([*current, block])
        if current and markdown_height(trial) > budget:
            parts.append("\n\n".join(current))
            current = [block]
        else:
            current.append(block)
    if current:
        parts.append("\n\n".join(current))
    return parts


def split_code(source, max_lines=CODE_LINES):
    """Parts of a code cell at top-level blank lines, each <= max_lines if possible."""
    lines = source.splitlines()
    if len(lines) <= max_lines:
        return [source]
    parts, current = [], []
    for index, line in enumerate(lines):
        nxt = lines[index + 1] if index + 1 < len(lines) else ""
        current.append(line)
        boundary = not line.strip() and nxt[:1] not in (" ", "\t", ")", "]", "}")
        if boundary and len(current) >= max_lines // 2:
            parts.append(current)
            current = []
        elif len(current) >= max_lines + 6:  # no boundary in sight: cut here
            parts.append(current)
            current = []
    if current:
        if parts and len(current) + len(parts[-1]) <= max_lines:
            parts[-1] += current
        else:
            parts.append(current)
    return ["\n".join(p).strip("\n") for p in parts if "".join(p).strip()]


def cut_text_outputs(cell, max_lines=TEXT_LINES):
    """Cut long stream and text/plain outputs to ``max_lines`` lines."""
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            lines = output.text.splitlines()
            if len(lines) > max_lines:
                more = len(lines) - max_lines
                output.text = "\n".join(
                    [*lines[:max_lines], f"... ({more} more lines in the notebook)"]
                )
        elif "text/plain" in output.get("data", {}) and len(output["data"]) == 1:
            lines = output["data"]["text/plain"].splitlines()
            if len(lines) > max_lines:
                more = len(lines) - max_lines
                output["data"]["text/plain"] = "\n".join(
                    [*lines[:max_lines], f"... ({more} more lines in the notebook)"]
                )


def _meta(cell, slide_type, extra_tags=()):
    cell.metadata["slideshow"] = {"slide_type": slide_type}
    if extra_tags:
        cell.metadata["tags"] = [*cell.metadata.get("tags", []), *extra_tags]
    return cell


def layout(nb):
    """A copy of ``nb`` whose cells and slide types fit 1280x800 slides.

    Expects every cell to carry slideshow metadata (coursebuild.slide_type);
    skipped cells are dropped.
    """
    nb = copy.deepcopy(nb)
    cells, used = [], 0

    def place(cell, height, slide_type):
        nonlocal used
        if slide_type in ("slide", "subslide"):
            used = 0
        elif used and used + height > BUDGET:
            slide_type, used = "subslide", 0
        used += height
        cells.append(_meta(cell, slide_type))

    for cell in nb.cells:
        slide_type = cell.metadata.get("slideshow", {}).get("slide_type", "-")
        if slide_type == "skip":
            continue
        if cell.cell_type == "markdown":
            for i, part in enumerate(split_markdown(cell.source)):
                new = copy.deepcopy(cell)  # its id: the loop below renames repeats
                new.source = part
                place(new, markdown_height(part), slide_type if i == 0 else "subslide")
            continue
        if cell.cell_type != "code":
            place(cell, 60, slide_type)
            continue
        cell.source = strip_test_markers(cell.source)
        cut_text_outputs(cell)
        outputs = cell.get("outputs", [])
        out_height = sum(output_height(o) for o in outputs)
        parts = split_code(cell.source)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            new = copy.deepcopy(cell)
            new.source = part
            if i:
                new.source = "# (continued)\n" + new.source
            if not last:
                new.source += "\n# ... (continued on the next slide)"
            new.outputs = outputs if last else []
            if not last:
                new.execution_count = None
            height = code_height(new.source)
            together = height + (out_height if last else 0)
            if last and outputs and together > BUDGET:
                # code on this slide, its output on the next, code hidden there
                new.outputs = []
                place(new, height, slide_type if i == 0 else "subslide")
                shown = copy.deepcopy(cell)
                shown.outputs = outputs
                place(_meta(shown, "-", [OUTPUT_ONLY]), out_height, "subslide")
            else:
                place(new, together, slide_type if i == 0 else "subslide")
    seen = set()
    for index, cell in enumerate(cells):  # split parts need their own ids
        if cell.get("id") in seen or "id" not in cell:
            cell["id"] = f"part-{index}"
        seen.add(cell["id"])
    nb.cells = cells
    return nb
