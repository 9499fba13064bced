"""The PEP 517 build backend: setuptools', with the native build of the codec as an option.

``COXSWAIN_MYPYC=1 pip install .`` (or ``pip wheel .``) compiles the HTTP/1.1 codec (setup.py
says which modules and why). mypyc comes with mypy, and type-checks what it compiles, so that
build also needs the packages those modules import. A static ``build-system.requires`` would
download them for every build, the pure-Python one included; asking for them here, only when
the variable is set, keeps the ordinary build as light as before (PEP 517,
"get_requires_for_build_wheel").

Only a wheel is built natively. An sdist and the wheel's metadata are the same either way, so
they are built as pure ones (without this, setup.py would need mypyc before pip installed
it). An editable install is refused: it would compile into the source folders, where the
native modules would go on shadowing every later edit of their sources.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - the backend's hooks, re-exported unchanged

if TYPE_CHECKING:
    from collections.abc import Iterator

# Pinned, as the test extra pins it: the image's compiled code and the code tests/compiled.py
# tests are what mypyc of this version makes of our sources (tests/unit/test_build.py).
NATIVE_REQUIRES = ["mypy==2.4.1", "httptools>=0.6.4", "h11>=0.16"]
_VARIABLE = "COXSWAIN_MYPYC"


def _native() -> bool:
    return os.environ.get(_VARIABLE) == "1"


@contextmanager
def _pure() -> Iterator[None]:
    """The variable unset while setuptools runs setup.py for something that is not native."""
    saved = os.environ.pop(_VARIABLE, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[_VARIABLE] = saved


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements (none beyond itself); mypy and the codec's imports to build
    natively. setup.py declares no setup_requires, so setuptools need not run it to answer."""
    if _native():
        return list(NATIVE_REQUIRES)
    return build_meta.get_requires_for_build_wheel(config_settings)


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    """The same metadata either way: prepared without compiling anything."""
    with _pure():
        return build_meta.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    """An sdist holds sources only: built as a pure one."""
    with _pure():
        return build_meta.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """An sdist holds sources only: built as a pure one (its wheel may be native)."""
    with _pure():
        return build_meta.build_sdist(sdist_directory, config_settings)


def _refuse_native_editable() -> None:
    if _native():
        raise RuntimeError(
            f"{_VARIABLE}=1 builds wheels only: an editable install would compile into the "
            "source folders, and those native modules would shadow every later edit"
        )


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements; refused for a native build (see the module docstring)."""
    _refuse_native_editable()
    return build_meta.get_requires_for_build_editable(config_settings)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """setuptools' editable wheel; refused for a native build (see the module docstring)."""
    _refuse_native_editable()
    return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
