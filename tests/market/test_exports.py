"""``market.__all__`` is sorted, complete for the submodules' public names, and importable."""

from __future__ import annotations

import importlib

import market

SUBMODULES = ["address", "cid", "client", "errors", "models", "proofdata", "signing", "wallet"]


def test_all_is_sorted_and_importable() -> None:
    assert market.__all__ == sorted(market.__all__)
    for name in market.__all__:
        assert getattr(market, name) is not None


def test_every_public_class_and_function_of_a_submodule_is_exported() -> None:
    missing = []
    for mod_name in SUBMODULES:
        mod = importlib.import_module(f"market.{mod_name}")
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if isinstance(obj, type) or callable(obj):
                if name not in market.__all__:
                    missing.append(f"market.{mod_name}.{name}")
    # Constants and helpers that stay in their modules on purpose:
    allowed = {
        "market.address.address_checksum",
        "market.models.parse_json_object",
        "market.wallet.blake2b256",
    }
    assert sorted(set(missing) - allowed) == []
