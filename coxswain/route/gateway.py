"""Gateway API request selection: listener by host, then rules by the spec's precedence.

Order of decisions on a Gateway port (Gateway API v1: Listener hostname precedence; HTTPRoute
``hostnames`` and ``matches``):
1. Listener: the most specific listener hostname matching the Host header: exact, then
   wildcards with more labels first (a Gateway API wildcard matches one or more labels), then
   the listener without hostname. None → 404.
2. Route hosts inside the listener, most specific first (exact, wildcards, ``*``); within each,
   rules in the compiled precedence order: for HTTPRoute, Exact path, RegularExpression, the
   longest PathPrefix, then method/header/query counts, age, name, rule order, which the path
   buckets below give by themselves; for GRPCRoute (a host holding a rule marked ``grpc``), the
   longest service, method, header count, age, name, rule order (GEP-1016), which they do not:
   the path's candidates are then tried in the host's list order. A host whose rules do not
   match falls through to the next less specific one (precedence is "given to" the more specific
   hostname, among matching rules). Nothing matches → 404.
Indexing keeps lookups proportional to the request (labels and path elements), not the table.
Regular expressions (path, header and query matches) are compiled once, when the port is
indexed, by the engine the compiler validated them with (``coxswain.compile.regex``: RE2, full
match, linear time); a pattern it refuses never matches.

Indexing again after a change reuses the previous index's entry for every route host whose
rules are the very same objects (``previous``): a proxy applying a snapshot in which one route
changed among 10,000 then indexes that route's hosts, not every host (the compiler keeps the
rule objects of unchanged routes: docs/architecture.md, "Rules of the core").
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from coxswain.compile.regex import FullMatch, compile_pattern
from coxswain.route.paths import element_prefixes

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from coxswain.compile.snapshot import GatewayRule, ListenerTable, RouteMatch, ValueMatch

_Entry = TypeVar("_Entry", covariant=True)

__all__ = ["GatewayPortIndex", "HostRules", "ListenerIndex", "index_gateway_port", "percent_decode"]


@dataclass(slots=True)
class HostRules:
    """One route host's rules by path kind, each bucket in precedence order, and the compiled
    header and query patterns of its rules (``patterns``, by pattern text). ``ranks`` holds
    each rule's place in the host's list (by ``id``) when that order is not the buckets' (a
    gRPC host), else None. ``rules``: the host's list it was built from; ``reads_headers``:
    whether a rule matches on a request header or answers CORS (its decision then depends on
    more than the port, host and path)."""

    exact: dict[str, list[GatewayRule]] = field(default_factory=dict)
    regex: list[tuple[FullMatch, GatewayRule]] = field(default_factory=list)
    prefix: dict[str, list[GatewayRule]] = field(default_factory=dict)
    patterns: dict[str, FullMatch] = field(default_factory=dict)
    ranks: dict[int, int] | None = None
    rules: Sequence[GatewayRule] = ()
    reads_headers: bool = False

    def candidates(self, path: str) -> Iterator[GatewayRule]:
        """Rules whose path matches, in precedence order."""
        if self.ranks is None:
            return self._by_path(path)
        ranks = self.ranks
        return iter(sorted(self._by_path(path), key=lambda rule: ranks[id(rule)]))

    def _by_path(self, path: str) -> Iterator[GatewayRule]:
        """Rules whose path matches: Exact, RegularExpression, then prefixes longest first."""
        yield from self.exact.get(path, ())
        for pattern, rule in self.regex:
            if pattern.matches(path):
                yield rule
        if self.prefix:
            for prefix in element_prefixes(path):
                yield from self.prefix.get(prefix, ())


@dataclass(frozen=True, slots=True)
class ListenerIndex:
    """One listener's table and its route hosts by specificity."""

    table: ListenerTable
    exact: dict[str, HostRules]
    wildcard: dict[str, HostRules]
    any_host: HostRules | None

    def route_hosts(self) -> Iterator[HostRules]:
        """Every route host's entry."""
        return _entries(self)

    def host_rules(self, host: str) -> Iterator[tuple[str, HostRules]]:
        """Route hosts matching ``host``, most specific first."""
        if (found := self.exact.get(host)) is not None:
            yield host, found
        for suffix in _suffixes(host):
            if (found := self.wildcard.get(suffix)) is not None:
                yield f"*.{suffix}", found
        if self.any_host is not None:
            yield "*", self.any_host


@dataclass(frozen=True, slots=True)
class GatewayPortIndex:
    """The listeners of one bind port by hostname.

    ``client_validation`` is True when some listener of the port validates client
    certificates: a request that sent no TLS server name must then stay on the catch-all
    listener (421 otherwise); with a server name, every TLS port holds a request to the
    listener it chose (:func:`~.select_gateway.select_gateway`).
    """

    exact: dict[str, ListenerIndex]
    wildcard: dict[str, ListenerIndex]
    any_host: ListenerIndex | None
    client_validation: bool = False

    def listeners(self) -> Iterator[ListenerIndex]:
        """Every listener's index."""
        return _entries(self)

    def find_listener(self, host: str) -> ListenerIndex | None:
        """The most specific listener for ``host``."""
        if (found := self.exact.get(host)) is not None:
            return found
        for suffix in _suffixes(host):
            if (found := self.wildcard.get(suffix)) is not None:
                return found
        return self.any_host


def _suffixes(host: str) -> Iterator[str]:
    """``a.b.c`` → ``b.c``, ``c``: the parents a ``*.`` wildcard may stand for, longest first."""
    start = host.find(".")
    while start > 0:
        yield host[start + 1 :]
        start = host.find(".", start + 1)


def index_gateway_port(
    tables: Mapping[str, ListenerTable],
    *,
    client_validation: bool = False,
    previous: GatewayPortIndex | None = None,
) -> GatewayPortIndex:
    """Index one port's listeners. Pure; ``previous``: this port's last index, whose entries
    for unchanged route hosts are reused (the result is the same without it)."""
    exact: dict[str, ListenerIndex] = {}
    wildcard: dict[str, ListenerIndex] = {}
    any_host: ListenerIndex | None = None
    for hostname, table in tables.items():
        index = _index_listener(table, None if previous is None else _by_name(previous, hostname))
        if hostname == "*":
            any_host = index
        elif hostname.startswith("*."):
            wildcard[hostname[2:]] = index
        else:
            exact[hostname] = index
    return GatewayPortIndex(exact, wildcard, any_host, client_validation)


class _ByHostname(Protocol[_Entry]):
    """An index by hostname: a listener's route hosts, a port's listeners."""

    @property
    def exact(self) -> Mapping[str, _Entry]: ...
    @property
    def wildcard(self) -> Mapping[str, _Entry]: ...
    @property
    def any_host(self) -> _Entry | None: ...


def _entries(index: _ByHostname[_Entry]) -> Iterator[_Entry]:
    yield from index.exact.values()
    yield from index.wildcard.values()
    if index.any_host is not None:
        yield index.any_host


def _by_name(index: _ByHostname[_Entry], name: str) -> _Entry | None:
    """The entry of ``index`` for a listener or route hostname as written (``*``, ``*.x``)."""
    if name == "*":
        return index.any_host
    if name.startswith("*."):
        return index.wildcard.get(name[2:])
    return index.exact.get(name)


def _index_listener(table: ListenerTable, previous: ListenerIndex | None) -> ListenerIndex:
    exact: dict[str, HostRules] = {}
    wildcard: dict[str, HostRules] = {}
    any_host: HostRules | None = None
    for host, rules in table.hosts.items():
        index = None if previous is None else _by_name(previous, host)
        if not (
            index is not None
            and (
                index.rules is rules
                or (len(index.rules) == len(rules) and all(map(operator.is_, index.rules, rules)))
            )
        ):
            index = _index_host(rules)
        if host == "*":
            any_host = index
        elif host.startswith("*."):
            wildcard[host[2:]] = index
        else:
            exact[host] = index
    return ListenerIndex(table, exact, wildcard, any_host)


def _index_host(rules: Sequence[GatewayRule]) -> HostRules:
    index = HostRules(rules=rules)
    if any(rule.action.grpc for rule in rules):
        index.ranks = {}
        for rank, rule in enumerate(rules):
            index.ranks.setdefault(id(rule), rank)
    for rule in rules:
        match = rule.match
        if match.headers or rule.action.cors is not None:
            index.reads_headers = True
        if match.path_type == "Exact":
            index.exact.setdefault(match.path, []).append(rule)
        elif match.path_type == "RegularExpression":
            if isinstance(pattern := compile_pattern(match.path), FullMatch):
                index.regex.append((pattern, rule))
        else:
            index.prefix.setdefault(match.path, []).append(rule)
        for value in (*match.headers, *match.query):
            if (
                value.type == "RegularExpression"
                and value.value not in index.patterns
                and isinstance(pattern := compile_pattern(value.value), FullMatch)
            ):
                index.patterns[value.value] = pattern
    return index


def matches_request(
    match: RouteMatch,
    method: str,
    headers: Mapping[str, str],
    query: Mapping[str, str],
    patterns: Mapping[str, FullMatch],
) -> bool:
    """Whether the method, headers and query parameters satisfy a match (path already did);
    ``patterns`` are the compiled regular expressions of the host's rules."""
    if match.method is not None and match.method != method:
        return False
    for wanted, given in ((match.headers, headers), (match.query, query)):
        for expected in wanted:
            value = given.get(expected.name)
            if value is None or not _value_matches(expected, value, patterns):
                return False
    return True


def _value_matches(expected: ValueMatch, value: str, patterns: Mapping[str, FullMatch]) -> bool:
    if expected.type == "RegularExpression":
        pattern = patterns.get(expected.value)
        return pattern is not None and pattern.matches(value)
    return value == expected.value


_ESCAPE: Final = re.compile(r"%([0-9A-Fa-f]{2})")  # fixed width: linear on client bytes


def percent_decode(text: str) -> str:
    """Decode ``%XX`` escapes (invalid ones kept as written) of a query component."""
    if "%" not in text:
        return text
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def parse_query(query: str) -> dict[str, str]:
    """``?a=1&b=2`` → first value of each name, percent-decoded."""
    found: dict[str, str] = {}
    for part in query.lstrip("?").split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        found.setdefault(percent_decode(name), percent_decode(value))
    return found
