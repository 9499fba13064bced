"""The form of the migration report (coxswain/compile/ingress/migration.py,
docs/migrating-from-ingress-nginx.md): the table people read, the data ``-o json`` gives, and
the summary both end with. The entries are built here, so that the form is pinned whatever
class the registry gives each annotation."""

from __future__ import annotations

from coxswain.compile.ingress.migration import MigrationEntry, migration_data, migration_table
from coxswain.compile.ingress.registry import AnnotationClass as C

P = "nginx.ingress.kubernetes.io/"
ENTRIES = [
    MigrationEntry(
        ingress="a/web", annotation=P + "rewrite-target", klass=C.HONOURED, explanation="ok"
    ),
    MigrationEntry(
        ingress="a/web",
        annotation=P + "ssl-redirect",
        klass=C.HONOURED,
        explanation="ok",
        problem="not a boolean",
    ),
    MigrationEntry(
        ingress="b/api", annotation=P + "x", klass=C.UNKNOWN, explanation="not an annotation"
    ),
    MigrationEntry(ingress="b/api", annotation=P + "y", klass=C.IGNORED, explanation="no buffers"),
    MigrationEntry(ingress="c/z", annotation=P + "s", klass=C.REFUSED, explanation="snippets"),
    MigrationEntry(ingress="c/z", annotation=P + "d", klass=C.DIFFERENT, explanation="differs"),
    MigrationEntry(ingress="d/q", annotation=P + "n", klass=C.NOT_YET, explanation="later"),
    MigrationEntry(ingress="e/same", annotation=P + "i", klass=C.IGNORED, explanation="no buffers"),
]
SUMMARY = {
    "honoured": 2,
    "honoured-with-difference": 1,
    "ignored": 2,
    "not-yet": 1,
    "refused": 1,
    "unknown": 1,
    "invalid": 1,
    "ingresses": 7,
    "ingressesBehavingDifferently": 4,
}


def test_the_data_form_has_a_row_per_annotation_and_the_summary():
    data = migration_data(ENTRIES, 7)
    assert data["summary"] == SUMMARY
    assert list(data["summary"]) == list(SUMMARY)
    assert data["annotations"][0] == {
        "ingress": "a/web",
        "annotation": P + "rewrite-target",
        "class": "honoured",
        "explanation": "ok",
    }
    assert data["annotations"][1] == {
        "ingress": "a/web",
        "annotation": P + "ssl-redirect",
        "class": "honoured",
        "explanation": "ok",
        "invalid": "not a boolean",
    }
    assert [row["class"] for row in data["annotations"]] == [str(e.klass) for e in ENTRIES]


def test_the_table_aligns_three_columns_and_ends_with_the_summary():
    width = len(P + "rewrite-target")
    expected = [
        "INGRESS  " + "ANNOTATION".ljust(width) + "  " + "CLASS".ljust(24) + "  EXPLANATION",
        "a/web    " + (P + "rewrite-target").ljust(width) + "  " + "honoured".ljust(24) + "  ok",
        "a/web    "
        + (P + "ssl-redirect").ljust(width)
        + "  "
        + "honoured".ljust(24)
        + "  ok; invalid value: not a boolean",
        "b/api    " + (P + "x").ljust(width) + "  " + "unknown".ljust(24) + "  not an annotation",
    ]
    lines = migration_table(ENTRIES, 7).split("\n")
    assert lines[:4] == expected
    assert lines[-4:] == [
        "",
        "7 Ingress(es), 4 would behave differently under Coxswain",
        "annotations: honoured 2, honoured-with-difference 1, ignored 2, not-yet 1, refused 1, "
        "unknown 1, invalid 1",
        "",
    ]
    assert len(lines) == 1 + len(ENTRIES) + 4


def test_an_empty_report_still_has_its_header_and_summary():
    assert migration_table([], 0) == (
        "INGRESS  ANNOTATION  CLASS  EXPLANATION\n"
        "\n"
        "0 Ingress(es), 0 would behave differently under Coxswain\n"
        "annotations: honoured 0, honoured-with-difference 0, ignored 0, not-yet 0, refused 0, "
        "unknown 0, invalid 0\n"
    )
    assert migration_data([], 3)["summary"]["ingresses"] == 3


def test_a_line_without_explanation_has_no_trailing_space():
    entry = MigrationEntry(ingress="a/b", annotation="x", klass=C.HONOURED, explanation="")
    assert migration_table([entry], 1).split("\n")[1] == "a/b      x           honoured"
