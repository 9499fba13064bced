"""The Helm chart, rendered by Helm's own engine (helm_python), offline.

Every variant is rendered, linted and validated object by object (kubernetes client models for
built-in kinds, CRD schemas for custom ones), then checked for the invariants the design rests
on: selectors match the pods they mean, the controller's ``--shared-proxy-selector`` is the
shared pool's pod labels (so every VIP Service the controller provisions reaches the pool),
proxies hold no credentials, every pod is locked down, NodePort VIPs are refused, and the
optional NetworkPolicies admit every proxy (dedicated ones as the compiler labels them) to
discovery and anyone to the traffic ports. The
Gateway API CRDs the chart installs are upstream's files, of one version, each kept by Helm, and
the release that carries them fits in Helm's release record.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import helm_python
import jsonschema
import pytest
import yaml
from pyrsistent import pmap

from coxswain.compile import CompileConfig, build_state
from coxswain.compile.config import DEFAULT_SHARED_PROXY_SELECTOR
from coxswain.compile.gateway.ports import PORT_BAND
from coxswain.compile.labels import parse_selector
from coxswain.compile.provision import ROLE, ROLE_VIP, TLS_MOUNT, provision
from tests.apiserver.crds import (
    GATEWAY_API_CHANNELS,
    GATEWAY_API_CHART,
    GATEWAY_API_CRDS,
    GATEWAY_API_VERSION,
)
from tests.integration.manifests import gateway, gateway_class, own_infrastructure, own_parameters
from tests.unit.helm_render import CHART_DIR, ROOT, Rendered, chart, render, schema_error, validate

if TYPE_CHECKING:
    from pathlib import Path

RELEASE = "coxswain"
NAMESPACE = "coxswain-system"


@dataclass(frozen=True)
class Variant:
    """Values for one install, and the release it is installed as."""

    values: dict[str, Any]
    release: str = RELEASE
    namespace: str = NAMESPACE


VARIANTS: dict[str, Variant] = {
    "defaults": Variant({}),
    "clusterip-vips": Variant({"proxy": {"shared": {"vipServiceType": "ClusterIP"}}}),
    "shared-replicas-0": Variant({"proxy": {"shared": {"replicas": 0}}}),
    "shared-disabled": Variant({"proxy": {"shared": {"enabled": False}}}),
    "network-policy": Variant({"networkPolicy": {"enabled": True}}),
    "gateway-api-disabled": Variant({"gatewayAPI": {"enabled": False}}),
    "gateway-api-experimental": Variant({"gatewayAPI": {"crds": {"channel": "experimental"}}}),
    "gateway-api-crds-off": Variant({"gatewayAPI": {"crds": {"install": False}}}),
    "custom-release": Variant({}, release="edge", namespace="ingress-edge"),
    "everything-on": Variant(
        {
            "namespace": {"create": True},
            "commonLabels": {"team": "network"},
            "controller": {
                "replicas": 2,
                "statusAddresses": ["203.0.113.10", "lb.example.com"],
                "podLabels": {"extra": "yes"},
            },
            "proxy": {
                "shared": {
                    "ports": {"http": 80, "https": 443},
                    "autoscaling": {"enabled": True, "targetMemoryUtilizationPercentage": 75},
                    "podDisruptionBudget": {"minAvailable": 1},
                    "podLabels": {"extra": "yes"},
                    "ingressService": {
                        "externalTrafficPolicy": "Local",
                        "annotations": {"example.com/lb": "internal"},
                    },
                }
            },
            "gatewayAPI": {
                "gatewayClass": {
                    "create": True,
                    "dedicatedParameters": {"replicas": 2, "serviceType": "ClusterIP"},
                }
            },
            "ingress": {"ingressClass": {"default": True}},
            "networkPolicy": {
                "enabled": True,
                "metricsFrom": [{"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}],
            },
        },
        release="prod",
        namespace="net",
    ),
}


@dataclass(frozen=True)
class Installed:
    """One variant, rendered."""

    values: dict[str, Any]
    release: str
    namespace: str
    rendered: Rendered


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def installed(request: pytest.FixtureRequest) -> Installed:
    variant = VARIANTS[request.param]
    rendered = render(variant.values, name=variant.release, namespace=variant.namespace)
    return Installed(variant.values, variant.release, variant.namespace, rendered)


def fullname(release: str) -> str:
    return release if "coxswain" in release else f"{release}-coxswain"


def deployment(rendered: Rendered, release: str, role: str) -> dict[str, Any]:
    return rendered.get("Deployment", f"{fullname(release)}-{role}")


def args_of(container: dict[str, Any]) -> dict[str, list[str]]:
    """``--flag=value`` arguments → flag → values (a bare ``--flag`` gets ``[""]``)."""
    found: dict[str, list[str]] = {}
    for arg in container["args"][1:]:
        flag, _, value = arg.partition("=")
        found.setdefault(flag, []).append(value)
    return found


def controller_args(rendered: Rendered, release: str) -> dict[str, list[str]]:
    return args_of(
        deployment(rendered, release, "controller")["spec"]["template"]["spec"]["containers"][0]
    )


def pod_templates(rendered: Rendered) -> list[dict[str, Any]]:
    return [d["spec"]["template"] for d in rendered.of_kind("Deployment")]


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


# --- every variant ------------------------------------------------------------------------------


def test_every_object_is_valid(installed: Installed) -> None:
    rendered, namespace = installed.rendered, installed.namespace
    assert rendered.objects
    cluster_scoped = {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "IngressClass",
        "GatewayClass",
        "CustomResourceDefinition",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    for obj in rendered.objects:
        validate(obj)
        meta = obj["metadata"]
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in meta, obj["kind"]
        else:
            assert meta["namespace"] == namespace, (obj["kind"], meta["name"])
    names = [(o["kind"], o["metadata"]["name"]) for o in rendered.objects]
    assert len(names) == len(set(names)), "duplicate objects"
    assert "Coxswain" in rendered.notes


def test_the_chart_lints_clean(installed: Installed) -> None:
    values, namespace = installed.values, installed.namespace
    report = helm_python.lint(CHART_DIR, values, strict=True, namespace=namespace)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_every_selector_matches_its_pods(installed: Installed) -> None:
    rendered, release = installed.rendered, installed.release
    pods = {d["metadata"]["name"]: d["spec"]["template"] for d in rendered.of_kind("Deployment")}
    for name, template in pods.items():
        spec = rendered.get("Deployment", name)["spec"]
        assert selects(spec["selector"]["matchLabels"], template["metadata"]["labels"])
        # No Deployment's selector reaches another Deployment's pods.
        others = [
            n
            for n, t in pods.items()
            if selects(spec["selector"]["matchLabels"], t["metadata"]["labels"])
        ]
        assert others == [name]
    for service in rendered.of_kind("Service"):
        reached = [
            n
            for n, t in pods.items()
            if selects(service["spec"]["selector"], t["metadata"]["labels"])
        ]
        assert len(reached) == 1, service["metadata"]["name"]
        ports = {
            p["name"]: p["containerPort"]
            for p in pods[reached[0]]["spec"]["containers"][0]["ports"]
        }
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, (service["metadata"]["name"], port)
    for pdb in rendered.of_kind("PodDisruptionBudget"):
        reached = [
            n
            for n, t in pods.items()
            if selects(pdb["spec"]["selector"]["matchLabels"], t["metadata"]["labels"])
        ]
        assert reached == [f"{fullname(release)}-proxy"]
    for hpa in rendered.of_kind("HorizontalPodAutoscaler"):
        target = hpa["spec"]["scaleTargetRef"]
        assert (target["kind"], target["name"]) == ("Deployment", f"{fullname(release)}-proxy")
        assert "replicas" not in rendered.get("Deployment", target["name"])["spec"]


def test_the_controller_selects_the_shared_pool_it_is_installed_with(installed: Installed) -> None:
    """The `--shared-proxy-selector` is exactly the shared pool's pod selector, and a VIP Service
    provisioned by the compiler with those flags reaches the pool's pods and nothing else."""
    rendered, values = installed.rendered, installed.values
    release, namespace = installed.release, installed.namespace
    args = controller_args(rendered, release)
    selector = parse_selector(args["--shared-proxy-selector"][0])
    assert selector is not None
    assert selector["app.kubernetes.io/instance"] == release
    assert DEFAULT_SHARED_PROXY_SELECTOR.items() <= selector.items()
    assert not selects(
        selector,
        deployment(rendered, release, "controller")["spec"]["template"]["metadata"]["labels"],
    )
    if not values.get("proxy", {}).get("shared", {}).get("enabled", True):
        assert f"{fullname(release)}-proxy" not in rendered.names("Deployment")
        return
    pool = deployment(rendered, release, "proxy")
    assert pool["spec"]["selector"]["matchLabels"] == selector
    assert selects(selector, pool["spec"]["template"]["metadata"]["labels"])

    config = CompileConfig(
        namespace=args["--namespace"][0],
        gateway_controller=args["--controller-name"][0],
        ingress_controller=args["--ingress-controller-name"][0],
        shared_proxy_selector=pmap(selector),
        shared_vip_service_type=args["--shared-vip-service-type"][0],
        gateway_api="--disable-gateway-api" not in args,
    )
    state = build_state(
        [
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "GatewayClass",
                "metadata": {"name": "coxswain"},
                "spec": {"controllerName": args["--controller-name"][0]},
            },
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "Gateway",
                "metadata": {"name": "web", "namespace": "demo", "uid": "u1"},
                "spec": {
                    "gatewayClassName": "coxswain",
                    "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
                },
            },
        ]
    )
    vips = [
        o
        for o in (_body(d) for d in provision(state, config).objects)
        if o["kind"] == "Service" and o["metadata"]["labels"].get(ROLE) == ROLE_VIP
    ]
    if not config.gateway_api:
        assert vips == []
        return
    assert len(vips) == 1
    vip = vips[0]
    assert vip["metadata"]["namespace"] == namespace
    assert vip["spec"]["type"] == values.get("proxy", {}).get("shared", {}).get(
        "vipServiceType", "LoadBalancer"
    )
    reached = [
        t
        for t in pod_templates(rendered)
        if selects(vip["spec"]["selector"], t["metadata"]["labels"])
    ]
    assert reached == [pool["spec"]["template"]]


def _body(desired: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(desired.body)
    return body


def test_every_pod_is_locked_down(installed: Installed) -> None:
    rendered = installed.rendered
    for template in pod_templates(rendered):
        spec = template["spec"]
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True
        assert pod["runAsUser"] != 0
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            assert not spec.get(flag)
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context.get("privileged", False) is False
            assert context["capabilities"]["drop"] == ["ALL"]
            low = [p["containerPort"] for p in container["ports"] if p["containerPort"] < 1024]
            assert context["capabilities"].get("add", []) == (["NET_BIND_SERVICE"] if low else [])
            # A non-root process gets no ambient capabilities: the pod's network namespace must
            # make the low ports unprivileged for the bind to succeed.
            sysctls = {s["name"]: s["value"] for s in pod.get("sysctls", [])}
            if low:
                assert int(sysctls["net.ipv4.ip_unprivileged_port_start"]) <= min(low)
            else:
                assert sysctls == {}
            assert all("hostPort" not in p for p in container["ports"])
            resources = container["resources"]
            assert {"cpu", "memory"} <= resources["requests"].keys()
            assert {"cpu", "memory"} <= resources["limits"].keys()
            # A read-only root: /tmp is the one writable place.
            mounts = {m["mountPath"] for m in container["volumeMounts"]}
            assert "/tmp" in mounts


def test_proxies_hold_no_credentials(installed: Installed) -> None:
    rendered, release, namespace = installed.rendered, installed.release, installed.namespace
    proxy_account = f"{fullname(release)}-proxy"
    subjects = [
        (s["kind"], s.get("namespace"), s["name"])
        for kind in ("RoleBinding", "ClusterRoleBinding")
        for binding in rendered.of_kind(kind)
        for s in binding["subjects"]
    ]
    assert subjects
    assert all(
        s == ("ServiceAccount", namespace, f"{fullname(release)}-controller") for s in subjects
    )
    if proxy_account in rendered.names("ServiceAccount"):
        assert (
            rendered.get("ServiceAccount", proxy_account)["automountServiceAccountToken"] is False
        )
        pod = deployment(rendered, release, "proxy")["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == proxy_account
        assert pod["automountServiceAccountToken"] is False


# --- the controller -----------------------------------------------------------------------------


def test_ingress_nginx_configmap_defaults_become_controller_flags() -> None:
    defaults = {
        "proxyBodySize": "8m",
        "proxyConnectTimeout": 5,
        "proxyReadTimeout": "120",
        "proxySendTimeout": 0.5,
        "sslRedirect": False,
        "hsts": True,
        "hstsMaxAge": 86400,
        "hstsPreload": True,
    }
    args = controller_args(render({"ingress": {"defaults": defaults}}, name="edge"), "edge")
    assert {k: v for k, v in args.items() if k.startswith("--ingress-default-")} == {
        "--ingress-default-body-size": ["8m"],
        "--ingress-default-connect-timeout": ["5"],
        "--ingress-default-read-timeout": ["120"],
        "--ingress-default-send-timeout": ["0.5"],
        "--ingress-default-ssl-redirect": ["false"],
        "--ingress-default-hsts": ["true"],
        "--ingress-default-hsts-max-age": ["86400"],
        "--ingress-default-hsts-include-subdomains": ["true"],
        "--ingress-default-hsts-preload": ["true"],
    }
    plain = controller_args(render({}, name="edge"), "edge")
    assert not any(k.startswith("--ingress-default-") for k in plain)


@pytest.mark.parametrize(
    "defaults",
    [
        {"proxyBodySize": "8 megabytes"},
        {"proxyReadTimeout": "2m"},
        {"sslRedirect": "no"},
        {"hsts": "yes"},
        {"hstsMaxAge": -1},
        {"hstsMaxAge": "1y"},
    ],
)
def test_ingress_defaults_that_the_controller_would_refuse_are_refused_by_the_schema(
    defaults: dict[str, object],
) -> None:
    assert "defaults" in schema_error({"ingress": {"defaults": defaults}})


def test_every_controller_flag_comes_from_values() -> None:
    rendered = render(
        {
            "proxy": {"shared": {"vipServiceType": "ClusterIP", "portsPerNamespace": 128}},
            "gatewayAPI": {
                "enabled": False,
                "controllerName": "example.com/gateway",
                "addressRanges": ["192.0.2.0/24", "2001:db8::/32"],
            },
            "ingress": {
                "controllerName": "example.com/ingress",
                "classNames": ["nginx", "nginx-internal"],
                "withoutClass": True,
            },
            "controller": {
                "statusAddresses": ["203.0.113.10", "lb.example.com"],
                "discoveryPort": 19000,
                "healthPort": 9999,
                "kubeconfig": "/etc/kube/config",
            },
        },
        name="edge",
        namespace="net",
    )
    assert controller_args(rendered, "edge") == {
        "--namespace": ["net"],
        "--controller-name": ["example.com/gateway"],
        "--ingress-controller-name": ["example.com/ingress"],
        "--ingress-class": ["nginx,nginx-internal"],
        "--ingress-without-class": ["true"],
        "--shared-proxy-selector": [
            "app.kubernetes.io/component=shared-proxy,app.kubernetes.io/instance=edge,"
            "app.kubernetes.io/name=coxswain"
        ],
        "--shared-vip-service-type": ["ClusterIP"],
        "--shared-ports-per-namespace": ["128"],
        "--shared-proxy-service-account": ["edge-coxswain-proxy"],
        "--discovery-address": ["edge-coxswain-discovery.net.svc:19000"],
        "--proxy-image": ["coxswain:0.1.0"],
        "--gateway-address-ranges": ["192.0.2.0/24,2001:db8::/32"],
        "--disable-gateway-api": [""],
        "--status-address": ["203.0.113.10", "lb.example.com"],
        "--discovery-port": ["19000"],
        "--health-port": ["9999"],
        "--kubeconfig": ["/etc/kube/config"],
    }
    assert (
        deployment(rendered, "edge", "controller")["spec"]["template"]["spec"]["containers"][0][
            "args"
        ][0]
        == "controller"
    )
    discovery = rendered.get("Service", "edge-coxswain-discovery")
    assert discovery["spec"]["ports"][0]["port"] == 19000
    pool = deployment(rendered, "edge", "proxy")["spec"]["template"]["spec"]["containers"][0]
    assert args_of(pool)["--discovery"] == ["edge-coxswain-discovery.net.svc:19000"]


def test_default_names_are_the_ones_the_controller_assumes() -> None:
    """Installed as `coxswain` in `coxswain-system`, the chart's names are the compiler's
    defaults: the shared pool's ServiceAccount (its discovery identity), the discovery address
    dedicated proxies dial, and the proxy image."""
    rendered = render()
    defaults = CompileConfig()
    pool = deployment(rendered, RELEASE, "proxy")["spec"]["template"]["spec"]
    container = pool["containers"][0]
    assert pool["serviceAccountName"] == defaults.shared_proxy_service_account
    assert args_of(container)["--discovery"] == [defaults.discovery_address]
    assert container["image"] == defaults.proxy_image
    assert controller_args(rendered, RELEASE)["--namespace"] == [defaults.namespace]


def test_the_shared_pool_mounts_its_certificate_like_dedicated_proxies() -> None:
    """Convention: `<proxy ServiceAccount>-discovery-tls` (tls.crt, tls.key, ca.crt) mounted at
    /etc/coxswain/discovery, as coxswain/compile/provision.py does for dedicated proxies."""
    rendered = render(name="edge", namespace="net")
    pod = deployment(rendered, "edge", "proxy")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    volume = {v["name"]: v for v in pod["volumes"]}["discovery-tls"]
    assert volume["secret"]["secretName"] == f"{pod['serviceAccountName']}-discovery-tls"
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]}[
        "discovery-tls"
    ] == TLS_MOUNT
    args = args_of(container)
    assert container["args"][:2] == ["proxy", "--shared"]
    assert args["--tls-cert"] == [f"{TLS_MOUNT}/tls.crt"]
    assert args["--tls-key"] == [f"{TLS_MOUNT}/tls.key"]
    assert args["--tls-ca"] == [f"{TLS_MOUNT}/ca.crt"]


Grants = dict[tuple[str, str], frozenset[str]]  # (API group, resource) → verbs
STATED_MODES = {True: ("always", "Gateway API"), False: ("always", "Ingress only")}


# Where the controller's RBAC is stated: the statement of it, and the one with the code that
# makes each request. Each is a table: scope, API group, resources, verbs, when, why.
RBAC_TABLES = {"install.md": "### Permissions", "security.md": "## RBAC"}


def stated_rbac(doc: str, gateway_api: bool) -> tuple[Grants, Grants]:
    """The controller's ClusterRole and Role as the table under ``RBAC_TABLES[doc]`` in
    docs/``doc`` states them."""
    text = (ROOT / "docs" / doc).read_text()
    heading = RBAC_TABLES[doc]
    level = heading.partition(" ")[0]
    section = text[text.index(f"\n{heading}\n") + len(heading) + 2 :]
    section = re.split(rf"^#{{1,{len(level)}}} ", section, flags=re.MULTILINE)[0]
    found: dict[str, dict[tuple[str, str], set[str]]] = {"cluster": {}, "namespace": {}}
    rows = 0
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] not in found:
            continue
        rows += 1
        scope, group, resources, verbs, when, _ = cells
        assert when in ("always", "Gateway API", "Ingress only"), line
        if when not in STATED_MODES[gateway_api]:
            continue
        group = "" if group == "core" else group.strip("`")
        for resource in resources.split(","):
            # "`resource` (name `n`)": a grant of that one object (resourceNames)
            named = re.fullmatch(r"`([^`]+)` \(name `([^`]+)`\)", resource.strip())
            key = f"{named[1]}/{named[2]}" if named else resource.strip().strip("`")
            grant = found[scope].setdefault((group, key), set())
            grant.update(v.strip() for v in verbs.split(","))
    assert rows >= 10, f"docs/{doc} ({heading}) lost its table"
    cluster, namespaced = (
        {k: frozenset(v) for k, v in found[scope].items()} for scope in ("cluster", "namespace")
    )
    return cluster, namespaced


@pytest.mark.parametrize("doc", sorted(RBAC_TABLES))
@pytest.mark.parametrize("gateway_api", [True, False])
def test_rbac_is_what_the_documentation_states(doc: str, gateway_api: bool) -> None:
    """docs/install.md#permissions states the controller's RBAC, and docs/security.md repeats
    it with the code behind each rule: the chart grants exactly their rules
    (test_controller_rbac.py proves them against the requests the controller really makes)."""
    rendered = render({"gatewayAPI": {"enabled": gateway_api}})
    cluster, namespaced = stated_rbac(doc, gateway_api)
    assert _grants(rendered.get("ClusterRole", f"coxswain-controller-{NAMESPACE}")) == cluster
    assert _grants(rendered.get("Role", "coxswain-controller")) == namespaced
    assert len(rendered.of_kind("ClusterRole")) == len(rendered.of_kind("Role")) == 1
    for role in rendered.of_kind("ClusterRole") + rendered.of_kind("Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
            # names restrict get alone: list and watch would ignore them
            assert "resourceNames" not in rule or rule["verbs"] == ["get"]


def _grants(role: dict[str, Any]) -> dict[tuple[str, str], frozenset[str]]:
    """(API group, resource, or ``resource/name`` for a rule with resourceNames) → verbs."""
    found: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        names = rule.get("resourceNames")
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                keys = [f"{resource}/{n}" for n in names] if names else [resource]
                for key in keys:
                    found.setdefault((group, key), set()).update(rule["verbs"])
    return {k: frozenset(v) for k, v in found.items()}


# --- the shared pool and its Services -----------------------------------------------------------


def test_the_ingress_service_exposes_80_and_443_on_unprivileged_ports() -> None:
    rendered = render()
    service = rendered.get("Service", "coxswain-ingress")
    assert service["spec"]["type"] == "LoadBalancer"
    container = deployment(rendered, RELEASE, "proxy")["spec"]["template"]["spec"]["containers"][0]
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    exposed = {p["port"]: named[p["targetPort"]] for p in service["spec"]["ports"]}
    assert exposed == {80: 8080, 443: 8443}
    args = args_of(container)
    assert (args["--ingress-http-port"], args["--ingress-https-port"]) == (["8080"], ["8443"])
    assert "add" not in container["securityContext"]["capabilities"]


def test_replicas_zero_keeps_the_pool_objects_without_pods() -> None:
    rendered = render({"proxy": {"shared": {"replicas": 0}}})
    assert deployment(rendered, RELEASE, "proxy")["spec"]["replicas"] == 0
    assert "coxswain-ingress" in rendered.names("Service")
    assert rendered.of_kind("PodDisruptionBudget") == []
    assert "0 replicas" in rendered.notes


def test_without_the_shared_pool_only_the_controller_runs() -> None:
    rendered = render({"proxy": {"shared": {"enabled": False}}})
    assert rendered.names("Deployment") == {"coxswain-controller"}
    assert rendered.names("Service") == {"coxswain-discovery"}
    assert rendered.names("ServiceAccount") == {"coxswain-controller"}
    assert "disabled" in rendered.notes


def test_gateway_classes_and_ingress_classes() -> None:
    offline = render()  # Helm's offline capabilities do not include the Gateway API
    assert offline.of_kind("GatewayClass") == []
    # It installs the CRDs, but Helm read the cluster's APIs before: the next upgrade creates it.
    assert "GatewayClass `coxswain` not created yet" in offline.notes
    assert "helm upgrade coxswain <this chart> -n coxswain-system --reuse-values" in offline.notes
    assert f"Gateway API CRDs: {GATEWAY_API_VERSION}, standard channel" in offline.notes
    unmanaged = render({"gatewayAPI": {"crds": {"install": False}}})
    assert "no GatewayClass created (the Gateway API CRDs were not found" in unmanaged.notes
    assert "Gateway API CRDs:" not in unmanaged.notes
    assert (
        offline.get("IngressClass", "coxswain")["spec"]["controller"]
        == "coxswain-labs.dev/ingress-controller"
    )
    rendered = render({"gatewayAPI": {"gatewayClass": {"create": True}}})
    assert rendered.get("GatewayClass", "coxswain")["spec"] == {
        "controllerName": "coxswain-labs.dev/gateway-controller",
        "description": "Coxswain, shared or dedicated proxies per Gateway",
    }
    disabled = render({"gatewayAPI": {"enabled": False, "gatewayClass": {"create": True}}})
    assert disabled.of_kind("GatewayClass") == []


def test_class_wide_dedicated_parameters_validate_against_the_crd() -> None:
    rendered = render(
        {"gatewayAPI": {"gatewayClass": {"create": True, "dedicatedParameters": {"replicas": 3}}}}
    )
    ref = rendered.get("GatewayClass", "coxswain")["spec"]["parametersRef"]
    parameters = rendered.get("CoxswainGatewayParameters", ref["name"])
    assert ref["namespace"] == parameters["metadata"]["namespace"] == NAMESPACE
    assert parameters["spec"] == {"replicas": 3}
    validate(parameters)
    with pytest.raises(Exception, match="replicas"):
        validate({**parameters, "spec": {"replicas": "three"}})


def test_the_crds_directory_holds_valid_crds() -> None:
    crds = chart().crds
    assert [c["name"] for c in crds] == [
        "crds/gateway.coxswain-labs.dev_coxswaingatewayparameters.yaml"
    ]
    for crd in crds:
        validate(yaml.safe_load(crd["data"]))


def test_the_validator_refuses_what_the_api_server_would() -> None:
    service = render().get("Service", "coxswain-discovery")
    port = service["spec"]["ports"][0]
    snake = {k: v for k, v in port.items() if k != "targetPort"} | {"target_port": "discovery"}
    for bad, reason in (
        (snake, "unknown field 'target_port'"),  # the models accept the snake_case alias
        ({**port, "nodeport": 30000}, "nodeport"),
        ({**port, "port": "18000"}, "valid integer"),
        ({k: v for k, v in port.items() if k != "port"}, "port"),
    ):
        with pytest.raises((AssertionError, ValueError), match=reason):
            validate({**service, "spec": {**service["spec"], "ports": [bad]}})
    gateway_class = render({"gatewayAPI": {"gatewayClass": {"create": True}}}).get(
        "GatewayClass", "coxswain"
    )
    with pytest.raises(jsonschema.ValidationError, match="no-domain"):
        validate({**gateway_class, "spec": {"controllerName": "no-domain"}})


# --- network policies --------------------------------------------------------------------------

MONITORING = [
    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
    {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
]


def port_names(template: dict[str, Any]) -> dict[str, int]:
    """The named container ports of a pod template."""
    return {
        p["name"]: p["containerPort"] for c in template["spec"]["containers"] for p in c["ports"]
    }


def dedicated_proxy_labels() -> dict[str, str]:
    """The pod labels of a dedicated proxy, as the compiler provisions it, with a label of
    its podTemplate (which may not set ``app.kubernetes.io/*`` keys)."""
    parameters = own_parameters({"podTemplate": {"metadata": {"labels": {"team": "shop"}}}})
    edge = gateway("edge", 443, infrastructure=own_infrastructure())
    desired = provision(build_state([gateway_class(), parameters, edge]), CompileConfig())
    [found] = [_body(o) for o in desired.objects if o.kind == "Deployment"]
    labels: dict[str, str] = found["spec"]["template"]["metadata"]["labels"]
    return labels


def rules_by_port(policy: dict[str, Any]) -> dict[Any, list[dict[str, Any]] | None]:
    """Each port of an ingress rule → the rule's peers (None: from anywhere)."""
    return {
        port["port"]: rule.get("from")
        for rule in policy["spec"]["ingress"]
        for port in rule["ports"]
    }


def test_no_network_policy_by_default() -> None:
    assert render().of_kind("NetworkPolicy") == []


def test_network_policies_admit_proxies_to_discovery_and_anyone_to_traffic() -> None:
    """With `networkPolicy.enabled`, the controller takes discovery from the shared pool and
    from dedicated proxies in any namespace, and nothing else from pods (its node's kubelet
    is always admitted); the shared pool takes traffic from anywhere on the Ingress ports and
    the whole internal band; neither admin port is open to pods without `metricsFrom`."""
    rendered = render({"networkPolicy": {"enabled": True}})
    controller = deployment(rendered, RELEASE, "controller")["spec"]["template"]
    pool = deployment(rendered, RELEASE, "proxy")["spec"]["template"]
    policies = {p["metadata"]["name"]: p for p in rendered.of_kind("NetworkPolicy")}
    assert sorted(policies) == ["coxswain-controller", "coxswain-proxy"]
    for name, template in (("coxswain-controller", controller), ("coxswain-proxy", pool)):
        spec = policies[name]["spec"]
        assert spec["policyTypes"] == ["Ingress"]
        reached = [
            t
            for t in pod_templates(rendered)
            if selects(spec["podSelector"]["matchLabels"], t["metadata"]["labels"])
        ]
        assert reached == [template]

    to_controller = rules_by_port(policies["coxswain-controller"])
    assert set(to_controller) == {"discovery"}
    assert "discovery" in port_names(controller)
    shared_peer, dedicated_peer = to_controller["discovery"] or []
    assert "namespaceSelector" not in shared_peer  # the release namespace only
    assert selects(shared_peer["podSelector"]["matchLabels"], pool["metadata"]["labels"])
    assert not selects(shared_peer["podSelector"]["matchLabels"], controller["metadata"]["labels"])
    assert dedicated_peer["namespaceSelector"] == {}  # dedicated proxies live in any namespace
    dedicated = dedicated_peer["podSelector"]["matchLabels"]
    assert selects(dedicated, dedicated_proxy_labels())
    assert not selects(dedicated, controller["metadata"]["labels"])

    to_pool = policies["coxswain-proxy"]["spec"]["ingress"]
    assert to_pool == [
        {
            "ports": [
                {"port": "http", "protocol": "TCP"},
                {"port": "https", "protocol": "TCP"},
                {
                    "port": PORT_BAND.start,
                    "endPort": PORT_BAND.stop - 1,
                    "protocol": "TCP",
                },
            ]
        }
    ]
    assert {"http", "https"} <= port_names(pool).keys()


def test_metrics_from_opens_the_health_and_admin_ports_to_those_peers() -> None:
    rendered = render({"networkPolicy": {"enabled": True, "metricsFrom": MONITORING}})
    controller = rules_by_port(rendered.get("NetworkPolicy", "coxswain-controller"))
    pool = rules_by_port(rendered.get("NetworkPolicy", "coxswain-proxy"))
    assert controller["health"] == pool["admin"] == MONITORING
    assert "health" in port_names(deployment(rendered, RELEASE, "controller")["spec"]["template"])
    assert "admin" in port_names(deployment(rendered, RELEASE, "proxy")["spec"]["template"])
    assert controller["discovery"] != MONITORING
    assert pool["http"] is None


def test_without_the_shared_pool_only_the_controller_has_a_network_policy() -> None:
    rendered = render({"networkPolicy": {"enabled": True}, "proxy": {"shared": {"enabled": False}}})
    assert rendered.names("NetworkPolicy") == {"coxswain-controller"}


# --- the Gateway API CRDs -----------------------------------------------------------------------

GATEWAY_API_TEMPLATE = "coxswain/charts/gatewayAPI/templates/crds.yaml"
KEEP_LINE = "    helm.sh/resource-policy: keep\n"
ADMISSION_KINDS = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def committed(channel: str) -> list[Path]:
    """The files of one channel, in the order the template renders them (sorted paths)."""
    return sorted((GATEWAY_API_CHART / channel).glob("*.yaml"))


def gateway_api_objects(rendered: Rendered) -> list[dict[str, Any]]:
    return [
        o
        for o in rendered.objects
        if o["kind"] in ADMISSION_KINDS
        or (o["kind"] == "CustomResourceDefinition" and "gateway.networking" in o["spec"]["group"])
    ]


@pytest.mark.parametrize("channel", GATEWAY_API_CHANNELS)
def test_the_gateway_api_crds_are_the_committed_files_kept_by_helm(channel: str) -> None:
    """By default (standard) or by ``crds.channel``, the chart renders its channel's files as
    committed, with the one line that stops Helm from ever deleting them (and every route)."""
    values = {} if channel == "standard" else {"gatewayAPI": {"crds": {"channel": channel}}}
    rendered = render(values)
    files = committed(channel)
    text = rendered.manifests[GATEWAY_API_TEMPLATE]
    expected = "".join(f"\n---\n{f.read_text(encoding='utf-8')}" for f in files)
    assert text.replace(KEEP_LINE, "").strip() == expected.strip()
    objects = gateway_api_objects(rendered)
    upstream = [
        d for f in files for d in yaml.load_all(f.read_text(encoding="utf-8"), Loader=_LOADER) if d
    ]
    assert text.count(KEEP_LINE) == len(objects) == len(upstream)
    for obj, original in zip(objects, upstream, strict=True):
        annotations = obj["metadata"]["annotations"]
        assert annotations.pop("helm.sh/resource-policy") == "keep"
        assert obj == original
    kinds = {o["kind"] for o in objects}
    assert kinds == {"CustomResourceDefinition", *ADMISSION_KINDS}, "the safe-upgrades policy"
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert {o["metadata"]["annotations"]["gateway.networking.k8s.io/channel"] for o in crds} == {
        channel
    }


@pytest.mark.parametrize(
    "values",
    [
        {"gatewayAPI": {"crds": {"install": False}}},
        {"gatewayAPI": {"enabled": False}},
        {"gatewayAPI": {"enabled": False, "crds": {"channel": "experimental"}}},
    ],
    ids=["install-false", "gateway-api-disabled", "gateway-api-disabled-experimental"],
)
def test_no_gateway_api_crds_when_they_are_managed_elsewhere(values: dict[str, Any]) -> None:
    rendered = render(values)
    assert rendered.manifests[GATEWAY_API_TEMPLATE].strip() == ""
    assert gateway_api_objects(rendered) == []
    assert rendered.of_kind("CustomResourceDefinition") == []


def test_the_gateway_api_crds_are_upstreams_files_at_one_version() -> None:
    """Each committed file is the upstream blob ``git-blobs.txt`` names (as ``git ls-tree`` of
    upstream's ``config/crd/<channel>`` at the tag prints it), every object in it carries the
    version and channel its place says, and that version is the subchart's, named once."""
    subchart = yaml.safe_load((GATEWAY_API_CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert subchart["appVersion"] == GATEWAY_API_VERSION
    assert subchart["version"] == GATEWAY_API_VERSION.removeprefix("v")
    assert re.fullmatch(r"[0-9a-f]{40}", subchart["annotations"]["coxswain-labs.dev/source-commit"])
    blobs = (GATEWAY_API_CHART / "git-blobs.txt").read_text(encoding="utf-8").splitlines()
    listed = {name: blob for blob, name in (line.split(" ") for line in blobs)}
    files = {f"{c}/{p.name}": p for c in GATEWAY_API_CHANNELS for p in committed(c)}
    assert sorted(listed) == sorted(files)
    assert {p.parent for p in GATEWAY_API_CHART.glob("*/*.yaml")} == {
        GATEWAY_API_CHART / c for c in (*GATEWAY_API_CHANNELS, "templates")
    }
    for name, path in files.items():
        data = path.read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == listed[name], name
        documents = [d for d in yaml.load_all(data, Loader=_LOADER) if d]
        # The template singles the admission policy out by its file name.
        policy = {d["kind"] for d in documents} == ADMISSION_KINDS
        for document in documents:
            annotations = document["metadata"]["annotations"]
            assert annotations["gateway.networking.k8s.io/bundle-version"] == GATEWAY_API_VERSION
            if not policy:  # upstream's experimental policy says channel: standard
                assert annotations["gateway.networking.k8s.io/channel"] == path.parent.name
        assert policy == name.endswith("_vap_safeupgrades.yaml"), name
        assert policy or [d["kind"] for d in documents] == ["CustomResourceDefinition"], name
    assert GATEWAY_API_CRDS == GATEWAY_API_CHART / "standard"
    license_text = (GATEWAY_API_CHART / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text
    assert "Version 2.0" in license_text
    parent = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text(encoding="utf-8"))
    assert parent["dependencies"] == [
        {"name": "gateway-api-crds", "version": "*", "alias": "gatewayAPI"}
    ]


SECRET_LIMIT = 1024 * 1024  # bytes of data a Secret may hold


def release_record_size(loaded: helm_python.Chart, values: dict[str, Any]) -> int:
    """The size of the release record Helm stores for an install with ``values``, encoded as its
    Secret driver stores it: JSON of the release (the chart's own metadata, templates, values,
    schema and files, data base64, but not its subcharts; the rendered manifest) gzipped, then
    base64 (``data.release``)."""
    manifests = loaded.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)

    def files(entries: list[dict[str, str]]) -> list[dict[str, str]]:
        return [
            {"name": e["name"], "data": base64.b64encode(e["data"].encode()).decode()}
            for e in entries
        ]

    record = {
        "name": RELEASE,
        "namespace": NAMESPACE,
        "version": 1,
        "info": {"status": "deployed", "notes": manifests.pop(f"{RELEASE}/templates/NOTES.txt")},
        "chart": {
            "metadata": loaded.metadata,
            "lock": None,
            "templates": files(loaded.templates),
            "values": loaded.values,
            "schema": base64.b64encode(json.dumps(loaded.schema).encode()).decode(),
            "files": files(loaded.files),
        },
        "config": values,
        "manifest": "".join(f"---\n# Source: {p}\n{t}\n" for p, t in sorted(manifests.items())),
    }
    return len(base64.b64encode(gzip.compress(json.dumps(record).encode(), compresslevel=9)))


@pytest.mark.parametrize("channel", GATEWAY_API_CHANNELS)
def test_the_release_record_fits_in_a_secret(channel: str) -> None:
    """Helm's release record (a Secret) carries the rendered channel, not the subchart's files;
    half the limit leaves room for what the estimate leaves out and for the CRDs to grow."""
    size = release_record_size(chart(), {"gatewayAPI": {"crds": {"channel": channel}}})
    assert size < SECRET_LIMIT / 2, f"release record {size} bytes"


def test_both_channels_as_files_of_the_chart_itself_would_not_fit(tmp_path: Path) -> None:
    """Why the CRDs are a subchart: as files of the chart, Helm would store both channels in
    every release record, over a Secret's limit."""
    copy = tmp_path / "coxswain"
    shutil.copytree(CHART_DIR, copy)
    for channel in GATEWAY_API_CHANNELS:
        shutil.copytree(GATEWAY_API_CHART / channel, copy / "gateway-api" / channel)
    with helm_python.Chart.load(copy) as loaded:
        assert release_record_size(loaded, {}) > SECRET_LIMIT


def test_make_gateway_api_crds_copies_a_release_of_upstream(tmp_path: Path) -> None:
    """``make gateway-api-crds`` against a small upstream repository with one tag."""
    upstream = tmp_path / "gateway-api"
    files = {
        "config/crd/standard/gateway.networking.k8s.io_foos.yaml": "kind: Foo # standard\n",
        "config/crd/standard/kustomization.yaml": "resources: []\n",
        "config/crd/experimental/gateway.networking.k8s.io_foos.yaml": "kind: Foo # exp\n",
        "config/crd/experimental/gateway.networking.x-k8s.io_bars.yaml": "kind: Bar\n",
        "config/crd/experimental/kustomization.yaml": "resources: []\n",
        "config/crd/kustomization.yaml": "resources: []\n",
        "LICENSE": "Apache License\n",
    }
    for name, text in files.items():
        (upstream / name).parent.mkdir(parents=True, exist_ok=True)
        (upstream / name).write_text(text, encoding="utf-8")
    git = ["git", "-C", str(upstream), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "v9.8.7"], ["tag", "v9.8.7"]):
        subprocess.run([*git, *command], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    out = tmp_path / "gateway-api-crds"
    shutil.copytree(GATEWAY_API_CHART, out)

    def make(version: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                "make",
                "--no-print-directory",
                "-C",
                str(ROOT),
                "gateway-api-crds",
                f"GATEWAY_API_VERSION={version}",
                f"GATEWAY_API_SRC={upstream}",
                f"GATEWAY_API_CRDS={out}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )

    refused = make("v0.0.0")
    assert refused.returncode != 0
    assert "has no tag v0.0.0" in refused.stderr
    assert (out / "git-blobs.txt").read_bytes() == (
        GATEWAY_API_CHART / "git-blobs.txt"
    ).read_bytes()

    done = make("v9.8.7")
    assert done.returncode == 0, done.stderr
    copied = sorted(str(p.relative_to(out)) for p in out.glob("*/*.yaml"))
    assert copied == [
        "experimental/gateway.networking.k8s.io_foos.yaml",
        "experimental/gateway.networking.x-k8s.io_bars.yaml",
        "standard/gateway.networking.k8s.io_foos.yaml",
        "templates/crds.yaml",
    ]
    assert (out / "standard/gateway.networking.k8s.io_foos.yaml").read_text() == files[
        "config/crd/standard/gateway.networking.k8s.io_foos.yaml"
    ]
    assert (out / "LICENSE").read_text() == "Apache License\n"
    metadata = yaml.safe_load((out / "Chart.yaml").read_text(encoding="utf-8"))
    assert (metadata["version"], metadata["appVersion"]) == ("9.8.7", "v9.8.7")
    assert metadata["annotations"]["coxswain-labs.dev/source-commit"] == commit
    blobs = [line.split(" ")[1] for line in (out / "git-blobs.txt").read_text().splitlines()]
    assert sorted(blobs) == [c for c in copied if not c.startswith("templates/")]
    assert (out / "templates/crds.yaml").read_bytes() == (
        GATEWAY_API_CHART / "templates/crds.yaml"
    ).read_bytes()


# --- refused values -----------------------------------------------------------------------------


def test_nodeport_vips_are_refused_with_the_reason() -> None:
    message = schema_error({"proxy": {"shared": {"vipServiceType": "NodePort"}}})
    assert "/proxy/shared/vipServiceType" in message
    assert "NodePort is refused" in message
    report = helm_python.lint(CHART_DIR, {"proxy": {"shared": {"vipServiceType": "NodePort"}}})
    assert any("NodePort is refused" in e for e in report["errors"])


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"proxy": {"shared": {"replicas": -1}}}, "/proxy/shared/replicas"),
        ({"proxy": {"shared": {"vipServiceType": "External"}}}, "/proxy/shared/vipServiceType"),
        ({"proxy": {"shared": {"ports": {"http": 70000}}}}, "/proxy/shared/ports/http"),
        ({"controler": {"replicas": 2}}, "controler"),
        ({"gatewayAPI": {"controllerName": "no-domain"}}, "/gatewayAPI/controllerName"),
        ({"gatewayAPI": {"gatewayClass": {"create": "yes"}}}, "/gatewayAPI/gatewayClass/create"),
        ({"gatewayAPI": {"crds": {"install": "yes"}}}, "/gatewayAPI/crds/install"),
        ({"gatewayAPI": {"crds": {"channel": "beta"}}}, "/gatewayAPI/crds/channel"),
        ({"gatewayAPI": {"crds": {"chanel": "standard"}}}, "chanel"),
        ({"commonLabels": {"app.kubernetes.io/name": "x"}}, "app.kubernetes.io/name"),
        ({"controller": {"resources": {"limits": None}}}, "/controller/resources"),
        ({"networkPolicy": {"enable": True}}, "enable"),
        ({"networkPolicy": {"metricsFrom": [{"podSelectr": {}}]}}, "podSelectr"),
        ({"networkPolicy": {"metricsFrom": [{}]}}, "/networkPolicy/metricsFrom/0"),
        ({"networkPolicy": {"metricsFrom": [{"ipBlock": {}}]}}, "cidr"),
    ],
)
def test_invalid_values_are_refused(values: dict[str, Any], where: str) -> None:
    assert where in schema_error(values)


# --- the image ----------------------------------------------------------------------------------


def test_the_dockerfile_builds_one_non_root_image_for_every_role() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    stages = re.findall(r"^FROM\s+\S+(?:\s+AS\s+(\S+))?", dockerfile, re.MULTILINE)
    assert len(stages) >= 2, "multi-stage"
    user = re.findall(r"^USER\s+(\d+)(?::(\d+))?$", dockerfile, re.MULTILINE)
    assert user == [("65532", "65532")]
    pod = deployment(render(), RELEASE, "controller")["spec"]["template"]["spec"]["securityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"]) == (65532, 65532)
    assert re.search(r'^ENTRYPOINT \["coxswain"\]$', dockerfile, re.MULTILINE)
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    admitted = {line for line in ignored[ignored.index("*") + 1 :] if line.startswith("!")}
    build = {"!pyproject.toml", "!README.md", "!setup.py", "!MANIFEST.in", "!build_backend/"}
    assert admitted == {*build, "!coxswain/"}
    assert re.search(r"^RUN COXSWAIN_MYPYC=1 .*pip install", dockerfile, re.MULTILINE)


@pytest.mark.parametrize("gateway_api", [True, False])
def test_the_controller_and_proxy_commands_accept_every_flag_the_chart_passes(
    gateway_api: bool,
) -> None:
    """The chart and the command line cannot drift apart: the real parser reads the args."""
    from coxswain.cli import _parser

    rendered = render({"gatewayAPI": {"enabled": gateway_api}})
    for component in ("controller", "proxy"):
        pod = deployment(rendered, "coxswain", component)["spec"]["template"]["spec"]
        parsed = _parser().parse_args(pod["containers"][0]["args"])
        assert parsed.handler.__name__ == f"_{component}"


def _dedicated_proxy_args(rendered: Rendered) -> list[str]:
    """The args of the dedicated proxy the installed controller would provision for a Gateway
    with parameters of its own: the rendered args parsed by the real command line, the
    settings it makes, and the compiler's ``provision``."""
    from coxswain.cli import _parser
    from coxswain.cli.controller import _controller_settings

    pod = deployment(rendered, RELEASE, "controller")["spec"]["template"]["spec"]
    config = _controller_settings(_parser().parse_args(pod["containers"][0]["args"])).compile
    coxswain = gateway_class()
    coxswain["spec"]["controllerName"] = config.gateway_controller
    edge = gateway("edge", 8080, infrastructure=own_infrastructure())
    world = [coxswain, own_parameters({"replicas": 1}), edge]
    desired = provision(build_state(world), config)
    [proxy] = [o for o in desired.objects if o.kind == "Deployment"]
    args: list[str] = json.loads(proxy.body)["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_trusted_proxies_reach_the_shared_pool_and_every_dedicated_proxy() -> None:
    """`proxy.trustedProxies` becomes the pool's `--trusted-proxies` and the controller's
    `--proxy-trusted-proxies`, which the dedicated proxies it provisions take as theirs: each
    proxy's own command line reads the same networks. None by default."""
    from coxswain.cli import _parser

    rendered = render()
    pool = deployment(rendered, RELEASE, "proxy")["spec"]["template"]["spec"]["containers"][0]
    assert "--trusted-proxies" not in args_of(pool)
    assert "--proxy-trusted-proxies" not in controller_args(rendered, RELEASE)
    assert "--trusted-proxies" not in _dedicated_proxy_args(rendered)

    rendered = render({"proxy": {"trustedProxies": ["10.0.0.0/8", "fd00::/8"]}})
    pool = deployment(rendered, RELEASE, "proxy")["spec"]["template"]["spec"]["containers"][0]
    assert args_of(pool)["--trusted-proxies"] == ["10.0.0.0/8,fd00::/8"]
    assert controller_args(rendered, RELEASE)["--proxy-trusted-proxies"] == ["10.0.0.0/8,fd00::/8"]
    dedicated = _parser().parse_args(_dedicated_proxy_args(rendered))
    assert dedicated.gateway is not None
    assert dedicated.trusted_proxies == _parser().parse_args(pool["args"]).trusted_proxies
