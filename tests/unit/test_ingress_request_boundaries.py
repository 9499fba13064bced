"""The per-request checks of an Ingress path (``route.ingress_request.checked``) as a pure
function: each check at its edge, their order (docs/migrating-from-ingress-nginx.md, the order
of the per-request checks), and the exact decision each one leaves."""

from __future__ import annotations

import dataclasses

from hypothesis import example, given
from hypothesis import strategies as st
from pyrsistent import pvector

from coxswain.compile.snapshot import (
    Backend,
    Canary,
    Cors,
    ExternalAuth,
    IngressActions,
    RouteRef,
)
from coxswain.route.canary import CanaryCheck
from coxswain.route.decision import Decision
from coxswain.route.ingress_access import AccessCheck
from coxswain.route.ingress_request import LIMITED, answered, checked

REF = RouteRef("Ingress", "apps", "web", "spec.rules[0].http.paths[0]")
MAIN = Backend(namespace="apps", service="main", port=80, weight=90)
CANARY = Backend(namespace="apps", service="canary", port=8080, weight=10)
AUTH = ExternalAuth(url="http://auth/", host="auth", port=80, target="/")
ORIGIN = "https://app.example"
CORS = Cors(
    allow_origins=pvector([ORIGIN]),
    allow_methods=pvector(["GET", "PUT"]),
    expose_headers=pvector(["x-id"]),
    max_age=7,
)
# "user:secret" in Basic form (RFC 7617)
GOOD = b"Basic dXNlcjpzZWNyZXQ="


def verify(password: bytes, hashed: str) -> bool:
    return password == hashed.encode()


def decision_of(actions: IngressActions, backends: tuple[Backend, ...] = (MAIN,)) -> Decision:
    return Decision(
        matched=True,
        status=None,
        reason="matched spec.rules[0]",
        host="web.example",
        path="/x",
        route=REF,
        backends=backends,
        response_fields=((b"x-kept", b"1"),),
        checks=actions,
        external_auth=AUTH,
    )


def run(
    actions: IngressActions,
    *,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    method: str = "GET",
    client: str | None = "10.0.0.1",
    content_length: int | None = None,
    over: str | None = None,
    backends: tuple[Backend, ...] = (MAIN,),
    canary: Canary | None = None,
) -> tuple[Decision, Decision | None]:
    """The decision before, and what ``checked`` makes of it."""
    decision = decision_of(actions, backends)
    result = checked(
        decision,
        actions,
        AccessCheck(actions),
        None if canary is None else CanaryCheck(canary),
        client=client,
        method=method,
        headers=headers,
        content_length=content_length,
        verify=verify,
        limit=lambda: over,
    )
    return decision, result


def refused(
    decision: Decision, status: int, reason: str, fields: tuple[tuple[bytes, bytes], ...]
) -> Decision:
    """``decision`` as the proxy's own answer: no checks, no sub-request left to make."""
    return Decision(
        matched=True,
        status=status,
        reason=f"matched spec.rules[0]; {reason}",
        host="web.example",
        path="/x",
        route=REF,
        backends=decision.backends,
        response_fields=fields,
        checks=None,
        external_auth=None,
    )


def test_answered_keeps_the_routing_and_drops_what_forwarding_needed() -> None:
    decision = decision_of(IngressActions(max_body=1))
    assert answered(decision, 418, "why") == refused(decision, 418, "why", ())
    assert answered(decision, 403, "no", ((b"a", b"b"),)).response_fields == ((b"a", b"b"),)


def test_a_path_whose_checks_all_pass_keeps_its_decision() -> None:
    assert run(IngressActions(), headers=((b"origin", ORIGIN.encode()),))[1] is None
    assert run(IngressActions(max_body=10), content_length=10)[1] is None
    # a canary check on a decision that is not a weighed pair (a single backend) is skipped
    canary = Canary(backend=CANARY, route=REF, header="X-Canary")
    assert run(IngressActions(), headers=((b"x-canary", b"always"),), canary=canary)[1] is None


@given(name=st.sampled_from([b"origin", b"Origin", b"ORIGIN", b"oRiGiN"]))
def test_cors_fields_join_the_forwarded_response(name: bytes) -> None:
    actions = IngressActions(cors=CORS)
    decision, result = run(actions, headers=((b"x-other", b"\xe9"), (name, ORIGIN.encode())))
    assert result == dataclasses.replace(
        decision,
        response_fields=(
            (b"x-kept", b"1"),
            (b"access-control-allow-origin", ORIGIN.encode()),
            (b"access-control-expose-headers", b"x-id"),
            (b"vary", b"Origin"),
        ),
    )
    # no Origin: not a CORS request
    assert run(actions, headers=((b"x-other", b"1"),))[1] is None
    # an Origin the filter does not allow gets nothing added
    assert run(actions, headers=((name, b"https://other.example"),))[1] is None


def test_a_preflight_is_answered_before_the_limits_and_the_access_checks() -> None:
    actions = IngressActions(cors=CORS, deny_sources=pvector(["10.0.0.0/8"]))
    headers = (
        (b"Origin", ORIGIN.encode()),
        (b"Access-Control-Request-Method", b"PUT"),
    )
    decision, result = run(actions, headers=headers, method="OPTIONS", over="limit-rps 1")
    fields = (
        (b"access-control-allow-origin", ORIGIN.encode()),
        (b"access-control-allow-methods", b"GET, PUT"),
        (b"access-control-expose-headers", b"x-id"),
        (b"access-control-max-age", b"7"),
        (b"vary", b"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"),
    )
    assert result == refused(decision, 204, f"a CORS preflight from {ORIGIN!r} allowed", fields)
    bad = ((b"origin", b"https://evil.example"), headers[1])
    decision, result = run(actions, headers=bad, method="OPTIONS")
    why = "the Origin 'https://evil.example' is not allowed by the rule's CORS filter"
    assert result == refused(decision, 403, why, ())


def test_the_rate_limit_answers_503_before_the_access_checks_and_without_cors_fields() -> None:
    actions = IngressActions(cors=CORS, deny_sources=pvector(["10.0.0.0/8"]))
    headers = ((b"origin", ORIGIN.encode()),)
    decision, result = run(actions, headers=headers, over="limit-rps 5")
    assert LIMITED == 503
    assert result == refused(decision, 503, "refused: limit-rps 5", ())


def test_denylist_and_whitelist_see_the_client() -> None:
    deny = IngressActions(deny_sources=pvector(["10.0.0.0/31"]))
    decision, result = run(deny, client="10.0.0.1")
    why = "refused: the client 10.0.0.1 is refused by denylist-source-range"
    assert result == refused(decision, 403, why, ())
    assert run(deny, client="10.0.0.2")[1] is None
    allow = IngressActions(allow_sources=pvector(["10.0.0.0/31"]))
    assert run(allow, client="10.0.0.1")[1] is None
    decision, result = run(allow, client="10.0.0.2")
    why = "refused: the client 10.0.0.2 is not in whitelist-source-range"
    assert result == refused(decision, 403, why, ())


@given(
    name=st.sampled_from([b"authorization", b"Authorization", b"AUTHORIZATION"]),
    before=st.integers(min_value=0, max_value=2),
)
@example(name=b"Authorization", before=1)
def test_basic_credentials_are_read_from_the_first_authorization_field(
    name: bytes, before: int
) -> None:
    actions = IngressActions(auth_realm="staff", auth_users=pvector([("user", "secret")]))
    noise = tuple((b"x-noise-%d" % i, b"Basic bm9uZTpub25l") for i in range(before))
    # the first Authorization field counts; a later wrong one does not
    headers = (*noise, (name, GOOD), (b"authorization", b"Basic dXNlcjp3cm9uZw=="))
    assert run(actions, headers=headers)[1] is None
    decision, result = run(actions, headers=noise)
    challenge = ((b"www-authenticate", b'Basic realm="staff"'),)
    assert result == refused(decision, 401, "refused: basic authentication is required", challenge)
    decision, result = run(actions, headers=(*noise, (name, b"Basic dXNlcjp3cm9uZw==")))
    assert result is not None
    assert result.status == 401


@given(length=st.integers(min_value=0, max_value=3))
@example(length=2)
@example(length=3)
def test_a_declared_body_over_proxy_body_size_is_413(length: int) -> None:
    actions = IngressActions(max_body=2)
    decision, result = run(actions, content_length=length)
    if length <= 2:
        assert result is None
    else:
        why = f"refused: the body of {length} bytes is over proxy-body-size 2"
        assert result == refused(decision, 413, why, ())
    assert run(actions, content_length=None)[1] is None


@given(value=st.sampled_from([b"always", b"never", b"maybe"]))
@example(value=b"always")
@example(value=b"never")
def test_the_canary_header_picks_one_of_the_weighed_pair_at_weight_one(value: bytes) -> None:
    canary = Canary(backend=CANARY, route=REF, header="X-Canary")
    decision, result = run(
        IngressActions(),
        headers=((b"X-Canary", value),),
        backends=(MAIN, CANARY),
        canary=canary,
    )
    if value == b"maybe":  # undecided: the proxy's weighted draw
        assert result is None
        return
    chosen = CANARY if value == b"always" else MAIN
    assert result == dataclasses.replace(
        decision, backends=(dataclasses.replace(chosen, weight=1),)
    )
    # without a canary check the pair stays weighed
    assert (
        run(IngressActions(), headers=((b"x-canary", value),), backends=(MAIN, CANARY))[1] is None
    )


def test_cors_fields_and_the_canary_choice_together() -> None:
    canary = Canary(backend=CANARY, route=REF, cookie="try")
    decision, result = run(
        IngressActions(cors=CORS),
        headers=((b"origin", ORIGIN.encode()), (b"cookie", b"try=always")),
        backends=(MAIN, CANARY),
        canary=canary,
    )
    assert result is not None
    assert result.backends == (dataclasses.replace(CANARY, weight=1),)
    assert result.response_fields[0] == (b"x-kept", b"1")
    assert result.response_fields[1] == (b"access-control-allow-origin", ORIGIN.encode())
    assert result.status is None
    assert result.checks is decision.checks


def test_the_proxy_s_own_answer_keeps_only_the_hsts_field() -> None:
    hsts = (b"strict-transport-security", b"max-age=1")
    decision = Decision(
        matched=True,
        status=None,
        reason="r",
        host="h",
        path="/",
        response_fields=((b"x-other", b"strict-transport-security"), hsts),
    )
    assert answered(decision, 403, "no").response_fields == (hsts,)
