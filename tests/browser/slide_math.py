"""Formulas broken at a width their line does not have.

MathJax 2 (CommonHTML, automatic line breaks) breaks an inline formula at the
width it measures for its line: it takes the formula out, puts two zero-width
floats where it was and reads the distance between them. In a box as wide as
its content (reveal.js's theme makes lists inline-block) that distance is the
width of the words around the formula, not of the slide: lesson 04's Chinese
slide 2 had a 300 px formula broken into three lines in a list of short items,
and ran 47 px past the screen. The fix is in the deck template (lists are
blocks); this check finds the cause itself, on any deck.
"""

# For each slide with a formula in a list item (a paragraph is a block): show it,
# let MathJax re-render it (the deck's slidechanged handler does), and compare
# the width MathJax broke at (jax.CHTML.lineWidth, in em of jax.CHTML.em) with
# the room from the item's left edge to its markdown block's right edge.
# Formulas in tables are left out: a table cell is as narrow as it is.
NARROW_FORMULAS = """async () => {
  const settle = () => new Promise(r => MathJax.Hub.Queue(r));
  await settle();
  const found = [];
  const slides = [...document.querySelectorAll('.reveal .slides section')]
    .filter(s => !s.querySelector('section'));
  for (const slide of slides) {
    if (!slide.querySelector('li .MathJax_CHTML')) continue;
    const at = Reveal.getIndices(slide);
    Reveal.slide(at.h, at.v);
    await settle();
    const scale = document.querySelector('.reveal .slides').getBoundingClientRect()
      .width / document.querySelector('.reveal .slides').offsetWidth;
    for (const jax of MathJax.Hub.getAllJax(slide)) {
      const frame = document.getElementById(jax.inputID + '-Frame');
      if (!frame || jax.CHTML.display || frame.closest('td, th')) continue;
      const line = frame.closest('li');
      const block = frame.closest('.jp-RenderedHTMLCommon');
      if (!line || !block) continue;
      const room = (block.getBoundingClientRect().right
        - line.getBoundingClientRect().left) / scale;
      const width = jax.CHTML.lineWidth * jax.CHTML.em;
      if (width < 0.9 * room)
        found.push(location.hash + ' $' + jax.originalText.slice(0, 40) + '$ broken at '
          + Math.round(width) + ' px of a ' + Math.round(room) + ' px line');
    }
  }
  return found;
}"""


def narrow_formulas(page):
    """The formulas of the deck open in ``page`` that MathJax broke at less than
    90 % of the room their line has (a list of strings, empty when none)."""
    return page.evaluate(NARROW_FORMULAS)
