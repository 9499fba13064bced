"""Argument types and help formatting shared by the ``coxswain`` commands.

Every flag's value is checked by argparse when the command line is parsed, so a bad value is
refused with exit code 2 and ``argument --flag: why`` before anything starts. An enumerated
flag lists its values in ``--help`` and refuses any other; the controller's flags take their
default from a ``COXSWAIN_*`` variable (:mod:`coxswain.cli.controller`) and a bad value there
is refused the same way, naming the variable.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
from typing import TYPE_CHECKING, Final, Self, TypeVar

from coxswain.compile.config import DEFAULT_SHARED_PORTS_PER_NAMESPACE
from coxswain.compile.gateway.ports import PORT_BAND
from coxswain.compile.labels import parse_selector
from coxswain.compile.scope import GatewayScope, Scope, parse_scope
from coxswain.shell.logs import FORMAT_ENV

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.route.forward import Network

__all__ = [
    "VIP_SERVICE_TYPES",
    "FromEnvironment",
    "HelpFormatter",
    "add_log_format",
    "add_port_share_flag",
    "boolean",
    "enumerated",
    "gateway",
    "json_lines",
    "networks",
    "port",
    "port_share",
    "scope",
    "seconds",
    "selector",
    "vip_service_type",
]

T = TypeVar("T")

VIP_SERVICE_TYPES: Final = ("LoadBalancer", "ClusterIP")
LOG_FORMATS: Final = ("auto", "json", "text")
_TRUE: Final = ("true", "yes", "1")
_FALSE: Final = ("false", "no", "0")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written, and each option's default after its help.

    The default is left out where the help already says it (``default`` in the text), and for
    switches and options without one (False, None, an empty list): "(default: None)" says
    nothing.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or "default" in text
            or default is argparse.SUPPRESS
            or default in (None, False, "")
            or default == []
        ):
            return text
        return f"{text} (default: %(default)s)"


class FromEnvironment(str):
    """A default read from an environment variable. argparse converts a string default with
    the option's type when the option is not given, so a bad value in the environment fails
    at parse time too; :func:`_named` makes the message name the variable, not the flag."""

    variable: str

    def __new__(cls, value: str, variable: str) -> Self:
        made = super().__new__(cls, value)
        made.variable = variable
        return made


def _named(check: Callable[[str], T]) -> Callable[[str], T]:
    """``check``, whose refusal names the environment variable a default came from."""

    def checked(text: str) -> T:
        try:
            return check(text)
        except argparse.ArgumentTypeError as err:
            if isinstance(text, FromEnvironment):
                raise argparse.ArgumentTypeError(f"{text.variable}: {err}") from None
            raise

    return checked


def enumerated(*values: str) -> Callable[[str], str]:
    """One of ``values`` (for an option with a default from the environment, where argparse's
    ``choices`` would not check the default)."""

    def check(text: str) -> str:
        if text not in values:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(values)}")
        return text

    return _named(check)


@_named
def vip_service_type(text: str) -> str:
    """``--shared-vip-service-type``: LoadBalancer or ClusterIP, and why not NodePort."""
    if text == "NodePort":
        raise argparse.ArgumentTypeError(
            "NodePort is refused: every shared Gateway needs its listener ports on its own "
            "address, and a NodePort Service can neither keep them nor give each Gateway an "
            "address (use LoadBalancer, or ClusterIP behind your own load balancer)"
        )
    if text not in VIP_SERVICE_TYPES:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(VIP_SERVICE_TYPES)}")
    return text


@_named
def selector(text: str) -> dict[str, str]:
    """``K=V[,K=V]``: a set of Kubernetes labels."""
    found = parse_selector(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not comma-separated key=value labels")
    return found


@_named
def networks(text: str) -> tuple[Network, ...]:
    """``CIDR[,CIDR]``: IPv4 or IPv6 networks (an address alone is a /32 or /128), no host
    bits set; empty for none."""
    found: list[Network] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            found.append(ipaddress.ip_network(item))
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{item!r} is not a network: {err}") from err
    return tuple(found)


_CLASS_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


@_named
def class_names(text: str) -> tuple[str, ...]:
    """``NAME[,NAME]``: IngressClass names (DNS subdomains, RFC 1123); empty for none."""
    found = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    for name in found:
        if _CLASS_NAME.fullmatch(name) is None:
            raise argparse.ArgumentTypeError(f"{name!r} is not an IngressClass name")
    return found


@_named
def port_share(text: str) -> int:
    """``--shared-ports-per-namespace``: from 1 to the shared pool's whole port band."""
    top = len(PORT_BAND)
    if not (text.isascii() and text.isdigit() and len(text) <= 5 and 1 <= int(text) <= top):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of ports from 1 to {top}")
    return int(text)


def add_port_share_flag(parser: argparse.ArgumentParser) -> None:
    """``--shared-ports-per-namespace``, for the commands that compile (``compile``, ``serve``;
    the controller's flag table has its own entry)."""
    parser.add_argument(
        "--shared-ports-per-namespace",
        type=port_share,
        default=DEFAULT_SHARED_PORTS_PER_NAMESPACE,
        metavar="N",
        help="internal ports of the shared pool the Gateways of one namespace may hold",
    )


def port(*, lowest: int) -> Callable[[str], int]:
    """A TCP port number from ``lowest`` (0 where 0 means "none" or "any") to 65535."""

    def check(text: str) -> int:
        if not (text.isascii() and text.isdigit() and len(text) <= 5):
            raise argparse.ArgumentTypeError(f"{text!r} is not a port number")
        value = int(text)
        if not lowest <= value <= 65535:
            raise argparse.ArgumentTypeError(f"{value} is not a port from {lowest} to 65535")
        return value

    return _named(check)


def count(*, lowest: int) -> Callable[[str], int]:
    """A whole number from ``lowest`` (a size or a limit), decimal digits only."""

    def check(text: str) -> int:
        if not (text.isascii() and text.isdigit() and len(text) <= 18):
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        value = int(text)
        if value < lowest:
            raise argparse.ArgumentTypeError(f"{value} is less than {lowest}")
        return value

    return _named(check)


@_named
def seconds(text: str) -> float:
    """A timeout or interval: a positive number of seconds (``inf``: none)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text!r}: it must be more than 0 seconds")
    return value


def seconds_or_none(text: str) -> float:
    """:func:`seconds`, or 0 (none set) for an empty text or ``0``."""
    return 0.0 if text in ("", "0") else seconds(text)


_SIZE: Final = re.compile(r"([0-9]{1,15})([kKmMgG]?)")
_SIZE_UNITS: Final = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def body_size(text: str) -> int:
    """nginx's size syntax, as ingress-nginx's ``proxy-body-size``: bytes, or a number with
    ``k``, ``m`` or ``g``; empty or ``0``: no limit (0)."""
    if not text:
        return 0
    matched = _SIZE.fullmatch(text)
    if matched is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (bytes, or with k, m or g)")
    return int(matched.group(1)) * _SIZE_UNITS[matched.group(2).lower()]


def scope(text: str) -> Scope:
    """``shared`` or ``NAMESPACE/NAME`` (a Gateway's own scope)."""
    found = parse_scope(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r} is neither shared nor NAMESPACE/NAME")
    return found


def gateway(text: str) -> str:
    """``NAMESPACE/NAME`` of a Gateway, kept as written."""
    if not isinstance(parse_scope(text), GatewayScope):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAMESPACE/NAME")
    return text


@_named
def boolean(text: str) -> bool:
    """A switch's value in the environment: true, yes, 1 or false, no, 0 (any case)."""
    lowered = text.lower()
    if lowered not in _TRUE + _FALSE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one of {', '.join(_TRUE)} (on) or {', '.join(_FALSE)} (off)"
        )
    return lowered in _TRUE


def add_log_format(parser: argparse.ArgumentParser) -> None:
    """``--log-format`` of the long-running commands (:mod:`coxswain.shell.logs`), defaulting
    to ``COXSWAIN_LOG_FORMAT``."""
    value = os.environ.get(FORMAT_ENV)
    now = f", set here to {value!r}" if value else ""
    parser.add_argument(
        "--log-format",
        type=enumerated(*LOG_FORMATS),
        default=FromEnvironment(value.lower(), FORMAT_ENV) if value else "auto",
        metavar="{" + ",".join(LOG_FORMATS) + "}",
        help="the process's own log: one JSON object a line, or text; auto: text on a terminal, "
        f"JSON elsewhere (default: auto; environment: {FORMAT_ENV}{now})",
    )


def json_lines(args: argparse.Namespace) -> bool:
    """Whether ``--log-format`` asks for JSON lines on standard error."""
    wanted: str = args.log_format
    return wanted == "json" or (wanted == "auto" and not sys.stderr.isatty())
