"""Route retries (Gateway API HTTPRouteRetry) over real sockets, as the conformance tests
HTTPRouteRetry, HTTPRouteRetryConnectionError and HTTPRouteRetryBackendTimeout try them: an
echo backend fails the first tries of a target (``…/flaky``), then answers."""

from __future__ import annotations

import http.client
import itertools
from typing import TYPE_CHECKING, Any

import pytest

from .proxy_harness import (
    TIMEOUT,
    Running,
    backend,
    gateway_rule,
    run_proxy,
    snapshot,
)

if TYPE_CHECKING:
    from pathlib import Path

ALL_5XX = [500, 502, 503, 504]
RULES = {
    # path prefix: (codes, attempts, backendRequest, request)
    "/code-500-attempts-3": ([500], 3, None, None),
    "/code-all-attempts-2": (ALL_5XX, 2, None, None),
    "/no-status-code-attempts-3": ([], 3, None, None),
    "/backend-request-timeout": ([], 2, 0.2, None),
    "/request-timeout": ([500], 5, 0.2, 0.4),
    "/no-retry": (None, 0, None, None),
}
keys = itertools.count()


def make(ports: dict[str, int]) -> dict[str, Any]:
    rules = []
    for prefix, (codes, attempts, backend_timeout, request_timeout) in RULES.items():
        retry = None if codes is None else {"codes": codes, "attempts": attempts, "backoff": 0.01}
        match = {"path_type": "PathPrefix", "path": prefix, "headers": [], "query": []}
        rules.append(
            gateway_rule(
                [backend("one")],
                match={**match, "method": None},
                retry=retry,
                timeouts={"request": request_timeout, "backend_request": backend_timeout},
            )
        )
    return snapshot(
        endpoints={"one": [ports["one"]]}, gateway_port=ports["gateway"], gateway_rules=rules
    )


CASES = [
    # the conformance cases: (path, failures, code, delay) -> status
    ("/code-500-attempts-3", 2, 500, 0, 200),
    ("/code-500-attempts-3", 4, 500, 0, 500),
    ("/code-500-attempts-3", 2, 503, 0, 503),
    ("/code-all-attempts-2", 1, 500, 0, 200),
    ("/code-all-attempts-2", 3, 500, 0, 500),
    ("/code-all-attempts-2", 1, 502, 0, 200),
    ("/code-all-attempts-2", 3, 502, 0, 502),
    ("/no-status-code-attempts-3", 2, None, 0, 200),
    ("/no-status-code-attempts-3", 4, None, 0, 503),
    ("/backend-request-timeout", 2, 500, 0.3, 200),
    ("/backend-request-timeout", 3, 500, 0.3, 504),
    ("/request-timeout", 1, 500, 0, 200),
    ("/request-timeout", 4, 500, 0.1, 504),
    ("/no-retry", 1, 500, 0, 500),
    ("/no-retry", 1, 503, 0, 503),
]


def test_retries_follow_the_conformance_cases(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        for prefix, failures, code, delay, status in CASES:
            query = f"fail={failures}&delay={delay}&k={next(keys)}"
            if code is not None:
                query += f"&code={code}"
            target = f"{prefix}/flaky?{query}"
            conn = http.client.HTTPConnection("127.0.0.1", run.gateway_port, timeout=TIMEOUT)
            conn.request("GET", target, headers={"Host": "any.example.com"})
            response = conn.getresponse()
            response.read()
            conn.close()
            assert response.status == status, (target, response.status)
            tries = sum(1 for r in run.received["one"] if r["target"] == target)
            codes, retries = RULES[prefix][:2]
            retried = code is None or delay > 0 or code in (codes or ())
            expected = min(failures + 1, retries + 1) if retried else 1
            if prefix == "/request-timeout" and status == 504:
                assert 2 <= tries <= 4, (target, tries)  # cut by the request timeout
            else:
                assert tries == expected, (target, tries)

    run_proxy(tmp_path, make, client)


def test_a_request_with_a_body_is_tried_once(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        target = f"/code-500-attempts-3/flaky?fail=1&code=500&k={next(keys)}"
        conn = http.client.HTTPConnection("127.0.0.1", run.gateway_port, timeout=TIMEOUT)
        conn.request("POST", target, body=b"payload", headers={"Host": "any.example.com"})
        response = conn.getresponse()
        response.read()
        conn.close()
        assert response.status == 500
        assert [r["body"] for r in run.received["one"] if r["target"] == target] == ["payload"]

    run_proxy(tmp_path, make, client)


@pytest.mark.parametrize(("code", "reason"), [(500, "status"), (None, "connection")])
def test_retries_are_counted_by_reason(tmp_path: Path, code: int | None, reason: str) -> None:
    def client(run: Running) -> None:
        query = f"fail=2&k={next(keys)}" + ("" if code is None else f"&code={code}")
        conn = http.client.HTTPConnection("127.0.0.1", run.gateway_port, timeout=TIMEOUT)
        conn.request("GET", f"/code-500-attempts-3/flaky?{query}", headers={"Host": "a"})
        assert conn.getresponse().status == 200
        conn.close()
        exposition = run.proxy.metrics.exposition().decode()
        assert f'coxswain_upstream_retries_total{{reason="{reason}"}} 2.0' in exposition

    run_proxy(tmp_path, make, client)
