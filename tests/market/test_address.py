"""Addresses against go-address's own vectors (filecoin-project/go-address address_test.go)."""

from __future__ import annotations

import pytest

from market.address import Address, Protocol, address_checksum, parse_address
from market.errors import InvalidAddress

# TestVectorSecp256k1Address: 65-byte uncompressed public key → testnet string (mainnet = same with 'f').
SECP256K1_VECTORS = [  # the Go byte lists, written here as hex
    (
        "049402fac37e6432a416a3a0ca5426b5185ab3b24f6134efa25ce487c82d2e4e13"
        "bf452511e0d2245421f8613bc10d72fa216666a96c3bc13920d3ff233fd0bc05",
        "t15ihq5ibzwki2b4ep2f46avlkrqzhpqgtga7pdrq",
    ),
    (
        "047687b910379bf28cbe3aea674b12000c6b7dba46ffc05f6c94fe2a22bbcc2602"
        "ff7f5c76f21ca55d36959152b0e1e887917c393576eef093f61ebd3ad06f7fda",
        "t12fiakbhe2gwd5cnmrenekasyn6v5tnaxaqizq6a",
    ),
    (
        "04defdd01001efb86e01ded5ce34f847a73a14819ee641bcb60bb92993596f05dc"
        "2d605f2985f8d125812dac4163a396349b23c11cc2ff359de54be287ea62319b",
        "t1wbxhu3ypkuo6eyp6hjx6davuelxaxrvwb2kuwva",
    ),
    (
        "0403ed12c814b6b10d2ee09d95b4688db2d180d0a9a37a6b6a7db63d29811ee973"
        "0479d8ef9139e91249cabd393291cfe5d277ba76de45e3e085a37681bf3645d2",
        "t1xtwapqc6nh4si2hcwpr3656iotzmlwumogqbuaa",
    ),
    (
        "04f796819a8e271631af7c189797b545d60225936147e6010e6562b3ce9efe8b10"
        "144161a91ed0b4ec890800253fa6fc20ac90fbf1fbf27130a4ecc3e403b70576",
        "t1xcbgdhkgkwht3hrrnui3jdopeejsoatkzmoltqy",
    ),
    (
        "0442832bf87cce9ea345b90350de7d3495859ca449059c5e88dde74285dffb9ec0"
        "1ebabc5fc86268cfeaeba7ae05bfb8d68eb75a5268782cf86fc8702bef8a1fe0",
        "t17uoq6tp427uzv7fztkbsnn64iwotfrristwpryy",
    ),
]

# TestVectorsIDAddress and TestVectorBLSAddress (one of five), for the other protocols the parser accepts.
ID_VECTORS = [(0, "t00"), (1, "t01"), (10, "t010"), (150, "t0150"), (499, "t0499"), (1024, "t01024"),
              (1729, "t01729"), (999999, "t0999999"), (2**63 - 1, "t09223372036854775807")]  # fmt: skip
BLS_VECTOR = (
    bytes.fromhex(
        "ad58df696e2d4e91ea86c881e938ba4ea81b395e12797b84b9cf314b9546705e839c7a99d606b247ddb4f9ac7a3414dd"
    ),
    "t3vvmn62lofvhjd2ugzca6sof2j2ubwok6cj4xxbfzz4yuxfkgobpihhd2thlanmsh3w2ptld2gqkn2jvlss4a",
)


@pytest.mark.parametrize(("pubkey", "testnet"), SECP256K1_VECTORS, ids=[v[1] for v in SECP256K1_VECTORS])
def test_go_address_secp256k1_vectors(pubkey: str, testnet: str) -> None:
    addr = Address.from_secp256k1_pubkey(bytes.fromhex(pubkey))
    assert addr.protocol == Protocol.SECP256K1
    assert addr.encode("t") == testnet
    mainnet = "f" + testnet[1:]
    assert addr.encode("f") == mainnet == str(addr)
    for text in (testnet, mainnet):
        parsed = parse_address(text)
        assert parsed == addr
        assert len(parsed.to_bytes()) == 21 and parsed.to_bytes()[0] == 1
        assert Address.from_bytes(parsed.to_bytes()) == addr


@pytest.mark.parametrize(("actor_id", "text"), ID_VECTORS)
def test_go_address_id_vectors(actor_id: int, text: str) -> None:
    addr = Address.from_id(actor_id)
    assert addr.encode("t") == text
    assert parse_address(text) == addr


def test_go_address_bls_vector() -> None:
    pub, text = BLS_VECTOR
    addr = Address(Protocol.BLS, pub)
    assert addr.encode("t") == text
    assert parse_address(text) == addr


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # TestInvalidStringAddresses
        ("Q2gfvuyh7v2sx3patm5k23wdzmhyhtmqctasbr23y", "network"),
        ("t4gfvuyh7v2sx3patm5k23wdzmhyhtmqctasbr23y", "protocol"),
        ("t2gfvuyh7v2sx3patm5k23wdzmhyhtmqctasbr24y", "checksum"),
        ("t0banananananannnnnnnnn", "length"),
        ("t0banananananannnnnnn", "ID address"),
        ("t2gfvuyh7v2sx3patm1k23wdzmhyhtmqctasbr24y", "base32"),
        ("t2gfvuyh7v2sx3paTm1k23wdzmhyhtmqctasbr24y", "base32"),
        ("t2", "length"),
        ("t1234", "checksum|base32"),  # go-address: checksum; ours stops at the impossible length
        # ours: a flipped character in a valid f1 string, and an ID beyond 2^63 - 1 (TestIDMax)
        ("f15ihq5ibzwki2b4ep2f46avlkrqzhpqgtga7pdra", "checksum"),
        ("t09223372036854775808", r"2\^63"),
    ],
)
def test_invalid_strings_are_refused(text: str, why: str) -> None:
    with pytest.raises(InvalidAddress, match=why):
        parse_address(text)


def test_invalid_byte_forms_are_refused() -> None:
    # TestInvalidByteAddresses
    for raw in (bytes([4, 4, 4]), bytes([0]), bytes([1]) + bytes(19), bytes([1]) + bytes(21),
                bytes([2]) + bytes(19), bytes([3]) + bytes(47), bytes([3]) + bytes(49)):  # fmt: skip
        with pytest.raises(InvalidAddress):
            Address.from_bytes(raw)


def test_checksum_covers_the_protocol_byte() -> None:
    addr = parse_address("t15ihq5ibzwki2b4ep2f46avlkrqzhpqgtga7pdrq")
    assert address_checksum(addr.to_bytes()) != address_checksum(bytes([2]) + addr.payload)
    # The same payload under protocol 2 must not validate with protocol 1's checksum.
    with pytest.raises(InvalidAddress, match="checksum"):
        parse_address("t25ihq5ibzwki2b4ep2f46avlkrqzhpqgtga7pdrq")
