"""A snapshot's nested values read back at their edges (``compile.snapshot_values``): an
unknown field and a user entry that is not a pair are refused with the field's place."""

from __future__ import annotations

import pytest

from coxswain.compile.snapshot import ExternalAuth
from coxswain.compile.snapshot_values import SnapshotFormatError, flat, pair


def test_unknown_fields_are_named_in_order() -> None:
    value = {"url": "http://a", "host": "a", "port": 80, "target": "/", "zeta": 1, "alpha": 2}
    with pytest.raises(SnapshotFormatError) as raised:
        flat(ExternalAuth, value, "actions.auth")
    assert str(raised.value) == "actions.auth: unknown field(s) alpha, zeta"


def test_a_user_entry_is_exactly_a_user_and_a_hash() -> None:
    assert pair(["u", "h"], "users[0]") == ("u", "h")
    for items in (["u"], ["u", "h", "x"]):
        with pytest.raises(SnapshotFormatError) as raised:
            pair(items, "users[0]")
        assert str(raised.value) == "users[0]: expected [user, hash]"
