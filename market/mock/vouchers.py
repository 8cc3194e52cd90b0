"""Provider payment vouchers as the mock market signs them.

A voucher is (provider actor id, nonce, cumulative amount): each paid proof raises the nonce by one and the
cumulative amount by its payment, and only the newest voucher needs redeeming. The bytes signed are the
ones the ProofShare router contract checks in ``redeemProviderVoucher`` (Curio
``lib/proofsvc/common/l1/contracts/router/_Router.sol``, ``createProviderVoucher``)::

    abi.encodePacked(uint256 DST_PROVIDER_VOUCHER, address router, uint64 serviceActor, uint64 providerID,
                     uint256 cumulativeAmount, uint64 nonce)

and the signature is the service actor's account signature over them: for an f1 service key, Filecoin's
secp256k1 signature (recoverable ECDSA over blake2b-256, 65 bytes r‖s‖v), which is what the account
actor's ``AuthenticateMessage`` accepts. The router address and actor ids of the mock are made up.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from coincurve import PrivateKey, PublicKey

__all__ = ["DST_PROVIDER_VOUCHER", "MOCK_ROUTER", "MOCK_SERVICE_ACTOR", "Voucher", "voucher_bytes"]

DST_PROVIDER_VOUCHER = 0xC896443A8CBF4CB49EC50BEEF800B5B2A3764C14B7C5454E8248E1F195B1C001
MOCK_ROUTER = bytes.fromhex("00000000000000000000000000000000000c0ffe")  # 20-byte EVM address (made up)
MOCK_SERVICE_ACTOR = 4242  # the mock service's actor id (made up)


def voucher_bytes(
    provider_id: int,
    cumulative: int,
    nonce: int,
    *,
    router: bytes = MOCK_ROUTER,
    service_actor: int = MOCK_SERVICE_ACTOR,
) -> bytes:
    """``createProviderVoucher``'s packed encoding (32 + 20 + 8 + 8 + 32 + 8 = 108 bytes)."""
    return (
        DST_PROVIDER_VOUCHER.to_bytes(32, "big")
        + router
        + service_actor.to_bytes(8, "big")
        + provider_id.to_bytes(8, "big")
        + cumulative.to_bytes(32, "big")
        + nonce.to_bytes(8, "big")
    )


def _blake2b256(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=32).digest()


def sign_voucher(market_key: bytes, provider_id: int, cumulative: int, nonce: int) -> bytes:
    return bytes(
        PrivateKey(market_key).sign_recoverable(
            voucher_bytes(provider_id, cumulative, nonce), hasher=_blake2b256
        )
    )


def voucher_signer(provider_id: int, cumulative: int, nonce: int, signature: bytes) -> bytes:
    """The uncompressed public key that signed a voucher (compare with the market's key)."""
    pub = PublicKey.from_signature_and_message(
        signature, _blake2b256(voucher_bytes(provider_id, cumulative, nonce)), hasher=None
    )
    return bytes(pub.format(compressed=False))


@dataclass(frozen=True, slots=True)
class Voucher:
    provider_id: int
    nonce: int
    amount: int
    cumulative: int
    signature: bytes
    request_cid: str
