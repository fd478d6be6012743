"""The CPU kernels every stored output is computed with, on any x86-64 machine.

torch and the libraries it calls choose their kernels by the widest
instruction set the CPU has: torch's own vectorised loops (ATen) and the
products it hands to oneDNN or MKL run 16 floats at a time with AVX-512 and 8
with AVX2, and sum in a different order. The results agree
to rounding, but a float32 training run amplifies rounding: on an AVX-512
machine lesson 10's trained model prints 0.16 where its stored output, made
with AVX2, says 0.15, and nbval fails (found on 2026-12-02). Every run that
stores or compares outputs (pytest and nbval, ``make notebooks``, the builds,
the Chinese edition, nbgrader) asks torch for its AVX2 kernels here, so that
any x86-64 machine with AVX2 or more reproduces the stored outputs exactly.

The variables are torch's, oneDNN's and MKL's own (``ATEN_CPU_CAPABILITY``,
``ONEDNN_MAX_CPU_ISA``, ``MKL_ENABLE_INSTRUCTIONS``): torch's CPU build hands
most float32 matrix products (``torch.matmul``, ``nn.Linear``) to MKL, which
chooses its own kernels. MKL gave the same digits either way on the AVX-512
machine of 2026-12-02, but not on a Xeon with AMX and AVX-512 FP16: there
lesson 10 printed 0.29 where its stored output says 0.30 until MKL too was held
to AVX2 (found on 2026-12-03; ``MKL_VERBOSE=1`` shows the kernels it picks).
NumPy's OpenBLAS gave the stored digits on both. A learner's ``make lab`` does
not set them: their kernels run at full speed and may print a last digit that
differs from the stored output.
"""

import os
import platform

KERNEL_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


def apply(environ=os.environ):
    """Set KERNEL_ENV in ``environ`` (kept where already set) on x86-64 only;
    the kernels a process starts inherit it."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        for name, value in KERNEL_ENV.items():
            environ.setdefault(name, value)
