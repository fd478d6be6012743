"""Install the chosen torch build into the running Python, before requirements.txt.

    python -m tools.install_torch              # TORCH=cpu, the default
    TORCH=cu128 python -m tools.install_torch  # a CUDA build instead
    python -m tools.install_torch --dry-run    # say what would happen
    python -m tools.install_torch --stamp F    # touch F if the TORCH build is in

``make lab`` and ``make test`` run this with the venv's Python and then
``pip install -r requirements.txt``, whose ``torch==<pin>`` is then already
satisfied. The version comes from requirements.txt; ``TORCH`` picks the build:

- ``cpu`` (default) on Linux: torch from PyTorch's CPU wheel index, about
  190 MB to download (the small packages torch needs, e.g. sympy and filelock,
  come from that index too, which mirrors them; requirements.txt's pins then
  apply). PyPI's Linux torch is a CUDA build that pulls several GB of nvidia-*
  packages, which the lessons never use.
- ``cu128``, ``cu126``, ...: from PyTorch's index for that CUDA version.
- ``pypi``, and any choice on macOS and Windows: nothing here; requirements.txt
  takes torch from PyPI, whose macOS and Windows wheels are CPU builds already.

Where the index does not answer within PROBE_SECONDS, or pip cannot install
from it, this says so and returns at once: requirements.txt then installs
PyPI's torch (on Linux, the CUDA build) instead of stalling in pip's retries.
After the install the Makefile runs ``--stamp``, which writes its install stamp
only when the installed torch is the chosen build, so that after such a fallback
the next ``make`` tries PyTorch's index again instead of keeping PyPI's torch.
"""

import argparse
import http.client
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"
INDEX = "https://download.pytorch.org/whl/{tag}"
PROBE_SECONDS = 5.0


def pinned_torch(requirements=REQUIREMENTS):
    """The ``torch==X.Y.Z`` line of requirements.txt."""
    for line in Path(requirements).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("torch=="):
            return line
    raise ValueError(f"{requirements} does not pin torch (torch==X.Y.Z)")


def check_choice(choice):
    """Refuse a TORCH value that is not cpu, pypi or a CUDA tag, on every platform."""
    if choice not in ("cpu", "pypi") and not (
        choice.startswith("cu") and choice[2:].isdigit()
    ):
        raise ValueError(
            f"TORCH must be cpu, pypi or a CUDA tag like cu128; got {choice!r}"
        )


def index_url(choice, platform=sys.platform):
    """PyTorch's wheel index for ``choice`` ("cpu", "cu128", ...), or None for PyPI."""
    check_choice(choice)
    if choice == "pypi" or not platform.startswith("linux"):
        return None
    return INDEX.format(tag=choice)


def is_chosen_build(choice, version, platform=sys.platform):
    """Whether the installed torch ``version`` is the build ``choice`` asks for.

    On Linux, cpu and the CUDA tags need their local version (2.13.0+cpu); PyPI's
    torch has none. Elsewhere, and for pypi, any installed torch will do.
    """
    if version is None:
        return False
    if index_url(choice, platform) is None:
        return True
    return version.endswith(f"+{choice}")


def write_stamp(path, choice, version, platform=sys.platform):
    """Touch ``path`` if the installed torch is the chosen build; say so either way."""
    if is_chosen_build(choice, version, platform):
        Path(path).touch()
        return True
    print(
        f"torch: {version or 'no torch'} is installed, not the {choice} build; the "
        "next make will try PyTorch's index again",
        file=sys.stderr,
    )
    return False


def reachable(url, timeout=PROBE_SECONDS):
    """True if ``url`` answers a request with success within ``timeout`` seconds.

    The request runs in a thread that is waited for ``timeout`` seconds at most:
    urlopen's own timeout does not cover a DNS lookup that hangs.
    """
    answered = []

    def probe():
        try:
            request = urllib.request.Request(url, method="HEAD")
            with urllib.request.urlopen(request, timeout=timeout):
                answered.append(True)
        except (OSError, ValueError, http.client.HTTPException):
            pass  # URLError, HTTPError, timeouts, a proxy's malformed answer

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answered)


def installed(requirement):
    """The installed version of the required package, or None."""
    try:
        return metadata.version(requirement.split("==")[0])
    except metadata.PackageNotFoundError:
        return None


def pip_command(requirement, url, python=sys.executable):
    """pip installing ``requirement`` from the index ``url`` alone."""
    # the probe found the index; a short timeout and one retry keep a failing
    # download from stalling the install for minutes
    options = ["--index-url", url, "--timeout", "15", "--retries", "1"]
    return [python, "-m", "pip", "install", requirement, *options]


def main(argv=None, environ=os.environ, platform=sys.platform):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print, do nothing")
    parser.add_argument("--index", help="a wheel index URL instead of PyTorch's")
    parser.add_argument(
        "--stamp",
        metavar="FILE",
        help="install nothing; touch FILE if the installed torch is the TORCH build",
    )
    parser.add_argument(
        "--probe-seconds",
        type=float,
        default=PROBE_SECONDS,
        help="how long the index may take to answer",
    )
    args = parser.parse_args(argv)
    choice = environ.get("TORCH", "cpu") or "cpu"
    check_choice(choice)
    requirement = pinned_torch()
    if args.stamp:
        write_stamp(args.stamp, choice, installed(requirement), platform)
        return 0
    url = args.index or index_url(choice, platform)
    if url is None:
        print(f"torch: {requirement} from PyPI (requirements.txt)")
        return 0
    want = f"{requirement.split('==')[1]}+{choice}"
    if installed(requirement) == want:
        print(f"torch: {want} is installed")
        return 0
    if not reachable(url + "/torch/", args.probe_seconds):
        print(
            f"torch: {url} cannot be reached; requirements.txt installs {requirement}"
            " from PyPI instead (on Linux a CUDA build: several GB)",
            file=sys.stderr,
        )
        return 0
    # the local version (+cpu) replaces a build of the same version from PyPI
    command = pip_command(f"{requirement}+{choice}", url)
    print("torch:", " ".join(command), flush=True)
    if args.dry_run:
        return 0
    if subprocess.run(command).returncode != 0:
        print(
            f"torch: pip could not install {requirement} from {url}; requirements.txt"
            " installs it from PyPI instead (on Linux a CUDA build: several GB)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
