"""benchmarks/slider_latency.py: every explorer and baseline gives timings, and
each target's verdict follows from the numbers.

No timing thresholds: the quickest configuration (seq_len 8, two updates),
asserting positive finite times and a sane report. The verdicts are checked on
made-up timings that must meet, and must miss, each target.
"""

import io
import math
import re

import pytest
from PIL import Image

from benchmarks import slider_latency as bench
from helpers import explorers

EXPLORERS = [
    "AttentionExplorer",
    "TemperatureExplorer",
    "HeadsExplorer",
    "CheckpointExplorer",
]
WEIGHTS = [[[0.5, 0.5], [1.0, 0.0]], [[0.9, 0.1], [0.2, 0.8]]]  # (2, n=2, m=2)
CHECKPOINTS = (WEIGHTS, [0, 10])  # weights_per_step, steps
VERDICT = re.compile(
    r"^target (?P<target>.+): (?P<value>[\d.]+)(?: ms|x)  (?P<verdict>NOT MET|MET)"
    r"  \((?P<explorer>\w+), worst: (?P<config>.+)\)$"
)


def parse_verdicts(text):
    """[(target, value, verdict, explorer)] from verdicts(), one per line."""
    found = []
    for line in text.splitlines():
        match = VERDICT.match(line)
        assert match, f"not a verdict line: {line!r}"
        found.append(
            (
                match["target"],
                float(match["value"]),
                match["verdict"],
                match["explorer"],
            )
        )
    return found


@pytest.fixture(scope="module")
def results():
    return [
        bench.measure_attention(8, 4, repeats=2),
        bench.measure_temperature(8, repeats=2),
        bench.measure_heads(8, 4, repeats=2),
        bench.measure_checkpoint(8, repeats=2),
    ]


def _positive_finite(times):
    return len(times) > 0 and all(math.isfinite(t) and t > 0 for t in times)


def test_every_explorer_and_baseline_is_timed(results):
    assert [r.explorer for r in results] == EXPLORERS
    for r in results:
        assert r.seq_len == 8
        assert len(r.explorer_ms) == len(r.baseline_ms) == 2, r.explorer
        assert _positive_finite(r.explorer_ms), r
        assert _positive_finite(r.baseline_ms), r
        assert _positive_finite([r.build_ms, r.cold_ms]), r
        assert r.ratio == pytest.approx(r.baseline_median / r.explorer_median)
        assert r.explorer_p90 >= r.explorer_median > 0


@pytest.mark.parametrize(
    "draw, args, explorer",
    [
        ("baseline_attention", (8, 4), "AttentionExplorer"),
        ("baseline_temperature", ([0.5, -1.0, 2.0], 0.7), "TemperatureExplorer"),
        ("baseline_heads", (4, 64, 8), "HeadsExplorer"),
        ("baseline_checkpoint", (*CHECKPOINTS, [0.9, 0.8], 1), "CheckpointExplorer"),
    ],
)
def test_baselines_draw_a_png_of_the_explorers_size(draw, args, explorer):
    png = getattr(bench, draw)(*args)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    width, height = getattr(explorers, explorer).figsize
    assert image.size == (
        round(width * bench.widgets.DPI),
        round(height * bench.widgets.DPI),
    )


def test_every_explorer_of_the_sweep_is_measured():
    assert {name for name, _, _ in bench.cases()} == set(EXPLORERS)
    heads = [name for name, _, _ in bench.cases(only="heads")]
    assert heads == ["HeadsExplorer"] * (len(bench.SEQ_LENS) * len(bench.NUM_HEADS))


def made_up(explorer, seq_len, median_ms, speedup):
    """A result whose warm median is ``median_ms`` and baseline ``speedup`` times it."""
    return bench.Result(
        explorer,
        f"seq_len={seq_len}",
        seq_len,
        build_ms=1.0,
        cold_ms=1.0,
        explorer_ms=[median_ms] * 3,
        baseline_ms=[median_ms * speedup] * 3,
    )


@pytest.mark.parametrize("meet", [True, False], ids=["met", "not-met"])
def test_verdicts_follow_the_targets(meet):
    # just inside or just outside the latency targets and the speed-up target
    factor = 0.99 if meet else 1.01
    speedup = bench.MIN_SPEEDUP / factor
    results = [
        made_up(name, seq_len, limit * factor, speedup)
        for name in EXPLORERS[:2]
        for seq_len, limit in bench.TARGETS
    ]
    found = parse_verdicts(bench.verdicts(results))
    # one line per latency target and explorer, then one speed-up line per explorer
    assert len(found) == len(bench.TARGETS) * 2 + 2, found
    expected = "MET" if meet else "NOT MET"
    assert [verdict for _, _, verdict, _ in found] == [expected] * len(found), found
    assert [explorer for *_, explorer in found[-2:]] == EXPLORERS[:2]


def test_report_has_a_row_and_a_true_verdict_per_explorer(results):
    text = bench.table(results, repeats=2)
    for r in results:
        assert r.config in text
    # seq_len 8 meets no latency target line; one speed-up line per explorer
    found = parse_verdicts(bench.verdicts(results))
    assert [explorer for *_, explorer in found] == EXPLORERS
    for r, (target, value, verdict, _) in zip(results, found, strict=True):
        assert "faster than the baseline" in target
        assert value == pytest.approx(r.ratio, abs=0.05)
        assert verdict == ("MET" if r.ratio >= bench.MIN_SPEEDUP else "NOT MET")
    assert "nproc" in bench.header()
