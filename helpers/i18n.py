"""The language the helpers speak: English, or Chinese for the Chinese edition.

Every message a learner reads (checker diagnoses, hints, validation errors,
readouts, figure descriptions) is written in English as a template and passed
through ``_`` before it is formatted::

    from helpers.i18n import _

    raise ValueError(_("{name} must be 2-D, got shape {shape}").format(...))

``_`` returns the template's translation in the course's language, or the
template itself when there is none. (First version: English only; the
catalogue and the choice of language follow.)
"""

__all__ = ["_"]


def _(message):
    """The translation of ``message`` (a template, not yet formatted)."""
    return message
