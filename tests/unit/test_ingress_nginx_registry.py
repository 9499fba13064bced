"""The ingress-nginx annotation registry and the migration report
(docs/migrating-from-ingress-nginx.md): every annotation under either prefix is classified,
each one not honoured as written gets a warning naming the Ingress and the annotation, and
``coxswain compile --emit migration`` reports a dump with a summary and exit status 0."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from coxswain.compile import build_state
from coxswain.compile.ingress.registry import ANNOTATIONS, AnnotationClass, classify

REPO = Path(__file__).resolve().parents[2]
NGINX = "nginx.ingress.kubernetes.io/"
OURS = "coxswain-labs.dev/"


def ingress_body(name: str, annotations: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "app", "annotations": annotations},
        "spec": {
            "ingressClassName": "nginx",
            "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}},
        },
    }


def one_ingress(annotations: dict[str, str]):  # type: ignore[no-untyped-def]
    state = build_state([ingress_body("shop", annotations)])
    (found,) = state.ingresses.values()
    return found


@pytest.mark.parametrize("prefix", [NGINX, OURS])
@pytest.mark.parametrize(
    ("name", "klass", "reason"),
    [
        ("configuration-snippet", AnnotationClass.REFUSED, "AnnotationRefused"),
        ("server-snippet", AnnotationClass.REFUSED, "AnnotationRefused"),
        ("auth-snippet", AnnotationClass.REFUSED, "AnnotationRefused"),
        ("proxy-buffering", AnnotationClass.IGNORED, "AnnotationIgnored"),
        ("client-body-buffer-size", AnnotationClass.IGNORED, "AnnotationIgnored"),
        ("no-such-annotation", AnnotationClass.UNKNOWN, "AnnotationUnknown"),
    ],
)
def test_an_annotation_not_honoured_is_classified_and_warned_about_naming_it(
    prefix: str, name: str, klass: AnnotationClass, reason: str
) -> None:
    classified, found = classify(one_ingress({prefix + name: "x"}))
    assert [(c.key, c.info.klass) for c in classified] == [(prefix + name, klass)]
    (diagnostic,) = found
    assert (str(diagnostic.key), diagnostic.reason) == ("Ingress app/shop", reason)
    assert diagnostic.field == f"metadata.annotations[{prefix + name!r}]"
    assert diagnostic.severity == "warning"


def test_an_honoured_annotation_and_other_prefixes_say_nothing() -> None:
    classified, found = classify(
        one_ingress({NGINX + "ssl-redirect": "false", "example.com/owner": "me"})
    )
    assert [(c.name, c.info.klass) for c in classified] == [
        ("ssl-redirect", AnnotationClass.HONOURED)
    ]
    assert found == []


def test_every_raw_nginx_configuration_annotation_is_refused() -> None:
    raw = {n for n in ANNOTATIONS if n.endswith("snippet")}
    assert raw >= {"configuration-snippet", "server-snippet", "auth-snippet", "stream-snippet"}
    assert all(ANNOTATIONS[n].klass is AnnotationClass.REFUSED for n in raw)


def test_a_refused_snippet_leaves_the_ingress_serving(tmp_path: Path) -> None:
    body = ingress_body("shop", {NGINX + "server-snippet": "return 500;"})
    body["spec"]["ingressClassName"] = "coxswain"  # type: ignore[index]
    klass = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": "coxswain"},
        "spec": {"controller": "coxswain-labs.dev/ingress-controller"},
    }
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump_all([klass, body]))
    out = run("compile", "-f", str(dump))
    assert out.returncode == 0
    assert (
        json.loads(out.stdout)["ingress"]["hosts"]["*"]["default_backend"]["route"]["name"]
        == "shop"
    )
    assert "(AnnotationRefused)" in out.stderr


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coxswain", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    items = [
        ingress_body(
            "shop",
            {
                NGINX + "configuration-snippet": "more_set_headers 'X: y';",
                NGINX + "proxy-buffering": "off",
                NGINX + "ssl-redirect": "maybe",
                NGINX + "made-up": "1",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
            },
        ),
        ingress_body("plain", {}),
    ]
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_the_migration_report_classifies_each_annotation_and_counts_them(dump: Path) -> None:
    out = run("compile", "-f", str(dump), "--emit", "migration", "-o", "json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [(a["ingress"], a["annotation"], a["class"]) for a in report["annotations"]] == [
        ("app/shop", NGINX + "configuration-snippet", "refused"),
        ("app/shop", NGINX + "made-up", "unknown"),
        ("app/shop", NGINX + "proxy-buffering", "ignored"),
        ("app/shop", NGINX + "ssl-redirect", "honoured"),
    ]
    assert "invalid" in report["annotations"][3]
    assert report["summary"] == {
        "honoured": 1,
        "honoured-with-difference": 0,
        "ignored": 1,
        "not-yet": 0,
        "refused": 1,
        "unknown": 1,
        "invalid": 1,
        "ingresses": 2,
        "ingressesBehavingDifferently": 1,
    }


def test_the_migration_table_has_a_line_per_annotation_and_the_summary(dump: Path) -> None:
    out = run("compile", "-f", str(dump), "--emit", "migration", "-o", "table")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert re.match(r"INGRESS\s+ANNOTATION\s+CLASS\s+EXPLANATION$", lines[0])
    assert sum(line.startswith("app/shop ") for line in lines) == 4
    assert "2 Ingress(es), 1 would behave differently under Coxswain" in lines
    assert lines[-1].startswith("annotations: honoured 1,")


def test_the_migration_guide_table_is_the_registry() -> None:
    text = (REPO / "docs" / "migrating-from-ingress-nginx.md").read_text()
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| ([a-z-]+) \|", text, flags=re.MULTILINE)
    assert dict(rows) == {name: str(info.klass) for name, info in ANNOTATIONS.items()}
    assert len(rows) == len(ANNOTATIONS)


def test_taking_over_serves_the_named_class_and_unclassed_ingresses(dump: Path) -> None:
    plain = run("compile", "-f", str(dump), "-o", "json")
    assert json.loads(plain.stdout)["ingress"]["hosts"] == {}  # class nginx: someone else's
    taken = run(
        "compile", "-f", str(dump), "-o", "json", "--ingress-class", "nginx", "--emit", "snapshot"
    )
    assert taken.returncode == 0, taken.stderr
    hosts = json.loads(taken.stdout)["ingress"]["hosts"]
    assert {hosts["*"]["default_backend"]["route"]["name"]} <= {"shop", "plain"}


def test_ingress_without_class_takes_unclassed_ingresses(tmp_path: Path) -> None:
    body = ingress_body("bare", {})
    del body["spec"]["ingressClassName"]  # type: ignore[attr-defined]
    dump = tmp_path / "bare.yaml"
    dump.write_text(yaml.safe_dump(body))
    assert json.loads(run("compile", "-f", str(dump)).stdout)["ingress"]["hosts"] == {}
    taken = json.loads(run("compile", "-f", str(dump), "--ingress-without-class").stdout)
    assert taken["ingress"]["hosts"]["*"]["default_backend"]["route"]["name"] == "bare"
