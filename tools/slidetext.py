"""The slide form of a lesson's markdown and code: what a room can read.

A lesson cell is written for reading at a desk; its slide shows the part a room
reads from the back (the heading, a lead sentence, the display math, short list
items, a small table) and its full text goes to the speaker notes. These
functions work from the structure of the markdown and the code (blocks,
sentences, statements), never from a cell's exact words, so they hold for any
lesson; tools/slideplan.py decides which cells go on which slide.
"""

import ast
import re

WORDS = 55  # prose words on a slide at most (the browser test allows 60)
LEAD_WORDS = 30  # a lead sentence longer than this is left to the notes
ITEM_WORDS = 9  # a list item on a slide: its first clause, at most this long
ITEMS = 6  # list items on a slide
TABLE_ROWS = 6  # a larger table stays in the notes
TABLE_COLUMNS = 3
TABLE_CHARS = 80  # visible characters of a table row on a slide
CODE_LINES = 12  # code lines on a slide (the rest: speaker notes)

SPAN = re.compile(r"(?s:\$\$.+?\$\$)|\$[^$\n]+\$|`[^`\n]+`")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


# -- measuring ------------------------------------------------------------------


def visible(text):
    """Markdown as the room reads it: math and code out, links as their text."""
    text = SPAN.sub(" ", text)
    text = LINK.sub(r"\1", text)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"[*_#>|]", " ", text)


HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def words(text):
    """Prose words, as the browser test counts them (math and code excluded);
    Chinese, written without spaces, as 0.6 of a word per character (60 words
    of prose are about 100 characters)."""
    shown = visible(text)
    latin = len(re.findall(r"[^\W_][\w'’.-]*", HAN.sub(" ", shown)))
    return latin + round(0.6 * len(HAN.findall(shown)))


def _balanced(prefix):
    """True when ``prefix`` closes every math, code and emphasis span it opens."""
    masked = SPAN.sub("", prefix)
    return (
        "$" not in masked
        and "`" not in masked
        and masked.count("**") % 2 == 0
        and (masked.replace("**", "").count("*") % 2 == 0)
        and masked.count("(") == masked.count(")")
    )


# -- markdown blocks ---------------------------------------------------------------


def blocks(source):
    """``(kind, text)`` blocks of a markdown cell, in order.

    Kinds: heading, math, list, table, quote, details, fence, html, label (a
    bold-only line such as "**You will learn**") and paragraph.
    """
    out, current, state = [], [], {"fence": False, "math": False, "details": 0}

    def flush():
        if current:
            out.append("\n".join(current))
            current.clear()

    for line in source.splitlines():
        text = line.strip()
        opens = not (state["fence"] or state["math"] or state["details"])
        if opens and (re.match(r"#{1,6} ", text) or (text.startswith("$$"))):
            flush()
        if text.startswith("```"):
            state["fence"] = not state["fence"]
        elif not state["fence"]:
            if text.count("$$") % 2:
                state["math"] = not state["math"]
            state["details"] += line.count("<details") - line.count("</details>")
        if opens and not text and current:
            flush()
            continue
        if text or current:
            current.append(line)
        if opens and re.match(r"#{1,6} ", text):
            flush()
        if text.endswith("$$") and not state["math"] and current:
            if current[0].strip().startswith("$$"):
                flush()
    flush()
    merged = []
    for block in out:  # a list item's indented continuation joins its list
        if merged and re.match(r"\s{2,}\S", block) and merged[-1][0] == "list":
            merged[-1] = ("list", merged[-1][1] + "\n\n" + block)
        else:
            merged.append((_kind(block), block))
    return merged


def _kind(block):
    text = block.lstrip()
    if re.match(r"#{1,6} ", text):
        return "heading"
    if text.startswith("$$"):
        return "math"
    if re.match(r"([-*+]|\d+\.)\s", text):
        return "list"
    if text.startswith("|"):
        return "table"
    if text.startswith(">"):
        return "quote"
    if text.startswith("<details"):
        return "details"
    if text.startswith("```"):
        return "fence"
    if text.startswith("<"):
        return "html"
    if re.fullmatch(r"\*\*[^*]+\*\*:?", text.strip()):
        return "label"
    return "paragraph"


def split_at_sections(source):
    """A markdown cell cut before each ``# `` or ``## `` heading inside it."""
    parts, current = [], []
    for kind, block in blocks(source):
        if kind == "heading" and re.match(r"#{1,2} ", block.lstrip()) and current:
            parts.append(current)
            current = []
        current.append((kind, block))
    if current:
        parts.append(current)
    return ["\n\n".join(b for _, b in part) for part in parts]


# -- shortening ---------------------------------------------------------------------


def lead(paragraph, limit=LEAD_WORDS):
    """The paragraph if short, else its first sentence if short, else None."""
    text = " ".join(paragraph.split())
    if words(text) <= limit:
        return text
    for match in re.finditer(r"[.!?:](?=\s+[A-Z$*`(\[])|[。！？：]", text):
        first = text[: match.end()]
        if re.search(r"\b(e\.g|i\.e|vs|al|cf|Fig|Eq)\.$", first):
            continue
        if not _balanced(first):
            continue
        return first if words(first) <= limit else None
    return None


def short_item(item, limit=ITEM_WORDS):
    """A list item's first clause (at most ``limit`` words), or None."""
    text = " ".join(item.split())
    if words(text) <= limit:
        return text
    for match in re.finditer(r"(:|;|,| —| \(| –)\s|[，；：、（]", text):
        first = text[: match.start()].rstrip()
        if words(first) < 2 or not _balanced(first):
            continue
        if words(first) > limit:
            break
        return first
    return None


def list_items(block):
    """The items of a markdown list block, markers stripped."""
    items, current = [], []
    for line in block.splitlines():
        if re.match(r"\s{0,3}([-*+]|\d+\.)\s", line):
            if current:
                items.append(" ".join(current))
            current = [re.sub(r"^\s*([-*+]|\d+\.)\s+", "", line)]
        elif line.strip():
            current.append(line.strip())
    if current:
        items.append(" ".join(current))
    return items


def short_list(block, limit=ITEMS):
    """The list with each item cut to its first clause; None if one cannot be."""
    items = [short_item(item) for item in list_items(block)]
    if not items or None in items or len(items) > limit:
        return None
    return "\n".join(f"- {item}" for item in items)


def small_table(block):
    """The table if it is small enough to read from the back, else None."""
    rows = [r for r in block.splitlines() if r.strip().startswith("|")]
    body = [r for r in rows if not re.fullmatch(r"[\s|:-]+", r)]
    columns = max(len(r.strip().strip("|").split("|")) for r in body)
    widest = max(len(" ".join(visible(r).split())) for r in body)
    if len(body) > TABLE_ROWS or columns > TABLE_COLUMNS or widest > TABLE_CHARS:
        return None
    return block


def slide_form(source, words_left=WORDS):
    """``[(form, full), ...]``: the markdown each slide shows, and the lesson's
    text it stands for (the speaker notes when they differ).

    Kept, in the lesson's order while the word and height budgets last:
    headings, display math (two blocks at most), the lead of the first
    paragraph, a list cut to first clauses (with its bold label), a small table.
    A list or table that no longer fits starts the next slide (the title cell's
    "You will learn" list gets a slide of its own). Quotes, <details>, code
    fences and later paragraphs stay in the notes. A cell short enough to show
    whole is shown whole.
    """
    from tools.slidefit import BUDGET, markdown_height

    kinds = [k for k, _ in blocks(source)]
    if (
        words(source) <= words_left
        and markdown_height(source) <= BUDGET
        and not set(kinds) & {"quote", "details", "fence", "html"}
        and all(small_table(b) for k, b in blocks(source) if k == "table")
    ):
        return [(source.strip(), source.strip())]
    parts, current, full, budget = [], [], [], words_left
    had_paragraph, label = False, None
    for kind, block in blocks(source):
        text = None
        if kind == "heading":
            text = block.strip()
        elif kind == "math":
            text = block.strip() if sum(k == "math" for k, _ in current) < 2 else None
        elif kind == "paragraph" and not had_paragraph:
            had_paragraph = True
            text = lead(block)
        elif kind == "list":
            text = short_list(block)
            if text and label:
                text = f"{label}\n\n{text}"
        elif kind == "table":
            text = small_table(block)
        label = block.strip() if kind == "label" else None
        if text:
            need = words(text)
            trial = "\n\n".join([*(t for _, t in current), text])
            tall = markdown_height(trial) > BUDGET
            if (need > budget or tall) and current and need <= WORDS:
                if kind in ("list", "table"):
                    parts.append((current, full))
                    current, full, budget = [], [], WORDS
                    tall = False
            if need <= budget and not tall:
                current.append((kind, text))
                budget -= need
        full.append(block)
    if current:
        parts.append((current, full))
    elif parts:
        parts[-1][1].extend(full)
    else:  # nothing short enough: the slide shows what follows, the notes this
        parts.append(([], full))
    return [
        ("\n\n".join(t for _, t in part), "\n\n".join(blocks_))
        for part, blocks_ in parts
    ]


def exercise_titles(source):
    """The ``### `` headings of an exercise cell (titles with stars and time)."""
    return [line.strip()[4:] for line in source.splitlines() if line.startswith("### ")]


# -- code ---------------------------------------------------------------------------

CHECK = re.compile(r"^\s*(assert\b|(np|torch)\.testing\.assert|torch\.testing\.)")
SETUP = re.compile(
    r"^\s*(import |from \S+ import |%|np\.set_printoptions|torch\.set_printoptions"
    r"|plt\.rcParams|torch\.set_num_threads|torch\.set_default_dtype|#|$)"
)


def is_setup(source):
    """Imports and print options only: no idea of the lesson on it."""
    return all(SETUP.match(line) for line in source.splitlines())


def only_checks(source):
    """Asserts and ``np.testing`` calls only: the notebook's proof, not an idea
    to show (the notes keep it)."""
    statements = _statements(source)
    return bool(statements) and all(s[2] == "check" for s in statements)


def _statements(source):
    """Top-level statements as (first line, last line, kind), 0-based, with the
    comment lines right above each one counted as its own."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines()
    out = []
    for node in tree.body:
        start = node.lineno - 1
        if getattr(node, "decorator_list", None):
            start = min(d.lineno for d in node.decorator_list) - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        if isinstance(node, ast.Assert) or CHECK.match(text):
            kind = "check"
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            kind = "def"
        else:
            kind = "code"
        out.append([start, node.end_lineno - 1, kind, node])
    return out


def fold_code(source, max_lines=CODE_LINES, keep=()):
    """``(code, folded)``: the lines of a code cell that carry its idea.

    Up to ``max_lines``: first the checks go (asserts and ``np.testing``, which
    the notebook runs), then long function bodies fold to their signature and
    docstring, then the cell is cut after the last statement that fits. A last
    comment says how many lines the speaker notes hold. ``keep``: substrings of
    lines to keep whatever the rules say (a lesson's curation file).
    """
    lines = source.splitlines()
    if len(lines) <= max_lines and not keep:
        return source, False
    statements = _statements(source)
    if statements is None:
        shown = lines[:max_lines]
    else:
        shown = _fold_statements(lines, statements, max_lines, keep)
    while shown and not shown[-1].strip():
        shown.pop()
    hidden = len([line for line in lines if line.strip()]) - len(
        [line for line in shown if line.strip() and not line.strip() == "..."]
    )
    if hidden <= 0:
        return "\n".join(shown), shown != lines
    note = f"# ... {hidden} more line{'s' * (hidden > 1)} in the speaker notes"
    return "\n".join([*shown, note]), True


def _fold_statements(lines, statements, max_lines, keep):
    def wanted(first, last):
        return any(k in line for line in lines[first : last + 1] for k in keep)

    chosen = statements
    if keep:
        chosen = [s for s in statements if wanted(s[0], s[1])]
    else:
        # the checks go first (the notebook runs them; the notes list them)
        if _count(lines, chosen) > max_lines:
            chosen = [s for s in chosen if s[2] != "check"] or chosen[:1]
    rendered = {id(s): lines[s[0] : s[1] + 1] for s in chosen}
    for statement in sorted(chosen, key=lambda s: s[0] - s[1]):  # longest first
        if sum(len(v) for v in rendered.values()) <= max_lines:
            break
        if statement[2] == "def":
            rendered[id(statement)] = _signature(lines, statement)
    out, previous = [], None
    for statement in chosen:
        block = rendered[id(statement)]
        if previous is not None and statement[0] > previous + 1:
            if any(not line.strip() for line in lines[previous + 1 : statement[0]]):
                block = ["", *block]
        if len(out) + len(block) > max_lines and out:
            break
        out += block
        previous = statement[1]
    return out[: max_lines + 2] if keep else out


def _count(lines, statements):
    return sum(s[1] - s[0] + 1 for s in statements)


def _signature(lines, statement):
    """A def folded to its signature (and one-line docstring) and ``...``."""
    node = statement[3]
    body_start = node.body[0].lineno - 1
    head = lines[statement[0] : body_start]
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(getattr(first, "value", None), ast.Constant)
        and isinstance(first.value.value, str)
        and first.end_lineno == first.lineno
    ):
        head.append(lines[first.lineno - 1])
    indent = re.match(r"\s*", lines[body_start]).group(0)
    return [*head, f"{indent}..."]
