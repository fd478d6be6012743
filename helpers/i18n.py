"""The language the helpers speak: English, or Chinese for the Chinese edition.

Every message a learner reads (checker diagnoses, hints, validation errors,
readouts, figure descriptions) is written in English as a template and passed
through ``_`` before it is formatted::

    from helpers.i18n import _

    raise ValueError(_("{name} must be 2-D, got shape {shape}").format(...))

``_`` returns the template's translation in the course's language, or the
template itself when there is none (an untranslated or fuzzy entry, or English).

The language, read at each call (an environment lookup, so a test can switch it):

1. ``COURSE_LANG``: ``zh`` (also ``zh_CN``, ``zh-CN``) or ``en``;
2. else Chinese if the kernel's notebook lives in a folder named ``zh`` (or in
   a folder of it, such as notebooks/zh/student/): the notebook's path in
   ``JPY_SESSION_NAME`` (jupyter_server sets it for a kernel), or else the
   kernel's working directory;
3. else English.

The Chinese messages live in the gettext catalogue
``locale/zh_CN/LC_MESSAGES/helpers.po`` (``python -m tools.i18n_messages
extract`` writes its English side); it is read with polib, once, on the first
Chinese message.
"""

import os
import threading
import warnings
from pathlib import Path

__all__ = ["_", "N_", "language", "catalogue_path", "reload", "sentences", "listed"]

LANGUAGES = ("en", "zh")
_ROOT = Path(__file__).resolve().parent.parent
_PO = {"zh": _ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "helpers.po"}
_LOCK = threading.Lock()
_LOADED = {}  # language -> {msgid: msgstr}, the translated, non-fuzzy entries
_WARNED = set()


def catalogue_path(lang="zh"):
    """The PO file that holds the helpers' messages in ``lang``."""
    return _PO[lang]


def _warn_once(text):
    if text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(text, stacklevel=3)


def _in_zh_folder(folder):
    """Whether ``folder`` is a folder named ``zh`` or one inside it (the Chinese
    lessons live in notebooks/zh/, their student copies in notebooks/zh/student/)."""
    folder = Path(folder)
    return bool(str(folder)) and "zh" in (folder.name, folder.parent.name)


def language():
    """``"zh"`` or ``"en"``: the language of the messages (see the module doc)."""
    chosen = os.environ.get("COURSE_LANG", "").strip()
    if chosen:
        code = chosen.lower().replace("-", "_")
        if code in ("zh", "zh_cn"):
            return "zh"
        if code in ("en", "en_us", "en_gb"):
            return "en"
        _warn_once(f"COURSE_LANG={chosen!r} is not 'zh' or 'en': using English")
        return "en"
    session = os.environ.get("JPY_SESSION_NAME", "")
    if session:
        return "zh" if _in_zh_folder(Path(session).parent) else "en"
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed
        return "en"
    return "zh" if _in_zh_folder(cwd) else "en"


def _load(lang):
    """``{msgid: msgstr}`` of the catalogue's translated, non-fuzzy entries."""
    path = _PO[lang]
    try:
        import polib
    except ImportError:
        _warn_once("polib is not installed: the helpers' messages stay in English")
        return {}
    if not path.exists():
        _warn_once(f"{path} is missing: the helpers' messages stay in English")
        return {}
    entries = polib.pofile(str(path))
    return {
        e.msgid: e.msgstr
        for e in entries
        if e.msgstr and not e.obsolete and "fuzzy" not in e.flags
    }


def _table(lang):
    with _LOCK:
        if lang not in _LOADED:
            _LOADED[lang] = _load(lang)
        return _LOADED[lang]


def reload():
    """Forget the loaded catalogues: the next message reads them again."""
    with _LOCK:
        _LOADED.clear()


def _(message):
    """The translation of ``message`` (a template, not yet formatted)."""
    if not isinstance(message, str) or not message:
        return message
    lang = language()
    if lang == "en":
        return message
    return _table(lang).get(message, message)


def N_(message):
    """``message`` itself: marks a template kept for later (in a table, say) for
    the catalogue's extraction; ``_`` translates it where it is shown."""
    return message


# how a language joins whole sentences and the items of a list
_FULL_STOPS = ("\u3002", "\uff01", "\uff1f", "\uff09", "\u201d")  # 。！？）”
_LIST_SEPARATORS = {
    "en": {"phrases": ", ", "names": ", ", "clauses": "; "},
    "zh": {"phrases": "\uff0c", "names": "\u3001", "clauses": "\uff1b"},  # ，、；
}


def sentences(parts):
    """Whole sentences (translated, formatted), one after another, empty ones
    left out: a space between them in English; none in Chinese after a
    full-width stop (a sentence ends in 。), a space after anything else."""
    parts = [p.strip() for p in parts if p and p.strip()]
    if language() == "en":
        return " ".join(parts)
    text = parts[0] if parts else ""
    for part in parts[1:]:
        text += part if text.endswith(_FULL_STOPS) else " " + part
    return text


def listed(items, kind="phrases"):
    """The items of a list inside a sentence, joined as the language does:
    ``phrases`` (", " or \uff0c), ``names`` (", " or \u3001) or ``clauses``
    ("; " or \uff1b)."""
    return _LIST_SEPARATORS[language()][kind].join(items)
