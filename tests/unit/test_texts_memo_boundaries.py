"""The texts kept from one snapshot to the next, at their edges (``compile.texts_memo``): a
text set now is read back from now, and only the texts used now are iterated."""

from __future__ import annotations

from coxswain.compile.texts_memo import Texts


def test_a_text_set_now_is_read_from_now_and_only_used_texts_are_kept() -> None:
    texts = Texts({1: "old one", 2: "old two"})
    texts[3] = "new"
    assert texts[3] == "new"
    assert texts[1] == "old one"
    assert (list(texts), len(texts)) == ([3, 1], 2)
