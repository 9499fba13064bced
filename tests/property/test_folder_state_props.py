"""``serve``'s folder state, kept file by file (``shell.standalone.folder_state``), equals
``build_state`` of every file read afresh, after every step of random edits: new, edited and
removed files, one key held by two files, bodies that are no object, kinds not read. Only the
files that changed are read, and an object no change touched stays the same object."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile import build_state
from coxswain.compile.model.state import TABLE_NAMES
from coxswain.compile.state_changes import changes
from coxswain.shell.sources import read_file
from coxswain.shell.standalone.folder_state import FolderState


def _service(name: str, port: int) -> str:
    return (
        "apiVersion: v1\nkind: Service\n"
        f"metadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{ports: [{{port: {port}}}]}}\n"
    )


def _ingress(name: str, host: str) -> str:
    return (
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\n"
        f"metadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{rules: [{{host: {host}, http: {{paths: [{{path: /, pathType: Prefix, "
        "backend: {service: {name: web, port: {number: 80}}}}]}}]}\n"
    )


CONTENTS = (
    _service("web", 80),
    _service("web", 8080),  # the same key as the one above, another body
    _service("api", 80),
    _ingress("shop", "shop.example"),
    _ingress("shop", "store.example"),
    _ingress("blog", "blog.example") + "---\n" + _service("blog", 80),
    "apiVersion: v1\nkind: Service\nmetadata: {namespace: default}\n",  # no name: no object
    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",  # a kind not read
    "",
)
FILES = ("a.yaml", "b.yaml", "c.yml", "sub/d.yaml")

# (file, content index or None to remove it)
steps = st.lists(
    st.tuples(st.sampled_from(FILES), st.none() | st.integers(0, len(CONTENTS) - 1)),
    min_size=1,
    max_size=12,
)


@given(steps)
def test_folder_state_equals_a_fresh_build_after_every_edit(
    edits: list[tuple[str, int | None]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "sub").mkdir()
        state = FolderState()
        stamps: dict[str, tuple[int, int, int]] = {}
        for number, (name, content) in enumerate(edits):
            path = root / name
            before = state.state
            if content is None:
                path.unlink(missing_ok=True)
                stamps.pop(str(path), None)
            else:
                path.write_text(CONTENTS[content])
                stamps[str(path)] = (len(CONTENTS[content]), number, 0)
            in_order = sorted(stamps.items())
            if state.update(in_order):  # the keys it says it may have changed cover the change
                assert state.change is not None
                base, after, keys = state.change
                assert base is before
                assert after is state.state
                assert changes(before, after) <= keys
            assert state.read == (content is not None)
            fresh = [body for path, _ in in_order for body in read_file(path)]
            assert state.bodies == fresh
            assert state.state == build_state(fresh)
            for table in TABLE_NAMES:
                after = getattr(state.state, table)
                for key, obj in getattr(before, table).items():
                    if key in after and after[key] == obj and content is not None:
                        assert after[key] is obj or str(path) in _holders(in_order, key)


def _holders(files: list[tuple[str, tuple[int, int, int]]], key: object) -> set[str]:
    """The files whose bodies decode to ``key``."""
    return {
        path
        for path, _ in files
        for table in TABLE_NAMES
        if key in getattr(build_state(read_file(path)), table)
    }
