"""The PEP 517 build backend: setuptools', asking for mypy when a native build is wanted.

``COXSWAIN_MYPYC=1 pip install .`` compiles the HTTP/1.1 codec (setup.py says which modules
and why). mypyc comes with mypy, and type-checks what it compiles, so that build also needs
the packages those modules import. A static ``build-system.requires`` would download them for
every build, the pure-Python one included; asking for them here, only when the variable is
set, keeps the ordinary build as light as before (PEP 517, "get_requires_for_build_wheel").
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - the backend's hooks, re-exported unchanged

if TYPE_CHECKING:
    from collections.abc import Callable

# Pinned: the compiled code is what mypyc of this version makes of our sources.
_NATIVE = ["mypy==2.4.1", "httptools>=0.6.4", "h11>=0.16"]


def _requires(
    hook: Callable[[dict[str, str] | None], list[str]], settings: dict[str, str] | None
) -> list[str]:
    # setuptools answers by running setup.py, which needs mypyc to run at all in a native
    # build; setup.py declares no setup_requires, so its answer would add nothing then.
    if os.environ.get("COXSWAIN_MYPYC") == "1":
        return list(_NATIVE)
    return hook(settings)


def get_requires_for_build_wheel(config_settings: dict[str, str] | None = None) -> list[str]:
    """setuptools' requirements; mypy and the codec's imports for a native build."""
    return _requires(build_meta.get_requires_for_build_wheel, config_settings)


def get_requires_for_build_editable(config_settings: dict[str, str] | None = None) -> list[str]:
    """As for a wheel: an editable install builds the extension modules in place."""
    return _requires(build_meta.get_requires_for_build_editable, config_settings)
