"""Who may subscribe to which scope (docs/security.md, "The holder of a proxy certificate"):
the server's authorisation rule, the production one, and a stream's view of its grant as the
cluster changes (:mod:`.server` asks it before each version it sends and at least every
``REVOKED_GRACE``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from coxswain.compile.scope import Scope
from coxswain.shell.discovery.ca import ProxyIdentity

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.shell.discovery.limits import LogBudget

__all__ = ["ScopePolicy", "granted_by", "still_allowed"]

ScopePolicy = Callable[[ProxyIdentity, Scope], bool]
"""Whether an identity may subscribe to a scope (the server's authorisation rule)."""


def granted_by(grants: Callable[[], Mapping[tuple[str, str], Scope]]) -> ScopePolicy:
    """The production policy: an identity may subscribe to the one scope ``grants()`` gives
    its ServiceAccount (``compile.grants.subscription_grants`` of the current state, read at
    each subscription so that it follows the cluster)."""

    def allowed(identity: ProxyIdentity, scope: Scope) -> bool:
        return grants().get((identity.namespace, identity.name)) == scope

    return allowed


def still_allowed(
    policy: ScopePolicy | None,
    warnings: LogBudget,
    identity: ProxyIdentity | None,
    scope: Scope,
) -> Callable[[], bool]:
    """Whether the stream's identity may still have the scope: grants follow the cluster,
    so a stream that lost its grant gets no newer version (it keeps the last one, as after a
    disconnect) until the grant comes back; logged at each change, within the identity's
    budget."""
    if policy is None:  # insecure: every subscription allowed
        return lambda: True
    if identity is None:  # refused at the subscription already
        return lambda: False
    withheld = [False]

    def allowed() -> bool:
        now = policy(identity, scope)
        if now == withheld[0]:
            withheld[0] = not now
            change = "may have again" if now else "lost the grant of"
            warnings.warning(
                identity, "grant changes", f"discovery: {identity.uri} {change} scope {scope}"
            )
        return now

    return allowed
