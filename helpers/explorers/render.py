"""The rendering engine of the slider explorers in ``helpers.explorers``.

``Explorer`` keeps ONE matplotlib figure, built with the object-oriented API
(``Figure`` + ``FigureCanvasAgg``, never pyplot, so no extra inline copy
appears), and changes its artists in place on every update.

Why it is fast: the axes, ticks, titles and labels are drawn once and kept as a
background bitmap (one per set of axis limits, at most ``MAX_BACKGROUNDS``);
an update only restores that bitmap, redraws the few artists that hold data,
and encodes a PNG with light compression (``png_bytes``) into an
``ipywidgets.Image`` of fixed size (no flicker). Axis limits move in coarse
steps (``nice_ceil``), so most slider moves reuse the background.

``make_control`` is the one factory for the explorers' sliders, dropdowns and
checkboxes. NumPy, matplotlib and ipywidgets only; never imports torch.
"""

import base64
import functools
import html
import math
import re
import struct
import zlib

import ipywidgets
import numpy as np
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from helpers.i18n import _

DPI = 90  # with the 9-inch figures: about 810 pixels wide
MAX_BACKGROUNDS = 16  # least recently used first out; about 1 MB each
NICE = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)  # axis limits snap to these x 10^k
_STYLE = {"description_width": "initial"}


def nice_ceil(x):
    """The smallest 'nice' number (1, 1.5, 2, 3, 4, 5, 6, 8 x 10^k) >= x."""
    if x <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(x))
    for base in (*NICE, 10.0):
        if base * power >= x * (1 - 1e-12):
            return base * power
    return 10.0 * power  # pragma: no cover


def _png_chunk(kind, payload):
    crc = zlib.crc32(kind + payload)
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bytes(rgb):
    """Encode an 8-bit RGB image as PNG: no row filter, fast zlib level 1.

    Two to three times as fast as Pillow's encoder at level 1 (which tries
    every row filter) on these flat-coloured plots, at about the same size;
    this is most of a slider update's budget.

    Shapes:
        rgb: (height, width, 3) uint8 -> the bytes of a PNG file
    """
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(
            f"rgb must be uint8 of shape (height, width, 3); got {rgb.dtype} "
            f"of shape {tuple(rgb.shape)}"
        )
    height, width, _ = rgb.shape
    rows = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # byte 0: filter 0
    pixels = rows[:, 1:].reshape(height, width, 3)
    for channel in range(3):  # one plane at a time: 5x faster from an RGBA view
        pixels[..., channel] = rgb[..., channel]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)),
            _png_chunk(b"IEND", b""),
        )
    )


def make_control(
    description, value, *, choices=None, low=None, high=None, labels=None, **options
):
    """The one factory for an explorer's controls.

    - a bool ``value`` without ``choices``: a Checkbox;
    - ``choices``: a SelectionSlider over them (a Dropdown with
      ``dropdown=True``), ``value`` added when off the grid; ``labels`` (one per
      choice, or ``choices`` a dict value -> label) are shown instead of values;
    - otherwise an IntSlider from ``low`` to ``high``, stretched to ``value``.

    ``width`` sets the control's CSS width; sliders update while dragged. The
    description and the labels are shown in the course's language (templates
    marked ``N_`` where they are written; a name such as ``d_k`` stays itself).
    """
    dropdown = options.pop("dropdown", False)
    width = options.pop("width", None)
    if options:
        raise TypeError(f"make_control got unknown option(s) {sorted(options)}")
    layout = ipywidgets.Layout(width=width) if width else ipywidgets.Layout()
    common = {"description": _(description), "style": _STYLE, "layout": layout}
    if choices is None and isinstance(value, bool):
        return ipywidgets.Checkbox(value=value, **common)
    if isinstance(choices, dict):
        choices, labels = list(choices), list(choices.values())
    if labels is not None:
        labels = [_(label) if isinstance(label, str) else label for label in labels]
    if choices is not None:
        if labels is None:
            shown = sorted({*choices, value})
        else:
            shown = list(zip(labels, choices, strict=True))
        kind = ipywidgets.Dropdown if dropdown else ipywidgets.SelectionSlider
        extra = {} if dropdown else {"continuous_update": True}
        return kind(options=shown, value=value, **extra, **common)
    return ipywidgets.IntSlider(
        value=value,
        min=min(low, value),
        max=max(high, value),
        continuous_update=True,
        **common,
    )


def control_values(control):
    """Every value ``control`` can take, in its order."""
    if isinstance(control, ipywidgets.Checkbox):
        return [False, True]
    if hasattr(control, "options"):
        return [o[1] if isinstance(o, tuple) else o for o in control.options]
    return list(range(control.min, control.max + 1, control.step))


def caption_html(text):
    """The description as a polite live region, visually hidden (screen readers)."""
    return (
        '<div class="course-explorer-description" aria-live="polite" '
        'style="position:absolute; width:1px; height:1px; overflow:hidden; '
        f'clip:rect(0 0 0 0); white-space:nowrap">{html.escape(text)}</div>'
    )


def html_to_text(text):
    """A readout's HTML as plain text: separators kept, tags dropped."""
    text = re.sub(r"<br\s*/?>", "\n", text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r" {2,}", " ", html.unescape(text).replace("\xa0", " "))


class DescribedImage(ipywidgets.Image):
    """ipywidgets' Image whose ``tooltip`` (the img's title, its accessible name)
    JupyterLab can show: ipywidgets 8.1's view reads the model's ``description``
    before it sets a title, and Image has none, so a tooltip alone breaks the view
    ("Cannot read properties of undefined (reading 'length')")."""

    description = traitlets.Unicode("").tag(sync=True)


class Explorer:
    """One persistent figure, controls, a readout and an Image.

    Subclasses provide ``compute(**values)`` -> a data dict (holding the values,
    normalised), ``draw(data)`` -> the artists that hold data,
    ``readout_html(data)`` -> HTML and ``describe(data)`` -> the frame's text
    description (see ``explorers.descriptions``); ``choices_for(name)`` may
    narrow a menu's options to what the current values allow. ``values`` names
    every control.
    """

    figsize = (9.0, 3.4)

    def __init__(self, values, sliders):
        self.values = dict(values)
        self.sliders = sliders
        self.data = None
        self._syncing = False
        self._backgrounds = {}
        self._generation = 0
        self.figure = Figure(figsize=self.figsize, dpi=DPI)
        self.canvas = FigureCanvasAgg(self.figure)
        width, height = self.canvas.get_width_height()
        self.image = DescribedImage(
            format="png",
            layout=ipywidgets.Layout(width=f"{width}px", height=f"{height}px"),
        )
        self.readout = ipywidgets.HTML(layout=ipywidgets.Layout(min_height="2.6em"))
        self.caption = ipywidgets.HTML()  # the description, for screen readers
        self.description = ""
        controls = ipywidgets.HBox(
            list(sliders.values()), layout=ipywidgets.Layout(flex_flow="row wrap")
        )
        self.widget = ipywidgets.VBox(
            [controls, self.readout, self.caption, self.image]
        )
        for name, slider in sliders.items():
            slider.observe(functools.partial(self._on_slider, name), names="value")

    def update(self, **values):
        """Recompute with the given values changed, redraw, return the data dict."""
        unknown = set(values) - set(self.values)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.update() got unknown value(s) "
                f"{sorted(unknown)}; valid names: {list(self.values)}"
            )
        new = {**self.values, **values}
        data = self.compute(**new)  # validates before anything changes
        self.values = {name: data.get(name, value) for name, value in new.items()}
        self._sync_sliders()
        self.data = data
        self._render(self.draw(data))
        self.readout.value = self.readout_html(data)
        self.description = self.describe(data)
        self.image.tooltip = self.description  # the img's title: its name
        self.caption.value = caption_html(self.description)
        return data

    def png(self):
        """The bytes of the PNG the explorer shows now."""
        return bytes(self.image.value)

    def readout_text(self):
        """The readout shown now, as plain text."""
        return html_to_text(self.readout.value)

    def render_png(self, **values):
        """A PNG of the explorer at ``values`` (others as now); the state is kept.

        For exports: render a frame per slider value without a kernel's help.
        """
        return self.render_frame(**values)["png"]

    def render_frame(self, **values):
        """The frame at ``values`` (others as now); the state is kept.

        Returns a dict: png (bytes), readout_html, readout_text, description,
        values (all of them, normalised), so an export can swap the picture,
        the readout and the description.
        """
        before = dict(self.values)
        try:
            self.update(**values)
            return {
                "png": self.png(),
                "readout_html": self.readout.value,
                "readout_text": self.readout_text(),
                "description": self.description,
                "values": dict(self.values),
            }
        finally:
            if self.values != before:
                self.update(**before)

    def slider_grid(self):
        """Every value each control offers now: a dict name -> list."""
        return {name: control_values(c) for name, c in self.sliders.items()}

    def choices_for(self, name):
        """The options control ``name`` should offer now; None: leave them."""
        return None

    @property
    def cached_backgrounds(self):
        """How many backgrounds are cached (at most ``MAX_BACKGROUNDS``)."""
        return len(self._backgrounds)

    def forget_backgrounds(self):
        """Drop the cached backgrounds; call after changing titles or axes."""
        self._generation += 1
        self._backgrounds.clear()

    def _on_slider(self, name, change):
        if not self._syncing:
            self.update(**{name: change["new"]})

    def _sync_sliders(self):
        self._syncing = True
        try:
            for name, slider in self.sliders.items():
                value = self.values[name]
                options = self.choices_for(name)
                if options is not None and tuple(slider.options) != tuple(options):
                    slider.options = tuple(options)
                if hasattr(slider, "options"):
                    if value not in control_values(slider):
                        slider.options = sorted({*slider.options, value})
                elif not isinstance(slider, ipywidgets.Checkbox):
                    slider.min = min(slider.min, value)
                    slider.max = max(slider.max, value)
                if slider.value != value:
                    slider.value = value
        finally:
            self._syncing = False

    def _render(self, animated):
        """Restore (or draw) the static background, draw ``animated``, make a PNG."""
        key = (self._generation,) + tuple(
            (ax.get_xlim(), ax.get_ylim(), ax.get_title(), ax.get_xlabel())
            for ax in self.figure.axes
        )
        background = self._backgrounds.pop(key, None)  # re-inserted: newest last
        if background is None:
            for artist in animated:
                artist.set_animated(True)
            self.canvas.draw()  # everything except the animated artists
            background = self.canvas.copy_from_bbox(self.figure.bbox)
            if len(self._backgrounds) >= MAX_BACKGROUNDS:
                self._backgrounds.pop(next(iter(self._backgrounds)))  # the oldest
        else:
            self.canvas.restore_region(background)
        self._backgrounds[key] = background
        renderer = self.canvas.get_renderer()
        for artist in animated:
            artist.draw(renderer)
        self.image.value = png_bytes(np.asarray(self.canvas.buffer_rgba())[..., :3])

    def _repr_mimebundle_(self, **kwargs):
        """The live view; without it, the frame described (as ``plotting.show``).

        A lesson opened without its kernel shows the stored frame: text/html
        ``<img alt>`` in JupyterLab, image/png with the alt in its metadata for
        the exports; text/plain is the repr, the readout and the description.
        """
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}
        png = base64.b64encode(self.png()).decode("ascii")
        bundle["image/png"] = png
        bundle["text/html"] = (
            f'<img class="course-figure" alt="{html.escape(self.description)}" '
            f'src="data:image/png;base64,{png}">'
        )
        text = f"{self!r}\n{self.readout_text()}\n{self.description}"
        bundle["text/plain"] = text
        return bundle, {"image/png": {"alt": self.description}}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        return f"{type(self).__name__}({args})"
