"""The text of a lesson that a translator sees, and the checks of a translation.

Used by tools/i18n.py (extract, check, build). Two kinds of text are
translated:

* a markdown cell, split into blocks on blank lines, except that a fenced code
  block, a display maths block ($$ ... $$), a list (with its loose items and
  indented continuations) and a table stay whole; the markdown syntax stays
  inside the text (``**``, ``$...$``, links, HTML tags);
* the text of a code comment, the part after ``# ``; code, docstrings and
  strings are not translated, nor the course's directives (``# BEGIN
  SOLUTION``, ``# NBVAL_...``, ``# noqa``, ...).

:func:`markup_problems` compares a translation with its source: what must come
through unchanged (inline code, maths, link targets, HTML tags, numbers,
placeholders, headings and list structure).
"""

import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass

# -- markdown blocks --------------------------------------------------------------

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
LIST_ITEM = re.compile(r"^\s{0,3}([-*+]|\d+[.)])\s")
INDENTED = re.compile(r"^\s{2,}\S")


def _raw_blocks(source):
    """``source`` as alternating pieces [block, gap, block, gap, ...]: blocks
    are runs of lines, gaps the blank lines between them (outside fences and
    display maths). ``"".join`` of the pieces is ``source``."""
    lines = source.splitlines(keepends=True)
    pieces, current, gap = [], [], []
    fence, in_maths = None, False
    for line in lines:
        blank = not line.strip() and fence is None and not in_maths
        if blank:
            gap.append(line)
            continue
        if gap:
            pieces += ["".join(current), "".join(gap)]
            current, gap = [], []
        current.append(line)
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened[1][0]
        elif fence is not None and opened and opened[1][0] == fence:
            fence = None
        elif fence is None and line.count("$$") % 2:
            in_maths = not in_maths
    pieces.append("".join(current))
    if gap:
        pieces += ["".join(gap)]
    return pieces


def split_markdown(source):
    """``source`` as a list of (text, is_block) pieces whose texts join back to
    ``source``: the blocks a translator sees, and the blank lines between them
    (``is_block`` False). Trailing newlines of a block go with the gap."""
    raw = _raw_blocks(source)
    merged = []  # [block, gap, block, ...] with lists made whole
    for index, piece in enumerate(raw):
        if index % 2:
            merged.append(piece)
            continue
        continues_list = (
            len(merged) >= 2
            and LIST_ITEM.match(merged[-2])
            and (LIST_ITEM.match(piece) or INDENTED.match(piece))
        )
        if continues_list:
            gap = merged.pop()
            merged[-1] += gap + piece
        else:
            merged.append(piece)
    out = []
    for index, piece in enumerate(merged):
        if index % 2:
            out.append((piece, False))
            continue
        body = piece.rstrip("\n")
        out.append((body, True))
        if len(body) < len(piece):
            out.append((piece[len(body) :], False))
    return [(text, is_block) for text, is_block in out if text]


# what a translator need not see: maths, code, HTML tags, link targets
DISPLAY_MATHS = re.compile(r"\$\$.*?\$\$", re.DOTALL)
INLINE_MATHS = re.compile(r"(?<![\\$])\$(?!\$)(?:\\[\s\S]|[^$\\])+?\$")
INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
FENCED = re.compile(r"^\s{0,3}(`{3,}|~{3,}).*?^\s{0,3}\1[^\n]*$", re.M | re.DOTALL)
HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
LINK_TARGET = re.compile(r"(?<=\]\()[^)\s]+(?:\s+\"[^\"]*\")?(?=\))")
URL = re.compile(r"https?://\S+")


def without_code_and_maths(text):
    """``text`` with fenced blocks, maths, inline code, HTML tags, link targets
    and URLs blanked out: the prose, for the checks that look at words."""
    for pattern in (FENCED, DISPLAY_MATHS, INLINE_CODE, INLINE_MATHS):
        text = pattern.sub(" ", text)
    for pattern in (HTML_TAG, LINK_TARGET, URL):
        text = pattern.sub(" ", text)
    return text


def has_prose(text):
    """True when ``text`` has words to translate outside code and maths."""
    return re.search(r"[A-Za-z]{2,}", without_code_and_maths(text)) is not None


def markdown_blocks(source):
    """The translatable blocks of a markdown cell, in order."""
    return [t for t, is_block in split_markdown(source) if is_block and has_prose(t)]


def translate_markdown(source, translate):
    """``source`` with each translatable block replaced by ``translate(block)``;
    the blank lines between blocks are kept as they are."""
    out = []
    for text, is_block in split_markdown(source):
        out.append(translate(text) if is_block and has_prose(text) else text)
    return "".join(out)


# -- code comments -------------------------------------------------------------------

# comments that are instructions to a tool or to the course build, not prose
DIRECTIVE = re.compile(
    r"^#\s*(BEGIN SOLUTION|END SOLUTION|NBVAL_\w+|noqa\b|type:|fmt:|pragma\b"
    r"|%%|!|ruff\b|isort\b|pyright\b|mypy\b)"
)
COMMENT_PREFIX = re.compile(r"^#+\s*")
# a word of three letters or more that is not part of an identifier or a call
PROSE_WORD = re.compile(r"(?<![\w.])[A-Za-z]{3,}(?![\w(\[])")


def _tokenizable(source):
    """``source`` with IPython's magics and shell lines blanked (same lines)."""
    lines = []
    for line in source.split("\n"):
        lines.append("" if line.lstrip().startswith(("%", "!")) else line)
    return "\n".join(lines)


def _comment_tokens(source):
    readline = io.StringIO(_tokenizable(source)).readline
    try:
        tokens = list(tokenize.generate_tokens(readline))
    except (tokenize.TokenError, IndentationError, SyntaxError) as error:
        raise ValueError(f"cannot read the comments of this code: {error}") from None
    return [t for t in tokens if t.type == tokenize.COMMENT]


@dataclass
class Comment:
    """A trailing comment (after code, one line) or a block of full-line
    comments at the same column; ``text`` is the part after ``# ``, the lines
    of a block joined with newlines."""

    first: int  # line index of its first line
    last: int  # line index of its last line
    col: int  # column of the #
    prefix: str  # "# " as written
    text: str
    trailing: bool


def _comments(source):
    lines = source.split("\n")
    found = []
    for token in _comment_tokens(source):
        row, col = token.start[0] - 1, token.start[1]
        prefix = COMMENT_PREFIX.match(token.string)[0]
        text = token.string[len(prefix) :].rstrip()
        trailing = bool(lines[row][:col].strip())
        directive = DIRECTIVE.match(token.string) is not None
        previous = found[-1] if found else None
        joins = (
            previous is not None
            and not (
                trailing or previous.trailing or directive or previous.prefix == ""
            )
            and previous.last == row - 1
            and previous.col == col
            and text
        )
        if joins:
            previous.last, previous.text = row, previous.text + "\n" + text
        else:
            # a directive is kept as a block of its own that is never translated
            found.append(
                Comment(row, row, col, "" if directive else prefix, text, trailing)
            )
    return [
        c
        for c in found
        if c.prefix and PROSE_WORD.search(without_code_and_maths(c.text))
    ]


def code_comments(source):
    """The translatable comments of a code cell (a list of :class:`Comment`).

    Raises ValueError when the cell is not Python that tokenize can read."""
    return _comments(source)


def comment_texts(source):
    """(text, trailing) of the translatable comments of a code cell, in order."""
    return [(c.text, c.trailing) for c in code_comments(source)]


def translate_code(source, translate):
    """``source`` with each translatable comment's text replaced by
    ``translate(text)``; everything else, code and layout, unchanged. A block's
    translation may have another number of lines, each written as a comment."""
    lines = source.split("\n")
    for c in reversed(code_comments(source)):
        new = translate(c.text)
        if c.trailing:
            line = lines[c.first]
            start = c.col + len(c.prefix)
            lines[c.first] = (
                line[:start] + new.replace("\n", " ") + line[start + len(c.text) :]
            )
        else:
            indent = lines[c.first][: c.col]
            block = [(indent + c.prefix + part).rstrip() for part in new.split("\n")]
            lines[c.first : c.last + 1] = block
    return "\n".join(lines)


def without_comments(source):
    """``source`` without its comments (the course's directives kept) and
    without the lines that held only a comment: the code a translation must
    leave unchanged."""
    lines = source.split("\n")
    for token in reversed(_comment_tokens(source)):
        if DIRECTIVE.match(token.string):
            continue
        row, col = token.start[0] - 1, token.start[1]
        lines[row] = lines[row][:col].rstrip()
        if not lines[row].strip():
            lines[row] = None
    return "\n".join(line for line in lines if line is not None)


# -- checks of one translation --------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
PLACEHOLDER = re.compile(
    r"\{[A-Za-z_][\w.]*(?:![rsa])?(?::[^{}]*)?\}|%\(\w+\)[sdr]|%[sdr]"
)
HEADING = re.compile(r"^(#{1,6})\s", re.M)
QUOTE_LINE = re.compile(r"^\s{0,3}>", re.M)


def _missing(kind, expected, found):
    lost = Counter(expected) - Counter(found)
    if not lost:
        return []
    shown = ", ".join(repr(item) for item in sorted(lost))
    return [f"{kind} changed or missing: {shown}"]


def _unbalanced(text):
    problems = []
    prose = FENCED.sub(" ", text)
    code = [len(run) for run in re.findall(r"`+", prose)]
    if Counter(code) and any(count % 2 for count in Counter(code).values()):
        problems.append("unbalanced backticks `")
    dollars = len(re.findall(r"(?<!\\)\$", INLINE_CODE.sub(" ", prose)))
    if dollars % 2:
        problems.append("unbalanced maths delimiters $")
    return problems


def list_items(text):
    """How many list items ``text`` has. A numbered line other than "1." in the
    middle of a paragraph does not start a list (CommonMark): "... exactly\n0.
    Subtract" is a sentence."""
    count, in_list, previous = 0, False, ""
    for line in text.split("\n"):
        marker = LIST_ITEM.match(line)
        starts = marker and (
            not previous.strip()
            or in_list
            or marker[1] in "-*+"
            or marker[1][:-1] == "1"
        )
        if starts:
            count, in_list = count + 1, True
        elif line.strip() and not INDENTED.match(line):
            in_list = False
        previous = line
    return count


def _structure(msgid, msgstr):
    problems = []
    bold = [without_code_and_maths(t).count("**") for t in (msgid, msgstr)]
    if bold[0] != bold[1]:
        problems.append("bold markers ** changed")
    if HEADING.findall(msgid) != HEADING.findall(msgstr):
        problems.append("heading level changed (keep the leading #)")
    if list_items(msgid) != list_items(msgstr):
        problems.append("number of list items changed")
    if len(QUOTE_LINE.findall(msgid)) != len(QUOTE_LINE.findall(msgstr)):
        problems.append("block quote lines (>) changed")
    if msgid.count("|") != msgstr.count("|") and "|" in msgid.split("\n")[0]:
        problems.append("table cells (|) changed")
    return problems


def markup_problems(msgid, msgstr, comment=False):
    """What a translation broke: a list of short sentences (empty when fine).

    Every inline code span, maths span, fenced block, link target, HTML tag,
    number and placeholder of ``msgid`` must be in ``msgstr`` unchanged; the
    backticks and $ of ``msgstr`` balanced; headings, list items and quotes
    kept. ``comment``: "trailing" for a comment after code (one line), "block" for
    full-line comments, False for markdown."""
    if not msgstr:
        return []
    problems = _unbalanced(msgstr)
    problems += _missing(
        "fenced code block", _spans(FENCED, msgid), _spans(FENCED, msgstr)
    )
    unfenced_id, unfenced_str = FENCED.sub(" ", msgid), FENCED.sub(" ", msgstr)
    for kind, pattern in (
        ("display maths", DISPLAY_MATHS),
        ("inline code", INLINE_CODE),
    ):
        problems += _missing(
            kind, _spans(pattern, unfenced_id), _spans(pattern, unfenced_str)
        )
    maths_id = INLINE_MATHS.findall(_prose_and_maths(unfenced_id))
    maths_str = INLINE_MATHS.findall(_prose_and_maths(unfenced_str))
    problems += _missing("maths", maths_id, maths_str)
    problems += _missing(
        "link target", LINK_TARGET.findall(msgid), LINK_TARGET.findall(msgstr)
    )
    problems += _missing("HTML tag", HTML_TAG.findall(msgid), HTML_TAG.findall(msgstr))
    problems += _missing(
        "number",
        NUMBER.findall(without_code_and_maths(msgid)),
        NUMBER.findall(without_code_and_maths(msgstr)),
    )
    problems += _missing(
        "placeholder", PLACEHOLDER.findall(msgid), PLACEHOLDER.findall(msgstr)
    )
    if comment == "trailing" and "\n" in msgstr:
        problems.append("a comment after code must stay on one line")
    elif not comment:
        problems += _structure(msgid, msgstr)
    return problems


def _prose_and_maths(text):
    return INLINE_CODE.sub(" ", DISPLAY_MATHS.sub(" ", text))


def _spans(pattern, text):
    return [match[0] for match in pattern.finditer(text)]
