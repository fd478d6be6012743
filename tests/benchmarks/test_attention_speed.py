"""benchmarks/attention_speed.py: every method is timed, measured and correct,
and each target's verdict follows from the numbers.

No timing thresholds: the tiny configurations of ``--smoke`` with one sample
each, asserting sane times and memory, a small error against the float64
reference, and a report with a row per method. The verdicts are checked on
made-up results that must meet, and must miss, each target.
"""

import math
import re

import numpy as np
import pytest

from benchmarks import attention_speed as bench

LIBRARY = {
    "loop": "numpy",
    "anp.sdpa": "numpy",
    "atn.sdpa": "torch",
    "atn.online": "torch",
    "SDPA": "torch",
}
ALWAYS = ["anp.sdpa", "atn.sdpa", "atn.online", "SDPA"]  # on every configuration
VERDICT = re.compile(
    r"^target (?P<target>.+): (?P<value>.+?)  (?P<verdict>NOT MET|MET)$"
)


def parse_verdicts(text):
    """[(target, value, verdict)] from verdicts(); a line that is neither MET nor
    NOT MET must say "not measured"."""
    found = []
    for line in text.splitlines():
        match = VERDICT.match(line)
        if match is None:
            assert line.endswith(": not measured"), line
            continue
        found.append((match["target"], match["value"], match["verdict"]))
    return found


@pytest.fixture(scope="module")
def results():
    lines = []
    found = bench.run(
        bench.SMOKE_CONFIGS, repeats=1, matmul_size=64, pause=0.0, out=lines.append
    )
    assert len(lines) == len(bench.SMOKE_CONFIGS)  # one progress line each
    return found


def test_every_method_runs_on_every_configuration(results):
    for config in bench.SMOKE_CONFIGS:
        names = [r.method for r in results if r.config == config]
        assert set(ALWAYS) <= set(names), (config, names)
        # the per-query loop is lesson 01's, for one head only
        assert ("loop" in names) == config.single_head, (config, names)
        assert len(names) == len(set(names)), names
    for r in results:
        assert r.library == LIBRARY.get(r.method, r.library) in ("numpy", "torch"), r


def test_times_memory_and_rates_are_sane(results):
    for r in results:
        assert len(r.samples) == 1 and math.isfinite(r.seconds) and r.seconds > 0, r
        assert r.ratio > 0 and r.gflops > 0 and r.matmul_gflops > 0, r
        assert r.peak_bytes > 0, f"{r.method}: no allocation seen"
    sdpa = [r for r in results if r.method == "SDPA"]
    assert len(sdpa) == len(bench.SMOKE_CONFIGS)
    assert all(r.ratio == 1.0 for r in sdpa)


def test_error_column_is_small(results):
    for r in results:
        assert r.max_error < 1e-5, f"{r.method} on {r.config}: error {r.max_error}"


def test_every_method_matches_the_float64_reference():
    config = bench.SMOKE_CONFIGS[0]
    rng = np.random.default_rng(1)
    shape = (1, 1, config.n, config.d)
    Q, K, V = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
    expected = bench.reference(Q, K, V)
    for name, (_, fn) in bench.methods(config, Q, K, V).items():
        out = np.asarray(fn()).reshape(expected.shape)
        np.testing.assert_allclose(out, expected, atol=1e-5, err_msg=name)


def made_up(n, online_ratio, sdpa_ratio, memory_fraction):
    """Results of atn.online, atn.sdpa and SDPA on one single-head configuration."""
    config = bench.Config(1, 1, n)
    naive_bytes = 2**24

    def result(method, ratio, peak):
        return bench.Result(config, method, "torch", ratio, peak, 0.0, 1.0, 1.0)

    return [
        result("atn.online", online_ratio, int(naive_bytes * memory_fraction)),
        result("atn.sdpa", sdpa_ratio, naive_bytes),
        result("SDPA", 1.0, naive_bytes),
    ]


@pytest.mark.parametrize("meet", [True, False], ids=["met", "not-met"])
def test_verdicts_follow_the_targets(meet):
    # just inside or just outside every target
    inside = bench.TARGET_RATIO * (0.99 if meet else 1.01)
    fraction = bench.TARGET_MEMORY_FRACTION * (0.9 if meet else 1.1)
    results = made_up(bench.TARGET_ONLINE_N, inside, inside, fraction)
    results += made_up(bench.TARGET_SDPA_MAX_N, inside, inside, fraction)
    found = parse_verdicts(bench.verdicts(results))
    expected = "MET" if meet else "NOT MET"
    # online speed and memory at n = 4096, atn.sdpa's speed at n = 1024
    assert len(found) == 3, found
    assert [verdict for _, _, verdict in found] == [expected] * 3, found
    assert f"{inside:.2f}x" in found[0][1]


def test_smoke_report_has_a_row_per_method_and_true_verdicts(results):
    text = bench.table(results)
    for config in bench.SMOKE_CONFIGS:
        assert str(config) in text
    assert text.count("atn.online") == len(bench.SMOKE_CONFIGS)
    text = bench.verdicts(results)
    assert f"target atn.online at n={bench.TARGET_ONLINE_N}: not measured" in text
    # one atn.sdpa verdict per small single-head configuration, true to its ratio
    small = [c for c in bench.SMOKE_CONFIGS if c.single_head]
    found = parse_verdicts(text)
    assert len(found) == len(small)
    for config, (target, value, verdict) in zip(small, found, strict=True):
        ratio = next(
            r.ratio for r in results if r.config == config and r.method == "atn.sdpa"
        )
        assert target.endswith(f"at n={config.n}")
        assert value == f"{ratio:.2f}x"
        assert verdict == ("MET" if ratio <= bench.TARGET_RATIO else "NOT MET")
    assert "nproc" in bench.header()
    # the block size atn.online ran with, so that tables stay comparable
    assert f"block_size {bench.online_block_size()} " in bench.header()


def test_main_smoke_prints_the_report(results, monkeypatch, capsys):
    measured = []

    def run(configs, **kwargs):  # the smoke run's results, not measured again
        measured.append(configs)
        return results

    monkeypatch.setattr(bench, "run", run)
    assert bench.main(["--smoke"]) == 0
    assert measured == [bench.SMOKE_CONFIGS]
    out = capsys.readouterr().out
    assert "nproc" in out and "target atn.sdpa" in out and "max |err|" in out
