"""Fixtures shared by the test_apiserver_*.py files: a fresh emulator per test, and a
CoreV1Api or a bare ApiClient on it. A module imports the ones it uses; a module that defines its
own ``api`` (another emulator configuration) still gets ``core`` and ``client`` on that one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from kubernetes import client as k8s

from tests.apiserver import ApiServer

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


@pytest.fixture
def client(api: ApiServer) -> Iterator[k8s.ApiClient]:
    with api.client() as api_client:
        yield api_client


@pytest.fixture
def core(api: ApiServer) -> Iterator[k8s.CoreV1Api]:
    with api.client() as api_client:
        yield k8s.CoreV1Api(api_client)
