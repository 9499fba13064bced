"""Golden-file tests of the compiler: case inputs in, snapshot and diagnostics out.

Each case is ``cases/<area>/<case>.in.yaml``: a ``CompileCase`` header document, then verbatim
Kubernetes objects. The runner loads it with the CLI's own loader (``parse_manifests``), prepends
the objects of the header's ``include`` files, compiles for the shared pool, and compares the
*text* of ``<case>.snapshot.yaml`` and, only when there are any, ``<case>.diagnostics.yaml`` (the
findings) and ``<case>.status.yaml`` (the desired statuses, as ``--emit status`` prints them), and
``<case>.tables.txt``: the same outputs as ``-o table`` prints them, for people.
``pytest tests/golden --update-goldens`` (``make goldens``) rewrites the expected files instead.

A case whose header says ``pending: <why>`` documents behaviour the compiler does not have yet
(a known bug): it has no expected files, is compiled (the compiler must not raise on it) and is
reported as xfail, so that no golden ever enshrines the bug.

Checks on the goldens themselves: every include exists and every ``_base`` file is included by
some case; every input survives parse → ``yaml.safe_dump`` → parse unchanged; no expected file
is left without its input; every Gateway API input validates against its CRD's openAPIV3Schema
(unless the case says ``schema-invalid: true``), and so does every status the compiler
writes. A case with neither (Ingress only) says so: ``schema-skip: <why>``. The CRDs are the
ones the Helm chart installs (``tests.apiserver.crds``): Gateway API standard channel and
Coxswain's own.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
import yaml

from coxswain.compile import SharedPool, build_state, compile, status
from coxswain.compile.config import CompileConfig, IngressDefaults
from coxswain.compile.grants import subscription_grants
from coxswain.compile.listing import diagnostic_data, infra_list, status_list
from coxswain.compile.model.manifests import ManifestSyntaxError, SourcedBody, parse_manifests
from coxswain.compile.model.places import locate
from coxswain.compile.provision import ROLE, provision
from coxswain.compile.scope import Scope, parse_scope
from coxswain.compile.snapshot_json import snapshot_to_data
from coxswain.compile.tables import diagnostics_table, infra_table, routing_table, status_table
from coxswain.shell.output import dump_yaml
from tests.apiserver.crds import COXSWAIN_CRDS, GATEWAY_API_CRDS
from tests.parity import unreported

pytestmark = pytest.mark.golden

CASES: Final = Path(__file__).parent / "cases"
BASE: Final = "_base"
INPUT: Final = ".in.yaml"
SNAPSHOT: Final = ".snapshot.yaml"
DIAGNOSTICS: Final = ".diagnostics.yaml"
STATUS: Final = ".status.yaml"
INFRA: Final = ".infra.yaml"
TABLES: Final = ".tables.txt"
EXPECTED_SUFFIXES: Final = (SNAPSHOT, DIAGNOSTICS, STATUS, INFRA, TABLES)
HEADER_KIND: Final = "CompileCase"
HEADER_KEYS: Final = frozenset(
    {
        "kind",
        "description",
        "scope",
        "include",
        "pending",
        "schema-invalid",
        "schema-skip",
        "gateway-address-ranges",
        "ingress-defaults",
    }
)
GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
PARAMETERS_GROUP: Final = "gateway.coxswain-labs.dev"
SCHEMA_GROUPS: Final = frozenset({GATEWAY_GROUP, PARAMETERS_GROUP})
# Areas whose cases are named after the object they are about rather than after the area.
AREA_PREFIXES: Final = {
    "gateway": (
        "gateway-",
        "httproute-",
        "grpcroute-",
        "tlsroute-",
        "tcproute-",
        "udproute-",
        "listenerset-",
        "backendtlspolicy-",
    )
}
_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are 1 MB of YAML
REGENERATE: Final = "run `make goldens` (pytest tests/golden --update-goldens), review git diff"


@dataclass(frozen=True, slots=True)
class Case:
    """One parsed case file: its header and the objects it holds, includes first."""

    name: str
    path: Path
    description: str
    scope: str
    includes: tuple[str, ...]
    pending: str | None
    schema_invalid: bool
    schema_skip: str | None
    bodies: tuple[SourcedBody, ...]
    config: CompileConfig

    def expected(self, suffix: str) -> Path:
        return self.path.with_name(self.name + suffix)


def _case_paths() -> list[Path]:
    return sorted(p for p in CASES.glob(f"*/*{INPUT}") if p.parent.name != BASE)


def _base_paths() -> list[Path]:
    return sorted((CASES / BASE).glob("*.yaml"))


def _name(path: Path) -> str:
    return path.name.removesuffix(INPUT)


def _parse(path: Path) -> list[SourcedBody]:
    parsed = parse_manifests(path.read_text(encoding="utf-8"), str(path.relative_to(CASES)))
    if isinstance(parsed, ManifestSyntaxError):
        pytest.fail(f"syntax error: {parsed}")
    return parsed


def _is_base_file(include: str) -> bool:
    """Whether an include names an existing file directly under ``cases/_base/``."""
    return Path(include).parent == Path(BASE) and (CASES / include).is_file()


def _load_case(path: Path, *, resolve: bool = True) -> Case:
    """Parse a case file and (with ``resolve``) its includes; a bad header fails the test."""
    documents = _parse(path)
    where = path.relative_to(CASES)
    if not documents or not isinstance(header := documents[0].body, dict):
        pytest.fail(f"{where}: the first document must be a {HEADER_KIND} header")
    problems = []
    if header.get("kind") != HEADER_KIND:
        problems.append(f"kind must be {HEADER_KIND}")
    if unknown := sorted(set(header) - HEADER_KEYS):
        problems.append(f"unknown header keys {unknown}")
    description = header.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is required")
    scope = header.get("scope", "shared")
    if not isinstance(scope, str) or parse_scope(scope) is None:
        problems.append("scope must be shared or namespace/name")
    includes = header.get("include", [])
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        problems.append("include must be a list of paths relative to tests/golden/cases")
        includes = []
    pending = header.get("pending")
    if pending is not None and (not isinstance(pending, str) or not pending.strip()):
        problems.append("pending must say why, in a sentence")
    schema_invalid = header.get("schema-invalid", False)
    if not isinstance(schema_invalid, bool):
        problems.append("schema-invalid must be true or false")
    schema_skip = header.get("schema-skip")
    if schema_skip is not None and (not isinstance(schema_skip, str) or not schema_skip.strip()):
        problems.append("schema-skip must say why, in a sentence")
    ranges = header.get("gateway-address-ranges", [])
    if not isinstance(ranges, list) or not all(isinstance(r, str) for r in ranges):
        problems.append("gateway-address-ranges must be a list of CIDRs")
        ranges = []
    defaults = header.get("ingress-defaults", {})
    known = {f.name for f in dataclasses.fields(IngressDefaults)}
    if not isinstance(defaults, dict) or not set(defaults) <= known:
        problems.append(f"ingress-defaults must map some of {sorted(known)} to values")
        defaults = {}
    if problems:
        pytest.fail(f"{where}: bad header: {'; '.join(problems)}")
    bodies: list[SourcedBody] = []
    for include in includes if resolve else ():
        if not _is_base_file(include):
            pytest.fail(f"{where}: include {include!r} is not a file under {BASE}/")
        bodies.extend(_parse(CASES / include))
    bodies.extend(documents[1:])
    return Case(
        name=_name(path),
        path=path,
        description=str(description),
        scope=str(scope),
        includes=tuple(includes),
        pending=pending,
        schema_invalid=schema_invalid is True,
        schema_skip=schema_skip,
        bodies=tuple(bodies),
        config=CompileConfig(
            gateway_address_ranges=tuple(ranges), ingress_defaults=IngressDefaults(**defaults)
        ),
    )


def _render(case: Case) -> dict[str, str | None]:
    """The expected-file texts of a case: suffix → text, or None when the file must not exist."""
    state = build_state(case.bodies)
    scope = parse_scope(case.scope) or SharedPool()
    result = compile(state, scope, case.config)
    desired = provision(state, case.config)
    found = dict.fromkeys((*result.diagnostics, *desired.diagnostics))  # both report parameters
    located = locate(found, case.bodies)
    diagnostics = [diagnostic_data(d) for d in located]
    desired_statuses = status(state, case.config)
    statuses = status_list(desired_statuses)
    infra = infra_list(desired)
    tables = [("snapshot", routing_table(result.snapshot))]
    if diagnostics:
        tables.append(("diagnostics", diagnostics_table(located)))
    if statuses["items"]:
        tables.append(("status", status_table(desired_statuses)))
    if infra["items"] or infra["metadata"]:
        tables.append(("infra", infra_table(desired)))
    return {
        SNAPSHOT: dump_yaml(snapshot_to_data(result.snapshot)),
        DIAGNOSTICS: dump_yaml(diagnostics) if diagnostics else None,
        STATUS: dump_yaml(statuses) if statuses["items"] else None,
        INFRA: dump_yaml(infra) if infra["items"] or infra["metadata"] else None,
        TABLES: "\n".join(f"# --emit {emit} -o table\n{text}" for emit, text in tables),
    }


def _compare(path: Path, actual: str | None, *, update: bool) -> str | None:
    """Compare (or, with ``update``, rewrite) one expected file; returns a failure or None."""
    expected = path.read_text(encoding="utf-8") if path.exists() else None
    if expected == actual:
        return None
    if update:
        if actual is None:
            path.unlink()
        else:
            path.write_text(actual, encoding="utf-8")
        return None
    if actual is None:
        return f"{path.name} exists, but the compile produced nothing for it: delete it"
    if expected is None:
        return f"{path.name} is missing"
    diff = difflib.unified_diff(
        expected.splitlines(keepends=True),
        actual.splitlines(keepends=True),
        fromfile=f"expected/{path.name}",
        tofile=f"actual/{path.name}",
    )
    return f"{path.name} differs:\n{''.join(diff)}"


@pytest.mark.parametrize("path", _case_paths(), ids=_name)
def test_golden(path: Path, update_goldens: bool) -> None:
    case = _load_case(path)
    rendered = _render(case)
    if case.pending is not None:
        failures = [
            msg
            for suffix in rendered
            if (msg := _compare(case.expected(suffix), None, update=update_goldens))
        ]
        assert not failures, f"{case.name} is pending: it must have no expected files"
        pytest.xfail(f"pending: {case.pending}")
    failures = [
        msg
        for suffix, text in rendered.items()
        if (msg := _compare(case.expected(suffix), text, update=update_goldens))
    ]
    if failures:
        pytest.fail(f"{case.name}: {case.description}\n" + "\n".join(failures) + f"\n{REGENERATE}")


def test_case_names_are_unique_and_kebab_case() -> None:
    names = [_name(p) for p in _case_paths()]
    assert names, "no golden cases found"
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"case names must be unique across areas: {duplicates}"
    bad = [
        n
        for n, p in zip(names, _case_paths(), strict=True)
        if not n.startswith(AREA_PREFIXES.get(p.parent.name, (f"{p.parent.name}-",)))
        or n != n.lower()
        or "_" in n
        or " " in n
    ]
    assert not bad, f"case names must be kebab-case <area>-<feature>-<variant>: {bad}"


def test_includes_exist_and_every_base_file_is_used() -> None:
    used: set[str] = set()
    missing: list[str] = []
    for path in _case_paths():
        case = _load_case(path, resolve=False)
        used.update(case.includes)
        missing.extend(f"{case.name}: {i}" for i in case.includes if not _is_base_file(i))
    unused = sorted(
        str(p.relative_to(CASES)) for p in _base_paths() if str(p.relative_to(CASES)) not in used
    )
    problems = [
        *(f"include that does not exist: {m}" for m in missing),
        *(f"{BASE} file no case includes (use it or delete it): {u}" for u in unused),
    ]
    assert not problems, "\n".join(problems)


def test_every_expected_file_has_its_input() -> None:
    orphans = []
    for path in sorted(CASES.glob("*/*.yaml")):
        if path.parent.name == BASE or path.name.endswith(INPUT):
            continue
        stem = next(
            (path.name.removesuffix(s) for s in EXPECTED_SUFFIXES if path.name.endswith(s)),
            None,
        )
        if stem is None or not path.with_name(stem + INPUT).is_file():
            orphans.append(str(path.relative_to(CASES)))
    assert not orphans, f"files under cases/ that belong to no case: {orphans}"


@pytest.mark.parametrize(
    "path",
    [*_case_paths(), *_base_paths()],
    ids=lambda p: _name(p) if p.parent.name != BASE else f"{BASE}/{p.stem}",
)
def test_input_survives_dump_and_parse(path: Path) -> None:
    """Inputs are plain data: re-dumped and re-parsed they give equal bodies and an equal state."""
    bodies = [b.body for b in _parse(path)]
    reparsed = parse_manifests(yaml.safe_dump_all(bodies, sort_keys=True), "dumped")
    assert not isinstance(reparsed, ManifestSyntaxError), str(reparsed)
    again = [b.body for b in reparsed]
    assert again == bodies
    first = 0 if path.parent.name == BASE else 1  # a case's first document is its header
    assert build_state(again[first:]) == build_state(bodies[first:])


@functools.cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, version) → openAPIV3Schema of every served Gateway API and Coxswain CRD version."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in [*sorted(GATEWAY_API_CRDS.glob("*.yaml")), *sorted(COXSWAIN_CRDS.glob("*.yaml"))]:
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue  # the Gateway API's ValidatingAdmissionPolicy
            if doc["spec"]["group"] not in SCHEMA_GROUPS:
                continue
            kind = doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                if version.get("served"):
                    schemas[(kind, version["name"])] = version["schema"]["openAPIV3Schema"]
    return schemas


def _schema_errors(schema: dict[str, Any], instance: object) -> list[str]:
    """The openAPIV3Schema violations of one instance (CEL rules and x-kubernetes-* ignored)."""
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
        for e in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    ]


def _where(body: dict[str, Any]) -> str:
    meta = body.get("metadata") or {}
    return f"{body.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}"


def _crd_objects(bodies: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a CRD group (Gateway API, Coxswain) among ``bodies``, named."""
    return [
        (_where(body), body)
        for body in bodies
        if isinstance(body, dict)
        and str(body.get("apiVersion", "")).rpartition("/")[0] in SCHEMA_GROUPS
    ]


def _stamp_conditions(data: Any) -> Any:
    """``data`` with a ``lastTransitionTime`` in every condition, as the shell stamps them."""
    if isinstance(data, list):
        return [_stamp_conditions(v) for v in data]
    if not isinstance(data, dict):
        return data
    stamped = {k: _stamp_conditions(v) for k, v in data.items()}
    if isinstance(conditions := stamped.get("conditions"), list):
        stamped["conditions"] = [
            {**c, "lastTransitionTime": "2025-01-01T00:00:00Z"} if isinstance(c, dict) else c
            for c in conditions
        ]
    return stamped


def _violations(objects: list[tuple[str, dict[str, Any]]], *, status: bool = False) -> list[str]:
    """Where ``objects`` break their CRD's schema: whole objects, or (``status``) their status
    against the ``status`` schema, with ``lastTransitionTime`` stamped as the shell does."""
    schemas = _crd_schemas()
    problems = []
    for where, body in objects:
        schema = schemas.get((str(body.get("kind")), str(body["apiVersion"]).rpartition("/")[2]))
        if schema is None:
            problems.append(f"{where}: no served CRD version {body['apiVersion']}")
        elif status:
            stamped = _stamp_conditions(body["status"])
            errors = _schema_errors(schema["properties"]["status"], stamped)
            problems.extend(f"{where}: status.{e}" for e in errors)
        else:
            problems.extend(f"{where}: {e}" for e in _schema_errors(schema, body))
    return problems


def test_the_crds_define_every_kind_the_compiler_reads() -> None:
    assert {
        ("GatewayClass", "v1"),
        ("Gateway", "v1"),
        ("HTTPRoute", "v1"),
        ("ReferenceGrant", "v1beta1"),
        ("CoxswainGatewayParameters", "v1alpha1"),
    } <= set(_crd_schemas())


def test_base_objects_match_the_crd_schema() -> None:
    """The Gateway API objects of the ``_base`` files are what the API server would admit."""
    objects = [
        (f"{BASE}/{path.name}: {where}", body)
        for path in _base_paths()
        for where, body in _crd_objects([b.body for b in _parse(path)])
    ]
    assert objects, f"no {BASE} file holds a Gateway API object"
    problems = _violations(objects)
    assert not problems, "schema violations:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", _case_paths(), ids=_name)
def test_case_matches_the_crd_schema(path: Path) -> None:
    """A case's own Gateway API and Coxswain objects are what the API server would admit
    (openAPIV3Schema, as written), unless it says ``schema-invalid: true``; every status
    the compiler writes is one the API server would accept on the object. A case with neither
    says why in its header (``schema-skip: <why>``): none passes by checking nothing."""
    case = _load_case(path)
    objects = _crd_objects([b.body for b in _parse(path)][1:])  # the header left out
    statuses = [
        (_where(item), item)
        for item in status_list(status(build_state(b.body for b in case.bodies), case.config))[
            "items"
        ]
        if str(item["apiVersion"]).rpartition("/")[0] in SCHEMA_GROUPS  # CRD kinds only
    ]
    if case.schema_skip is not None:
        checkable = len(objects) + len(statuses)
        assert not checkable, (
            f"{case.name} says schema-skip, but it has {len(objects)} objects and "
            f"{len(statuses)} statuses of CRD kinds to check: remove schema-skip"
        )
        pytest.skip(f"schema-skip: {case.schema_skip}")
    assert objects or statuses, (
        f"{case.name} has no Gateway API or Coxswain object and no status of one to check "
        "against its CRD: say why in its header (schema-skip: <why>)"
    )
    problems = [] if case.schema_invalid else _violations(objects)  # CEL rules are not checked
    problems.extend(_violations(statuses, status=True))
    assert not problems, "schema violations (or declare schema-invalid: true):\n" + "\n".join(
        problems
    )


@pytest.mark.parametrize("path", _case_paths(), ids=_name)
def test_every_problem_in_status_is_a_diagnostic(path: Path) -> None:
    """Whatever a status shows as a problem, some scope's compile reports on the same object
    with the same reason (``tests/parity.py``)."""
    case = _load_case(path)
    assert unreported(build_state(case.bodies), case.config) == []


@pytest.mark.parametrize("path", _case_paths(), ids=_name)
def test_discovery_grants_match_the_provisioned_identities(path: Path) -> None:
    """Each dedicated proxy's ServiceAccount that ``provision`` creates is granted its own
    Gateway's scope and nothing else; the shared pool's gets SharedPool
    (docs/dedicated-proxies.md)."""
    case = _load_case(path)
    state = build_state(b.body for b in case.bodies)
    config = case.config
    expected: dict[tuple[str, str], Scope] = {
        (config.namespace, config.shared_proxy_service_account): SharedPool()
    }
    for item in provision(state, config).objects:
        body = json.loads(item.body)
        labels = body["metadata"].get("labels", {})
        if item.kind == "ServiceAccount" and labels.get(ROLE) == "dedicated-proxy":
            gateway = body["metadata"]["annotations"]["coxswain-labs.dev/gateway"]
            scope = parse_scope(gateway)
            assert scope is not None
            expected[(item.namespace, item.name)] = scope
    assert dict(subscription_grants(state, config)) == expected
