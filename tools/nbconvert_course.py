"""nbconvert's exporters as the course builds use them (tools/pagebuild.py).

The course templates (tools/templates), offline asset URLs, 1280x800 decks,
code coloured in CODE_STYLE, each page's ``<html lang>``; the filters the
templates call (``code_style_css``, ``focusable``, ``no_alt_text``); and
nbconvert's exporters without their BeautifulSoup pass (``_exporter_classes``).
"""

import functools
import re
from pathlib import Path

from tools import slidefit

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _asset_urls(prefix):
    """URL settings for nbconvert, relative to a page in build/<kind>/."""
    modules = f"{prefix}/node_modules"
    return {
        "require_js_url": f"{modules}/requirejs/require.js",
        "jquery_url": f"{modules}/jquery/dist/jquery.min.js",
        "mathjax_url": f"{modules}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
    }


CODE_STYLE = "a11y-light"  # accessible-pygments: colours checked to 4.5:1
LANGUAGE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def code_style_css(style=CODE_STYLE):
    """The Pygments CSS of ``style`` for the pages' code (their ``.highlight``
    blocks), specific enough to win over the lab theme's colours."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style=style).get_style_defs("html .highlight")


def page_language(nb):
    """The language a page or deck declares (``<html lang>``): the notebook's
    ``metadata["language"]`` (a BCP 47 tag, e.g. "zh-CN"), else "en"."""
    lang = nb.metadata.get("language", "en")
    if not isinstance(lang, str) or not LANGUAGE.match(lang):
        raise ValueError(
            f"notebook metadata 'language' is {lang!r}: give a BCP 47 tag "
            'such as "en" or "zh-CN"'
        )
    return lang


def with_language(body, lang):
    """``body`` (an exported page) declaring ``lang`` on its <html> element."""
    body, found = re.subn(r'<html lang="[^"]*"', f'<html lang="{lang}"', body, count=1)
    if not found:
        raise ValueError("the exported page has no <html lang=...> to set")
    return body


FOCUSABLE = re.compile(
    r'(<div\b[^>]*?\bclass="(?:[^"]*\s)?'
    r'(?:jp-Cell-inputWrapper|jp-OutputArea-output)(?:\s[^"]*)?")'
)
IMG_WITHOUT_ALT = re.compile(r"<img\b(?![^>]*\salt=)[^>]*>")


def focusable(html):
    """``html`` (a cell) with every input wrapper and output area focusable
    (tabindex="0"), as nbconvert's HTMLExporter makes them: a keyboard reaches
    and scrolls each. The course templates apply it to every cell (any_cell)."""
    import markupsafe

    return markupsafe.Markup(FOCUSABLE.sub(r'\1 tabindex="0"', html))


def no_alt_text(cell, resources):
    """Stop the build at a figure without alt text (image_output.html.j2 calls
    it): nbconvert would write its placeholder, which the browser tests refuse."""
    first = cell.source.strip().splitlines()[:1] or [""]
    raise ValueError(
        f"{resources['metadata'].get('name', 'a notebook')}: the image output of "
        f"cell {cell.get('id', '?')} ({first[0][:60]!r}) has no alt text in its "
        "metadata (helpers.plotting.show stores one)"
    )


@functools.cache
def _exporter_classes():
    """nbconvert's HTMLExporter and SlidesExporter without their BeautifulSoup
    pass.

    HTMLExporter.from_notebook_node (nbconvert 7.17.2, exporters/html.py)
    parses the whole page with html.parser and writes it out again only to add
    tabindex="0" to every input wrapper and output area and a placeholder alt
    to every <img> without one: two thirds of a build's time. The course
    templates write the tabindex themselves (``focusable``) and a figure
    without alt stops the build (``no_alt_text``), so these classes do what
    that method does minus the soup, and refuse any other <img> without alt
    (a picture in a Markdown cell's HTML). tests/course/test_builds.py checks
    that a built page and deck have every tabindex and alt.
    """
    from nbconvert import HTMLExporter, SlidesExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class WithoutSoup:
        def from_notebook_node(self, nb, resources=None, **kw):
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            highlight_code = self.filters.get(
                "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)
            )
            resources = self._init_resources(resources)
            filter_data_type = WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources
            )
            self.register_filter("highlight_code", highlight_code)
            self.register_filter("filter_data_type", filter_data_type)
            html, resources = TemplateExporter.from_notebook_node(
                self, nb, resources, **kw
            )
            missing = IMG_WITHOUT_ALT.search(html)
            if missing:
                name = resources["metadata"].get("name", "a notebook")
                raise ValueError(
                    f"{name}: an image without alt text: {missing[0][:120]}"
                )
            return html, resources

    class CourseHTMLExporter(WithoutSoup, HTMLExporter):
        pass

    class CourseSlidesExporter(WithoutSoup, SlidesExporter):
        pass

    return CourseHTMLExporter, CourseSlidesExporter


def make_exporter(kind):
    """The nbconvert exporter of ``kind`` ("slides" or "html"), set up as the
    builds use it: the course's templates, offline asset URLs, 1280x800 decks,
    code coloured in CODE_STYLE."""
    from nbconvert.preprocessors import TagRemovePreprocessor

    HTMLExporter, SlidesExporter = _exporter_classes()
    if kind == "slides":
        exporter = SlidesExporter(
            extra_template_basedirs=[str(TEMPLATES)],
            extra_template_paths=[str(TEMPLATES)],  # code_input.html.j2
            template_name="course_reveal",
        )
        exporter.reveal_url_prefix = "../assets/node_modules/reveal.js"
        exporter.reveal_scroll = False  # a slide never scrolls: slidefit lays it out
        exporter.exclude_anchor_links = True  # no "¶" after headings in the notes
        exporter.reveal_theme = "white"
        exporter.reveal_width = str(slidefit.WIDTH)
        exporter.reveal_height = str(slidefit.HEIGHT)
        exporter.register_preprocessor(
            TagRemovePreprocessor(
                remove_input_tags={slidefit.OUTPUT_ONLY}, enabled=True
            ),
            enabled=True,
        )
    else:
        exporter = HTMLExporter(
            extra_template_basedirs=[str(TEMPLATES)],
            extra_template_paths=[str(TEMPLATES)],  # code_input.html.j2
            template_name="course_lab",
        )
    for name, url in _asset_urls("../assets").items():
        setattr(exporter, name, url)
    exporter.register_filter("code_style_css", code_style_css)
    exporter.register_filter("focusable", focusable)
    exporter.register_filter("no_alt_text", no_alt_text)
    return exporter
