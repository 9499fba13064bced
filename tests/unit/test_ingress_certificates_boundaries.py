"""compile.ingress.certificates: a TLS entry without ``secretName``, reported exactly."""

from __future__ import annotations

from coxswain.compile import SharedPool, build_state, compile
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, service


def test_a_tls_entry_without_a_secret_name_is_a_warning_at_that_field() -> None:
    shop = ingress("shop", rule("a.example", path("/", "web")), tls=[{"hosts": ["a.example"]}])
    found = compile(build_state([INGRESS_CLASS, shop, *service("web")]), SharedPool()).diagnostics
    assert [
        (d.field, str(d.severity), d.reason, d.message) for d in found if d.key is not None
    ] == [
        (
            "spec.tls[0].secretName",
            "warning",
            "MissingSecretName",
            "no secretName: these hosts have no certificate and serve plain HTTP only",
        )
    ]
