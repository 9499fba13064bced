"""The manifest loader: text → raw bodies with file and line (pure), and the shell's file reader."""

from __future__ import annotations

import io
import json
import textwrap

import pytest

from coxswain.compile.model.manifests import (
    ManifestSyntaxError,
    Refused,
    SourcedBody,
    parse_manifests,
    stream_manifests,
)
from coxswain.shell.sources import LoadError, read_manifests, stream_bodies


def parse_ok(text: str, path: str = "in.yaml") -> list[SourcedBody]:
    parsed = parse_manifests(textwrap.dedent(text), path)
    assert not isinstance(parsed, ManifestSyntaxError), parsed
    return parsed


def parse_error(text: str, path: str = "in.yaml") -> ManifestSyntaxError:
    parsed = parse_manifests(textwrap.dedent(text), path)
    assert isinstance(parsed, ManifestSyntaxError), parsed
    return parsed


def summary(bodies: list[SourcedBody]) -> list[tuple[str, str, int]]:
    """(kind, name, line) of each body."""
    return [(b.body.get("kind"), b.body.get("metadata", {}).get("name"), b.line) for b in bodies]


# --- YAML ---------------------------------------------------------------------------------------


def test_multi_document_yaml_gives_each_object_its_first_line():
    bodies = parse_ok(
        """\
        apiVersion: v1
        kind: Service
        metadata:
          name: one
        ---
        # a comment before the second object
        apiVersion: v1
        kind: Service
        metadata:
          name: two
        """
    )
    assert summary(bodies) == [("Service", "one", 1), ("Service", "two", 7)]
    assert bodies[1].path == "in.yaml"
    assert bodies[1].where == "in.yaml:7"


def test_empty_documents_are_skipped_when_yaml_has_blank_or_comment_only_documents():
    bodies = parse_ok(
        """\
        ---
        ---
        # nothing here
        ---
        apiVersion: v1
        kind: Namespace
        metadata:
          name: ns
        ---
        ---
        """
    )
    assert summary(bodies) == [("Namespace", "ns", 5)]


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "---\n---\n...\n"])
def test_nothing_is_returned_when_the_text_holds_no_document(text):
    assert parse_ok(text) == []


def test_kind_list_is_flattened_with_each_item_on_its_own_line():
    bodies = parse_ok(
        """\
        apiVersion: v1
        kind: List
        metadata: {}
        items:
        - apiVersion: v1
          kind: Service
          metadata:
            name: a
        - apiVersion: networking.k8s.io/v1
          kind: Ingress
          metadata:
            name: b
        """
    )
    assert summary(bodies) == [("Service", "a", 5), ("Ingress", "b", 9)]
    assert bodies[1].body["apiVersion"] == "networking.k8s.io/v1"


def test_typed_list_items_get_kind_and_api_version_when_they_lack_them():
    bodies = parse_ok(
        """\
        apiVersion: networking.k8s.io/v1
        kind: IngressList
        items:
        - metadata:
            name: first
        - metadata:
            name: second
        """
    )
    assert summary(bodies) == [("Ingress", "first", 4), ("Ingress", "second", 6)]
    assert all(b.body["apiVersion"] == "networking.k8s.io/v1" for b in bodies)


def test_typed_list_items_keep_their_own_kind_when_they_have_one():
    bodies = parse_ok(
        """\
        apiVersion: v1
        kind: ServiceList
        items:
        - apiVersion: v1
          kind: Secret
          metadata:
            name: s
        """
    )
    assert summary(bodies) == [("Secret", "s", 4)]


def test_kind_list_items_are_not_given_a_kind_when_the_list_is_untyped():
    bodies = parse_ok(
        """\
        apiVersion: v1
        kind: List
        items:
        - metadata:
            name: anonymous
        """
    )
    assert [b.body for b in bodies] == [{"metadata": {"name": "anonymous"}}]


def test_empty_list_gives_nothing_when_items_is_empty_or_null():
    assert parse_ok("apiVersion: v1\nkind: List\nitems: []\n") == []
    assert parse_ok("apiVersion: v1\nkind: List\nitems:\n") == []


def test_nested_lists_are_flattened_recursively():
    bodies = parse_ok(
        """\
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: List
          items:
          - apiVersion: v1
            kind: Service
            metadata:
              name: inner
        - apiVersion: v1
          kind: Namespace
          metadata:
            name: outer
        """
    )
    assert [(k, n) for k, n, _ in summary(bodies)] == [("Service", "inner"), ("Namespace", "outer")]
    assert bodies[1].line == 11


def test_nested_list_items_keep_their_own_line():
    bodies = parse_ok(
        """\
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: List
          items:
          - apiVersion: v1
            kind: Service
            metadata:
              name: a
          - apiVersion: v1
            kind: Service
            metadata:
              name: b
        """
    )
    assert [b.line for b in bodies] == [7, 11]


def test_kind_ending_in_list_without_items_is_an_ordinary_object():
    bodies = parse_ok("apiVersion: example.com/v1\nkind: AllowList\nmetadata:\n  name: x\n")
    assert summary(bodies) == [("AllowList", "x", 1)]


def test_a_scalar_document_is_returned_as_is_for_the_decoder_to_refuse():
    assert [b.body for b in parse_ok("just a string\n")] == ["just a string"]


def test_yaml_syntax_error_names_the_line_when_a_later_document_is_broken():
    error = parse_error(
        """\
        apiVersion: v1
        kind: Service
        metadata:
          name: fine
        ---
        apiVersion: v1
        kind: Service: broken
        """
    )
    assert (error.path, error.line) == ("in.yaml", 7)
    assert error.message
    assert str(error).startswith("in.yaml:7: ")


def test_yaml_syntax_error_names_the_line_when_a_tab_indents():
    error = parse_error("a: 1\nb:\n\t- c\n", path="dir/tabs.yml")
    assert str(error).startswith("dir/tabs.yml:3: ")


UNCLOSED_LIST = "apiVersion: v1\nkind: List\nitems: [\n  {kind: Namespace, metadata: {name: a}},\n"


@pytest.mark.parametrize(
    ("text", "line", "bracket"),
    [
        (UNCLOSED_LIST, 3, "["),  # the file ends after a ',' inside the list
        (UNCLOSED_LIST + "\n\n# trailing comment\n", 3, "["),
        ("a: 1\n---\nitems: [\n  {x: 1}, {y: [2]}, {z: 3,\n", 4, "{"),  # the innermost
        ("items: [", 1, "["),  # no final line break
    ],
)
def test_yaml_unclosed_flow_collection_names_the_line_where_it_opens(text, line, bracket):
    error = parse_error(text)
    assert error.line == line
    assert error.message.startswith(f"the {bracket!r} opened here is never closed (")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\nb: {x: 1\n", 2),  # PyYAML's context mark: where the mapping opens
        ("a: 1\nb: [1, 2\n\n", 2),
        ('a: 1\nb: "open\n\n', 2),  # a quoted string left open
    ],
)
def test_yaml_error_at_the_end_of_the_text_names_where_the_open_thing_starts(text, line):
    error = parse_error(text)
    assert error.line == line


def test_yaml_error_before_the_end_keeps_the_line_the_parser_marks():
    error = parse_error("a: [1, 2\nb: 3\nc: 4\n")  # found ':' on line 2, inside the list
    assert error.line == 2


def test_yaml_error_at_the_end_with_nothing_open_names_the_last_line_that_is_not_blank():
    error = parse_error("a: 1\n---\n%YAML 1.1\n\n")  # a directive, and no document after it
    assert error.line == 3


def test_flow_style_yaml_parses_when_the_file_starts_with_a_brace():
    bodies = parse_ok("{apiVersion: v1, kind: Namespace, metadata: {name: flow}}\n")
    assert summary(bodies) == [("Namespace", "flow", 1)]


# --- JSON ---------------------------------------------------------------------------------------


def test_json_object_is_parsed_with_its_line_when_preceded_by_blank_lines():
    text = "\n\n" + json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "j"}})
    bodies = parse_ok(text, path="ns.json")
    assert summary(bodies) == [("Namespace", "j", 3)]


def test_json_text_is_recognised_by_content_when_the_name_does_not_end_in_json():
    bodies = parse_ok('{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "j"}}', "-")
    assert summary(bodies) == [("Namespace", "j", 1)]


def test_json_array_gives_every_object():
    text = json.dumps(
        [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}},
        ],
        indent=2,
    )
    bodies = parse_ok(text, path="arr.json")
    assert [(k, n) for k, n, _ in summary(bodies)] == [("Service", "a"), ("Secret", "b")]


def test_json_typed_list_fills_kind_and_api_version_of_items():
    text = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ServiceList",
            "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
        },
        indent=2,
    )
    bodies = parse_ok(text, path="list.json")
    assert [(k, n) for k, n, _ in summary(bodies)] == [("Service", "a"), ("Service", "b")]
    assert all(b.body["apiVersion"] == "v1" for b in bodies)


def test_json_array_and_list_items_keep_their_own_line():
    array = (
        "[\n"
        '  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}},\n'
        '  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "b"}}\n'
        "]\n"
    )
    assert [b.line for b in parse_ok(array, "arr.json")] == [2, 3]
    listed = (
        '{"apiVersion": "v1", "kind": "List", "items": [\n'
        '  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}},\n'
        '  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "b"}}\n'
        "]}\n"
    )
    assert [b.line for b in parse_ok(listed, "list.json")] == [2, 3]


@pytest.mark.parametrize(
    "text",
    [
        '{"kind": "List", "items": [{"kind": "Namespace"}],}',  # a trailing comma
        '{"kind": "List", "items": [{"kind": "Namespace"},]}',
        '{"kind": "List", "items": [{"kind": "Namespace"}]} x',
        '{"kind": "List" "items": []}',
        '[{"kind": "Namespace"}, {"kind": "Namespace"]',
    ],
)
def test_json_list_read_an_item_at_a_time_is_refused_as_the_json_parser_refuses_it(text):
    with pytest.raises(json.JSONDecodeError) as parsed:
        json.loads(text)
    error = parse_error(text, "l.json")
    assert (error.line, error.message) == (parsed.value.lineno, parsed.value.msg)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # the last "items" wins, as in the parsed value
        ('{"kind": "List", "items": [{"kind": "A"}], "items": [{"kind": "B"}]}', ["B"]),
        ('{"kind": "List", "items": [{"kind": "A"}], "items": 1}', []),
        ('{"kind": "BList", "items": [{"x": 1}, 2, null]}', ["B", None, None]),
        ('{"items": [{"kind": "A"}], "kind": "List"}', ["A"]),
        ('[{"kind": "A"}, [{"kind": "B"}], {"kind": "CList", "items": [{}]}]', ["A", "B", "C"]),
        ('{"kind": "A", "items": []}', ["A"]),
    ],
)
def test_json_lists_give_the_items_the_parsed_value_gives(text, kinds):
    bodies = parse_ok(text, "l.json")
    assert [b.body.get("kind") if isinstance(b.body, dict) else None for b in bodies] == kinds


def test_a_stream_gives_the_yaml_documents_before_a_syntax_error_then_refuses():
    text = NAMESPACE.format(name="a") + "---\nkind: [\n"
    stream = stream_manifests(text, "s.yaml")
    assert next(stream).body["metadata"]["name"] == "a"
    with pytest.raises(Refused) as refused:
        next(stream)
    assert refused.value.error == parse_error(text, "s.yaml")


def test_a_stream_refuses_a_json_list_before_giving_any_item():
    text = json.dumps({"kind": "List", "items": [{"kind": "Namespace"}]})[:-1]
    with pytest.raises(Refused) as refused:
        stream_manifests(text, "l.json")
    assert refused.value.error == parse_error(text, "l.json")


def test_json_syntax_error_names_the_line_of_the_error():
    error = parse_error(
        '{\n  "kind": "Service",\n  "metadata": {\n    "name": \n  }\n}\n', "s.json"
    )
    assert (error.path, error.line) == ("s.json", 5)
    assert str(error).startswith("s.json:5: ")


def test_json_syntax_error_counts_lines_when_text_starts_with_blank_lines():
    error = parse_error('\n\n[{"kind": "Service",}]\n', "s.json")
    assert error.line == 3


@pytest.mark.parametrize(
    ("text", "line", "bracket"),
    [
        ('{"a": [1,\n', 1, "["),
        ('[\n  {"kind": "Service"},\n', 1, "["),
        ('{\n  "a": "x\\"[",\n  "b": {\n    "c": [1]\n', 3, "{"),  # brackets in strings
    ],
)
def test_json_unclosed_array_or_object_names_the_line_where_it_opens(text, line, bracket):
    error = parse_error(text, "u.json")
    assert error.line == line
    assert error.message.startswith(f"the {bracket!r} opened here is never closed (")


# --- shell.sources.read_manifests ---------------------------------------------------------------

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"


def test_directory_is_read_recursively_when_files_have_manifest_suffixes(tmp_path):
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "a.yaml").write_text(NAMESPACE.format(name="a"))
    (tmp_path / "sub" / "b.yml").write_text(NAMESPACE.format(name="b"))
    (tmp_path / "sub" / "deeper" / "c.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c"}})
    )
    (tmp_path / "sub" / "d.YAML").write_text(NAMESPACE.format(name="d"))
    (tmp_path / "README.md").write_text("kind: Namespace\n: not yaml at all [\n")
    (tmp_path / "sub" / "notes.txt").write_text("{ broken")
    (tmp_path / "sub" / "e.yaml.bak").write_text("{ broken")
    bodies = read_manifests([str(tmp_path)])
    names = sorted(b.body["metadata"]["name"] for b in bodies)
    assert names == ["a", "b", "c", "d"]
    by_name = {b.body["metadata"]["name"]: b for b in bodies}
    assert by_name["b"].path == str(tmp_path / "sub" / "b.yml")
    assert by_name["b"].line == 1


def test_files_and_directories_are_read_in_the_order_given(tmp_path):
    first, second = tmp_path / "z.yaml", tmp_path / "a.yaml"
    first.write_text(NAMESPACE.format(name="z"))
    second.write_text(NAMESPACE.format(name="a"))
    bodies = read_manifests([str(first), str(second)])
    assert [b.body["metadata"]["name"] for b in bodies] == ["z", "a"]


def test_bodies_stream_file_after_file_and_stop_at_the_first_error(tmp_path):
    (tmp_path / "a.yaml").write_text(NAMESPACE.format(name="a"))
    (tmp_path / "b.yaml").write_text("kind: [\n")
    stream = stream_bodies([str(tmp_path)])
    assert next(stream).body["metadata"]["name"] == "a"
    with pytest.raises(LoadError, match=r"b\.yaml:"):
        next(stream)


def test_stdin_is_read_when_the_path_is_a_dash(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("---\n" + NAMESPACE.format(name="piped")))
    bodies = read_manifests(["-"])
    assert [(b.path, b.line, b.body["metadata"]["name"]) for b in bodies] == [("-", 2, "piped")]


def test_load_error_when_a_path_does_not_exist(tmp_path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(LoadError, match=r"missing\.yaml"):
        read_manifests([str(missing)])


def test_load_error_names_file_and_line_when_a_file_has_a_syntax_error(tmp_path):
    (tmp_path / "good.yaml").write_text(NAMESPACE.format(name="good"))
    bad = tmp_path / "nested" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text("apiVersion: v1\nkind: Service: x\n")
    with pytest.raises(LoadError) as info:
        read_manifests([str(tmp_path)])
    assert str(info.value).startswith(f"{bad}:2: ")


def test_load_error_when_a_file_is_not_utf8(tmp_path):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"kind: Namespace\nmetadata:\n  name: caf\xe9\n")
    with pytest.raises(LoadError, match=r"latin1\.yaml"):
        read_manifests([str(bad)])


@pytest.mark.parametrize("value", ["!!int x", "!!timestamp x", "1" * 5000])
def test_a_value_pyyaml_cannot_build_is_a_syntax_error_at_its_line(value):
    error = parse_error(f"apiVersion: v1\nkind: ConfigMap\ndata:\n  k: {value}\n")
    assert error.line == 4
    assert error.message.startswith("cannot construct a tag:yaml.org,2002:")
