"""``serve`` follows its folder through inotify (``shell.standalone.inotify``): with polling
and the periodic whole look pushed out of reach, an edit, a new file in a new folder, a removal
and a ConfigMap-style link swap are each handed over, and the state is what a fresh read of the
folder gives."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

import pytest
import trio

from coxswain.compile import ClusterState, build_state
from coxswain.compile.model.state import TABLE_NAMES
from coxswain.shell.sources import read_manifests
from coxswain.shell.standalone import manifest_folder
from coxswain.shell.standalone.inotify import open_inotify

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from coxswain.compile.model.manifests import SourcedBody


def _has_inotify() -> bool:
    found = open_inotify()
    if found is not None:
        found.close()
    return found is not None


pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _has_inotify(), reason="inotify is Linux's"
)

NEVER = 3600.0  # seconds: no poll, no periodic whole look within a test
GUARD = 60.0  # seconds: a hang guard, not a speed assertion


def _service(name: str, port: int) -> str:
    return (
        "apiVersion: v1\nkind: Service\n"
        f"metadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{ports: [{{port: {port}}}]}}\n"
    )


def _write(path: Path, text: str) -> None:
    """As editors and ``kubectl cp`` do: a temporary name, then a rename over the file."""
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(text)
    os.replace(scratch, path)


def _objects(state: ClusterState) -> dict[object, object]:
    return {key: obj for name in TABLE_NAMES for key, obj in getattr(state, name).items()}


def _fresh(root: Path) -> dict[object, object]:
    return _objects(build_state(read_manifests([str(root)])))


@contextlib.asynccontextmanager
async def _following(roots: list[str]) -> AsyncIterator[trio.MemoryReceiveChannel[ClusterState]]:
    """``watch_manifests`` of ``roots`` with polling out of reach: the states it hands over."""
    send, receive = trio.open_memory_channel[ClusterState](1)

    async def on_state(state: ClusterState, _bodies: list[SourcedBody]) -> None:
        await send.send(state)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: manifest_folder.watch_manifests(roots, on_state, interval=NEVER))
        yield receive
        nursery.cancel_scope.cancel()


def test_edits_are_followed_through_inotify_without_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifest_folder, "RESCAN_INTERVAL", NEVER)
    root = tmp_path / "manifests"
    root.mkdir()
    _write(root / "a.yaml", _service("a", 80))
    _write(root / "b.yaml", _service("b", 80))
    edits = [
        lambda: _write(root / "a.yaml", _service("a", 8080)),  # an edit: one file stat-ed
        lambda: (root / "sub").mkdir() or _write(root / "sub" / "c.yml", _service("c", 80)),
        lambda: os.remove(root / "b.yaml"),
        lambda: (root / "a.yaml").write_text(_service("a", 9090)),  # written in place
    ]

    async def main() -> None:
        with trio.fail_after(GUARD):
            async with _following([str(root)]) as states:
                assert _objects(await states.receive()) == _fresh(root)
                for edit in edits:
                    edit()
                    wanted = _fresh(root)
                    while _objects(await states.receive()) != wanted:
                        pass

    trio.run(main)


def test_a_link_swapped_as_configmap_volumes_do_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ConfigMap volume holds ``name -> ..data/name`` links and swaps ``..data`` (a link to
    a timestamped folder) by a rename: no event names the manifest, one names the link."""
    monkeypatch.setattr(manifest_folder, "RESCAN_INTERVAL", NEVER)
    root = tmp_path / "volume"
    (root / "..v1").mkdir(parents=True)
    (root / "..v1" / "a.yaml").write_text(_service("a", 80))
    os.symlink("..v1", root / "..data")
    os.symlink("..data/a.yaml", root / "a.yaml")

    async def main() -> None:
        with trio.fail_after(GUARD):
            async with _following([str(root / "a.yaml")]) as states:
                await states.receive()
                (root / "..v2").mkdir()
                (root / "..v2" / "a.yaml").write_text(_service("a", 8080))
                os.symlink("..v2", root / "..data_tmp")
                os.replace(root / "..data_tmp", root / "..data")
                wanted = _fresh(root / "a.yaml")
                while _objects(await states.receive()) != wanted:
                    pass

    trio.run(main)
