"""What an Ingress path's ingress-nginx annotations do to one request
(``snapshot.IngressActions``; docs/migrating-from-ingress-nginx.md). Pure.

Only paths that have actions come here; ``route.select`` keeps every other path on its fast
path. The order is nginx's, as ingress-nginx configures it:
1. ``from-to-www-redirect``: the redirect host's own server answers 308 first;
2. ``app-root``: a request for ``/`` gets 302 to ``$scheme://$http_host<app-root>``;
3. ``temporal-redirect`` / ``permanent-redirect``: the redirect, its nginx variables
   expanded (``return <code> <url>`` runs in the rewrite phase);
4. then (``route.select``) the HTTPS redirect of ``ssl-redirect`` / ``force-ssl-redirect``,
   run by ingress-nginx at the end of that phase;
5. forwarding: ``rewrite-target`` replaces the whole path (nginx ``rewrite ... break``), its
   ``$1``…``$9`` the capture groups of the path's pattern (empty for a group that took no
   part); a ``?`` in the target starts the new query and the request's query follows it after
   ``&`` (none when the target ends with ``?``). ``x-forwarded-prefix`` is sent with a
   rewrite; ``upstream-vhost`` replaces the Host sent to the backend. ``proxy-next-upstream``
   and its ``-tries`` and ``-timeout`` become the proxy's retry policy (``snapshot.Retry``:
   errors and timeouts, and the ``http_*`` statuses named, are tried again on the next
   endpoint, at once, within the ``-timeout`` for all tries).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pyrsistent import pvector

from coxswain.compile.snapshot import HeaderEdits, Retry, RouteAction

if TYPE_CHECKING:
    from coxswain.compile.snapshot import IngressActions, PathRule

__all__ = ["Answer", "Forwarding", "answer", "forwarding", "rewrite_path"]

_GROUP: Final = re.compile(r"\$(\d)")
_VARIABLE: Final = re.compile(r"\$([a-z_]+)")
_WWW_REDIRECT: Final = 308  # ingress-nginx's default http-redirect-code
_APP_ROOT_REDIRECT: Final = 302


@dataclass(frozen=True, slots=True)
class Answer:
    """A redirect the proxy answers itself."""

    status: int
    location: str
    reason: str


@dataclass(frozen=True, slots=True)
class Forwarding:
    """The Host and target sent to the backend, and the header edits (``action``)."""

    host: str
    target: str
    action: RouteAction | None


def answer(
    actions: IngressActions, *, scheme: str, host: str, host_header: str, path: str, query: str
) -> Answer | None:
    """The redirect of steps 1 to 3, or None to go on."""
    if actions.host_redirect is not None:
        port = host_header.rpartition(":")[2] if ":" in host_header else ""
        uri = path + query
        if uri.endswith("/"):  # ingress-nginx's redirect server drops one trailing slash
            uri = uri[:-1]
        location = f"{scheme}://{actions.host_redirect}{':' + port if port else ''}{uri}"
        return Answer(_WWW_REDIRECT, location, f"from-to-www-redirect to {location}")
    if actions.app_root is not None and path == "/":
        location = f"{scheme}://{host_header}{actions.app_root}"
        return Answer(_APP_ROOT_REDIRECT, location, f"app-root: redirected to {location}")
    if actions.redirect is not None:
        values = {
            "request_uri": path + query,
            "uri": path,
            "args": query[1:],
            "is_args": "?" if query[1:] else "",
            "host": host,
            "http_host": host_header,
            "scheme": scheme,
        }
        location = _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), actions.redirect)
        return Answer(actions.redirect_status, location, f"redirected to {location}")
    return None


def forwarding(
    rule: PathRule, groups: tuple[str, ...] | None, *, host_header: str, path: str, query: str
) -> Forwarding:
    """Step 5: what goes to the backend."""
    actions = rule.actions
    assert actions is not None, "only paths with actions come here"
    target = path + query
    edits = None
    if actions.rewrite_target is not None and groups is not None:
        target = rewrite_path(actions.rewrite_target, groups, query)
        if actions.x_forwarded_prefix is not None:
            edits = HeaderEdits(set=pvector([("x-forwarded-prefix", actions.x_forwarded_prefix)]))
    retry = None
    if actions.next_upstream_tries:
        retry = Retry(
            codes=actions.next_upstream_codes,
            attempts=actions.next_upstream_tries - 1,
            backoff=0.0,  # nginx passes a request to the next server at once
        )
    action = None
    if edits is not None or retry is not None:
        action = RouteAction(
            route=rule.route,
            backends=pvector([rule.backend]),
            request_headers=edits,
            retry=retry,
            request_timeout=actions.next_upstream_timeout or None,
        )
    return Forwarding(actions.upstream_vhost or host_header, target, action)


def rewrite_path(target: str, groups: tuple[str, ...], query: str) -> str:
    """``target`` with its group references replaced, and the query (rule 5). Linear in the
    size of the result, which is bounded by the target's length times the path's."""
    new = _GROUP.sub(lambda m: _group(groups, int(m.group(1))), target)
    path, mark, args = new.partition("?")
    if not path.startswith("/"):
        path = "/" + path
    if not mark:
        return path + query
    if not args:
        return path
    return f"{path}?{args}&{query[1:]}" if query[1:] else f"{path}?{args}"


def _group(groups: tuple[str, ...], number: int) -> str:
    return groups[number - 1] if 0 < number <= len(groups) else ""
