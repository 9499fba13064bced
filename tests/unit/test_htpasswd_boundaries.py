"""htpasswd hashes at their edges (``route.htpasswd``): md5crypt against OpenSSL's
``passwd -1``/``-apr1`` at password lengths around its 16-byte blocks, the salt's 8
characters, bcrypt's three prefixes and its cost bound (12), and malformed hashes refused."""

from __future__ import annotations

import pytest

from coxswain.route.htpasswd import md5_crypt, verify

# openssl passwd -apr1 -salt abcdefgh <password>; openssl passwd -1 -salt 12345678 a
OPENSSL = [
    ("seventeen-chars-x", "$apr1$abcdefgh$CIVCvG7K/Q5PDj1FiqoKk."),
    ("a", "$1$12345678$3Uz6TyHSiGZR0yDMOX3jO0"),
]
# bcrypt.hashpw(b"pw", bcrypt.gensalt(cost)) for cost 4, 12 and 13
COST_4 = "$2b$04$ROJuBEJVK2.ugCRCuCzFK.LYWfALKPlgYjLNX3N8KUlfjcL.QNHZu"
COST_12 = "$2b$12$F09BBdW2flaKeO0wGqsNpeC4GJcQjIxczOB.qFv3B453VG9s8LY5q"
COST_13 = "$2b$13$tZ0EzN/YwL4oj0ogyDnnk.1XlkR/BHFCWuNKuhx0ukKmjQ4xas0HK"


@pytest.mark.parametrize(("password", "hashed"), OPENSSL)
def test_md5crypt_is_openssl_s(password: str, hashed: str) -> None:
    assert verify(password.encode(), hashed)
    assert not verify(password.encode() + b"x", hashed)


def test_the_md5crypt_salt_is_at_most_8_characters() -> None:
    nine = md5_crypt(b"pw", b"abcdefghi", "$apr1$")
    assert nine.startswith("$apr1$abcdefghi$")
    assert not verify(b"pw", nine)  # read with its first 8 characters, as Apache does
    assert verify(b"pw", md5_crypt(b"pw", b"abcdefgh", "$apr1$"))


def test_a_salt_that_is_not_ascii_is_written_back_replaced() -> None:
    assert md5_crypt(b"pw", "é".encode(), "$1$").startswith("$1$\ufffd\ufffd$")


@pytest.mark.parametrize("prefix", ["$2a$", "$2b$", "$2y$"])
def test_bcrypt_s_prefixes_are_read_alike(prefix: str) -> None:
    assert verify(b"pw", prefix + COST_4[4:])
    assert not verify(b"pW", prefix + COST_4[4:])


def test_bcrypt_costs_above_12_are_refused_unchecked() -> None:
    assert verify(b"pw", COST_12)
    assert not verify(b"pw", COST_13)


@pytest.mark.parametrize(
    "hashed",
    [
        "$2b$x4$" + COST_4[7:],
        COST_4[:-1] + "é",
        "$2B$" + COST_4[4:],
        "plain",
        # a tenant's Secret may hold any text: no format's hash is anything but ASCII
        "$1$é$abc",
        "$apr1$abcdefgh$CIVCvG7K/Q5PDj1FiqoKké",
        "{SHA}é",
    ],
)
def test_a_malformed_hash_is_no_match(hashed: str) -> None:
    assert not verify(b"pw", hashed)


def test_the_md5crypt_salt_ends_at_its_first_dollar() -> None:
    assert not verify(b"pw", md5_crypt(b"pw", b"ab$cd", "$1$"))


def test_a_bcrypt_hash_bcrypt_cannot_read_is_refused() -> None:
    assert verify(b"pw", "$2b$04$short") is False
