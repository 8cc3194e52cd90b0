"""`psagent wallet new|import|show` with throwaway keys only."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from market.address import parse_address
from market.wallet import Wallet, read_key_file

runner = CliRunner()
# A public test key (Zondax/filecoin-signing-tools test_vectors/wallet.json) and its published address.
ZONDAX = Wallet(base64.b64decode("8VcW07ADswS4BV2cxi5rnIadVsyTDDhY1NfDH19T8Uo="))
ZONDAX_F1 = "f1d2xrzcslx7xlbbylc5c3d5lvandqw4iwl6epxba"


def test_new_then_show(tmp_path: Path) -> None:
    key = tmp_path / "wallet.key"
    res = runner.invoke(app, ["wallet", "new", "--key-file", str(key)])
    assert res.exit_code == 0, res.output
    address = res.stdout.strip()
    assert address.startswith("f1") and parse_address(address) == read_key_file(key).address
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert "0600" in res.stderr
    shown = runner.invoke(app, ["wallet", "show", "--key-file", str(key)])
    assert shown.exit_code == 0 and shown.stdout.strip() == address
    testnet = runner.invoke(app, ["wallet", "show", "--key-file", str(key), "--network", "t"])
    assert testnet.stdout.strip() == "t" + address[1:]


def test_new_refuses_to_overwrite(tmp_path: Path) -> None:
    key = tmp_path / "wallet.key"
    assert runner.invoke(app, ["wallet", "new", "--key-file", str(key)]).exit_code == 0
    before = key.read_bytes()
    res = runner.invoke(app, ["wallet", "new", "--key-file", str(key)])
    assert res.exit_code == EXIT_USAGE and "already exists" in res.stderr
    assert key.read_bytes() == before


def test_import_lotus_export_from_stdin_and_file(tmp_path: Path) -> None:
    export = ZONDAX.export_lotus() + "\n"
    res = runner.invoke(app, ["wallet", "import", "--key-file", str(tmp_path / "a.key")], input=export)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == ZONDAX_F1
    assert "only copy" not in res.stderr  # an imported key has its exported original elsewhere
    src = tmp_path / "export.txt"
    src.write_text(export)
    args = ["wallet", "import", "--key-file", str(tmp_path / "b.key"), "--input", str(src), "--network", "t"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and res.stdout.strip() == "t" + ZONDAX_F1[1:]
    assert read_key_file(tmp_path / "b.key").address == ZONDAX.address
    assert stat.S_IMODE((tmp_path / "b.key").stat().st_mode) == 0o600


def test_import_rejects_bad_input_clearly(tmp_path: Path) -> None:
    key = tmp_path / "w.key"
    bls = b'{"Type":"bls","PrivateKey":"AAAA"}'.hex()
    res = runner.invoke(app, ["wallet", "import", "--key-file", str(key)], input=bls)
    assert res.exit_code == EXIT_USAGE and "secp256k1" in res.stderr
    res = runner.invoke(app, ["wallet", "import", "--key-file", str(key)], input="garbage")
    assert res.exit_code == EXIT_USAGE and "cannot import the key" in res.stderr
    assert not key.exists()
    res = runner.invoke(app, ["wallet", "import", "--key-file", str(key), "--input", str(tmp_path / "none")])
    assert res.exit_code == EXIT_USAGE and "cannot read" in res.stderr


def test_show_refuses_a_readable_key_file(tmp_path: Path) -> None:
    key = tmp_path / "w.key"
    assert runner.invoke(app, ["wallet", "new", "--key-file", str(key)]).exit_code == 0
    key.chmod(0o644)
    res = runner.invoke(app, ["wallet", "show", "--key-file", str(key)])
    assert res.exit_code == EXIT_USAGE  # bad input, like `run` with that key file
    assert "accessible by group or others" in res.stderr and "chmod 600" in res.stderr
    assert res.stdout == ""


def test_key_file_from_the_configuration(tmp_path: Path) -> None:
    key = tmp_path / "cfg.key"
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[market]\nkey_file = "{key}"\n')
    res = runner.invoke(app, ["wallet", "new", "--config", str(cfg)])
    assert res.exit_code == 0 and key.exists()
    assert runner.invoke(app, ["wallet", "show", "-c", str(cfg)]).stdout == res.stdout
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    res = runner.invoke(app, ["wallet", "show", "--config", str(empty)])
    assert res.exit_code == EXIT_USAGE and "--key-file" in res.stderr
