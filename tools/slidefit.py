"""How big things are on a 1280x800 slide, before the deck exists.

The deck template (tools/templates/course_reveal) sets the sizes below; these
estimates let tools/slideplan.py decide what fits on one slide: body text 28 px
and code 22 px as written, 26.9 px and 21.1 px as rendered at 1280x800 (reveal.js
scales the slide by 0.96 for its margin), above the course's floors of 24 px
and 20 px. The deck's fit script shrinks only pictures, and the browser test
measures every slide.
"""

import base64
import math
import re
import struct

WIDTH, HEIGHT = 1280, 800
BUDGET = 730  # px of content per slide (the rest: padding and reveal's controls)
TEXT_PX, CODE_PX = 28, 22  # the template's body and code sizes (CSS px)
MD_LINE_PX = 38  # 28 px at line-height 1.35
MD_CHARS = 78  # characters of prose a 1240 px line holds at 28 px, with margin
CODE_LINE_PX = 28.6  # 22 px at line-height 1.3
CODE_CHARS = 92  # monospace characters a code line holds at 22 px
OUTPUT_LINES = 8  # a longer text output is cut on the slide
IMAGE_MAX_PX = 560  # the template's cap on a picture's height
IMAGE_MIN_PX = 260  # the fit script shrinks a picture no further
OUTPUT_ONLY = "course-output-only"  # tag: the input is hidden on this slide
NBVAL = re.compile(r"^\s*#\s*NBVAL_\w+")


def strip_test_markers(source):
    """Drop an ``# NBVAL_...`` line and the comment lines right after it.

    Those comments give reviewers the reason an output is not compared; they
    stay in the notebook, where reviewers read them, and never reach a reader.
    """
    lines = source.splitlines()
    if not any(NBVAL.match(line) for line in lines):
        return source  # unchanged, to the byte (a last newline kept)
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


def _wrapped(text, chars):
    return sum(max(1, math.ceil(len(line) / chars)) for line in text.splitlines())


def image_height(b64):
    width, height = _png_size(b64)
    # the template draws a picture the slide's width wide, up to its height cap
    scale = (WIDTH - 60) / max(width, 1)
    return min(IMAGE_MAX_PX, height * scale)


def output_height(output):
    """Estimated pixels one output takes on a slide."""
    if output.output_type == "stream":
        return 26 + 27.5 * _wrapped(output.text, CODE_CHARS)
    data = output.get("data", {})
    if "image/png" in data:
        return 12 + image_height(data["image/png"])
    if "text/html" in data:
        html = data["text/html"]
        rows = html.count("<tr") + html.count("<br") + html.count("<p") + 1
        image = 0
        for png in re.findall(r"base64,([A-Za-z0-9+/=]{64})", html)[:1]:
            image = image_height(png)
        pre_blocks = re.findall(r"<pre[^>]*>(.*?)</pre>", html, re.S)
        pre = sum(_wrapped(p, CODE_CHARS) for p in pre_blocks)
        return 16 + MD_LINE_PX * rows + 27.5 * pre + image
    if "text/plain" in data:
        return 26 + 27.5 * _wrapped(data["text/plain"], CODE_CHARS)
    return 0


def explorer_height(outputs):
    """An explorer's picture and controls, whichever form it takes (a live
    widget, frames or a still), so that the deck and the live slides agree."""
    pictures = [
        png
        for output in outputs
        for value in output.get("data", {}).values()
        for png in re.findall(r"([A-Za-z0-9+/]{64})", str(value))[:1]
        if png.startswith("iVBORw0KGgo")
    ]
    return (image_height(pictures[0]) if pictures else IMAGE_MAX_PX) + 110


def code_height(source):
    return 38 + CODE_LINE_PX * max(1, _wrapped(source, CODE_CHARS))


def markdown_height(source):
    """Estimated pixels of a markdown part on a slide: lines, headings, math."""
    height, in_math = 0, False
    for line in source.splitlines():
        text = line.strip()
        tall = re.search(r"\\(frac|sum|over|under|begin|prod|int)", text)
        if text.startswith("$$") or (in_math and text.endswith("$$")):
            if text.count("$$") == 1:
                in_math = not in_math
            height += 12 if text == "$$" else (64 if tall else 46)
            continue
        if in_math:
            height += 30 if tall else 22
            continue
        if not text:
            height += 14
        elif text.startswith("# "):
            height += 86
        elif text.startswith("## "):
            height += 68
        elif text.startswith("#"):
            height += 56
        elif text.startswith("|"):
            if not re.fullmatch(r"[\s|:-]+", text):
                height += 48
        else:
            plain = re.sub(r"\$[^$]*\$", "xxxxx", text)
            plain = re.sub(r"\]\([^)]*\)", "]", plain)
            height += MD_LINE_PX * math.ceil(len(plain) / MD_CHARS)
    return height + 16


def merge_streams(outputs):
    """Consecutive stream outputs of one name (stdout, stderr) joined into one.

    A kernel may deliver one cell's printing in one message or in several,
    from run to run; a slide must not depend on how it was split.
    """
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            previous.text += output.text
        else:
            merged.append(output)
    return merged


def cut_text_outputs(outputs, max_lines=OUTPUT_LINES):
    """Long stream and text/plain outputs cut to ``max_lines`` lines, the
    streams of one name first joined (``merge_streams``)."""
    outputs = merge_streams(outputs)
    for output in outputs:
        if output.output_type == "stream":
            output.text = _cut(output.text, max_lines)
        elif "text/plain" in output.get("data", {}) and len(output["data"]) == 1:
            output["data"]["text/plain"] = _cut(output["data"]["text/plain"], max_lines)
    return outputs


def _cut(text, max_lines):
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text
    more = len(lines) - max_lines
    return "\n".join([*lines[:max_lines], f"... ({more} more lines in the notebook)"])
