"""Attention speed and memory: the course's implementations against torch's SDPA.

Measured side by side in one run, float32 on the CPU, for each configuration
(single head with n = m = 256, 1024, 4096 and d = 64; batch 8 x 8 heads with
n = m = 512 and d = 64):

    loop        NumPy, one query at a time (lesson 01's y = softmax(K q) V, a
                Python loop over queries); single head, n <= 1024 only
    anp.sdpa    helpers.attention_np.scaled_dot_product_attention
    atn.sdpa    helpers.attention_torch.scaled_dot_product_attention
    atn.online  helpers.attention_torch.online_attention (default block_size,
                printed in the header): the readable loop lesson 08 teaches
    tuned.online  benchmarks/attention_tuned.py: the same result with base-2
                exponentials, cache-sized query tiles and lazy rescaling
    SDPA        torch.nn.functional.scaled_dot_product_attention

SDPA always gets 4-D inputs (batch, heads, n, d): with 2-D or 3-D inputs torch
falls back to its slower math backend and every ratio looks better than it is.
The helpers get (n, d) for a single head and (batch, heads, n, d) otherwise.

Reported per method: the median wall time (CPU time with ``--cpu-time``) over
``--repeats`` samples; its ratio to SDPA's; the achieved GFLOP/s (4 * batch *
heads * n * m * d floating-point operations: Q K^T and weights @ V) and that
rate as a percentage of a 2048^3 matmul of the same library, timed in the same
group; the peak extra memory while it runs, from ``helpers.measure`` (the
meters lesson 08 uses: NumPy through ``tracemalloc``, the smallest of three
readings; torch through its profiler's memory log, internal buffers of fused
kernels included); the largest absolute error against a float64 reference.

NumPy's and torch's thread pools both spin: a torch call right after a NumPy
matmul can run several times slower on 2 cores. So each configuration times
the NumPy methods together, pauses, then times the torch methods together, each
group round-robin (one sample of each method in turn, so that changes in the
machine's load hit all of them alike).

Run from the repository root (about a minute on 2 cores)::

    .venv/bin/python benchmarks/attention_speed.py
    .venv/bin/python benchmarks/attention_speed.py --threads 1   # torch threads
    .venv/bin/python benchmarks/attention_speed.py --smoke       # seconds

On a busy machine, read the ratios (measured side by side) and the load
average printed with every configuration, not the absolute times; or time CPU
work instead of the wall clock, on one thread each for torch and OpenBLAS::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/attention_speed.py \
        --threads 1 --cpu-time

Exit code 0 whether the targets are met or not: this is a benchmark, not a test.
"""

import argparse
import datetime
import inspect
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.attention_tuned import online_attention_tuned  # noqa: E402
from helpers import attention_np as anp  # noqa: E402
from helpers import attention_torch as atn  # noqa: E402
from helpers.measure import peak_bytes_numpy, peak_bytes_torch  # noqa: E402

D = 64
MATMUL_N = 2048  # the "large matmul" every rate is compared with
REPEATS = 7
PAUSE = 0.5  # seconds between the NumPy and the torch group
MIN_SAMPLE = 0.02  # seconds: short calls are repeated within one sample
LOOP_MAX_N = 1024
TARGET_ONLINE_N = 4096
TARGET_RATIO = 1.5  # issue 10.3: the readable forms within 1.5x of SDPA
TARGET_MEMORY_FRACTION = 1 / 8
TARGET_SDPA_MAX_N = 1024


@dataclass(frozen=True)
class Config:
    """One problem size: batch x heads independent (n, d) attentions."""

    batch: int
    heads: int
    n: int
    d: int = D

    @property
    def single_head(self):
        return self.batch == self.heads == 1

    @property
    def flops(self):
        """Q K^T and weights @ V: 2 n m d multiply-adds each, per head."""
        return 4 * self.batch * self.heads * self.n * self.n * self.d

    @property
    def score_bytes(self):
        """Bytes of the float32 (batch, heads, n, m) score tensor."""
        return 4 * self.batch * self.heads * self.n * self.n

    def __str__(self):
        if self.single_head:
            return f"single head, n = m = {self.n}, d = {self.d}"
        return f"B={self.batch}, H={self.heads}, n = m = {self.n}, d = {self.d}"


CONFIGS = (Config(1, 1, 256), Config(1, 1, 1024), Config(1, 1, 4096), Config(8, 8, 512))
SMOKE_CONFIGS = (Config(1, 1, 64, 16), Config(2, 2, 32, 8))


@dataclass
class Result:
    """One method on one configuration."""

    config: Config
    method: str
    library: str
    seconds: float
    peak_bytes: int
    max_error: float
    matmul_gflops: float
    sdpa_seconds: float = math.nan
    samples: list = field(default_factory=list)

    @property
    def ratio(self):
        return self.seconds / self.sdpa_seconds

    @property
    def gflops(self):
        return self.config.flops / self.seconds / 1e9

    @property
    def matmul_percent(self):
        return 100 * self.gflops / self.matmul_gflops


# ------------------------------------------------------------------ the methods


def per_query_loop(Q, K, V):
    """Lesson 01's one query at a time: y_t = softmax(K q_t / sqrt(d)) V (NumPy).

    Shapes:
        Q: (n, d_k)  K: (m, d_k)  V: (m, d_v)  returns (n, d_v)
    """
    scale = 1.0 / math.sqrt(Q.shape[-1])  # a Python float keeps float32
    out = np.empty((Q.shape[0], V.shape[-1]), dtype=Q.dtype)  # (n, d_v)
    for t in range(Q.shape[0]):
        scores = (K @ Q[t]) * scale  # (m,)
        weights = np.exp(scores - scores.max())  # (m,)
        out[t] = (weights / weights.sum()) @ V  # (d_v,)
    return out


def methods(config, Q, K, V):
    """{name: (library, fn)} for one configuration; fn() returns the output.

    Q, K, V are float32 NumPy arrays (batch, heads, n, d). The torch methods use
    tensors that share their memory.
    """
    Qt, Kt, Vt = (torch.from_numpy(x) for x in (Q, K, V))  # (B, H, n, d)
    if config.single_head:  # the helpers get one (n, d) head
        q, k, v = Q[0, 0], K[0, 0], V[0, 0]
        qt, kt, vt = Qt[0, 0], Kt[0, 0], Vt[0, 0]
    else:
        q, k, v, qt, kt, vt = Q, K, V, Qt, Kt, Vt
    found = {}
    if config.single_head and config.n <= LOOP_MAX_N:
        found["loop"] = ("numpy", lambda: per_query_loop(q, k, v))
    found["anp.sdpa"] = ("numpy", lambda: anp.scaled_dot_product_attention(q, k, v)[0])
    found["atn.sdpa"] = (
        "torch",
        lambda: atn.scaled_dot_product_attention(qt, kt, vt)[0],
    )
    found["atn.online"] = ("torch", lambda: atn.online_attention(qt, kt, vt))
    found["tuned.online"] = ("torch", lambda: online_attention_tuned(qt, kt, vt))
    found["SDPA"] = ("torch", lambda: F.scaled_dot_product_attention(Qt, Kt, Vt))
    return found


def matmul_fn(library, size, seed=0):
    """A (size, size) @ (size, size) float32 matmul in ``library``."""
    rng = np.random.default_rng(seed)
    A, B = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(2))
    if library == "torch":
        A, B = torch.from_numpy(A), torch.from_numpy(B)
    return lambda: A @ B


def reference(Q, K, V):
    """softmax(Q K^T / sqrt(d)) V in float64, as a NumPy array (batch, heads, n, d)."""
    Q, K, V = (torch.from_numpy(x).double() for x in (Q, K, V))
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return (weights @ V).numpy()


# ------------------------------------------------------------------ measuring


def time_round_robin(fns, repeats, clock=time.perf_counter):
    """{name: list of seconds per call}, one sample of each fn in turn.

    After one warm-up call, a fn that is faster than MIN_SAMPLE is called
    several times within one sample, so the clock's resolution does not matter.
    The order rotates from round to round, so that no method always follows the
    same one. ``clock`` is the wall clock, or ``time.process_time`` (CPU time
    of every thread of this process) for ``--cpu-time``.
    """
    calls = {}
    for name, fn in fns.items():
        start = clock()
        fn()
        calls[name] = max(1, int(MIN_SAMPLE / max(clock() - start, 1e-9)))
    samples = {name: [] for name in fns}
    names = list(fns)
    for i in range(repeats):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            fn = fns[name]
            start = clock()
            for _ in range(calls[name]):
                fn()
            samples[name].append((clock() - start) / calls[name])
    return samples


def measure(
    config,
    repeats=REPEATS,
    matmul_size=MATMUL_N,
    seed=0,
    pause=PAUSE,
    clock=time.perf_counter,
):
    """Time, peak memory and error of every method on one configuration."""
    rng = np.random.default_rng(seed)
    shape = (config.batch, config.heads, config.n, config.d)
    Q, K, V = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
    expected = reference(Q, K, V)  # (B, H, n, d) float64
    found = methods(config, Q, K, V)
    results = []
    for library in ("numpy", "torch"):
        fns = {name: fn for name, (lib, fn) in found.items() if lib == library}
        with torch.no_grad():
            # the matmul first, on its own: right after it, small calls run slower
            mm = {"mm": matmul_fn(library, matmul_size, seed)}
            matmul = time_round_robin(mm, 3, clock=clock)
            matmul_gflops = 2 * matmul_size**3 / statistics.median(matmul["mm"])
            samples = time_round_robin(fns, repeats, clock=clock)
            for name, fn in fns.items():
                out = np.asarray(fn()).reshape(expected.shape)
                meter = peak_bytes_numpy if library == "numpy" else peak_bytes_torch
                peak = meter(fn)
                results.append(
                    Result(
                        config=config,
                        method=name,
                        library=library,
                        seconds=statistics.median(samples[name]),
                        peak_bytes=peak,
                        max_error=float(np.abs(out - expected).max()),
                        matmul_gflops=matmul_gflops / 1e9,
                        samples=samples[name],
                    )
                )
        time.sleep(pause)  # let the other library's threads go to sleep
    sdpa = next(r.seconds for r in results if r.method == "SDPA")
    for r in results:
        r.sdpa_seconds = sdpa
    return results


# ------------------------------------------------------------------ reporting


def load_average():
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"
    except OSError:  # not available on this platform
        return "unknown"


def online_block_size():
    """The default block_size of atn.online_attention: what the atn.online row runs."""
    return inspect.signature(atn.online_attention).parameters["block_size"].default


def header():
    env = ", ".join(
        f"{k}={os.environ.get(k, 'unset')}"
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    )
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    versions = f"numpy {np.__version__}, torch {torch.__version__}"
    return "\n".join(
        [
            "Attention speed: the course's code against torch's SDPA (float32, CPU)",
            f"date       {now}",
            f"machine    {platform.platform()}, {platform.machine()}, "
            f"nproc {os.cpu_count()}",
            f"load avg   {load_average()} at start",
            f"python     {platform.python_version()}; {versions}",
            f"threads    torch {torch.get_num_threads()}; {env}",
            f"atn.online block_size {online_block_size()} (its default)",
        ]
    )


def table(results):
    """One block per configuration: a row per method."""
    lines = []
    for config in dict.fromkeys(r.config for r in results):
        rows = [r for r in results if r.config == config]
        rates = ", ".join(
            f"{lib} {rate:.0f}"
            for lib, rate in dict.fromkeys((r.library, r.matmul_gflops) for r in rows)
        )
        lines += [
            f"{config}  (scores {config.score_bytes / 2**20:g} MiB; "
            f"matmul {rates} GFLOP/s)",
            f"  {'method':<12} {'median ms':>10} {'x SDPA':>7} {'GFLOP/s':>8} "
            f"{'% mm':>5} {'peak MiB':>9} {'max |err|':>9}",
        ]
        for r in rows:
            lines.append(
                f"  {r.method:<12} {r.seconds * 1e3:>10.3f} {r.ratio:>6.2f}x "
                f"{r.gflops:>8.1f} {r.matmul_percent:>4.0f}% "
                f"{r.peak_bytes / 2**20:>9.2f} {r.max_error:>9.1e}"
            )
        lines.append("")
    lines.append(
        "% mm: the method's GFLOP/s as a share of the same library's float32 "
        "matmul, timed in the same group"
    )
    return "\n".join(lines)


def _find(results, method, config):
    return next(r for r in results if r.method == method and r.config == config)


def verdicts(results):
    """One line per target of the issue: MET or NOT MET."""
    lines = []
    configs = list(dict.fromkeys(r.config for r in results))

    def verdict(ok):
        return "MET" if ok else "NOT MET"

    big = [c for c in configs if c.single_head and c.n == TARGET_ONLINE_N]
    for c in big:
        online = _find(results, "atn.online", c)
        naive = _find(results, "atn.sdpa", c)
        ok = online.ratio <= TARGET_RATIO
        lines.append(
            f"target atn.online <= {TARGET_RATIO}x SDPA at n={c.n}: "
            f"{online.ratio:.2f}x  {verdict(ok)}"
        )
        fraction = online.peak_bytes / naive.peak_bytes
        lines.append(
            f"target atn.online peak <= 1/8 of atn.sdpa's at n={c.n}: "
            f"{online.peak_bytes / 2**20:.1f} vs {naive.peak_bytes / 2**20:.1f} MiB"
            f" = 1/{1 / fraction:.0f}  {verdict(fraction <= TARGET_MEMORY_FRACTION)}"
        )
    if not big:
        lines.append(f"target atn.online at n={TARGET_ONLINE_N}: not measured")
    for c in configs:
        if c.single_head and c.n <= TARGET_SDPA_MAX_N:
            naive = _find(results, "atn.sdpa", c)
            lines.append(
                f"target atn.sdpa <= {TARGET_RATIO}x SDPA at n={c.n}: "
                f"{naive.ratio:.2f}x  {verdict(naive.ratio <= TARGET_RATIO)}"
            )
    return "\n".join(lines)


def run(
    configs=CONFIGS,
    repeats=REPEATS,
    matmul_size=MATMUL_N,
    pause=PAUSE,
    out=print,
    clock=time.perf_counter,
):
    """Measure every configuration, printing progress; return the results."""
    results = []
    for i, config in enumerate(configs, 1):
        start = time.perf_counter()
        found = measure(
            config, repeats=repeats, matmul_size=matmul_size, pause=pause, clock=clock
        )
        results.extend(found)
        summary = "  ".join(f"{r.method} {r.ratio:.2f}x" for r in found)
        out(
            f"[{i}/{len(configs)}] {config}: {summary}  "
            f"({time.perf_counter() - start:.1f} s, load {os.getloadavg()[0]:.2f})"
        )
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeats", type=int, default=REPEATS, help="samples per method"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, 1 sample")
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with the process's CPU time, not the wall clock: on a busy "
        "machine, with --threads 1 and OPENBLAS_NUM_THREADS=1, it counts the "
        "work alone",
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    configs, repeats, size = CONFIGS, args.repeats, MATMUL_N
    if args.smoke:
        configs, repeats, size = SMOKE_CONFIGS, 1, 128
    print(header(), end="\n\n", flush=True)
    clock = time.process_time if args.cpu_time else time.perf_counter
    print(f"clock      {'CPU time (process_time)' if args.cpu_time else 'wall time'}")
    results = run(configs, repeats=repeats, matmul_size=size, clock=clock)
    print()
    print(table(results))
    print()
    print(verdicts(results))
    print(f"\nload avg   {load_average()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
