"""Hostile tenants of the shared pool: route patterns that would stall it, and a namespace that
would take every internal port.

- Route regular expressions run on RE2 (``coxswain.compile.regex``): match time grows linearly
  with the path whatever the pattern. The measurements run in a subprocess with a deadline,
  because a backtracking engine never returns on these inputs; the deadline is only there to
  end such a run, and the assertion is on proportions, not on speed.
- A pattern RE2 refuses drops its rule with a diagnostic on the field; the route's other rules
  are still served.
- One namespace holds at most ``shared_ports_per_namespace`` internal ports, so another
  namespace's Gateway still gets one (docs/architecture.md, "Gateway API decisions").
"""

from __future__ import annotations

import json
import random
import re
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.cli import main
from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.gateway.ports import PORT_BAND, allocate_ports, outside_share
from coxswain.compile.regex import MAX_PATTERN_LENGTH, FullMatch, compile_pattern
from coxswain.route import RequestHead, build_table, select
from tests.hostile.script_runs import run_script
from tests.parity import unreported

if TYPE_CHECKING:
    from pathlib import Path

GW = "gateway.networking.k8s.io/v1"
CLASS = {
    "apiVersion": GW,
    "kind": "GatewayClass",
    "metadata": {"name": "coxswain"},
    "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
}
SERVICES = [
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"ports": [{"port": 80}]},
    }
    for namespace, name in (("evil", "sink"), ("good", "web"))
]
DEADLINE = 120.0  # seconds: ends a run that backtracks; RE2 takes milliseconds


def gateway(
    namespace: str, name: str, ports: list[int], *, everyone: bool = False
) -> dict[str, Any]:
    allowed = {"namespaces": {"from": "All"}} if everyone else {}
    listeners = [
        {"name": f"http-{p}", "port": p, "protocol": "HTTP", "allowedRoutes": allowed}
        for p in ports
    ]
    return {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"gatewayClassName": "coxswain", "listeners": listeners},
    }


def route(namespace: str, name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": GW,
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"parentRefs": [{"name": "shared", "namespace": "infra"}], "rules": list(rules)},
    }


def rule(backend: str, **match: Any) -> dict[str, Any]:
    return {"matches": [match], "backendRefs": [{"name": backend, "port": 80}]}


def regex_path(pattern: str) -> dict[str, str]:
    return {"type": "RegularExpression", "value": pattern}


# --- patterns that stall a backtracking engine ---------------------------------------------------

# Run in a subprocess: compile a shared Gateway with the attacker's route and a victim's, index
# it as the proxy does, and decide requests through route.select.
_TIMING_SCRIPT = r"""
import json, sys, time
from coxswain.compile import SharedPool, build_state, compile
from coxswain.route import RequestHead, build_table, select

objects, paths, repeats = json.loads(sys.stdin.read())
snapshot = compile(build_state(objects), SharedPool()).snapshot
table = build_table(snapshot)
port = next(iter(snapshot.gateways))
found = []
for path in paths:
    head = RequestHead(port=port, method="GET", target=path, host="shop.example.com")
    best, decision = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        decision = select(table, head)
        best = min(best, time.perf_counter() - started)
    backend = decision.backends[0].service if decision.backends else None
    found.append([best, decision.matched, backend])
print(json.dumps(found))
"""


def decide_in_subprocess(
    objects: list[dict[str, Any]], paths: list[str], repeats: int = 1
) -> list[tuple[float, bool, str | None]]:
    """(best time, matched, backend) of each path; fails when the run misses ``DEADLINE``."""
    found = run_script(
        _TIMING_SCRIPT,
        [objects, paths, repeats],
        deadline=DEADLINE,
        what=f"deciding {len(paths)} requests",
    )
    return [(t, m, b) for t, m, b in found]


def world(pattern: str) -> list[dict[str, Any]]:
    """A shared Gateway (namespace infra) with an attacker's route in ``evil`` and a victim's."""
    return [
        CLASS,
        *SERVICES,
        gateway("infra", "shared", [80], everyone=True),
        route("evil", "trap", rule("sink", path=regex_path(pattern))),
        route("good", "shop", rule("web", path={"type": "PathPrefix", "value": "/cart"})),
    ]


def test_the_reported_attack_does_not_stall_the_victims_requests() -> None:
    # /(a+)+$ and a 26-character path stalled the worker for seconds, doubling per character.
    attack = "/" + "a" * 25 + "!"
    longer = "/" + "a" * 60 + "!"
    found = decide_in_subprocess(world("/(a+)+$"), [attack, longer, "/cart/1", "/" + "a" * 8])
    assert [(m, b) for _, m, b in found] == [
        (False, None),
        (False, None),
        (True, "web"),
        (True, "sink"),
    ]


ADVERSARIAL = [
    "/(a+)+$",  # nested quantifiers: exponential when backtracking
    "/(a|a)*$",  # ambiguous alternation
    "/(a|aa)+$",
    "/(.*a){12}$",  # exponential in the repeat count
    "/a*a*a*a*a*b",  # polynomial (n^5) when backtracking
    r"/(\w+\s?)*$",
]


@pytest.mark.parametrize("pattern", ADVERSARIAL)
def test_match_time_grows_linearly_with_the_path(pattern: str) -> None:
    short, long = 2048, 8192  # path bytes: N and 4N
    paths = ["/" + "a" * short + "!", "/" + "a" * long + "!"]
    # Best of many runs, three tries: a noisy machine can slow one measurement, not all. Linear
    # time gives a ratio near 4; 16 is the slack (quadratic growth would give 16).
    ratios = []
    for _ in range(3):
        (t_short, *_), (t_long, *_) = decide_in_subprocess(world(pattern), paths, repeats=15)
        ratios.append(t_long / t_short)
        if ratios[-1] < 16:
            break
    assert min(ratios) < 16, f"time(4N)/time(N) = {ratios} for {pattern!r}"


# --- patterns RE2 refuses -----------------------------------------------------------------------

REFUSED = [
    ("backreference", r"/(a+)\1"),
    ("lookahead", "/(?=a)a+"),
    ("lookbehind", "/(?<=a)b"),
    ("too large a program", "/" + "(?:[^/]{1000})" * 10),
    ("too long", "/" + "a" * MAX_PATTERN_LENGTH),
]


@pytest.mark.parametrize(("why", "pattern"), REFUSED, ids=[w for w, _ in REFUSED])
def test_a_refused_pattern_drops_its_rule_and_the_others_still_serve(
    why: str, pattern: str
) -> None:
    objects = [
        CLASS,
        *SERVICES,
        gateway("infra", "shared", [80], everyone=True),
        route(
            "good",
            "shop",
            rule("web", path=regex_path(pattern)),
            rule(
                "web",
                path={"type": "PathPrefix", "value": "/cart"},
                headers=[{"name": "x-tenant", "type": "RegularExpression", "value": pattern}],
            ),
            rule(
                "web",
                path={"type": "PathPrefix", "value": "/list"},
                queryParams=[{"name": "q", "type": "RegularExpression", "value": pattern}],
            ),
            rule("web", path={"type": "PathPrefix", "value": "/"}),
        ),
    ]
    state = build_state(objects)
    found = compile(state, SharedPool()).diagnostics
    assert sorted((d.field, d.reason) for d in found) == [
        ("spec.rules[0].matches[0].path.value", "UnsupportedValue"),
        ("spec.rules[1].matches[0].headers[0].value", "UnsupportedValue"),
        ("spec.rules[2].matches[0].queryParams[0].value", "UnsupportedValue"),
    ]
    assert all(d.message.startswith("unsupported regular expression (") for d in found)
    body = json.loads(next(s for s in status(state) if s.kind == "HTTPRoute").body)
    conditions = {c["type"]: c for c in body["parents"][0]["conditions"]}
    assert conditions["Accepted"]["status"] == "True"
    assert conditions["PartiallyInvalid"]["status"] == "True"
    assert conditions["PartiallyInvalid"]["message"].startswith("Dropped Rule")
    assert unreported(state) == []
    snapshot = compile(state, SharedPool()).snapshot
    table = build_table(snapshot)
    port = next(iter(snapshot.gateways))
    # The dropped rules would have matched these; the valid "/" rule serves them instead.
    for target in ("/aa", "/cart?x", "/list?q=a"):
        head = RequestHead(port=port, method="GET", target=target, host="h", headers=())
        decision = select(table, head)
        assert decision.matched
        assert decision.route is not None
        assert decision.route.rule == "spec.rules[3]"


def test_patterns_match_the_whole_value_without_pythons_newline_exception() -> None:
    pattern = compile_pattern("/a$")
    assert isinstance(pattern, FullMatch)
    assert pattern.matches("/a")
    assert not pattern.matches("/a\n")  # re.match("/a$", "/a\n") would match
    assert not pattern.matches("/ab")  # anchored at the end
    assert not pattern.matches("x/a")  # and at the start
    either = compile_pattern("/a|/b")
    assert isinstance(either, FullMatch)
    assert either.matches("/b")
    assert not either.matches("/ab")  # the alternation is inside the anchors
    dot = compile_pattern("/.")
    assert isinstance(dot, FullMatch)
    assert dot.matches("/é")
    assert dot.matches("/\xff")
    assert not dot.matches("/\n")
    assert dot.matches("/\udcff") in (True, False)  # never raises, whatever the text


# Patterns a backtracking engine runs quickly on short texts, from a grammar both engines share.
_ATOMS = st.sampled_from(["a", "b", "/", ".", "[ab]", "[^a]", r"\d", "(?:a|b)", "(a/)"])
_QUANTIFIERS = st.sampled_from(["", "", "?", "*", "+", "{1,2}", "*?"])
_PIECES = st.tuples(_ATOMS, _QUANTIFIERS).map("".join)
_BRANCHES = st.lists(_PIECES, min_size=1, max_size=4).map("".join)
_PATTERNS = st.tuples(
    st.sampled_from(["", "^"]),
    st.lists(_BRANCHES, min_size=1, max_size=3).map("|".join),
    st.sampled_from(["", "$"]),
).map(lambda parts: f"{parts[0]}(?:{parts[1]}){parts[2]}")


@given(pattern=_PATTERNS, text=st.text(alphabet="ab/1\n", max_size=8))
def test_full_match_agrees_with_pythons_fullmatch_on_a_shared_grammar(
    pattern: str, text: str
) -> None:
    compiled = compile_pattern(pattern)
    assert isinstance(compiled, FullMatch), compiled
    assert compiled.matches(text) == (re.fullmatch(pattern, text) is not None)


# --- the shared pool's internal ports ------------------------------------------------------------


def test_one_namespace_with_many_gateways_cannot_take_another_namespaces_port() -> None:
    # The reported attack: 44 Gateways of 64 listener ports each (2,816 pairs > 2,768 ports).
    greedy = [gateway("greedy", f"g{i:02d}", list(range(8000, 8064))) for i in range(44)]
    victim = gateway("victim", "edge", [80])
    state = build_state([CLASS, *greedy, victim])
    result = compile(state, SharedPool())
    health = {(h.gateway, h.listener): h for h in result.snapshot.listener_health}
    assert health[("victim/edge", "http-80")].ready
    greedy_ports = [h.target_port for h in health.values() if h.gateway.startswith("greedy/")]
    held = [p for p in greedy_ports if p]
    assert len(held) == CompileConfig().shared_ports_per_namespace
    refused = [d for d in result.diagnostics if d.reason == "PortUnavailable"]
    assert len(refused) == len(greedy_ports) - len(held)
    assert "--shared-ports-per-namespace" in refused[0].message
    assert unreported(state) == []


def test_the_share_is_a_flag_of_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = [CLASS, gateway("app", "a", [80]), gateway("app", "b", [80])]
    manifests = tmp_path / "gateways.yaml"
    manifests.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    argv = ["compile", "-f", str(manifests), "--emit", "diagnostics", "-o", "json"]
    assert main([*argv, "--shared-ports-per-namespace", "1"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(d["name"], d["reason"]) for d in found] == [("b", "PortUnavailable")]
    assert main([*argv, "--shared-ports-per-namespace", "2"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_namespace_at_its_share_keeps_its_ports_when_it_adds_a_gateway() -> None:
    existing = {("app/z", 80): 30005, ("app/y", 80): 30009}
    pairs = [("app/a", 80), *existing]
    refused = outside_share(pairs, existing, share=2)
    assert refused == {("app/a", 80)}  # sorts first, but holds no port yet
    got = allocate_ports([p for p in pairs if p not in refused], existing, ())
    assert got == existing


_PAIRS = st.lists(
    st.tuples(
        st.tuples(st.sampled_from("abcdef"), st.integers(0, 9)).map(lambda t: f"{t[0]}/g{t[1]}"),
        st.integers(1, 65535),
    ),
    max_size=120,
)


@given(
    pairs=_PAIRS,
    share=st.integers(1, 30),
    held=st.lists(st.integers(PORT_BAND.start - 5, PORT_BAND.start + 200), unique=True),
    seed=st.integers(0, 2**32 - 1),
)
def test_port_shares_are_bounded_order_independent_and_fair(
    pairs: list[tuple[str, int]], share: int, held: list[int], seed: int
) -> None:
    existing = dict(zip(pairs, held, strict=False))

    def allocate(order: list[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
        refused = outside_share(order, existing, share)
        got = allocate_ports([p for p in order if p not in refused], existing, ())
        return got | dict.fromkeys(refused)

    got = allocate(pairs)
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    assert allocate(shuffled) == got  # deterministic, whatever the order
    assert set(got) == set(pairs)  # total
    ports = [p for p in got.values() if p is not None]
    assert len(ports) == len(set(ports))
    assert all(p in PORT_BAND for p in ports)
    namespaces = {pair[0].partition("/")[0] for pair in pairs}
    for namespace in namespaces:
        mine = {pair for pair in got if pair[0].startswith(namespace + "/")}
        holding = {pair for pair in mine if got[pair] is not None}
        # Few namespaces here: the band has room for every share, so each namespace gets
        # exactly its share (or all it asks for), never more, whatever the others ask.
        assert len(holding) == min(len(mine), share)
        kept = {p for p in mine if existing.get(p) in PORT_BAND}
        if len(kept) <= share:
            assert all(got[p] == existing[p] for p in kept)  # nothing held moves
