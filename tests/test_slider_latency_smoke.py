"""benchmarks/slider_latency.py runs: every explorer and baseline gives timings.

A smoke test only, no timing thresholds: the quickest configuration (seq_len 8,
two updates), asserting positive finite times and a sane report.
"""

import math
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "slider_latency.py"
WEIGHTS = [[[0.5, 0.5], [1.0, 0.0]], [[0.9, 0.1], [0.2, 0.8]]]  # (2, n=2, m=2)
CHECKPOINTS = (WEIGHTS, [0, 10])  # weights_per_step, steps


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script(PATH)


@pytest.fixture(scope="module")
def results(bench):
    return [
        bench.measure_attention(8, 4, repeats=2),
        bench.measure_temperature(8, repeats=2),
        bench.measure_heads(8, 4, repeats=2),
        bench.measure_checkpoint(8, repeats=2),
    ]


def _positive_finite(times):
    return len(times) > 0 and all(math.isfinite(t) and t > 0 for t in times)


def test_every_explorer_and_baseline_is_timed(results):
    names = [r.explorer for r in results]
    assert names == [
        "AttentionExplorer",
        "TemperatureExplorer",
        "HeadsExplorer",
        "CheckpointExplorer",
    ]
    for r in results:
        assert len(r.explorer_ms) == len(r.baseline_ms) == 2, r.explorer
        assert _positive_finite(r.explorer_ms), r
        assert _positive_finite(r.baseline_ms), r
        assert _positive_finite([r.build_ms, r.cold_ms]), r
        assert math.isfinite(r.ratio) and r.ratio > 0
        assert r.explorer_p90 >= r.explorer_median > 0


@pytest.mark.parametrize(
    "draw, args",
    [
        ("baseline_attention", (8, 4)),
        ("baseline_heads", (4, 64, 8)),
        ("baseline_checkpoint", (*CHECKPOINTS, [0.9, 0.8], 1)),
    ],
)
def test_baselines_encode_a_png(bench, draw, args):
    png = getattr(bench, draw)(*args)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_baseline_temperature_encodes_a_png(bench):
    png = bench.baseline_temperature([0.5, -1.0, 2.0], 0.7)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_every_explorer_of_the_sweep_is_measured(bench):
    names = {name for name, _, _ in bench.cases()}
    assert names == {
        "AttentionExplorer",
        "TemperatureExplorer",
        "HeadsExplorer",
        "CheckpointExplorer",
    }
    heads = [name for name, _, _ in bench.cases(only="heads")]
    assert heads == ["HeadsExplorer"] * (len(bench.SEQ_LENS) * len(bench.NUM_HEADS))


def test_report_has_a_row_and_a_verdict_per_explorer(bench, results):
    text = bench.table(results, repeats=2)
    for r in results:
        assert r.config in text
    verdicts = bench.verdicts(results).splitlines()
    # seq_len 8 meets no latency target line; one speed-up line per explorer
    assert len(verdicts) == len(results)
    assert all(line.endswith(")") and "MET" in line for line in verdicts)
    assert "nproc" in bench.header()
