"""The migration report's entries (``compile.ingress.migration.migration_report``) read in the
test's process: one per annotation under either prefix, Ingresses in namespace then name
order, each with its class, and an invalid value's problem on its own annotation only
(docs/migrating-from-ingress-nginx.md, "The migration report")."""

from __future__ import annotations

from coxswain.compile import build_state
from coxswain.compile.ingress.migration import MigrationEntry, migration_data, migration_report
from coxswain.compile.ingress.registry import AnnotationClass as C
from tests.unit.ingress_world import ingress, path, rule

NGINX = "nginx.ingress.kubernetes.io/"


def _ingress(namespace: str, name: str, annotations: dict[str, str]) -> dict[str, object]:
    body = ingress(name, rule("a.example", path("/", "a")), annotations=annotations)
    body["metadata"]["namespace"] = namespace  # type: ignore[index]
    return body


def test_entries_per_annotation_in_namespace_then_name_order_with_their_problems() -> None:
    state = build_state(
        [
            _ingress("b", "a", {NGINX + "ssl-redirect": "true"}),
            _ingress("a", "zz", {NGINX + "app-root": "/app"}),
            _ingress(
                "a",
                "z",
                {
                    NGINX + "ssl-redirect": "maybe",
                    NGINX + "limit-rps": "5",
                    NGINX + "no-such-thing": "x",
                    "example.com/other": "1",
                },
            ),
        ]
    )
    entries = migration_report(state.ingresses.values())
    assert [(e.ingress, e.annotation, e.klass) for e in entries] == [
        ("a/z", NGINX + "limit-rps", C.HONOURED),
        ("a/z", NGINX + "no-such-thing", C.UNKNOWN),
        ("a/z", NGINX + "ssl-redirect", C.HONOURED),
        ("a/zz", NGINX + "app-root", C.HONOURED),
        ("b/a", NGINX + "ssl-redirect", C.HONOURED),
    ]
    assert [e.problem for e in entries] == [
        "",
        "",
        "'maybe' is not true or false; true applies",
        "",
        "",
    ]
    assert entries[0] == MigrationEntry(
        ingress="a/z", annotation=NGINX + "limit-rps", klass=C.HONOURED, explanation="honoured"
    )
    assert entries[1].explanation == "ingress-nginx defines no such annotation; it has no effect"
    summary = migration_data(entries, 3)["summary"]
    assert (summary["invalid"], summary["ingressesBehavingDifferently"]) == (1, 1)


def test_an_ingress_without_annotations_has_no_entry() -> None:
    assert migration_report(build_state([_ingress("a", "z", {})]).ingresses.values()) == []
