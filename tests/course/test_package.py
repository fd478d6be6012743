"""The helpers package: ours (not PyPI's), torch-free where it says, in the README."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import helpers

REPO = Path(__file__).resolve().parents[2]


HELPER_MODULES = sorted((REPO / "helpers").rglob("*.py"))


def module_name(path):
    """helpers/checks/masks.py -> "checks.masks"; helpers/__init__.py -> ""."""
    parts = path.relative_to(REPO / "helpers").with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def test_helpers_is_ours_not_the_pypi_package():
    # A PyPI package literally named "helpers" exists and would shadow ours.
    assert Path(helpers.__file__).resolve().is_relative_to(REPO)


def test_version_is_exposed():
    assert re.fullmatch(r"\d+\.\d+\.\d+", helpers.__version__)


# Modules that are PyTorch by design; every other helpers module must import
# without torch, so that the NumPy lessons and checks work on a machine without it.
TORCH_MODULES = {"attention_torch", "induction", "checks.induction"}

# These import torch only inside the one function that needs it.
LAZY_TORCH = {"tensors", "measure", "checks.parameters"}

WITHOUT_TORCH = [
    name
    for name in map(module_name, HELPER_MODULES)
    if name and name not in TORCH_MODULES
]


@pytest.fixture(scope="module")
def brought_in():
    """{module: top-level packages that importing helpers.<module> loaded}.

    One fresh interpreter imports ``helpers`` and then each module in turn,
    recording what each import adds to ``sys.modules``.
    """
    code = (
        "import json, sys\n"
        "found = {}\n"
        "for name in sys.argv[1:]:\n"
        "    before = set(sys.modules)\n"
        "    __import__(name)\n"
        "    new = set(sys.modules) - before\n"
        "    found[name] = sorted({m.split('.')[0] for m in new})\n"
        "print(json.dumps(found))\n"
    )
    names = ["helpers", *(f"helpers.{stem}" for stem in WITHOUT_TORCH)]
    out = subprocess.run(
        [sys.executable, "-c", code, *names], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("stem", ["", *WITHOUT_TORCH])
def test_importing_never_loads_torch(brought_in, stem):
    name = f"helpers.{stem}" if stem else "helpers"
    assert "torch" not in brought_in[name], f"import {name} loaded torch"


@pytest.mark.parametrize("stem", [s for s in WITHOUT_TORCH if s not in LAZY_TORCH])
def test_numpy_modules_have_no_torch_import_at_all(stem):
    [path] = [p for p in HELPER_MODULES if module_name(p) == stem]
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "torch" not in imported, f"{path.relative_to(REPO)} imports torch"


@pytest.mark.parametrize("path", HELPER_MODULES, ids=lambda p: p.name)
def test_helpers_never_use_np_sqrt_for_the_scale(path):
    # np.sqrt(d_k) is a float64 scalar in NumPy 2: it upcasts float32 arrays.
    assert "np.sqrt(d_k)" not in path.read_text()


def test_readme_layout_lists_every_module():
    """Every module and package of helpers/, tools/ and benchmarks/ is in the tree."""
    readme = (REPO / "README.md").read_text()
    layout = readme[readme.index("## Layout") :].split("\n```\n")[1]
    for folder in ("helpers", "tools", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            depth = len(path.relative_to(REPO / folder).parts)
            if path.name != "__init__.py":
                entry = "  " * depth + path.name + " "
                assert entry in layout, f"README.md, Layout: list {path} as {entry!r}"
            elif depth == 2:
                entry = f"  {path.parent.name}/ "
                assert entry in layout, f"README.md, Layout: list {path.parent}/"
