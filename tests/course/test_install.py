"""The install: the learner and maintainer pins, torch's CPU build, Makefile, CI."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _pins(lines):
    """{package: version} of the ``name==version`` lines (yaml ``- `` allowed)."""
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip().lstrip("- ").strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


LEARNER = REPO / "requirements.txt"
DEVELOPER = REPO / "requirements-dev.txt"
# what a learner's JupyterLab never needs: the tests, the builds, the class tools
MAINTAINER_ONLY = {
    "pytest",
    "pytest-xdist",
    "nbval",
    "hypothesis",
    "ruff",
    "codespell",
    "playwright",
    "jupyterhub",
    "nbgrader",
    "nbgitpuller",
    "nbclient",
}


def requirement_lines(path):
    """The requirement lines of ``path``, following ``-r`` includes."""
    lines = []
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            lines += requirement_lines(path.parent / line[3:].strip())
        elif line:
            lines.append(line)
    return lines


def test_both_sets_pin_every_package_exactly():
    for path in (LEARNER, DEVELOPER):
        for line in requirement_lines(path):
            if line != "-e .":
                assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[\w.+]+", line), (path, line)
    assert requirement_lines(LEARNER)[-1] == "-e .", "requirements.txt ends with -e ."
    assert DEVELOPER.read_text().count("-r requirements.txt") == 1
    assert _pins(requirement_lines(LEARNER))["torch"] == "2.13.0"


def test_the_learner_set_leaves_out_the_maintainer_tools():
    learner = set(_pins(requirement_lines(LEARNER)))
    developer = set(_pins(requirement_lines(DEVELOPER)))
    assert not learner & MAINTAINER_ONLY, learner & MAINTAINER_ONLY
    assert MAINTAINER_ONLY <= developer and learner < developer
    assert {"torch", "numpy", "matplotlib", "ipywidgets", "jupyterlab"} <= learner
    assert "jupyterlab-slideshow" in learner  # live slides work for learners too


def _rule(makefile, target):
    """The prerequisites and the recipe of ``target`` in the Makefile."""
    match = re.search(rf"^{re.escape(target)}:(.*)\n((?:\t.*\n?)*)", makefile, re.M)
    assert match, f"the Makefile has no {target} rule"
    return match.group(1).split(), match.group(2)


def test_make_lab_installs_the_learner_set_only():
    makefile = (REPO / "Makefile").read_text()
    assert _rule(makefile, "lab")[0] == ["$(STAMP)"]
    stamp_needs, stamp_recipe = _rule(makefile, "$(STAMP)")
    assert "requirements-dev.txt" not in " ".join(stamp_needs) + stamp_recipe
    assert "pip install -r requirements.txt" in stamp_recipe
    dev_needs, dev_recipe = _rule(makefile, "$(DEV_STAMP)")
    assert "$(STAMP)" in dev_needs
    assert "pip install -r requirements-dev.txt" in dev_recipe
    for target in (
        "test",
        "test-browser",
        "test-slow",
        "notebooks",
        "student",
        "slides",
        "html",
    ):
        assert "$(DEV_STAMP)" in _rule(makefile, target)[0], target


def test_installed_versions_match_requirements():
    from importlib.metadata import version

    for name, pinned in _pins(requirement_lines(DEVELOPER)).items():
        installed = version(name).split("+")[0]
        assert installed == pinned, f"{name}: installed {installed}, pinned {pinned}"


def _environment_pip():
    import yaml  # PyYAML comes with jupyterlab (jupyter-events needs it)

    env = yaml.safe_load((REPO / "environment.yml").read_text())
    deps = env["dependencies"]
    assert any(str(d).startswith("python=3.11") for d in deps)
    return next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)


# what a class image adds to the learner's set (tests/hub checks the hub's side)
CLASS_TOOLS = ("jupyterhub", "nbgitpuller", "nbgrader")


def test_environment_yml_is_the_learner_set_and_the_class_tools():
    pip = _environment_pip()
    assert "-e ." in pip
    pins = _pins(p for p in pip if not p.startswith("torch"))
    learner = _pins(requirement_lines(LEARNER))
    developer = _pins(requirement_lines(DEVELOPER))
    expected = {k: v for k, v in learner.items() if k != "torch"}
    assert pins == expected | {tool: developer[tool] for tool in CLASS_TOOLS}


def test_environment_yml_takes_only_torch_from_pytorchs_index():
    """One wheel URL for Binder's platform: no index option for every package."""
    pip = _environment_pip()
    assert not any(p.startswith("--") for p in pip), "no pip option applies to all"
    torch = [p for p in pip if p.startswith("torch")]
    assert len(torch) == 2, torch
    url, elsewhere = sorted(torch, key=lambda p: "@" not in p)
    wheel, marker = (part.strip() for part in url.split("@", 1)[1].split(";"))
    pin = _pins(requirement_lines(LEARNER))["torch"]
    assert wheel.startswith(f"https://download.pytorch.org/whl/cpu/torch-{pin}%2Bcpu-")
    assert "cp311-cp311" in wheel and wheel.endswith("x86_64.whl")
    assert marker == 'sys_platform == "linux" and platform_machine == "x86_64"'
    assert elsewhere == (
        f'torch=={pin} ; sys_platform != "linux" or platform_machine != "x86_64"'
    )


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
    for platform in ("linux", "darwin", "win32"):  # a typo is refused everywhere
        with pytest.raises(ValueError, match="TORCH must be"):
            install_torch.index_url("rocm", platform)
    command = install_torch.pip_command("torch==2.13.0+cpu", cpu, python="py")
    assert command[:5] == ["py", "-m", "pip", "install", "torch==2.13.0+cpu"]
    assert command[command.index("--index-url") + 1] == cpu  # torch and its deps


def test_the_stamp_is_written_only_for_the_chosen_build(tmp_path, capsys):
    from tools import install_torch

    stamp = tmp_path / ".installed-cpu"
    # PyPI's torch after the CPU index could not be reached: no stamp, retry later
    assert not install_torch.write_stamp(stamp, "cpu", "2.13.0", "linux")
    assert not stamp.exists()
    assert "try PyTorch's index again" in capsys.readouterr().err
    assert not install_torch.write_stamp(stamp, "cu128", "2.13.0+cpu", "linux")
    assert install_torch.write_stamp(stamp, "cpu", "2.13.0+cpu", "linux")
    assert stamp.exists()
    # macOS and Windows: PyPI's torch is the CPU build
    assert install_torch.write_stamp(tmp_path / "mac", "cpu", "2.13.0", "darwin")
    assert not install_torch.write_stamp(tmp_path / "none", "cpu", None, "darwin")


def test_the_stamp_option_installs_nothing(tmp_path, monkeypatch):
    from tools import install_torch

    monkeypatch.setattr(install_torch, "installed", lambda requirement: "2.13.0+cpu")
    monkeypatch.setattr(install_torch.subprocess, "run", None)  # fails if called
    stamp = tmp_path / "stamp"
    assert install_torch.main(["--stamp", str(stamp)], {"TORCH": "cpu"}, "linux") == 0
    assert stamp.exists()
    with pytest.raises(ValueError, match="TORCH must be"):
        install_torch.main(["--stamp", str(stamp)], {"TORCH": "rocm"}, "darwin")


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
    # make check is make test, the browser checks, the class tests and the
    # Chinese edition's runs, nothing left out: every browser test that is not
    # slow is in test-browser, every slow test in test-slow or test-zh
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^check: test test-browser test-slow test-zh$", makefile, re.M)
    tiers = {
        target: re.search(rf"^{target}:.*\n\t.*pytest (.*)$", makefile, re.M).group(1)
        for target in ("test", "test-browser", "test-slow", "test-zh")
    }
    assert tiers["test"].endswith('-m "not slow and not browser"'), tiers
    assert tiers["test-browser"].endswith('-m "browser and not slow"'), tiers
    assert tiers["test-slow"].endswith('-m "slow and not zh"'), tiers
    assert tiers["test-zh"].endswith("-m zh"), tiers


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
