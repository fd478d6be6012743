"""helpers.measure: the meters lesson 08 and benchmarks/attention_speed.py share."""

import os

import numpy as np
import torch

from helpers import measure

SIZE = 256


def test_peak_bytes_numpy_sees_a_known_allocation():
    peak = measure.peak_bytes_numpy(np.ones, (SIZE, SIZE))  # float64
    assert SIZE * SIZE * 8 <= peak < SIZE * SIZE * 8 + 4096  # + small Python objects


def test_peak_bytes_numpy_is_the_smallest_of_its_readings():
    sizes = iter([4 * SIZE, SIZE, 2 * SIZE])  # one size per call

    def allocate():
        np.ones((next(sizes), SIZE))

    peak = measure.peak_bytes_numpy(allocate, repeats=3)
    assert SIZE * SIZE * 8 <= peak < SIZE * SIZE * 8 + 4096
    assert next(sizes, None) is None  # called exactly three times


def test_peak_bytes_numpy_counts_temporaries_that_are_freed():
    a = np.ones((SIZE, SIZE))
    peak = measure.peak_bytes_numpy(lambda: float((a * 2).sum()))  # (a * 2) freed
    assert peak >= SIZE * SIZE * 8


def test_peak_bytes_torch_is_exact_and_sees_freed_results():
    assert measure.peak_bytes_torch(torch.ones, SIZE, SIZE) == SIZE * SIZE * 4
    a = torch.ones(SIZE, 16)
    assert measure.peak_bytes_torch(torch.matmul, a, a.T) == SIZE * SIZE * 4
    assert measure.peak_bytes_torch(lambda: None) == 0


def test_quiet_stderr_hides_file_descriptor_2_and_restores_it(capfd):
    with measure.quiet_stderr():
        os.write(2, b"C++ log line\n")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_quiet_stderr_restores_it_after_an_error(capfd):
    try:
        with measure.quiet_stderr():
            raise RuntimeError("inside")
    except RuntimeError:
        pass
    os.write(2, b"seen\n")
    assert capfd.readouterr().err == "seen\n"


def test_cpu_seconds_warms_up_then_takes_the_median():
    calls = []

    def work(n):
        calls.append(n)
        return sum(range(n))

    seconds = measure.cpu_seconds(work, 200_000, repeats=3)
    assert calls == [200_000] * 4  # one warm-up call, then three timed
    assert 0 < seconds < 5
