"""HTML pages: every lesson built once (lesson 01 executed at build time, so its
explorer gets pre-rendered frames; the others use their stored outputs and show
the explorer as a still), opened from disk in Chromium with the network blocked
(tests/browser/offline.py)."""

import pytest

from .offline import (
    EXECUTED,
    assert_explorers_are_stills_with_a_note,
    build,
    move_every_slider,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Every lesson's page, built once, next to the shipped assets."""
    return build("html", tmp_path_factory, execute={EXECUTED})


def test_no_test_marker_reaches_a_reader(pages):
    for path in pages:
        assert "NBVAL" not in path.read_text(encoding="utf-8"), path.name


def test_every_exported_slider_changes_its_plot(browser, pages):
    """Every page opens offline; moving any slider changes the picture and the
    readout. A page whose lesson was not executed has no slider at all."""
    moved = 0
    for path in pages:
        html = path.read_text(encoding="utf-8")
        assert "widget-view+json" not in html, f"{path.name}: a dead widget view"
        moved += move_every_slider(browser, path)
    assert moved >= 1, "no exported explorer has sliders (lesson 01 was executed)"


def test_explorers_not_executed_are_stills_with_a_note(pages):
    assert_explorers_are_stills_with_a_note(pages, executed=EXECUTED)
