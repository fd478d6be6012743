"""benchmarks/class_capacity.py cannot rot: its readings and one kernel, small.

No thresholds (it is a benchmark): the /proc readings are sane, and one kernel
with one thread runs a cell, drags a slider for a moment and reports latencies.
"""

import os

from benchmarks import class_capacity as cc


def test_proc_readings_are_sane():
    rss, pss, threads, uss = cc.memory_of(os.getpid())
    assert 0 < uss <= pss <= rss
    assert threads >= 1
    assert cc.cpu_seconds(os.getpid()) > 0
    assert 0 < cc.mem_available_mb() < cc.mem_total_mb()
    assert cc.percentile([5, 1, 4, 2, 3], 0.9) == 5
    assert cc.percentile([5, 1, 4, 2, 3], 0.5) == 3
    cells = cc.lesson_cells(cc.LESSON)
    assert cells and all(c.strip() for c in cells)


def test_one_kernel_drags_a_slider():
    kernel = cc.Kernel(threads=1)
    try:
        assert kernel.run("import os; print(os.environ['OMP_NUM_THREADS'])") == "1\n"
        (drag,) = cc.drive_sliders([kernel], seconds=0.5, interval=0.1, seq_len=8)
        assert drag["ms"] and all(ms > 0 for ms in drag["ms"])
        assert drag["cpu_ms"] > 0
        rss, pss, _, uss = cc.memory_of(kernel.pid)
        assert 0 < uss <= pss <= rss
    finally:
        kernel.stop()
