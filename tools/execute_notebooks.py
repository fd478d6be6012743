"""Execute notebooks in place, each in a fresh kernel, and store their outputs.

    python -m tools.execute_notebooks notebooks/[0-9]*.ipynb
    python tools/execute_notebooks.py notebooks/[0-9]*.ipynb   # the same

This is what ``make notebooks`` runs: stored outputs always come from a real
run, never from hand edits. Volatile metadata (execution timestamps) is
dropped so that re-running an unchanged notebook gives a small diff; widget
state is kept so that rendered notebooks show the widgets' last view. Each
cell's slide metadata is set first (see coursebuild.slide_type), so slides
always follow the lesson's headings.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

if not __package__:  # run as a script: import the tools package from the repo root
    sys.path[0] = str(Path(__file__).resolve().parents[1])
from tools.coursebuild import add_slide_metadata  # noqa: E402


def execute(path):
    nb = add_slide_metadata(nbformat.read(path, as_version=4))
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    )
    client.execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata.kernelspec = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nbformat.write(nb, path)


def main(paths):
    for name in paths:
        path = Path(name)
        start = time.perf_counter()
        print(f"executing {path} ...", end=" ", flush=True)
        execute(path)
        print(f"{time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
