"""A dedicated proxy's podTemplate cannot get its author a pod they could not create.

The controller applies dedicated proxies with its own rights, so whatever a
``CoxswainGatewayParameters`` podTemplate may set is what its author gets
(docs/dedicated-proxies.md, "What a pod template may set"). Each escalation here is refused
with ``InvalidParameters`` on the Gateway (or GatewayClass) holding the reference, a diagnostic
names the parameters object and the field's path, nothing is applied for that Gateway, a proxy
already running for it is left alone, and every other Gateway's objects are those it would
have without the hostile one. What is allowed still gets the controller's identity and pod
security on every container.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.config import CompileConfig
from coxswain.compile.podspec import PROXY_UID, secure_pod
from coxswain.compile.provision import provision
from tests.unit.helm_render import render

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.provision import DesiredObjects

NS = "app"
CLASS = "coxswain"
CONTROLLER = "coxswain-labs.dev/gateway-controller"
PARAMS = "gateway.coxswain-labs.dev"
HOSTILE = f"edge-{CLASS}"  # the dedicated objects of Gateway app/edge
OTHER = f"other-{CLASS}"


def _class(parameters: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"controllerName": CONTROLLER}
    if parameters is not None:
        spec["parametersRef"] = {
            "group": PARAMS,
            "kind": "CoxswainGatewayParameters",
            "name": parameters,
            "namespace": NS,
        }
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": CLASS},
        "spec": spec,
    }


def _parameters(name: str, template: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": 2}
    if template is not None:
        spec["podTemplate"] = template
    return {
        "apiVersion": f"{PARAMS}/v1alpha1",
        "kind": "CoxswainGatewayParameters",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def _gateway(name: str, parameters: str | None, port: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "gatewayClassName": CLASS,
        "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
    }
    if parameters is not None:
        spec["infrastructure"] = {
            "parametersRef": {
                "group": PARAMS,
                "kind": "CoxswainGatewayParameters",
                "name": parameters,
            }
        }
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": spec,
    }


def _rich() -> dict[str, Any]:
    """A template using each kind of field the allow-list admits."""
    return {
        "metadata": {"labels": {"team": "payments"}, "annotations": {"example.com/a": "b"}},
        "spec": {
            "nodeSelector": {"pool": "edge", "kubernetes.io/os": "linux"},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "terminationGracePeriodSeconds": 30,
            "volumes": [
                {"name": "scratch", "emptyDir": {}},
                {"name": "bundle", "projected": {"sources": [{"configMap": {"name": "c"}}]}},
            ],
            "initContainers": [{"name": "warm", "image": "warm:1", "command": ["warm"]}],
            "containers": [
                {"name": "proxy", "env": [{"name": "A", "value": "1"}]},
                {
                    "name": "exporter",
                    "image": "exporter:1",
                    "ports": [{"containerPort": 9100}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 9100}},
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                },
            ],
        },
    }


def _bodies(
    template: dict[str, Any] | None, *, on_class: bool = False, running: bool = False
) -> list[dict[str, Any]]:
    """Gateway app/edge with ``template`` (in its own parameters, or its class's), and
    Gateway app/other with plain parameters of its own."""
    bodies = [
        _class("from-class" if on_class else None),
        _parameters("from-class" if on_class else "hostile", template),
        _parameters("plain", None),
        _gateway("edge", None if on_class else "hostile", 8080),
        _gateway("other", "plain", 8081),
    ]
    if running:
        bodies.extend(_running())
    return bodies


def _running() -> list[dict[str, Any]]:
    """The dedicated objects a valid template of app/edge provisioned earlier."""
    meta = {
        "name": HOSTILE,
        "namespace": NS,
        "labels": {
            "app.kubernetes.io/managed-by": "coxswain",
            "coxswain-labs.dev/role": "dedicated-proxy",
        },
        "annotations": {"coxswain-labs.dev/gateway": f"{NS}/edge"},
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {},
            "status": {"readyReplicas": 2},
        },
        {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": []}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
    ]


def _bodies_without_edge() -> list[dict[str, Any]]:
    return [_class(), _parameters("plain", None), _gateway("other", "plain", 8081)]


def _provisioned(bodies: list[dict[str, Any]]) -> DesiredObjects:
    return provision(build_state(bodies), CompileConfig(), shared_served=frozenset())


def _diagnostics(bodies: list[dict[str, Any]]) -> list[Diagnostic]:
    return list(compile(build_state(bodies), SharedPool()).diagnostics)


def _for_edge(desired: DesiredObjects) -> list[str]:
    """Objects desired for Gateway app/edge: its dedicated ones, or its VIP Service."""
    return [
        f"{o.kind} {o.namespace}/{o.name}"
        for o in desired.objects
        if o.name == HOSTILE or f'"coxswain-labs.dev/gateway":"{NS}/edge"' in o.body
    ]


def _others(desired: DesiredObjects) -> list[tuple[str, str, str, str]]:
    return [(o.kind, o.namespace, o.name, o.body) for o in desired.objects if o.name != HOSTILE]


def _assert_refused(
    bodies: list[dict[str, Any]], paths: list[str], *, on_class: bool = False
) -> None:
    found = _diagnostics(bodies)
    holder = ("GatewayClass", "", CLASS) if on_class else ("Gateway", NS, "edge")
    refusals = [
        d
        for d in found
        if d.key is not None
        and (d.key.kind, d.key.namespace, d.key.name) == holder
        and d.reason == "InvalidParameters"
    ]
    assert refusals, [str(d) for d in found]
    named = {
        d.field
        for d in found
        if d.key is not None
        and d.key.kind == "CoxswainGatewayParameters"
        and d.reason == "InvalidParameters"
    }
    for path in paths[:10]:
        assert path in named, (path, sorted(named))
    desired = _provisioned(bodies)
    assert _for_edge(desired) == []
    if on_class:  # every Gateway of the class is refused with it
        assert list(desired.objects) == []
    else:
        assert _others(desired) == _others(_provisioned(_bodies_without_edge()))


# Each escalation the attack used, and its neighbours: (id, template, the refused field path).
ESCALATIONS: list[tuple[str, dict[str, Any], str]] = [
    (
        "service-account",
        {"spec": {"serviceAccountName": "coxswain-controller"}},
        "spec.serviceAccountName",
    ),
    (
        "service-account-legacy",
        {"spec": {"serviceAccount": "coxswain-controller"}},
        "spec.serviceAccount",
    ),
    (
        "token-automount",
        {"spec": {"automountServiceAccountToken": True}},
        "spec.automountServiceAccountToken",
    ),
    (
        "host-path",
        {"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}},
        "spec.volumes[0].hostPath",
    ),
    (
        "projected-token",
        {
            "spec": {
                "volumes": [
                    {
                        "name": "t",
                        "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]},
                    }
                ]
            }
        },
        "spec.volumes[0].projected.sources[0].serviceAccountToken",
    ),
    (
        "pvc",
        {"spec": {"volumes": [{"name": "p", "persistentVolumeClaim": {"claimName": "db"}}]}},
        "spec.volumes[0].persistentVolumeClaim",
    ),
    (
        "csi",
        {"spec": {"volumes": [{"name": "c", "csi": {"driver": "secrets-store"}}]}},
        "spec.volumes[0].csi",
    ),
    (
        "seccomp-pod",
        {"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
        "spec.securityContext",
    ),
    (
        "seccomp-container",
        {
            "spec": {
                "containers": [
                    {"name": "proxy", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}
                ]
            }
        },
        "spec.containers[0].securityContext",
    ),
    (
        "apparmor-field",
        {"spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}},
        "spec.securityContext",
    ),
    (
        "apparmor-annotation",
        {
            "metadata": {
                "annotations": {
                    "container.apparmor.security.beta.kubernetes.io/proxy": "unconfined"
                }
            }
        },
        "metadata.annotations[container.apparmor.security.beta.kubernetes.io/proxy]",
    ),
    (
        "seccomp-annotation",
        {"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}},
        "metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]",
    ),
    (
        "proc-mount",
        {
            "spec": {
                "containers": [
                    {"name": "side", "image": "x", "securityContext": {"procMount": "Unmasked"}}
                ]
            }
        },
        "spec.containers[0].securityContext",
    ),
    (
        "run-as-root-pod",
        {"spec": {"securityContext": {"runAsUser": 0, "runAsGroup": 0}}},
        "spec.securityContext",
    ),
    (
        "run-as-root-init",
        {
            "spec": {
                "initContainers": [{"name": "i", "image": "x", "securityContext": {"runAsUser": 0}}]
            }
        },
        "spec.initContainers[0].securityContext",
    ),
    (
        "sysctls",
        {"spec": {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}},
        "spec.securityContext",
    ),
    (
        "privileged",
        {"spec": {"containers": [{"name": "proxy", "securityContext": {"privileged": True}}]}},
        "spec.containers[0].securityContext",
    ),
    (
        "capabilities",
        {
            "spec": {
                "containers": [
                    {"name": "proxy", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}
                ]
            }
        },
        "spec.containers[0].securityContext",
    ),
    ("host-network", {"spec": {"hostNetwork": True}}, "spec.hostNetwork"),
    ("host-pid", {"spec": {"hostPID": True}}, "spec.hostPID"),
    ("host-ipc", {"spec": {"hostIPC": True}}, "spec.hostIPC"),
    ("host-users", {"spec": {"hostUsers": True}}, "spec.hostUsers"),
    (
        "host-port",
        {
            "spec": {
                "containers": [
                    {"name": "side", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]}
                ]
            }
        },
        "spec.containers[0].ports[0].hostPort",
    ),
    ("node-name", {"spec": {"nodeName": "control-plane-1"}}, "spec.nodeName"),
    ("runtime-class", {"spec": {"runtimeClassName": "unsandboxed"}}, "spec.runtimeClassName"),
    (
        "ephemeral-containers",
        {"spec": {"ephemeralContainers": [{"name": "e", "image": "x"}]}},
        "spec.ephemeralContainers",
    ),
    (
        "share-process-namespace",
        {"spec": {"shareProcessNamespace": True}},
        "spec.shareProcessNamespace",
    ),
    (
        "mount-propagation",
        {
            "spec": {
                "containers": [
                    {
                        "name": "side",
                        "image": "x",
                        "volumeMounts": [
                            {"name": "v", "mountPath": "/m", "mountPropagation": "Bidirectional"}
                        ],
                    }
                ]
            }
        },
        "spec.containers[0].volumeMounts[0].mountPropagation",
    ),
    (
        "probe-host",
        {
            "spec": {
                "containers": [
                    {
                        "name": "side",
                        "image": "x",
                        "livenessProbe": {"httpGet": {"host": "169.254.169.254", "port": 80}},
                    }
                ]
            }
        },
        "spec.containers[0].livenessProbe.httpGet.host",
    ),
    (
        "proxy-command",
        {"spec": {"containers": [{"name": "proxy", "command": ["sh", "-c", "id"]}]}},
        "spec.containers[0].command",
    ),
    (
        "proxy-image",
        {"spec": {"containers": [{"name": "proxy", "image": "attacker/proxy"}]}},
        "spec.containers[0].image",
    ),
    (
        "selector-label",
        {"metadata": {"labels": {"app.kubernetes.io/name": "coxswain"}}},
        "metadata.labels[app.kubernetes.io/name]",
    ),
    (
        "owned-annotation",
        {"metadata": {"annotations": {"coxswain-labs.dev/gateway": "other/gw"}}},
        "metadata.annotations[coxswain-labs.dev/gateway]",
    ),
    ("not-a-mapping", {"spec": {"volumes": ["hostPath"]}}, "spec.volumes[0]"),
]


def _full(path: str) -> str:
    return f"spec.podTemplate.{path}"


@pytest.mark.parametrize(
    ("template", "path"), [(t, p) for _, t, p in ESCALATIONS], ids=[i for i, _, _ in ESCALATIONS]
)
def test_each_escalation_is_refused_and_nothing_is_applied(
    template: dict[str, Any], path: str
) -> None:
    _assert_refused(_bodies(template), [_full(path)])


@pytest.mark.parametrize(
    ("template", "path"),
    [(t, p) for i, t, p in ESCALATIONS if i in ("service-account", "host-path", "seccomp-pod")],
)
def test_a_class_template_that_escalates_refuses_the_class(
    template: dict[str, Any], path: str
) -> None:
    _assert_refused(_bodies(template, on_class=True), [_full(path)], on_class=True)


@pytest.mark.parametrize("shared_served", [frozenset(), None], ids=["online", "offline"])
def test_a_running_proxy_is_left_as_it_is(shared_served: frozenset[str] | None) -> None:
    """Refused parameters apply nothing, as missing ones: the proxy a valid template made
    earlier is neither updated nor deleted, its autoscaler included (``held``)."""
    state = build_state(_bodies({"spec": {"hostNetwork": True}}, running=True))
    desired = provision(state, CompileConfig(), shared_served=shared_served)
    assert _for_edge(desired) == []
    assert [k for k in desired.deletions if k.name == HOSTILE] == []
    assert (NS, HOSTILE) in desired.held


def test_the_rich_template_is_allowed() -> None:
    desired = _provisioned(_bodies(_rich()))
    assert f"Deployment {NS}/{HOSTILE}" in _for_edge(desired)
    assert not [d for d in _diagnostics(_bodies(_rich())) if d.reason == "InvalidParameters"]


def _pod(desired: DesiredObjects, name: str) -> dict[str, Any]:
    (deployment,) = [o for o in desired.objects if o.kind == "Deployment" and o.name == name]
    pod: dict[str, Any] = json.loads(deployment.body)["spec"]["template"]
    return pod


def test_the_controller_sets_identity_and_security_on_every_container() -> None:
    desired = _provisioned(_bodies(_rich()))
    pod = _pod(desired, HOSTILE)
    spec = pod["spec"]
    assert spec["serviceAccountName"] == HOSTILE
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": PROXY_UID,
        "runAsGroup": PROXY_UID,
        "fsGroup": PROXY_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    containers = [*spec["containers"], *spec["initContainers"]]
    assert sorted(c["name"] for c in containers) == ["exporter", "proxy", "warm"]
    for container in containers:
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
        }, container["name"]


def test_secure_pod_overrides_whatever_the_spec_holds() -> None:
    """The last word after the merge: even a spec that slipped past the allow-list ends with
    the controller's settings."""
    spec = {
        "serviceAccountName": "controller",
        "automountServiceAccountToken": True,
        "hostNetwork": True,
        "hostPID": True,
        "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "Unconfined"}},
        "containers": [
            {"name": "proxy", "securityContext": {"privileged": True, "runAsUser": 0}},
            {"name": "side", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}},
        ],
        "initContainers": [{"name": "init", "securityContext": {"procMount": "Unmasked"}}],
    }
    secured = secure_pod(spec, service_account="edge-coxswain", lowest_port=80)
    assert secured["serviceAccountName"] == "edge-coxswain"
    assert secured["automountServiceAccountToken"] is False
    assert "hostNetwork" not in secured
    assert "hostPID" not in secured
    assert secured["securityContext"]["runAsUser"] == PROXY_UID
    assert secured["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert secured["securityContext"]["sysctls"] == [
        {"name": "net.ipv4.ip_unprivileged_port_start", "value": "80"}
    ]
    contexts = {c["name"]: c["securityContext"] for c in secured["containers"]}
    contexts["init"] = secured["initContainers"][0]["securityContext"]
    assert contexts["proxy"]["capabilities"] == {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}
    assert contexts["side"]["capabilities"] == {"drop": ["ALL"]}  # the low port is the proxy's
    for context in contexts.values():
        assert context["privileged"] is False
        assert "runAsUser" not in context
        assert "procMount" not in context


def test_infrastructure_annotations_in_kubernetes_domains_do_not_reach_the_pods() -> None:
    bodies = _bodies(None)
    gateway = bodies[3]
    gateway["spec"]["infrastructure"]["annotations"] = {
        "container.apparmor.security.beta.kubernetes.io/proxy": "unconfined",
        "example.com/owner": "payments",
    }
    assert _pod(_provisioned(bodies), HOSTILE)["metadata"]["annotations"] == {
        "example.com/owner": "payments"
    }


def test_the_shared_pool_has_the_same_security_in_the_chart() -> None:
    """The Helm chart's shared proxy and a dedicated proxy run under the same settings."""
    (pool,) = [
        d
        for d in render().of_kind("Deployment")
        if d["metadata"]["labels"].get("app.kubernetes.io/component") == "shared-proxy"
    ]
    spec = pool["spec"]["template"]["spec"]
    low = min(p["containerPort"] for p in spec["containers"][0]["ports"])
    secured = secure_pod({"containers": [{"name": "proxy"}]}, service_account="", lowest_port=low)
    assert spec["securityContext"] == secured["securityContext"]
    assert spec["containers"][0]["securityContext"] == secured["containers"][0]["securityContext"]
    assert spec["automountServiceAccountToken"] is False


# --- random injections -------------------------------------------------------------------------

# Where a forbidden field can go in the rich template: (site, the object there).
_SITES: dict[str, Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]] = {
    "pod": lambda t: ("spec", t["spec"]),
    "proxy": lambda t: ("spec.containers[0]", t["spec"]["containers"][0]),
    "sidecar": lambda t: ("spec.containers[1]", t["spec"]["containers"][1]),
    "init": lambda t: ("spec.initContainers[0]", t["spec"]["initContainers"][0]),
    "volume": lambda t: ("spec.volumes[0]", t["spec"]["volumes"][0]),
    "source": lambda t: (
        "spec.volumes[1].projected.sources[0]",
        t["spec"]["volumes"][1]["projected"]["sources"][0],
    ),
    "port": lambda t: ("spec.containers[1].ports[0]", t["spec"]["containers"][1]["ports"][0]),
    "mount": lambda t: (
        "spec.containers[1].volumeMounts[0]",
        t["spec"]["containers"][1]["volumeMounts"][0],
    ),
    "probe": lambda t: (
        "spec.containers[1].readinessProbe.httpGet",
        t["spec"]["containers"][1]["readinessProbe"]["httpGet"],
    ),
    "annotations": lambda t: ("metadata.annotations", t["metadata"]["annotations"]),
    "labels": lambda t: ("metadata.labels", t["metadata"]["labels"]),
}
_CONTEXTS = st.sampled_from(
    [
        {"privileged": True},
        {"runAsUser": 0},
        {"runAsGroup": 0},
        {"procMount": "Unmasked"},
        {"seccompProfile": {"type": "Unconfined"}},
        {"appArmorProfile": {"type": "Unconfined"}},
        {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}]},
        {"capabilities": {"add": ["SYS_ADMIN"]}},
        {"runAsNonRoot": True},  # even a harmless one: the context is the controller's
    ]
)
_CONTAINER_FIELDS = st.one_of(
    st.tuples(st.just("securityContext"), _CONTEXTS),
    st.tuples(st.sampled_from(["stdin", "tty"]), st.just(True)),
)
# site → strategy of (key, value) a template may not set there.
_FORBIDDEN: dict[str, st.SearchStrategy[tuple[str, Any]]] = {
    "pod": st.one_of(
        st.tuples(
            st.sampled_from(["hostNetwork", "hostPID", "hostIPC", "hostUsers"]), st.booleans()
        ),
        st.tuples(st.sampled_from(["serviceAccountName", "serviceAccount"]), st.just("controller")),
        st.tuples(st.just("automountServiceAccountToken"), st.booleans()),
        st.tuples(st.just("securityContext"), _CONTEXTS),
        st.tuples(st.just("nodeName"), st.just("node-1")),
        st.tuples(st.just("runtimeClassName"), st.just("runc")),
        st.tuples(st.just("ephemeralContainers"), st.just([{"name": "e", "image": "x"}])),
        st.tuples(st.just("shareProcessNamespace"), st.just(True)),
    ),
    "proxy": st.one_of(
        _CONTAINER_FIELDS,
        st.tuples(st.sampled_from(["command", "args"]), st.just(["sh"])),
        st.tuples(st.just("image"), st.just("attacker")),
    ),
    "sidecar": _CONTAINER_FIELDS,
    "init": _CONTAINER_FIELDS,
    "volume": st.tuples(
        st.sampled_from(["hostPath", "persistentVolumeClaim", "nfs", "csi", "ephemeral"]),
        st.just({"path": "/"}),
    ),
    "source": st.tuples(
        st.sampled_from(["serviceAccountToken", "clusterTrustBundle"]), st.just({"path": "t"})
    ),
    "port": st.tuples(st.sampled_from(["hostPort", "hostIP"]), st.just(80)),
    "mount": st.tuples(st.just("mountPropagation"), st.just("Bidirectional")),
    "probe": st.tuples(st.just("host"), st.just("169.254.169.254")),
    "annotations": st.tuples(
        st.sampled_from(
            [
                "container.apparmor.security.beta.kubernetes.io/proxy",
                "seccomp.security.alpha.kubernetes.io/pod",
                "kubernetes.io/psp",
                "coxswain-labs.dev/gateway",
            ]
        ),
        st.just("unconfined"),
    ),
    "labels": st.tuples(
        st.sampled_from(["app.kubernetes.io/name", "app.kubernetes.io/instance"]),
        st.just("coxswain"),
    ),
}
_INJECTIONS = st.lists(
    st.sampled_from(sorted(_SITES)).flatmap(
        lambda site: st.tuples(st.just(site), _FORBIDDEN[site])
    ),
    min_size=1,
    max_size=6,
)


def _inject(template: dict[str, Any], site: str, key: str, value: Any) -> str:
    where, target = _SITES[site](template)
    target[key] = copy.deepcopy(value)
    if site in ("annotations", "labels"):
        return f"spec.podTemplate.{where}[{key}]"
    return f"spec.podTemplate.{where}.{key}"


@given(injections=_INJECTIONS)
def test_forbidden_fields_anywhere_are_refused(
    injections: list[tuple[str, tuple[str, Any]]],
) -> None:
    template = _rich()
    paths = [_inject(template, site, key, value) for site, (key, value) in injections]
    _assert_refused(_bodies(template), sorted(set(paths)))
