"""ingress-nginx regex paths and ``rewrite-target`` against Python's ``re``, on the patterns
both engines accept (docs/migrating-from-ingress-nginx.md, "Paths, rewrites and redirects").

Oracle: ``re.match(pattern, path, re.IGNORECASE)`` decides whether the path matches from its
start (nginx's ``location ~* "^pattern"``), and the match's ``expand`` of the target, with
``$n`` written ``\\g<n>`` (a group that took no part expands to nothing, as in nginx), is the
rewritten path. The proxy's side is ``compile.regex.PrefixMatch`` (RE2) and
``route.ingress_actions.rewrite_path``.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.regex import compile_prefix_pattern
from coxswain.route.ingress_actions import rewrite_path

_ATOMS = st.sampled_from(["a", "b", "B", "/", ".", "[ab]", "[^/]", r"\d", "1", "x"])


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    """Concatenations of atoms, groups and alternations, with quantifiers on atoms and
    groups; no empty-width loops (``(a*)*``), where engines disagree on the last capture."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.booleans()):
            inner = draw(st.lists(patterns(depth + 1), min_size=1, max_size=2))
            part = "(" + "|".join(inner) + ")"
            quantifier = draw(st.sampled_from(["", "", "?"]))
        else:
            part = draw(_ATOMS)
            quantifier = draw(st.sampled_from(["", "", "*", "+", "?"]))
        parts.append(part + quantifier)
    return "".join(parts)


paths = st.text(alphabet="abAB/1x.", max_size=12).map(lambda t: "/" + t)
targets = st.lists(st.sampled_from(["/", "a", "$1", "$2", "$3", "-"]), max_size=6).map(
    lambda parts: "/" + "".join(parts)
)


@given(pattern=patterns(), path=paths, target=targets)
def test_regex_paths_and_capture_rewrites_agree_with_python_re(
    pattern: str, path: str, target: str
) -> None:
    compiled = compile_prefix_pattern(pattern)
    assert not isinstance(compiled, str), compiled
    expected = re.match(pattern, path, re.IGNORECASE)
    groups = compiled.captures(path)
    assert (groups is None) == (expected is None)
    if expected is None or groups is None:
        return
    assert groups == tuple(g or "" for g in expected.groups())
    usable = re.sub(r"\$(\d)", lambda m: "" if int(m[1]) > compiled.groups else m[0], target)
    template = re.sub(r"\$(\d)", r"\\g<\1>", usable)
    assert rewrite_path(usable, groups, "") == expected.expand(template)
