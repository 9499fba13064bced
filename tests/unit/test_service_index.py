"""``ServiceIndex`` and ``resolve_backend``: the per-compile memos answer as the state does and
leave ``RecordedServices``' record of the questions asked complete (docs/architecture.md, "The
pure core")."""

from __future__ import annotations

from pyrsistent import pmap, pvector

from coxswain.compile import build_state
from coxswain.compile.backends import index_services, resolve_backend
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.objects import Meta, Service, ServicePort
from coxswain.compile.model.state import ClusterState
from coxswain.compile.recorded import RecordedServices
from tests.integration.manifests import backend

KEY = ObjectKey("Service", "app", "web")
WEB = Service(meta=Meta(key=KEY), ports=pvector([ServicePort(name="http", port=80)]))
STATE = ClusterState(services=pmap({KEY: WEB}))


def _resolve(index, service="web", port=80, weight=1):
    return resolve_backend(
        index, namespace="app", service=service, port_number=port, port_name=None, weight=weight
    )


def test_a_remembered_backend_is_still_recorded_as_a_service_read():
    _resolve(index_services(STATE))  # another index's memo is not this one's
    recorded = RecordedServices(STATE)
    first = _resolve(recorded)
    recorded.calls.clear()
    assert _resolve(recorded) is first
    assert recorded.calls == {("Service", "app", "web")}


def test_a_services_slices_are_answered_and_recorded_as_a_slices_read():
    state = build_state(backend("web", 8080))
    recorded = RecordedServices(state)
    found = recorded.slices("app", "web")
    assert found == [state.endpoint_slices[ObjectKey("EndpointSlice", "app", "web-1")]]
    assert [e.address for s in found for e in s.endpoints] == ["127.0.0.1"]
    assert recorded.calls == {("EndpointSlice", "app", "web")}


def test_remembered_answers_are_those_of_the_state():
    index = index_services(STATE)
    backend, problem = _resolve(index)
    assert (backend.port, backend.weight, backend.valid, problem) == (80, 1, True, None)
    assert _resolve(index, weight=3)[0].weight == 3
    no_port, why = _resolve(index, port=81)
    assert (no_port.valid, why) == (False, "Service app/web has no port 81")
    missing, why = _resolve(index, service="gone")
    assert (missing.valid, why) == (False, "Service app/gone does not exist")
    assert index.service("app", "gone") is None
    assert index.service("app", "web") is WEB
