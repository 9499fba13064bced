"""compile.model.canonical: integers of 64 bits stay numbers, wider ones become text, as keys
and as values (Kubernetes integers are 64-bit)."""

from __future__ import annotations

from coxswain.compile.model.canonical import canonical_json


def test_an_integer_of_64_bits_stays_a_number_and_one_of_65_becomes_text() -> None:
    value = {"a": 2**63, 2**63: 1, "b": 2**64, 2**64: 2}
    assert canonical_json(value) == (
        '{"9223372036854775808": 1, "<an integer of 65 bits>": 2, '
        '"a": 9223372036854775808, "b": "<an integer of 65 bits>"}'
    )
