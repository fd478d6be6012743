"""benchmarks/attention_speed.py runs: every method is timed, measured and correct.

A smoke test only, no timing thresholds: the tiny configurations of ``--smoke``
with one sample each, asserting sane times and memory, an error column that is
small against the float64 reference, and a report with a row per method.
"""

import math
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "attention_speed.py"
METHODS = ["loop", "anp.sdpa", "atn.sdpa", "atn.online", "SDPA"]


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script(PATH)


@pytest.fixture(scope="module")
def results(bench):
    lines = []
    found = bench.run(
        bench.SMOKE_CONFIGS, repeats=1, matmul_size=64, pause=0.0, out=lines.append
    )
    assert len(lines) == len(bench.SMOKE_CONFIGS)  # one progress line each
    return found


def test_every_method_runs_on_every_configuration(bench, results):
    single, batched = bench.SMOKE_CONFIGS
    assert [r.method for r in results if r.config == single] == METHODS
    # the per-query loop is for one head only
    assert [r.method for r in results if r.config == batched] == METHODS[1:]
    for r in results:
        assert r.library == ("numpy" if r.method in METHODS[:2] else "torch")


def test_times_memory_and_rates_are_sane(results):
    for r in results:
        assert len(r.samples) == 1 and math.isfinite(r.seconds) and r.seconds > 0, r
        assert r.ratio > 0 and r.gflops > 0 and r.matmul_gflops > 0, r
        assert r.peak_bytes > 0, f"{r.method}: no allocation seen"
    sdpa = [r for r in results if r.method == "SDPA"]
    assert all(r.ratio == 1.0 for r in sdpa)


def test_error_column_is_small(results):
    for r in results:
        assert r.max_error < 1e-5, f"{r.method} on {r.config}: error {r.max_error}"


def test_outputs_match_the_float64_reference_shape(bench):
    config = bench.SMOKE_CONFIGS[0]
    Q, K, V = (bench.np.ones((1, 1, config.n, config.d), bench.np.float32),) * 3
    expected = bench.reference(Q, K, V)
    for name, (_, fn) in bench.methods(config, Q, K, V).items():
        out = bench.np.asarray(fn()).reshape(expected.shape)
        assert bench.np.allclose(out, expected, atol=1e-6), name


def test_peak_memory_meters_see_a_known_allocation(bench):
    size = 256
    numpy_peak = bench.peak_bytes_numpy(lambda: bench.np.ones((size, size)))
    torch_peak = bench.peak_bytes_torch(lambda: bench.torch.ones(size, size))
    assert size * size * 8 <= numpy_peak < size * size * 8 + 4096
    assert torch_peak == size * size * 4


def test_report_has_a_row_per_method_and_the_verdicts(bench, results):
    text = bench.table(results)
    for config in bench.SMOKE_CONFIGS:
        assert str(config) in text
    assert text.count("atn.online") == len(bench.SMOKE_CONFIGS)
    verdicts = bench.verdicts(results).splitlines()
    assert verdicts[0].startswith("target atn.online at n=4096: not measured")
    assert all("MET" in line for line in verdicts[1:])
    assert "nproc" in bench.header()


def test_main_smoke_prints_the_report(bench, capsys):
    assert bench.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "target atn.sdpa" in out and "max |err|" in out
