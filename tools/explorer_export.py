"""Explorers in exported pages: frames that move with their sliders, or a figure.

A live explorer needs a kernel. In an exported page it becomes one of two
honest things:

- ``make html`` executes each lesson; after the last cell, :data:`FRAME_CODE`
  runs in the same kernel and renders a frame (PNG + readout text) for every
  point of a small slider grid of each explorer (its key controls, at most
  ``MAX_FRAMES`` frames). :func:`frames_html` turns them into plain range
  inputs and a few lines of script that swap the frame: no kernel, no widget
  manager, a control that moves always changes the plot.
- Where no frames exist (decks, built from the stored outputs), the explorer is
  replaced by its stored picture (the ``image/png`` every explorer puts in its
  output) and a line saying that sliders need Jupyter.
"""

import html
import json
import re

import nbformat

EXPLORER_CELL = re.compile(r"\b(?:explorers|widgets)\.(\w+Explorer)\(")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MAX_FRAMES = 48
MAX_VALUES = 16  # values per control, evenly spaced, the current one kept
# the controls a page offers, per explorer (the rest stay as the lesson set them)
KEY_CONTROLS = {
    "TemperatureExplorer": ["temperature"],
    "AttentionExplorer": ["d_k", "scaled"],
    "HeadsExplorer": ["num_heads", "projections"],
    "CheckpointExplorer": ["step_index"],
    "KVBudgetExplorer": ["context", "model"],  # 9 x 5 frames
    "TopKExplorer": ["k", "preset"],  # 14 x 2 frames
}
# an explorer stored before explorers described their frames (re-execute it)
STILL_ALT = "The explorer's figure at the values the lesson sets."
NEEDS_JUPYTER = (
    "A still picture of the explorer at the values the lesson sets. Its sliders "
    "need a running kernel: open the lesson in JupyterLab (<code>make lab</code>) "
    "or present it as live slides (README, For instructors)."
)
# the same on a slide, where every word counts against the room's reading
ON_SLIDES = (
    "A still at the lesson's values: its sliders need a running kernel "
    "(the live slides, in JupyterLab)."
)

# Runs in the lesson's kernel after its last cell; writes JSON to {path!r}.
FRAME_CODE = """\
def _course_frames(path, key_controls, max_frames, max_values):
    import base64, itertools, json
    from helpers.explorers.render import Explorer

    def pick(values, current):
        if len(values) <= max_values:
            return list(values)
        step = (len(values) - 1) / (max_values - 1)
        keep = {{values[round(i * step)] for i in range(max_values)}} | {{current}}
        return [v for v in values if v in keep]

    def label(slider, value):
        for option in getattr(slider, "options", ()):
            if isinstance(option, tuple) and option[1] == value:
                return str(option[0])
        return str(value)

    found = {{}}
    for number, obj in list(Out.items()):
        if not isinstance(obj, Explorer):
            continue
        grid = obj.slider_grid()
        names = [n for n in key_controls.get(type(obj).__name__, []) if n in grid]
        names = names or list(grid)[:1]
        start = dict(obj.values)
        values = [pick(grid[n], start[n]) for n in names]
        while len(names) > 1 and len(list(itertools.product(*values))) > max_frames:
            names, values = names[:-1], values[:-1]
        frames = {{}}
        try:
            for combo in itertools.product(*values):
                obj.update(**dict(zip(names, combo)))
                key = ",".join(str(vals.index(v)) for vals, v in zip(values, combo))
                frames[key] = [
                    base64.b64encode(obj.png()).decode("ascii"),
                    obj.readout_text(),
                    obj.description,
                ]
        finally:
            obj.update(**start)
        found[str(number)] = {{
            "class": type(obj).__name__,
            "controls": [
                {{
                    "name": n,
                    "title": obj.sliders[n].description or n,
                    "labels": [label(obj.sliders[n], v) for v in vals],
                    "start": vals.index(start[n]),
                }}
                for n, vals in zip(names, values)
            ],
            "frames": frames,
        }}
    with open(path, "w") as f:
        json.dump(found, f)


_course_frames({path!r}, {key_controls!r}, {max_frames!r}, {max_values!r})
del _course_frames
"""

SCRIPT = """\
(function () {
  var root = document.currentScript.parentElement;
  var data = JSON.parse(root.querySelector(".course-explorer-data").textContent);
  var inputs = root.querySelectorAll("input[type=range]");
  function show() {
    var key = Array.prototype.map.call(inputs, function (i) { return i.value; });
    var frame = data.frames[key.join(",")];
    var img = root.querySelector("img");
    img.src = "data:image/png;base64," + frame[0];
    img.alt = frame[2] || frame[1];
    root.querySelector(".course-explorer-readout").textContent = frame[1];
    root.querySelector(".course-explorer-description").textContent =
      frame[2] || frame[1];
    inputs.forEach(function (input, k) {
      var label = data.controls[k].labels[input.value];
      input.parentElement.querySelector("output").textContent = label;
      input.setAttribute("aria-valuetext", label);
    });
  }
  inputs.forEach(function (input) { input.addEventListener("input", show); });
})();
"""
# a keyboard user sees which slider has the focus, whatever the page's theme
STYLE = (
    "<style>.course-explorer input[type=range]:focus-visible "
    "{outline: 3px solid #1a5fb4; outline-offset: 3px}"
    ".course-explorer-description {position: absolute; width: 1px; height: 1px; "
    "overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap}</style>"
)


def frame_code(path):
    """The kernel code that writes every explorer's frames to ``path``."""
    return FRAME_CODE.format(
        path=str(path),
        key_controls=KEY_CONTROLS,
        max_frames=MAX_FRAMES,
        max_values=MAX_VALUES,
    )


def is_explorer_cell(cell):
    return cell.cell_type == "code" and bool(EXPLORER_CELL.search(cell.source))


def _control_html(explorer_id, number, control):
    """One labelled range input: arrow keys move it, its value is read as text."""
    ident = f"{explorer_id}-{number}"
    shown = html.escape(control["labels"][control["start"]])
    title = html.escape(control.get("title") or control["name"])
    return (
        '<span class="course-explorer-control" style="margin-right: 2em; '
        f'white-space: nowrap"><label for="{ident}">{title}</label> '
        f'<input type="range" id="{ident}" min="0" '
        f'max="{len(control["labels"]) - 1}" step="1" value="{control["start"]}" '
        f'aria-valuetext="{shown}"> <output for="{ident}" '
        f'style="display: inline-block; min-width: 4em">{shown}</output></span>'
    )


def frames_html(explorer, note=None, explorer_id="course-explorer"):
    """A slider per key control, the frame, the readout, and the swap script.

    The frame's alt and a polite live line (visually hidden) hold the frame's
    description; both change with the frame. ``explorer_id`` prefixes the
    sliders' ids (unique per page). ``note``: the line under the frame (by
    default, how many settings it has)."""
    start = ",".join(str(c["start"]) for c in explorer["controls"])
    png, readout, *described = explorer["frames"][start]
    description = described[0] if described else readout  # frames of old builds
    controls = "".join(
        _control_html(explorer_id, k, c) for k, c in enumerate(explorer["controls"])
    )
    data = json.dumps(
        {"controls": explorer["controls"], "frames": explorer["frames"]}
    ).replace("</", "<\\/")
    count = len(explorer["frames"])
    note = note or (
        f"{count} settings rendered when this page was built; in JupyterLab the "
        "explorer computes any setting of every control."
    )
    alt = html.escape(description)
    return (
        f'<div class="course-explorer" data-explorer="{explorer["class"]}">{STYLE}'
        f'<div class="course-explorer-controls">{controls}</div>'
        f'<pre class="course-explorer-readout">{html.escape(readout)}</pre>'
        f'<img class="course-explorer-frame" alt="{alt}" '
        f'src="data:image/png;base64,{png}">'
        f'<p class="course-explorer-description" aria-live="polite">{alt}</p>'
        f'<p class="course-explorer-note">{note}</p>'
        f'<script type="application/json" class="course-explorer-data">{data}'
        f"</script><script>{SCRIPT}</script></div>"
    )


def still_outputs(cell, note=NEEDS_JUPYTER):
    """The explorer's stored picture, described, and a line saying sliders need
    Jupyter. The description is the one the explorer stored with its frame."""
    outputs = []
    for output in cell.get("outputs", []):
        png = output.get("data", {}).get("image/png")
        if png:
            alt = output.get("metadata", {}).get("image/png", {}).get("alt")
            alt = alt or STILL_ALT
            img = (
                f'<img class="course-figure" alt="{html.escape(alt)}" '
                f'src="data:image/png;base64,{png}">'
            )
            outputs.append(
                nbformat.v4.new_output(
                    "display_data",
                    data={"image/png": png, "text/html": img},
                    metadata={"image/png": {"alt": alt}},
                )
            )
            break
    note_html = f'<p class="course-explorer-note">{note}</p>'
    outputs.append(
        nbformat.v4.new_output("display_data", data={"text/html": note_html})
    )
    return outputs


def _frames_note(explorer):
    count = len(explorer["frames"])
    return f"{count} settings rendered at build time; live slides compute any."


def replace_explorers(nb, frames=None, note=None):
    """Give every explorer cell working frames or a still; drop widget state.

    ``frames``: what :data:`FRAME_CODE` wrote, keyed by execution count. Without
    the widget state no page loads a widget manager, so no control is left that
    moves while nothing changes. ``note``: a shorter line for the still and the
    frames (decks: ON_SLIDES).
    """
    frames = frames or {}
    for number, cell in enumerate(nb.cells):
        if not is_explorer_cell(cell):
            continue
        explorer = frames.get(str(cell.get("execution_count")))
        if explorer and explorer["frames"]:
            page = frames_html(
                explorer,
                note and _frames_note(explorer),
                explorer_id=f"course-explorer-{number}",
            )
            cell.outputs = [
                nbformat.v4.new_output("display_data", data={"text/html": page})
            ]
        else:
            cell.outputs = still_outputs(cell, note or NEEDS_JUPYTER)
    for cell in nb.cells:  # any other widget view would be a dead control
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    nb.metadata.pop("widgets", None)
    return nb
