from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from agent.config import FILECOIN_PARAMS_DIR, ConfigError, Settings, load_settings

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.toml"
    p.write_text(text)
    return p


def test_defaults_without_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("agent.config.DEFAULT_CONFIG_PATH", tmp_path / "absent.toml")
    s = load_settings(None)
    assert s.market.url == "https://mainnet.snass.fsp.sh/v0/proofs"
    assert (s.market.low_water, s.market.high_water) == (5, 8)
    assert s.market.price_attofil == 5 * 10**15


def test_default_path_is_used_when_present(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    p = write(tmp_path, '[market]\nprice_fil = "0.002"\n')
    monkeypatch.setattr("agent.config.DEFAULT_CONFIG_PATH", p)
    assert load_settings(None).market.price_attofil == 2 * 10**15


def test_file_and_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    p = write(tmp_path, '[market]\nprice_fil = "0.003"\nhigh_water = 10\n[prover]\nbackend = "cpu"\n')
    monkeypatch.setenv("PSAGENT_MARKET__HIGH_WATER", "12")
    s = load_settings(p)
    assert s.market.high_water == 12  # environment wins
    assert s.market.price_fil == "0.003"  # file value kept beside the env override (deep merge)
    assert s.prover.backend == "cpu"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[market]\nprice_fil = "abc"\n', "market.price_fil"),
        ('[market]\nprice_fil = "2"\n', "market.price_fil"),
        ('[market]\nprice_fil = "0.0000000001"\n', "market.price_fil"),
        ("[market]\nhigh_water = 0\n", "market.high_water"),
        ('[prover]\nbackend = "tpu"\n', "prover.backend"),
        ("[prover]\nbogus = 1\n", "prover.bogus"),
        ('[metrics]\nlisten = "nohost"\n', "metrics.listen"),
        ('[store]\nurl = "mysql://x"\n', "store.url"),
        ('[market]\nurl = "ftp://x"\n', "market.url"),
    ],
)
def test_invalid_values_name_the_key(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(ConfigError) as ei:
        load_settings(write(tmp_path, text))
    line = str(ei.value)
    assert "\n" not in line
    assert key in line


def test_low_above_high_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="low_water must not exceed high_water"):
        load_settings(write(tmp_path, "[market]\nlow_water = 9\nhigh_water = 8\n"))


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings(write(tmp_path, "[market\n"))
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml")


def test_bad_env_value_names_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PSAGENT_MARKET__LOW_WATER", "-1")
    with pytest.raises(ConfigError, match=r"market\.low_water.*|environment"):
        load_settings(write(tmp_path, ""))


def _keys(d: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in d.items():
        out |= _keys(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
    return out


def test_example_config_is_complete_and_valid() -> None:
    example = REPO / "config.example.toml"
    s = load_settings(example)
    data = tomllib.loads(re.sub(r"(?m)^# ([a-z_]+ = \S.*)$", r"\1", example.read_text()))  # unset ones too
    model_keys = {
        f"{section}.{field}"
        for section, sub in Settings.model_fields.items()
        for field in sub.annotation.model_fields  # type: ignore[union-attr]
    }
    assert _keys(data) == model_keys, "config.example.toml must document every knob, and only real ones"
    assert s.market.price_attofil > 0


@pytest.mark.parametrize("price", ["NaN", "sNaN", "Infinity", "-Infinity"])
def test_non_finite_price_is_one_line(tmp_path: Path, price: str) -> None:
    with pytest.raises(ConfigError) as ei:
        load_settings(write(tmp_path, f'[market]\nprice_fil = "{price}"\n'))
    assert str(ei.value).endswith(f"market.price_fil: not a finite FIL amount: {price!r}")


def test_unquoted_price_says_quote_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as ei:
        load_settings(write(tmp_path, "[market]\nprice_fil = 0.005\n"))
    assert 'quote the price' in str(ei.value) and 'price_fil = "0.005"' in str(ei.value)
    assert "Input should" not in str(ei.value) and "Value error" not in str(ei.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[market]\nlow_water = -1\n", "market.low_water: must be >= 0"),
        ('[market]\nlow_water = "x"\n', "market.low_water: must be a whole number"),
        ('[prover]\nbackend = "tpu"\n', "prover.backend: must be 'auto', 'cuda' or 'cpu'"),
        ("[prover]\ndevices = [0, -1]\n", 'prover.devices: must be "all" or a list of device ordinals >= 0'),
        ('[market]\nwallet = "f1notanaddress"\n', "market.wallet: not a Filecoin address"),
        ('[market]\nwallet = "f01000"\n', "market.wallet: 'f01000' is not a secp256k1 (f1…) address"),
    ],
)
def test_messages_in_our_words(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as ei:
        load_settings(write(tmp_path, text))
    assert expected in str(ei.value) and "\n" not in str(ei.value)
    assert "Input should" not in str(ei.value)


def test_misspelled_environment_section_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PSAGENT_MARKTE__PRICE_FIL", "0.004")
    with pytest.raises(ConfigError) as ei:
        load_settings(write(tmp_path, ""))
    assert "PSAGENT_MARKTE__PRICE_FIL: unknown section 'markte'" in str(ei.value)
    monkeypatch.delenv("PSAGENT_MARKTE__PRICE_FIL")
    monkeypatch.setenv("PSAGENT_MARKET__PRICE_FLI", "0.004")  # a misspelled key was and is refused
    with pytest.raises(ConfigError, match="price_fli"):
        load_settings(write(tmp_path, ""))


def test_the_example_leaves_params_dir_to_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Installed as /etc/psagent/config.toml (README), the example keeps $FIL_PROOFS_PARAMETER_CACHE's meaning
    (it pinned /var/tmp/filecoin-proof-parameters over it)."""
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path))
    assert load_settings(REPO / "config.example.toml").prover.params_dir == tmp_path
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE")
    assert load_settings(REPO / "config.example.toml").prover.params_dir == FILECOIN_PARAMS_DIR


def test_example_values_are_defaults_unless_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value in config.example.toml either is the default or its comment says "Example value"."""
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    defaults = Settings()
    section = ""
    comment: list[str] = []
    for line in (REPO / "config.example.toml").read_text().splitlines():
        unset = re.match(r"# ([a-z_]+ = \S.*)$", line)  # a key left unset, with an example value
        if line.startswith("["):
            section, comment = line.strip("[]"), []
        elif unset:
            key = unset.group(1).split("=", 1)[0].strip()
            value = tomllib.loads(unset.group(1))[key]
            assert any("Example value" in c for c in comment), f"# {section}.{key}: not marked as an example"
            default = getattr(getattr(defaults, section), key)
            assert str(default) != str(value), f"# {section}.{key}: the default"
            comment = []
        elif line.startswith("#"):
            comment.append(line)
        elif "=" in line:
            key = line.split("=", 1)[0].strip()
            value = tomllib.loads(line)[key]
            default = getattr(getattr(defaults, section), key)
            marked = any("Example value" in c for c in comment)
            same = str(default) == str(value) or default == value
            assert same or marked, f"{section}.{key} = {value!r} is not the default {default!r}"
            assert not (same and marked), f"{section}.{key} is the default but marked as an example"
            comment = []


def test_params_dir_follows_filecoin_convention(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    assert load_settings(write(tmp_path, "")).prover.params_dir == Path("/var/tmp/filecoin-proof-parameters")
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path))
    assert load_settings(write(tmp_path, "")).prover.params_dir == tmp_path
