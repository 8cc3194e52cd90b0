"""The ProofShare market: wire models, wallet and request signing, async client, mock market server.

May import ``porep`` (ProofData carries a C1) and, in the mock, ``gpu``; never ``agent``.

Modules: ``address`` (f1/t1 strings ↔ bytes), ``wallet`` (secp256k1 key, signatures, key file),
``signing`` (Curio's request signatures), ``cid`` (request CIDs), ``models`` (JSON of the API),
``proofdata`` (the request document), ``client`` (the async HTTP client), ``errors`` (the hierarchy).
"""

from market.address import Address, Protocol, parse_address
from market.cid import RequestCid
from market.client import MAINNET_URL, AlreadyAccepted, MarketClient, RetryPolicy
from market.errors import (
    AskOutcomeUnknown,
    ContentMismatch,
    InvalidAddress,
    KeyFileError,
    MarketError,
    ProtocolError,
    Rejected,
    ResponseTooLarge,
    SignatureRejected,
    TooManyRequests,
    TransportError,
    WalletError,
    WorkGone,
)
from market.models import ProofReward, WorkAsk, WorkRequest, WorkResponse, format_attofil, parse_attofil
from market.proofdata import ProofData, SectorID, Snap
from market.signing import (
    DST_WORK_ASK,
    DST_WORK_COMPLETE,
    DST_WORK_WITHDRAW,
    Signature,
    SignedMsg,
    Signer,
    sign_request,
    verify_request,
)
from market.wallet import Wallet, read_key_file, recover_address, verify_signature, write_key_file

__all__ = [
    "Address",
    "AlreadyAccepted",
    "AskOutcomeUnknown",
    "ContentMismatch",
    "DST_WORK_ASK",
    "DST_WORK_COMPLETE",
    "DST_WORK_WITHDRAW",
    "InvalidAddress",
    "KeyFileError",
    "MAINNET_URL",
    "MarketClient",
    "MarketError",
    "ProofData",
    "ProofReward",
    "Protocol",
    "ProtocolError",
    "Rejected",
    "RequestCid",
    "ResponseTooLarge",
    "RetryPolicy",
    "SectorID",
    "Signature",
    "SignatureRejected",
    "SignedMsg",
    "Signer",
    "Snap",
    "TooManyRequests",
    "TransportError",
    "Wallet",
    "WalletError",
    "WorkAsk",
    "WorkGone",
    "WorkRequest",
    "WorkResponse",
    "format_attofil",
    "parse_address",
    "parse_attofil",
    "read_key_file",
    "recover_address",
    "sign_request",
    "verify_request",
    "verify_signature",
    "write_key_file",
]
