"""The ``coxswain`` command line.

Each subcommand is a thin shell: read input, call the pure core, print. Exit codes: 0 when the
command did its job (whatever diagnostics the input earned), 2 when the input or the flags could
not be used. Flag values are checked when the command line is parsed (:mod:`coxswain.cli.types`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Final

from coxswain import __version__
from coxswain.cli import compile as compile_command
from coxswain.cli import controller as controller_command
from coxswain.cli import proxy as proxy_command
from coxswain.cli import route as route_command
from coxswain.cli import serve as serve_command
from coxswain.cli.types import HelpFormatter

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]

# in the order ``coxswain --help`` lists them
_COMMANDS: Final = (
    compile_command,
    route_command,
    proxy_command,
    serve_command,
    controller_command,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    handler: Any = args.handler
    code: int = handler(args)
    return code


class _Version(argparse.Action):
    """``--version``: the version and how the HTTP/1.1 codec runs (compiled or not). The
    codec is imported only when asked: every other command would pay for it (22 ms of the
    300 ms ``import coxswain.cli`` takes, ``python -X importtime``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from coxswain.http1 import codec_build

        print(f"coxswain {__version__} (HTTP/1.1 codec {codec_build()})")  # stdout, as argparse's
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coxswain",
        description="Kubernetes Ingress and Gateway API controller and proxy.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show the version and the codec's build"
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(commands)
    return parser
