"""A scope's hashed pieces kept from one seal to the next (``compile.memo``).

Why: docs/architecture.md, "The pure core". The content hash of a scope's snapshot
(``snapshot_json.head_digest``) is taken again after every change; what the last one read — the
listener tables' texts by slot, the health entries' and certificates' texts, each port's pieces
and those of the cells after the tables, and the hash chain — lets the next encode, visit and
hash only what changed. Each map holds at most what one snapshot holds: the texts of slots gone
are dropped, the pieces kept are those of the last hash's ports, the other texts those it
asked for (or, when it kept those cells whole, the ones before).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coxswain.compile.hash_chain import HashChain
from coxswain.compile.snapshot_json import edited_table_text, head_digest
from coxswain.compile.texts_memo import Texts

if TYPE_CHECKING:
    from _hashlib import HASH

    from coxswain.compile.gateway.cells import GatewayCells
    from coxswain.compile.snapshot import Snapshot
    from coxswain.compile.snapshot_json import HostTexts, RuleTexts, Segments, TableText

__all__ = ["SealMemory"]


@dataclass(slots=True)
class SealMemory:
    """One scope's hashed pieces as its last seal left them; one caller at a time."""

    tables: dict[tuple[int, str], TableText] = field(default_factory=dict)
    others: dict[int, tuple[object, tuple[int, str] | None, str]] = field(default_factory=dict)
    segments: Segments = field(default_factory=dict)
    chain: HashChain = field(default_factory=HashChain)

    def head(
        self, snapshot: Snapshot, cells: GatewayCells, texts: RuleTexts, hosts: HostTexts
    ) -> HASH:
        """``head_digest(snapshot, texts)``, ``cells`` being the snapshot's Gateway API cells:
        the tables of the slots they renewed from an earlier table are edited from its text
        (``snapshot_json.edited_table_text``), every other one is read from what was kept."""
        for slot in cells.renewed:
            fragment = cells.fragments[slot]
            if fragment.edits is not None:
                edited_table_text(self.tables, slot, fragment.table, fragment.edits, texts)
        others = Texts(self.others)
        segments: Segments = {}
        head = head_digest(
            snapshot, texts, self.tables, hosts, self.chain, others, (self.segments, segments)
        )
        # none asked: the cells after the tables were kept whole, and their texts with them
        self.others = others.now or others.older
        self.segments = segments
        for slot in self.tables.keys() - cells.fragments.keys():
            del self.tables[slot]
        return head
