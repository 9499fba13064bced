"""Pure per-request routing: the proxy's decision, testable without sockets.

``build_table(snapshot)`` indexes a snapshot once; ``select(table, head)`` decides one request
in time independent of the number of rules (a host index, then per-host dictionaries).
"""

from coxswain.route.forward import forwarded_headers
from coxswain.route.request import RequestHead
from coxswain.route.select import Decision, select
from coxswain.route.table import RouteTable, build_table

__all__ = ["Decision", "RequestHead", "RouteTable", "build_table", "forwarded_headers", "select"]
