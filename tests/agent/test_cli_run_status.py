"""psagent status (read from the store) and psagent run's argument checks; the run itself is tested end to
end in test_e2e / test_crash and by `make run`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from agent.store import Payment, RequestState, SqliteStore

runner = CliRunner()


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[store]\nurl = "sqlite:///{tmp_path}/agent.db"\n[logging]\nformat = "json"\n')
    return cfg


def test_status_json_reads_the_store(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    store = SqliteStore(tmp_path / "agent.db")
    row = store.add_request(1, "bafkqueued", 7)
    store.add_request(2, "bafkfailed", 8)
    store.transition(2, RequestState.QUEUED, RequestState.FAILED, error="check: bad C1")
    store.record_payment(Payment(1, 5, 5, b"\x01" * 65, "bafkpaid", 1.0))
    store.close()
    res = runner.invoke(app, ["status", "--config", str(cfg), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert row is not None and report["queue"]["queued"] == 1 and report["queue"]["failed"] == 1
    assert report["payments"] == {"vouchers": 1, "cumulative_attofil": "5", "last_nonce": 1}
    assert report["recent_failures"] == [{"request_cid": "bafkfailed", "error": "check: bad C1"}]
    assert report["devices"] == []  # the simulator is not a device
    human = runner.invoke(app, ["status", "--config", str(cfg)])
    assert human.exit_code == 0 and "queued 1" in human.stdout and "bafkfailed: check: bad C1" in human.stdout


def test_run_refuses_bad_max_proofs_and_missing_key(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "--config", str(_config(tmp_path)), "--max-proofs", "0"])
    assert res.exit_code == EXIT_USAGE and "--max-proofs" in res.output
    res = runner.invoke(app, ["run", "--config", str(_config(tmp_path))])
    assert res.exit_code == EXIT_USAGE and "market.key_file" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_status_shows_the_readiness_gate(tmp_path: Path) -> None:
    from agent.service import Gate, write_gate_file

    cfg = _config(tmp_path)
    SqliteStore(tmp_path / "agent.db").close()
    res = runner.invoke(app, ["status", "--config", str(cfg), "--json"])
    assert json.loads(res.stdout)["gate"]["state"] == "not running"  # no agent has written a gate
    gate = tmp_path / "agent.db.gate.json"  # beside the SQLite store
    write_gate_file(gate, Gate("failed", "warm-up failed: FileNotFoundError: parameters missing"))
    report = json.loads(runner.invoke(app, ["status", "--config", str(cfg), "--json"]).stdout)
    assert report["gate"]["state"] == "failed" and "parameters missing" in report["gate"]["reason"]
    human = runner.invoke(app, ["status", "--config", str(cfg)]).stdout
    assert "gate:     failed: warm-up failed: FileNotFoundError: parameters missing" in human
    write_gate_file(gate, Gate("open"), pid=2**22 + 12345)  # a process that is gone
    assert json.loads(runner.invoke(app, ["status", "--config", str(cfg), "--json"]).stdout)["gate"][
        "state"
    ] == "not running"
