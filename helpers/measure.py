"""Measure what a call costs: CPU time and peak memory, for NumPy and for torch.

Lesson 08 and ``benchmarks/attention_speed.py`` both measure with these, so the
numbers they print are taken the same way.

- NumPy reports every array it allocates to Python's ``tracemalloc``. Other
  threads' small Python objects only ever add to a reading, so
  ``peak_bytes_numpy`` keeps the smallest of a few.
- torch allocates outside Python; its profiler (``profile_memory=True``) logs
  every allocation and free with the running total, the private buffers of
  fused kernels included. The largest total is the peak. The profiler prints
  log lines straight to file descriptor 2; ``quiet_stderr`` hides them.

Neither meter sees the buffers a BLAS library keeps for itself.
torch is imported only by ``peak_bytes_torch``.
"""

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc


def cpu_seconds(fn, *args, repeats=5):
    """Median CPU time of fn(*args) in seconds: ``repeats`` calls after a warm-up.

    ``time.thread_time`` counts only this thread's CPU time, so other programs
    on a busy machine do not inflate it.
    """
    fn(*args)
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        fn(*args)
        times.append(time.thread_time() - start)
    return statistics.median(times)


def traced_call(fn, *args, **kwargs):
    """``(fn(*args, **kwargs), peak bytes)``: the peak that ``tracemalloc``
    records above what was allocated before the call (NumPy reports its arrays
    to it). Works whether or not tracing was already on."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    try:
        result = fn(*args, **kwargs)
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()


def peak_bytes_numpy(fn, *args, repeats=3):
    """Peak bytes allocated while fn(*args) runs, as ``tracemalloc`` records.

    fn is called ``repeats`` times and the smallest reading is returned: other
    threads only ever add to a reading.
    """
    return min(traced_call(fn, *args)[1] for _ in range(repeats))


@contextlib.contextmanager
def quiet_stderr():
    """Send what is written to file descriptor 2 (C++ log lines) to /dev/null."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_bytes_torch(fn, *args):
    """Peak bytes torch allocates while fn(*args) runs, from its profiler's log.

    Every allocation and free is an event carrying the running total
    ("Total Allocated"); the largest total is the peak.
    """
    import torch  # here, so that the NumPy meters work without torch

    cpu = [torch.profiler.ProfilerActivity.CPU]
    with quiet_stderr():
        with torch.profiler.profile(activities=cpu, profile_memory=True) as prof:
            fn(*args)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)  # every event, as JSON
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    totals = [
        e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]"
    ]
    return max(totals, default=0)
