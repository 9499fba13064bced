"""compile.snapshot_read against every snapshot the goldens hold, and every field made wrong.

The golden files (tests/golden/cases/*/*.snapshot.yaml) are ``snapshot_to_data`` output for
worlds that use every feature; reading each back must give the same data. Then, for each
field of each shape found there, a value of the wrong type must be refused with an error
that names exactly that field (what ``coxswain route`` and the proxy print for a bad file).
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from pyrsistent import pvector

from coxswain.compile.snapshot_filters import Cors, Retry
from coxswain.compile.snapshot_json import snapshot_to_data
from coxswain.compile.snapshot_read import SnapshotFormatError, snapshot_from_data

CASES: Final = Path(__file__).resolve().parents[1] / "golden" / "cases"
DOCUMENTS: Final = {
    f"{p.parent.name}/{p.name.removesuffix('.snapshot.yaml')}": yaml.safe_load(p.read_text())
    for p in sorted(CASES.glob("*/*.snapshot.yaml"))
}

Path_ = tuple[str | int, ...]


@pytest.mark.parametrize("case", sorted(DOCUMENTS))
def test_every_golden_snapshot_reads_back_to_the_same_data(case):
    data = DOCUMENTS[case]
    assert snapshot_to_data(snapshot_from_data(data)) == data


def _leaves(node: Any, path: Path_ = ()) -> list[tuple[Path_, Any]]:
    """Every node below the root, with its path (keys and list indexes)."""
    found: list[tuple[Path_, Any]] = []
    if isinstance(node, dict):
        items: list[tuple[str | int, Any]] = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))
    else:
        return found
    for key, value in items:
        found.append(((*path, key), value))
        found.extend(_leaves(value, (*path, key)))
    return found


def _shape(doc: dict[str, Any], path: Path_) -> tuple[str, ...]:
    """A path with its data-chosen parts (hosts, ports, indexes, endpoint keys) blanked."""
    shape: list[str] = []
    node: Any = doc
    for key in path:
        fixed = isinstance(node, dict) and key in _FIELDS
        shape.append(str(key) if fixed else "*")
        node = node[key]
    return tuple(shape)


# Every field name the snapshot format has; other dict keys are data (hosts, ports, keys).
_FIELDS: Final = frozenset(
    {
        *("version", "scope", "ingress", "gateways", "client_certs", "listener_health"),
        *("tls", "endpoints", "http_port", "https_port", "hosts", "host", "paths", "default"),
        *("path", "match", "route", "backend", "tls_redirect", "kind", "namespace", "name"),
        *("rule", "service", "port", "weight", "valid", "gateway", "listener", "protocol"),
        *("hostname", "backends", "request_headers", "response_headers", "redirect"),
        *("rewrite", "mirrors", "timeouts", "problem", "path_type", "headers", "query"),
        *("method", "type", "value", "set", "add", "remove", "status", "scheme", "percent"),
        *("request", "backend_request", "ca_bundle", "mode", "target_port", "attached_routes"),
        *("ready", "reason", "cert_chain", "private_key", "secret", "address", "grpc"),
    }
)


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value`` (and than None: some fields allow it)."""
    if isinstance(value, bool):
        return "true"
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        return 7
    if isinstance(value, list):
        return {"x": 1}
    return ["x"]


def _cases() -> list[tuple[str, Path_]]:
    seen: set[tuple[str, ...]] = set()
    found: list[tuple[str, Path_]] = []
    for case, doc in sorted(DOCUMENTS.items()):
        for path, value in _leaves(doc):
            shape = _shape(doc, path)
            if value is None:
                continue
            if shape not in seen:
                seen.add(shape)
                found.append((case, path))
    return found


_TOKEN: Final = re.compile(r"\.?([a-z_]+)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*')\]")


def _named_path(where: str) -> Path_:
    """The path an error message names: ``a.b[0]['c']`` → ``("a", "b", 0, "c")``."""
    path: list[str | int] = []
    position = 0
    while position < len(where):
        token = _TOKEN.match(where, position)
        assert token is not None, f"cannot read {where!r} at {position}"
        name, index, quoted = token.groups()
        path.append(name if name is not None else int(index) if index else ast.literal_eval(quoted))
        position = token.end()
    return tuple(path)


def _same_place(doc: Any, named: Path_, path: Path_) -> bool:
    if len(named) != len(path):
        return False
    node = doc
    for n, p in zip(named, path, strict=True):
        if n != p and not (isinstance(n, int) and isinstance(node, dict) and str(n) == p):
            return False
        node = node[p]
    return True


@pytest.mark.parametrize(("case", "path"), _cases())
def test_a_field_of_the_wrong_type_is_refused_with_its_path(case, path):
    doc = copy.deepcopy(DOCUMENTS[case])
    node = doc
    for key in path[:-1]:
        node = node[key]
    original = node[path[-1]]
    node[path[-1]] = _wrong(original)
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_data(doc)
    where, _, what = str(raised.value).partition(": ")
    assert _same_place(DOCUMENTS[case], _named_path(where), path), str(raised.value)
    assert what == _expected(original, node[path[-1]], path)


def _expected(original: Any, wrong: Any, path: Path_) -> str:
    if path == ("scope",):
        return f"expected 'shared' or 'namespace/name', found {wrong!r}"
    if isinstance(original, dict):
        wanted = "an object"
    elif isinstance(original, list):
        wanted = "a list"
    elif isinstance(original, float):
        wanted = "a number"
    else:
        wanted = type(original).__name__
    return f"expected {wanted}, found {type(wrong).__name__}"


def _minimal() -> dict[str, Any]:
    return {
        "version": "v",
        "scope": "shared",
        "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
    }


@pytest.mark.parametrize("port", ["1", "65535"])
def test_port_keys_from_1_to_65535_are_read(port):
    data = {**_minimal(), "tls": {port: {}}}
    assert list(snapshot_from_data(data).tls) == [int(port)]


@pytest.mark.parametrize("port", ["0", "65536", "-1", "x", "", "1.5"])
def test_other_port_keys_are_refused(port):
    for section in ("gateways", "client_certs", "tls"):
        with pytest.raises(SnapshotFormatError) as raised:
            snapshot_from_data({**_minimal(), section: {port: {}}})
        assert str(raised.value) == f"{section}: {port!r} is not a port number"


def test_optional_sections_and_fields_take_their_defaults():
    rule = {
        "path": "/",
        "match": "Prefix",
        "backend": {"namespace": "n", "service": "s", "port": 80},
        "route": {"kind": "Ingress", "namespace": "n", "name": "i", "rule": "r"},
    }
    data = _minimal()
    data["ingress"]["hosts"] = {"h": {"paths": [rule]}}
    snapshot = snapshot_from_data(data)
    [read] = snapshot.ingress.hosts["h"].paths
    assert (read.tls_redirect, read.backend.weight, read.backend.valid) == (False, 1, True)
    assert snapshot.ingress.hosts["h"].default is None
    assert (snapshot.gateways, snapshot.client_certs, snapshot.tls) == ({}, {}, {})
    assert (snapshot.listener_health, snapshot.endpoints) == ([], {})
    with_tls = {**_minimal(), "tls": {"443": {"h": {"cert_chain": "c", "private_key": "k"}}}}
    assert snapshot_from_data(with_tls).tls[443]["h"].secret == ""


def test_a_path_match_other_than_exact_prefix_or_regex_is_refused():
    data = copy.deepcopy(DOCUMENTS[_first_with(("ingress", "hosts"))])
    [host] = list(data["ingress"]["hosts"])[:1]
    data["ingress"]["hosts"][host]["paths"][0]["match"] = "Glob"
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_data(data)
    assert str(raised.value) == (
        f"ingress.hosts[{host!r}].paths[0].match: expected Exact, Prefix or Regex, found 'Glob'"
    )


def test_ingress_actions_with_an_unknown_field_are_refused():
    data = copy.deepcopy(DOCUMENTS[_first_with(("ingress", "hosts"))])
    [host] = list(data["ingress"]["hosts"])[:1]
    data["ingress"]["hosts"][host]["paths"][0]["actions"] = {"rewrite": "/"}
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_data(data)
    assert (
        str(raised.value) == f"ingress.hosts[{host!r}].paths[0].actions: unknown field(s) rewrite"
    )


@pytest.mark.parametrize("pair", [["a"], ["a", "b", "c"], []])
def test_a_header_edit_must_be_a_name_and_a_value(pair):
    case = _first_with(("request_headers", "set"))
    data = copy.deepcopy(DOCUMENTS[case])
    path = next(p for p, v in _leaves(data) if p[-2:] == ("request_headers", "set") and v)
    node: Any = data
    for key in path:
        node = node[key]
    node[0] = pair
    where = _where(path)
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_data(data)
    assert str(raised.value) == f"{where}[0]: expected [name, value]"


def test_a_mirror_without_percent_mirrors_everything():
    case = _first_with(("mirrors",), nonempty=True)
    data = copy.deepcopy(DOCUMENTS[case])
    path = next(p for p, v in _leaves(data) if p[-1] == "mirrors" and v)
    node: Any = data
    for key in path:
        node = node[key]
    del node[0]["percent"]
    # path: gateways, port, listener host, "hosts", route host, rule index, "mirrors"
    listener = snapshot_from_data(data).gateways[int(path[1])][path[2]]
    assert listener.hosts[path[4]][path[5]].action.mirrors[0].percent == 100.0


def _first_with(suffix: Path_, *, nonempty: bool = True) -> str:
    """The first golden case with a (non-empty) node whose path ends with ``suffix``."""
    return next(
        case
        for case, doc in sorted(DOCUMENTS.items())
        if any(p[-len(suffix) :] == suffix and (v or not nonempty) for p, v in _leaves(doc))
    )


def _where(path: Path_) -> str:
    """How an error message writes ``path``: fields dotted, hosts quoted, indexes bare."""
    out = ""
    for i, key in enumerate(path):
        if isinstance(key, int) or (i > 0 and path[i - 1] in ("gateways", "tls", "client_certs")):
            out += f"[{key}]"
        elif key in _FIELDS and not (i > 0 and path[i - 1] == "hosts"):
            out += f".{key}" if out else key
        else:
            out += f"[{key!r}]"
    return out


def test_a_gateway_rule_and_a_listener_may_leave_out_backends_hosts_and_mirror_percent():
    rule = {
        "match": {"path_type": "PathPrefix", "path": "/"},
        "route": {"kind": "HTTPRoute", "namespace": "n", "name": "r", "rule": "spec.rules[0]"},
        "mirrors": [{"backend": {"namespace": "n", "service": "m", "port": 80}, "percent": 0}],
    }
    listener = {"gateway": "n/g", "listener": "l", "port": 80, "protocol": "HTTP", "hostname": "*"}
    data = {**_minimal(), "gateways": {"30000": {"*": {**listener, "hosts": {"*": [rule]}}}}}
    [read] = snapshot_from_data(data).gateways[30000]["*"].hosts["*"]
    assert read.action.backends == []
    assert read.action.mirrors[0].percent == 0.0
    bare = {**_minimal(), "gateways": {"30000": {"*": listener}}}
    assert snapshot_from_data(bare).gateways[30000]["*"].hosts == {}


def _grpc_case() -> tuple[dict[str, Any], Path_]:
    """A golden snapshot with a gRPC rule, and the path of its first backend."""
    data = copy.deepcopy(DOCUMENTS["gateway/grpcroute-exact-method-matching"])
    path = next(p for p, v in _leaves(data) if p[-2:] == ("backends", 0))
    return data, path


def test_a_snapshot_from_before_grpc_reads_as_http1_without_grpc_rules():
    data, path = _grpc_case()
    node: Any = data
    for key in path:
        node = node[key]
    del node["protocol"]
    rule: Any = data
    for key in path[:-2]:
        rule = rule[key]
    del rule["grpc"]
    # path: gateways, port, listener host, "hosts", route host, rule index, "backends", 0
    read = snapshot_from_data(data).gateways[int(path[1])][path[2]].hosts[path[4]][path[5]]
    assert (read.action.grpc, str(read.action.backends[0].protocol)) == (False, "http1")


def test_a_backend_protocol_other_than_http1_or_h2c_is_refused():
    data, path = _grpc_case()
    node: Any = data
    for key in path:
        node = node[key]
    node["protocol"] = "h3"
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_data(data)
    assert str(raised.value) == f"{_where(path)}.protocol: expected http1 or h2c, found 'h3'"


def test_a_document_that_is_not_an_object_is_refused_as_a_whole():
    with pytest.raises(SnapshotFormatError) as raised:
        snapshot_from_data([])
    assert str(raised.value) == "snapshot: expected an object, found list"


def test_a_host_without_paths_and_edits_without_lists_are_empty():
    data = _minimal()
    rule = {
        "path": "/",
        "match": "Exact",
        "backend": {"namespace": "n", "service": "s", "port": 80, "request_headers": {}},
        "route": {"kind": "Ingress", "namespace": "n", "name": "i", "rule": "r"},
    }
    data["ingress"]["hosts"] = {"empty": {}, "h": {"paths": [rule]}}
    snapshot = snapshot_from_data(data)
    assert snapshot.ingress.hosts["empty"].paths == []
    edits = snapshot.ingress.hosts["h"].paths[0].backend.request_headers
    assert edits is not None
    assert (edits.set, edits.add, edits.remove) == ([], [], [])


# --- fields absent or given once: the defaults and the values read, exactly ----------------------

_BACKEND: Final = {"namespace": "app", "service": "web", "port": 80}
_ROUTE: Final = {"kind": "Ingress", "namespace": "app", "name": "web", "rule": "0"}


def _ingress_rule(actions: dict[str, Any], backend: dict[str, Any] = _BACKEND) -> Any:
    data = {
        "version": "v",
        "scope": "shared",
        "ingress": {
            "http_port": 80,
            "https_port": 443,
            "hosts": {
                "a.example": {
                    "paths": [
                        {
                            "path": "/",
                            "match": "Prefix",
                            "backend": backend,
                            "route": _ROUTE,
                            "actions": actions,
                        }
                    ]
                }
            },
        },
    }
    return snapshot_from_data(data).ingress.hosts["a.example"].paths[0]


def _gateway_action(rule: dict[str, Any]) -> Any:
    data = {
        "version": "v",
        "scope": "shared",
        "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
        "gateways": {
            "8080": {
                "a.example": {
                    "gateway": "app/gw",
                    "listener": "http",
                    "port": 80,
                    "protocol": "HTTP",
                    "hostname": "",
                    "hosts": {
                        "a.example": [
                            {"match": {"path_type": "Prefix", "path": "/"}, "route": _ROUTE, **rule}
                        ]
                    },
                }
            }
        },
    }
    return snapshot_from_data(data).gateways[8080]["a.example"].hosts["a.example"][0].action


def test_ingress_actions_given_once_are_read_and_absent_ones_take_their_defaults():
    tls_backend = {**_BACKEND, "tls": {"policy": "app/p", "server_name": "web.app"}}
    rule = _ingress_rule(
        {
            "deny_sources": ["192.0.2.0/24"],
            "connect_timeout": 5,
            "next_upstream_timeout": 7,
            "canary": {"backend": _BACKEND, "route": _ROUTE, "header_pattern": "^on$"},
            "cors": {},
        },
        tls_backend,
    )
    actions = rule.actions
    assert actions.deny_sources == pvector(["192.0.2.0/24"])
    assert (actions.connect_timeout, actions.next_upstream_timeout) == (5.0, 7.0)
    assert (actions.canary.header_pattern, actions.canary.weight) == ("^on$", 0)
    assert actions.canary.weight_total == 100
    assert actions.cors == Cors(
        allow_origins=pvector(),
        allow_methods=pvector(),
        allow_headers=pvector(),
        expose_headers=pvector(),
        allow_credentials=False,
        max_age=5,
    )
    assert rule.backend.tls.subject_alt_names == pvector()
    canary = {"backend": _BACKEND, "route": _ROUTE, "weight": 3, "weight_total": 50}
    weighted = _ingress_rule({"canary": canary}).actions.canary
    assert (weighted.weight, weighted.weight_total) == (3, 50)


def test_unknown_ingress_action_fields_are_all_named():
    with pytest.raises(SnapshotFormatError) as raised:
        _ingress_rule({"b": 1, "a": 2})
    assert str(raised.value) == "ingress.hosts['a.example'].paths[0].actions: unknown field(s) a, b"


def test_a_retry_takes_its_defaults_and_a_backoff_of_zero_stays_zero():
    assert _gateway_action({"retry": {}}).retry == Retry(codes=pvector(), attempts=2, backoff=0.025)
    assert _gateway_action({"retry": {"backoff": 0}}).retry.backoff == 0.0
