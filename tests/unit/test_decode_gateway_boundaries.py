"""compile.model.decode_gateway: what a ListenerSet's ``listeners`` decode to, exactly (GEP-1713).

At least one listener, at most 64 (``ListenerSetSpec.listeners``), each name once: the cases
pin the kept listeners and each finding (field, reason, message) at those bounds.
"""

from __future__ import annotations

from typing import Any

from coxswain.compile.model.decode import Decoded, decode_object


def _listener_set(spec: dict[str, Any]) -> tuple[list[str], list[tuple[str, str, str]]]:
    found = decode_object(
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "ListenerSet",
            "metadata": {"name": "more", "namespace": "app"},
            "spec": spec,
        }
    )
    assert isinstance(found, Decoded)
    listener_set = found.obj
    return [listener.name for listener in listener_set.listeners], [
        (d.field, d.reason, d.message) for d in listener_set.diagnostics
    ]


def _listener(name: str) -> dict[str, Any]:
    return {"name": name, "port": 80, "protocol": "HTTP"}


def test_a_listener_set_without_listeners_is_reported_once() -> None:
    needs_one = ("spec.listeners", "InvalidField", "a ListenerSet needs at least one listener")
    assert _listener_set({}) == ([], [needs_one])
    assert _listener_set({"listeners": []}) == ([], [needs_one])
    assert _listener_set({"listeners": "x"}) == (
        [],
        [("spec.listeners", "InvalidField", "expected a list, found str 'x'")],
    )


def test_sixty_four_listeners_are_read_and_a_sixty_fifth_is_reported_and_ignored() -> None:
    names = [f"l{n}" for n in range(65)]
    assert _listener_set({"listeners": [_listener(n) for n in names[:64]]}) == (names[:64], [])
    assert _listener_set({"listeners": [_listener(n) for n in names]}) == (
        names[:64],
        [
            (
                "spec.listeners",
                "InvalidField",
                "65 listeners, more than 64; those past the 64th are ignored",
            )
        ],
    )


def test_listeners_after_one_that_is_not_an_object_or_named_twice_are_kept() -> None:
    listeners = ["x", _listener("a"), _listener("a"), _listener("b")]
    assert _listener_set({"listeners": listeners}) == (
        ["a", "b"],
        [
            ("spec.listeners[0]", "InvalidField", "expected an object, found str 'x'"),
            (
                "spec.listeners[2].name",
                "InvalidField",
                "listener name 'a' is used twice; this listener is ignored",
            ),
        ],
    )
