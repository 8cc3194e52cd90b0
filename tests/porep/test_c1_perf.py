"""Performance smoke test of the C1 codec on a few-MB document (the 39 MB 32GiB P7 measurement is
``psagent bench c1-parse --generate 32GiB``, recorded in BENCHMARKS.md, not a CI test)."""

from __future__ import annotations

import time
from pathlib import Path

from porep.c1 import KeyOrder, parse_c1
from porep.c1.synth import synth_c1_json


def test_parse_validate_reserialise_3mb() -> None:
    """NI 512MiB: 13 partitions × 2 challenges, ~3.4 MB. The 32GiB document is ~11x larger; P7 allows 3 s
    there, so 3 s here is a bound only a pathological slowdown (a pure-Python fallback) would break."""
    raw = synth_c1_json("StackedDrg512MiBV1_2_Feat_NonInteractivePoRep", seed=5, order=KeyOrder.GO)
    assert 3_000_000 < len(raw) < 4_000_000
    parse_c1(raw)  # warm the layout cache, as a long-running agent has it
    start = time.perf_counter()
    c1 = parse_c1(raw)
    out = c1.to_json()
    elapsed = time.perf_counter() - start
    assert out == raw
    assert elapsed < 3.0, f"{len(raw)} bytes took {elapsed:.2f} s"


def test_benchmark_report_and_cli(tmp_path: Path) -> None:
    """``measure`` (shared by the CLI and benchmarks/c1_parse.py) and ``psagent bench c1-parse`` itself."""
    import json

    from typer.testing import CliRunner

    from agent.cli import app
    from porep.c1.benchmark import PHASES, format_report, measure

    raw = synth_c1_json("StackedDrg2KiBV1", seed=2)
    result = measure(raw, repeat=2)
    assert result["identical"] and result["bytes"] == len(raw) and result["proof"] == "StackedDrg2KiBV1"
    assert all(result["warm_min"][p] <= result["warm_median"][p] for p in PHASES)
    assert "byte-identical: yes" in format_report(result)

    c1_file, out = tmp_path / "c1.json", tmp_path / "r.json"
    c1_file.write_bytes(raw)
    runner = CliRunner()
    args = ["bench", "c1-parse", str(c1_file), "--reps", "1", "--json-out", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["identical"] is True
    args = ["bench", "c1-parse", "--generate", "2KiB", "--key-order", "rust", "--reps", "1"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "StackedDrg2KiBV1_1, rust key order" in res.output
    c1_file.write_bytes(raw.replace(b'"seed":[', b'"seed": ['))
    res = runner.invoke(app, ["bench", "c1-parse", str(c1_file)])
    assert res.exit_code == 1 and "differs from the input" in res.output  # parsed, but not canonical
    assert runner.invoke(app, ["bench", "c1-parse"]).exit_code == 2
