"""Stored outputs are compared with torch's AVX2 kernels on every x86-64 machine
(tools/same_kernels.py): the test processes and every build carry the setting."""

import os
import platform
import subprocess
import sys

import pytest

from tools import same_kernels

X86 = platform.machine().lower() in ("x86_64", "amd64")


def _python_prints(code, env):
    """What a fresh Python started with ``env`` prints for ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.mark.skipif(not X86, reason="the setting is for x86-64 CPUs only")
def test_pytest_and_its_kernels_ask_for_avx2():
    for name, value in same_kernels.KERNEL_ENV.items():
        assert os.environ.get(name) == value, name


@pytest.mark.skipif(not X86, reason="the setting is for x86-64 CPUs only")
def test_torch_runs_its_avx2_kernels():
    """torch reads the variable: a fresh process reports AVX2, not AVX512."""
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    env = {**os.environ, **same_kernels.KERNEL_ENV}
    assert _python_prints(code, env) == "AVX2"


def test_apply_keeps_a_value_already_set():
    environ = {"ATEN_CPU_CAPABILITY": "default"}
    same_kernels.apply(environ)
    assert environ["ATEN_CPU_CAPABILITY"] == "default"
    if X86:
        assert environ["ONEDNN_MAX_CPU_ISA"] == "AVX2"
        assert environ["MKL_ENABLE_INSTRUCTIONS"] == "AVX2"


def test_the_builds_apply_it():
    """Every command that stores outputs imports tools.coursebuild, which applies it."""
    # rfc3987_syntax (an optional backend of jsonschema, which nbformat imports)
    # compiles about 35 Earley parsers when imported: some 3 s of this run, and
    # no part of the setting. Marked missing, jsonschema leaves it out.
    code = (
        "import sys; sys.modules['rfc3987_syntax'] = None\n"
        "import os, tools.coursebuild; print(os.environ.get('ONEDNN_MAX_CPU_ISA'))"
    )
    env = {k: v for k, v in os.environ.items() if k not in same_kernels.KERNEL_ENV}
    assert _python_prints(code, env) == ("AVX2" if X86 else "None")
