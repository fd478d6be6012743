"""The course installs as documented: our helpers, one environment, clean lint."""

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


def _pins(lines):
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip().lstrip("- ").strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_requirements_and_environment_yml_pin_the_same_packages():
    req = (REPO / "requirements.txt").read_text().splitlines()
    env = (REPO / "environment.yml").read_text().splitlines()
    assert req[-1].strip() == "-e .", "requirements.txt must end with -e ."
    assert any(line.strip() == "- -e ." for line in env), "environment.yml needs -e ."
    assert _pins(req) == _pins(env)
    assert _pins(req)["torch"] == "2.13.0", "torch must stay pinned to the CPU build"


def test_requirements_pin_every_package_exactly():
    for line in (REPO / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and line != "-e .":
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[\w.+]+", line), line


def test_installed_versions_match_requirements():
    from importlib.metadata import version

    for name, pinned in _pins(
        (REPO / "requirements.txt").read_text().splitlines()
    ).items():
        installed = version(name).split("+")[0]
        assert installed == pinned, f"{name}: installed {installed}, pinned {pinned}"


# Modules that are PyTorch by design; every other helpers module must import
# without torch, so that the NumPy lessons and checks work on a machine without it.
TORCH_MODULES = {"attention_torch", "induction", "checks.induction"}
# These import torch only inside the one function that needs it.
LAZY_TORCH = {"tensors", "measure"}
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


def source_folders():
    """The folders ruff checks: the Makefile's SOURCES, named there once."""
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("SOURCES :="):
            return line.split(":=")[1].split()
    raise AssertionError("the Makefile has no SOURCES := line")


def test_ruff_check_and_format():
    paths = source_folders()
    assert {"helpers", "tests", "notebooks", "tools"} <= set(paths)
    check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def _codespell(*paths, cwd=REPO):
    return subprocess.run(
        [sys.executable, "-m", "codespell_lib", *map(str, paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def test_codespell_over_prose():
    out = _codespell("README.md", "notebooks", "helpers")
    assert out.returncode == 0, out.stdout + out.stderr


def write_cell_texts(notebooks, dest):
    """Each cell's source as a file NN_topic.cellK.md (markdown) or .py (code).

    codespell reads these instead of the .ipynb files, whose base64 images and
    printed numbers would be checked too.
    """
    import nbformat

    for path in notebooks:
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            suffix = "md" if cell.cell_type == "markdown" else "py"
            (dest / f"{path.stem}.cell{index}.{suffix}").write_text(cell.source)


def test_codespell_over_the_lessons_cells(tmp_path):
    lessons = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    write_cell_texts(lessons, tmp_path)
    # the settings (ignore-regex) come from pyproject.toml in the working directory
    out = _codespell(tmp_path)
    assert out.returncode == 0, "misspelt (file = lesson.cell index):\n" + out.stdout


def test_codespell_over_cells_finds_a_misspelling(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    misspelt = "The weigths sum to one."  # codespell:ignore weigths
    nb.cells = [nbformat.v4.new_markdown_cell(misspelt)]
    nbformat.write(nb, tmp_path / "99_x.ipynb")
    (tmp_path / "cells").mkdir()
    write_cell_texts([tmp_path / "99_x.ipynb"], tmp_path / "cells")
    out = _codespell(tmp_path / "cells")
    expected = "99_x.cell0.md:1: weigths ==> weights"  # codespell:ignore weigths
    assert out.returncode != 0 and expected in out.stdout


def test_notebooks_are_committed_executed_and_clean():
    import nbformat

    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata.kernelspec.name == "python3", path.name
        code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
        counts = [c.execution_count for c in code]
        assert None not in counts, f"{path.name}: a cell was never executed"
        assert counts == list(range(1, len(code) + 1)), (
            f"{path.name}: outputs must come from one top-to-bottom run in a "
            f"fresh kernel (make notebooks)"
        )
        for cell in code:
            assert "sys.path" not in cell.source and "os.chdir" not in cell.source
            for out in cell.outputs:
                assert out.output_type != "error", f"{path.name}: error output stored"


def test_ignored_outputs_say_why():
    import nbformat

    for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            lines = cell.source.splitlines()
            if cell.cell_type == "code" and lines and "NBVAL_IGNORE_OUTPUT" in lines[0]:
                assert len(lines) > 1 and lines[1].lstrip().startswith("#"), (
                    f"{path.name}: an NBVAL_IGNORE_OUTPUT cell needs a comment "
                    f"line saying why its output varies"
                )


def test_environment_yml_parses_for_repo2docker():
    import yaml  # PyYAML comes with jupyterlab (jupyter-events needs it)

    env = yaml.safe_load((REPO / "environment.yml").read_text())
    deps = env["dependencies"]
    assert any(str(d).startswith("python=3.11") for d in deps)
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    assert "-e ." in pip
    assert "torch==2.13.0" in pip
    # the CPU index keeps Binder images small; see README "A class on Binder"
    assert any(p.startswith("--extra-index-url") and "/cpu" in p for p in pip)


# -- the torch install (tools/install_torch.py, run by make lab / make test) -----


def test_install_picks_the_cpu_index_on_linux_and_pypi_elsewhere():
    from tools import install_torch

    assert install_torch.pinned_torch() == "torch==2.13.0"
    cpu = install_torch.index_url("cpu", "linux")
    assert cpu == "https://download.pytorch.org/whl/cpu"
    assert install_torch.index_url("cu128", "linux").endswith("/whl/cu128")
    # PyPI's macOS and Windows wheels are CPU builds already
    assert install_torch.index_url("cpu", "darwin") is None
    assert install_torch.index_url("cpu", "win32") is None
    assert install_torch.index_url("pypi", "linux") is None
    with pytest.raises(ValueError, match="TORCH must be"):
        install_torch.index_url("rocm", "linux")
    command = install_torch.pip_command("torch==2.13.0+cpu", cpu, python="py")
    assert command[:5] == ["py", "-m", "pip", "install", "torch==2.13.0+cpu"]
    assert command[command.index("--index-url") + 1] == cpu  # torch and its deps


def test_makefile_runs_the_torch_install_before_requirements():
    makefile = (REPO / "Makefile").read_text()
    assert "TORCH ?= cpu" in makefile
    install = makefile.index("-m tools.install_torch")
    assert install < makefile.index("pip install -r requirements.txt")


@pytest.fixture
def silent_server():
    """A local address that accepts connections and never answers."""
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def test_an_unreachable_index_falls_back_at_once(silent_server, capsys):
    import time

    from tools import install_torch

    start = time.perf_counter()
    assert not install_torch.reachable(silent_server, timeout=1.0)
    assert not install_torch.reachable("http://127.0.0.1:9")  # refused
    code = install_torch.main(
        ["--index", silent_server, "--probe-seconds", "1", "--dry-run"],
        environ={"TORCH": "cu128"},  # not the installed build: the probe runs
        platform="linux",
    )
    assert code == 0
    assert time.perf_counter() - start < 5, "the fallback must not wait for retries"
    assert "cannot be reached" in capsys.readouterr().err


def test_readme_layout_lists_every_module():
    readme = (REPO / "README.md").read_text()
    layout = readme[readme.index("## Layout") :].split("\n```\n")[1]
    for folder in ("helpers", "tools", "benchmarks"):
        for path in sorted((REPO / folder).glob("*.py")):
            if path.name != "__init__.py":
                assert f"  {path.name} " in layout, (
                    f"README.md, Layout: list {folder}/{path.name} under {folder}/"
                )


def test_ci_runs_the_readme_test_command_and_fails_with_it():
    ci = REPO / ".ci" / "run"
    assert ci.stat().st_mode & 0o111, ".ci/run must be executable"
    lines = [
        line.strip()
        for line in ci.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert "set -euo pipefail" in lines  # any failing step fails the run
    assert lines[-1] == "make check"  # its exit code is the run's
    readme = (REPO / "README.md").read_text()
    commands = readme.split("## The two commands")[1].split("##")[0]
    assert "make test   #" in commands and "make check" in commands
    # make check is make test and then the class tests, nothing left out
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^check: test test-slow$", makefile, re.M)
    tiers = {
        target: re.search(rf"^{target}:.*\n\t.*pytest (.*)$", makefile, re.M).group(1)
        for target in ("test", "test-slow")
    }
    assert tiers["test"].endswith('-m "not slow"'), tiers
    assert tiers["test-slow"].endswith("-m slow"), tiers


@pytest.fixture
def answering_server():
    """A local index that answers every request with 200 OK."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_reachable_index_installs_the_local_build_from_it(answering_server, capsys):
    from tools import install_torch

    code = install_torch.main(
        ["--index", answering_server, "--dry-run"],
        environ={"TORCH": "cu128"},
        platform="linux",
    )
    assert code == 0
    out = capsys.readouterr().out
    assert f"install torch==2.13.0+cu128 --index-url {answering_server}" in out


def test_a_malformed_answer_counts_as_unreachable():
    """A proxy that answers with something other than HTTP: no traceback."""
    import socket
    import threading

    from tools import install_torch

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()

        def answer_garbage():
            connection, _ = server.accept()
            with connection:
                connection.recv(1024)
                connection.sendall(b"not http at all\r\n\r\n")

        threading.Thread(target=answer_garbage, daemon=True).start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        assert not install_torch.reachable(url, timeout=2.0)
