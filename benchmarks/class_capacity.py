"""Class capacity: how many students one machine holds, measured.

What one student costs after a lesson has run, and how many students this
machine serves at once while each keeps a slider update under the course's
latency target (benchmarks/README.md: median update <= 25 ms at sequence
length 128):

1. server: a JupyterLab server (what jupyterhub-singleuser runs, with this
   environment's server extensions: nbgitpuller, nbgrader) on 127.0.0.1 after
   it served the Lab page and a notebook listing: RSS and PSS (PSS splits
   shared pages, such as the libraries every process maps, between the
   processes that share them: the honest per-student share).
2. kernel: an ipykernel that ran every code cell of the lesson (default
   notebooks/01_one_query.ipynb: NumPy, torch, matplotlib, the explorers), once
   with the BLAS/OpenMP/torch thread count left alone and once with one thread
   (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1, as
   hub/jupyterhub_config.py sets): RSS, PSS, threads, CPU seconds and wall
   time of Run All.
3. the class: N kernels (one thread each) that all ran the lesson, then all at
   once drive a TemperatureExplorer at sequence length 128 as a student
   dragging the slider does (one update every --interval seconds, for
   --seconds): each update's time inside the kernel (Python side, as
   slider_latency.py; the browser's share is not included). N grows over
   --sizes until a student's median update misses the target or memory runs
   short. PSS per kernel is read at each N.
4. culling: half the kernels are shut down (what the idle culler does) and
   the memory the machine gets back (MemAvailable) is read.

From these: students per GB (server + kernel PSS), students per core (the
largest N that met the target, divided by the cores) and the RAM and cores for
a class of 30, 100 and 300 students.

Run from the repository root (a quiet machine; several minutes):

    .venv/bin/python benchmarks/class_capacity.py
    .venv/bin/python benchmarks/class_capacity.py --sizes 1,2 --seconds 3  # smoke

Exit code 0 whether targets are met or not: this is a benchmark, not a test.
"""

import argparse
import datetime
import json
import math
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
from jupyter_client import KernelManager

if __package__ in (None, ""):  # run as a script: make `tools` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.lab import wait_until_answering  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LESSON = REPO / "notebooks" / "01_one_query.ipynb"
TARGET_SEQ_LEN, TARGET_MS = 128, 25.0  # benchmarks/README.md, slider latency
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
CLASS_SIZES = (30, 100, 300)
HEADROOM_MB = 2048  # left to the OS, the hub and the proxy
MANY_THREADS = 16  # what torch/OpenBLAS start by default on a 16-core node

SLIDER_SETUP = """
import json as _json, time as _time
import numpy as _np
from helpers import explorers as _explorers
_scores = 2.0 * _np.random.default_rng(0).standard_normal({seq_len})
_explorer = _explorers.TemperatureExplorer(_scores, temperature=1.0)
_temps = (0.1, 0.2, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 3.0, 5.0)
for _t in _temps:  # warm-up: every axis state drawn once
    _explorer.update(temperature=_t)
"""

SLIDER_DRAG = """
_start = {start!r}
while _time.time() < _start:
    _time.sleep(0.005)
_ms, _next, _k = [], _time.perf_counter(), 0
_cpu0 = _time.process_time()
while _k == 0 or _time.time() < _start + {seconds!r}:
    _t0 = _time.perf_counter()
    _explorer.update(temperature=_temps[_k % len(_temps)])
    _ms.append((_time.perf_counter() - _t0) * 1000)
    _k += 1
    _next += {interval!r}
    _time.sleep(max(0.0, _next - _time.perf_counter()))
_cpu_ms = (_time.process_time() - _cpu0) * 1000 / _k  # the kernel's CPU per update
print("LATENCIES" + _json.dumps(dict(ms=_ms, cpu_ms=_cpu_ms)))
"""


def say(message):
    print(message, flush=True)


# -- /proc readings ------------------------------------------------------------


def memory_of(pid):
    """(rss_mb, pss_mb, threads, uss_mb) of one process, from /proc.

    USS (private pages) is what the machine gets back when the process exits.
    """
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    values = {}
    for line in rollup.splitlines()[1:]:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0])  # kB
    status = Path(f"/proc/{pid}/status").read_text()
    threads = int(
        next(x for x in status.splitlines() if x.startswith("Threads:")).split()[1]
    )
    uss = values["Private_Clean"] + values["Private_Dirty"]
    return values["Rss"] / 1024, values["Pss"] / 1024, threads, uss / 1024


def cpu_seconds(pid):
    """User + system CPU seconds of one process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mem_available_mb():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def mem_total_mb():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


# -- kernels -------------------------------------------------------------------


class Kernel:
    """One student's kernel, started in notebooks/ like a lesson's."""

    def __init__(self, threads=1):
        """threads: None leaves the thread variables as found, else sets all three."""
        env = {k: v for k, v in os.environ.items() if k not in ONE_THREAD}
        if threads is not None:
            env.update({k: str(threads) for k in ONE_THREAD})
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(
            env=env,
            cwd=str(LESSON.parent),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.pid = self.km.provisioner.process.pid

    def run(self, code, timeout=600):
        """Execute code; return its stdout; raise on an error."""
        out = []

        def hook(msg):
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])

        reply = self.kc.execute_interactive(
            code, timeout=timeout, output_hook=hook, store_history=True
        )
        if reply["content"]["status"] != "ok":
            raise RuntimeError(
                f"kernel error: {reply['content'].get('ename')}: "
                f"{reply['content'].get('evalue')}\n{code[:300]}"
            )
        return "".join(out)

    def run_lesson(self, cells):
        """Run All: every code cell in order; returns (cpu_s, wall_s) of the run."""
        cpu0, wall0 = cpu_seconds(self.pid), time.perf_counter()
        for source in cells:
            self.run(source)
        return cpu_seconds(self.pid) - cpu0, time.perf_counter() - wall0

    def stop(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def lesson_cells(path):
    nb = nbformat.read(path, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code" and c.source.strip()]


# -- the server ----------------------------------------------------------------


def measure_server():
    """RSS/PSS of a JupyterLab server after serving the Lab page; stops it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    home = Path(tempfile.mkdtemp(prefix="class-capacity-"))
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
    }
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={REPO / 'notebooks'}", "--LabApp.news_url=None",
    ]  # fmt: skip
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    server = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{base}/api/status?token={token}", server, 120)
        for path in ("/lab", "/api/contents", "/lab/api/settings", "/api/kernelspecs"):
            with urllib.request.urlopen(f"{base}{path}?token={token}") as r:
                r.read()
        time.sleep(1)
        return memory_of(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# -- the class -------------------------------------------------------------------


def _in_parallel(kernels, code, timeout):
    """Run code in every kernel at once; return each kernel's stdout."""
    results, errors = [None] * len(kernels), []

    def one(i):
        try:
            results[i] = kernels[i].run(code, timeout=timeout)
        except Exception as e:  # re-raised below, after every thread ended
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(kernels))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def drive_sliders(kernels, seconds, interval, seq_len):
    """All kernels drag a slider at once.

    Returns, per kernel, {"ms": each update's time, "cpu_ms": the kernel
    process's CPU time per update, all its threads (comm messages included)}.
    """
    _in_parallel(kernels, SLIDER_SETUP.format(seq_len=seq_len), timeout=600)
    start = time.time() + 1.0  # every kernel starts dragging at the same instant
    code = SLIDER_DRAG.format(start=start, seconds=seconds, interval=interval)
    outs = _in_parallel(kernels, code, timeout=seconds + 120)
    return [json.loads(out.split("LATENCIES", 1)[1]) for out in outs]


def start_students(count, cells, kernels):
    """Grow kernels to count, each after Run All of the lesson (in parallel)."""
    new = []
    errors = []

    def one():
        try:
            k = Kernel(threads=1)
            k.run_lesson(cells)
            new.append(k)
        except Exception as e:  # reported below, the others still stopped
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(count - len(kernels))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kernels.extend(new)
    if errors:
        raise errors[0]


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, math.ceil(q * len(values)) - 1)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lesson", type=Path, default=LESSON)
    parser.add_argument(
        "--sizes", default="1,2,4,8,12,16,24,32", help="numbers of students to try"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="dragging time")
    parser.add_argument(
        "--interval", type=float, default=0.1, help="seconds between updates"
    )
    args = parser.parse_args(argv)
    sizes = sorted({int(x) for x in args.sizes.split(",")})
    cells = lesson_cells(args.lesson)
    cores = os.cpu_count() or 1
    total_mb = mem_total_mb()

    say("Class capacity: one student's cost, and students served at once")
    say(f"date       {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M:%S} UTC")
    say(
        f"machine    {platform.platform()}, {platform.machine()}, "
        f"nproc {cores}, RAM {total_mb / 1024:.1f} GB"
    )
    say("load avg   " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " at start")
    say(f"lesson     {args.lesson.relative_to(REPO)} ({len(cells)} code cells)")
    say(
        f"target     median slider update <= {TARGET_MS:.0f} ms at seq_len "
        f"{TARGET_SEQ_LEN}; a dragging student: one update every "
        f"{args.interval * 1000:.0f} ms for {args.seconds:.0f} s"
    )

    say("\n[1/4] server: JupyterLab after serving the Lab page ...")
    server_rss, server_pss, server_threads, _ = measure_server()
    say(
        f"      server  RSS {server_rss:6.0f} MB  PSS {server_pss:6.0f} MB  "
        f"threads {server_threads}"
    )

    say(
        "[2/4] kernel: Run All of the lesson; thread variables as found (here: one "
        f"per core, {cores}), {MANY_THREADS} (a {MANY_THREADS}-core node's "
        "default), and 1 ..."
    )
    single = {}
    variants = (
        ("as found", None),
        (f"{MANY_THREADS} threads", MANY_THREADS),
        ("one thread", 1),
    )
    for label, threads_wanted in variants:
        k = Kernel(threads=threads_wanted)
        try:
            cpu, wall = k.run_lesson(cells)
            time.sleep(0.5)
            rss, pss, threads, uss = memory_of(k.pid)
            single[label] = (rss, pss, threads, cpu, wall, uss)
        finally:
            k.stop()
        say(
            f"      {label:12s} RSS {rss:5.0f} MB  PSS {pss:5.0f} MB  USS {uss:5.0f} MB"
            f"  threads {threads:3d}  Run All {cpu:5.1f} CPU s, {wall:5.1f} s wall"
            f"  load {os.getloadavg()[0]:.2f}"
        )

    say("[3/4] the class: N students drag a slider at once ...")
    kernels, rows, best, cpu_ms = [], [], 0, []
    try:
        for n in sizes:
            kernel_mb = single["one thread"][1]
            if (n - len(kernels)) * kernel_mb > mem_available_mb() - HEADROOM_MB:
                say(f"      N={n}: not enough free memory to start more kernels; stop")
                break
            start_students(n, cells, kernels)
            drags = drive_sliders(kernels, args.seconds, args.interval, TARGET_SEQ_LEN)
            medians = [statistics.median(d["ms"]) for d in drags]
            every = [v for d in drags for v in d["ms"]]
            cpu_ms.extend(d["cpu_ms"] for d in drags)
            pss = [memory_of(k.pid)[1] for k in kernels]
            worst = max(medians)
            ok = worst <= TARGET_MS
            rows.append(
                (
                    n,
                    statistics.median(every),
                    percentile(every, 0.9),
                    worst,
                    statistics.mean(pss),
                    ok,
                )
            )
            say(
                f"      N={n:3d}  update median {statistics.median(every):6.1f} ms  "
                f"p90 {percentile(every, 0.9):6.1f} ms  worst student median "
                f"{worst:6.1f} ms  kernel PSS {statistics.mean(pss):5.0f} MB  "
                f"{'meets' if ok else 'MISSES'} target  CPU/update "
                f"{statistics.median(d['cpu_ms'] for d in drags):4.1f} ms  "
                f"load {os.getloadavg()[0]:.2f}"
            )
            if ok:
                best = n
            else:
                break

        say("[4/4] culling: half the kernels shut down; what the machine gets back ...")
        half = kernels[: len(kernels) // 2] if len(kernels) >= 2 else kernels[:]
        freed_pss = sum(memory_of(k.pid)[1] for k in half)
        freed_uss = sum(memory_of(k.pid)[3] for k in half)
        before = mem_available_mb()
        for k in half:
            k.stop()
            kernels.remove(k)
        time.sleep(2)
        freed = mem_available_mb() - before
        say(
            f"      culled {len(half)} idle kernel(s): their private memory (USS) "
            f"{freed_uss / max(1, len(half)):.0f} MB each, PSS "
            f"{freed_pss / max(1, len(half)):.0f} MB each; MemAvailable "
            f"{freed:+.0f} MB in all (noisy on a shared machine)"
        )
    finally:
        for k in kernels:
            k.stop()

    kernel_pss = rows[-1][4] if rows else single["one thread"][1]
    per_student = server_pss + kernel_pss
    per_gb = 1024 / per_student
    per_core = best / cores if best else 0.0
    n_last = rows[-1][0] if rows else 1
    say("\nResult")
    say(
        f"  one student (server + kernel after the lesson, PSS at N={n_last}): "
        f"{per_student:.0f} MB -> {per_gb:.2f} students per GB"
    )
    for label in ("as found", f"{MANY_THREADS} threads"):
        saved = single[label][1] - single["one thread"][1]
        say(
            f"  one thread per kernel instead of {label}: PSS {saved:+.0f} MB saved"
            f" per student, threads {single[label][2]} -> "
            f"{single['one thread'][2]}, Run All {single[label][3]:.1f} -> "
            f"{single['one thread'][3]:.1f} CPU s"
        )
    say(
        f"  culling an idle student's kernel frees its USS, "
        f"{single['one thread'][5]:.0f} MB; their server stays "
        f"({server_pss:.0f} MB PSS) until the server is culled too"
    )
    tried = rows[-1][0] if rows else 0
    limit = (
        ""
        if rows and not rows[-1][5]
        else f" (at least: the largest N tried, {tried}, still met it)"
    )
    say(
        f"  slider target held up to N={best} dragging at once on {cores} cores: "
        f"{per_core:.1f} students per core{limit}"
    )
    cpu_update = statistics.median(cpu_ms) if cpu_ms else float("nan")
    busy = cpu_update / (args.interval * 1000)  # cores one dragging student keeps busy
    say(
        f"  CPU per slider update {cpu_update:.1f} ms (the kernel, all threads): a "
        f"dragging student keeps {busy:.3f} of a core busy, so a core is saturated "
        f"at {1 / busy:.0f} students dragging at once (no headroom: the measured "
        "N above is the one to plan with)"
    )
    say(
        f"  this machine by memory: "
        f"{(total_mb - HEADROOM_MB) / per_student:.0f} students "
        f"({total_mb / 1024:.0f} GB less {HEADROOM_MB / 1024:.0f} GB headroom)"
    )
    run_all_cpu = single["one thread"][3]
    say("  sizing (all drag at once; N run all cells at once: N x CPU s / cores):")
    say(
        "  | class | RAM (GB) | cores: measured N per core | cores: CPU saturated "
        "| everyone's Run All at once |"
    )
    say("  |---|---|---|---|---|")
    for size in CLASS_SIZES:
        ram = (size * per_student + HEADROOM_MB) / 1024
        need = math.ceil(size / per_core) if per_core else float("nan")
        say(
            f"  | {size} | {ram:.0f} | {need} | {math.ceil(size * busy)} | "
            f"{size * run_all_cpu / cores / 60:.1f} min on {cores} cores |"
        )
    say("load avg   " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
