"""The API server's JSON, decoded within a nesting bound: answers, list items, watch events.

Python's JSON decoder recurses once per nesting level, and past about 1,000 levels (less the
stack in use) it raises ``RecursionError``. A tenant can nest that deep where a CRD preserves
unknown fields (a ``CoxswainGatewayParameters`` ``podTemplate``): the API server stores and
serves it, and one such object would end every list and watch of its resource, and the
controller with them. So every body is measured first, by ``nesting``: linear in the body, it
counts the brackets outside strings with the bytes functions of the standard library (no loop
in Python over the bytes, no recursion), and a body past ``MAX_BODY_DEPTH`` is not given to the
decoder at all.

What is refused is as small as can be told apart:

- **A list** is one JSON document, yet its items are objects of their own: when the list is too
  deep as a whole, its items are found one by one (a scan of the body, linear, kept for this
  rare case), and only the items too deep are refused; the others are decoded and served. A
  list whose envelope itself cannot be read is refused whole, and its caller retries it.
- **A watch event** is one line: a refused one is named by its top levels (the event's type,
  the object's namespace, name and resourceVersion, read with every deeper level cut out), so
  the informer can skip that one change, or apply a deletion, and carry on.
- **An answer** (a GET, a PATCH) is one object: refused whole.

A refused object never reaches the compiler; the controller keeps the last good state it had of
it (docs/security.md, "Limits").
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "MAX_BODY_DEPTH",
    "Listing",
    "Refused",
    "decode_answer",
    "decode_event",
    "decode_list",
    "nesting",
]

MAX_BODY_DEPTH: Final = 256
"""Most objects and lists nested in one object the controller decodes, the object counting as
one (a list adds two levels around its items, a watch event one around its object).

Four times the compiler's own bound (``compile.model.limits.MAX_OBJECT_DEPTH``, 64), so an
object between the two still reaches the compiler, which refuses it with a diagnostic naming
its field (``ObjectTooDeep``); and low enough that decoding it, and any later walk that
recurses twice a level, stays far from Python's recursion limit whatever the stack in use."""

_LIST_ENVELOPE: Final = 2  # the list object and its items array
_EVENT_ENVELOPE: Final = 1  # the event object around its object
_NOT_MARKS: Final = bytes(b for b in range(256) if b not in b'"[]{}')
_STEP: Final = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))
_TOKENS: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)
_QUOTE: Final = ord('"')
_OPENERS: Final = frozenset(b"[{")
_ITEMS_KEY: Final = b'"items"'
_DECODER: Final = json.JSONDecoder()
_NOT_SPACE: Final = re.compile(r"[^ \t\n\r]")
_NAME_LENGTH: Final = 253  # what is shown of a refused object's name (a DNS subdomain's most)


@dataclass(frozen=True, slots=True)
class Refused:
    """A body, list item or watch event that was not decoded: why, and what its top levels
    say (empty when unknown): a watch event's type, the object's namespace, name and
    resourceVersion."""

    why: str
    event: str = ""
    namespace: str = ""
    name: str = ""
    version: str = ""

    @property
    def key(self) -> tuple[str, str] | None:
        """``(namespace, name)`` as informers key objects, when the name is known."""
        return (self.namespace, self.name) if self.name else None

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{where or 'an object'} {self.why}"


@dataclass(frozen=True, slots=True)
class Listing:
    """A list answer: the items decoded (objects only), the list's resourceVersion, the
    items refused, and the token of the next page."""

    items: list[dict[str, Any]]
    version: str
    refused: list[Refused] = field(default_factory=list)
    next: str = ""  # ``metadata.continue``: the token of the next page ("" on the last)


def nesting(data: bytes) -> int:
    """How deep arrays and objects nest in the JSON text ``data`` (0 for a scalar). Linear.

    Escaped backslashes, then escaped quotes, are removed (a run of backslashes pairs from its
    left, as in a JSON string); every quote left delimits a string, so what lies between an odd
    quote and the next is inside one, and the brackets outside are summed. On text that is not
    JSON the count holds up to where the decoder would stop, which is all the decoder needs.
    """
    marks = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_MARKS)
    outside = b"".join(marks.split(b'"')[::2])
    return max(itertools.accumulate(map(_STEP.__getitem__, outside)), default=0)


def decode_answer(data: bytes) -> dict[str, Any] | Refused:
    """One answer: an object, or a ``Status`` (nothing at all is an empty object)."""
    return _document(data, envelope=0) if data else {}


def decode_event(line: bytes) -> dict[str, Any] | Refused:
    """One watch event: ``{"type": ..., "object": ...}``."""
    return _document(line, envelope=_EVENT_ENVELOPE)


def decode_list(data: bytes) -> Listing | Refused:
    """A list answer, item by item when some item is too deep; Refused when the list as a whole
    cannot be read."""
    if nesting(data) <= MAX_BODY_DEPTH + _LIST_ENVELOPE:
        whole = _list_parsed(data)
        return whole if isinstance(whole, Refused) else _listing(whole, [])
    found = _items(data)
    if found is None:
        return Refused(f"is a list nested deeper than {MAX_BODY_DEPTH} levels outside its items")
    opened, closed, spans = found
    envelope = _document(data[: opened + 1] + data[closed:], envelope=_LIST_ENVELOPE)
    if isinstance(envelope, Refused):
        return envelope
    items: list[dict[str, Any]] = []
    refused: list[Refused] = []
    for start, end, depth in spans:
        item = data[start:end]
        decoded = _too_deep(item, envelope=0) if depth > MAX_BODY_DEPTH else _parsed(item)
        if isinstance(decoded, Refused):
            refused.append(decoded)
        else:
            items.append(decoded)
    return _listing({**envelope, "items": items}, refused)


def _document(data: bytes, *, envelope: int) -> dict[str, Any] | Refused:
    """One JSON object whose own object is ``envelope`` levels down."""
    if nesting(data) > MAX_BODY_DEPTH + envelope:
        return _too_deep(data, envelope=envelope)
    return _parsed(data)


def _parsed(data: bytes) -> dict[str, Any] | Refused:
    """``data`` decoded, known to nest within the bound."""
    try:
        value = json.loads(data.decode())
    except ValueError:  # not UTF-8, or not JSON
        return Refused("is not JSON")
    return value if isinstance(value, dict) else Refused("is not a JSON object")


def _list_parsed(data: bytes) -> dict[str, Any] | Refused:
    """A list known to nest within the bound, decoded as ``_parsed`` would, but a value of its
    top level, and an item of its ``items``, at a time: the decoder is one call that holds the
    interpreter lock throughout, 35 ms of CPU for a page of 500 HTTPRoutes, while the event
    loop waits for the lock; between two items, the lock changes hands (docs/benchmarks.md,
    "Controller")."""
    try:
        cursor = _Cursor(data.decode())
        if cursor.next() != "{":
            return _parsed(data)  # not an object: refused as a whole would be
        cursor.expect("{")
        answer: dict[str, Any] = {}
        for _ in cursor.members("}"):
            key = cursor.value()
            if not isinstance(key, str):
                raise ValueError(key)
            cursor.expect(":")
            if key == "items" and cursor.next() == "[":
                cursor.expect("[")
                answer[key] = [cursor.value() for _ in cursor.members("]")]
            else:
                answer[key] = cursor.value()
        if cursor.next():
            raise ValueError(cursor.at)
    except ValueError:  # not UTF-8, or not JSON
        return Refused("is not JSON")
    return answer


class _Cursor:
    """A place in a JSON text, always past whitespace."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self._skip()

    def _skip(self) -> None:
        found = _NOT_SPACE.search(self.text, self.at)
        self.at = found.start() if found else len(self.text)

    def next(self) -> str:
        """The next character ("" at the end)."""
        return self.text[self.at : self.at + 1]

    def expect(self, char: str) -> None:
        """Step over ``char``; ValueError when something else is next."""
        if self.next() != char:
            raise ValueError(self.at)
        self.at += 1
        self._skip()

    def value(self) -> Any:
        """The JSON value that starts here, decoded.

        Raises:
            ValueError: none does.
        """
        value, self.at = _DECODER.raw_decode(self.text, self.at)
        self._skip()
        return value

    def members(self, close: str) -> Iterator[None]:
        """Once per member of the object or array just opened (the caller reads each), then
        past ``close``."""
        if self.next() == close:
            self.at += 1
            self._skip()
            return
        while True:
            yield
            if self.next() != ",":
                self.expect(close)
                return
            self.expect(",")


def _listing(answer: dict[str, Any], refused: list[Refused]) -> Listing:
    items = answer.get("items")
    meta = answer.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return Listing(
        items=[i for i in items if isinstance(i, dict)] if isinstance(items, list) else [],
        version=str(meta.get("resourceVersion") or ""),
        refused=refused,
        next=str(meta.get("continue") or ""),
    )


def _too_deep(data: bytes, *, envelope: int) -> Refused:
    """The refusal of a body too deep, named by what its top levels say."""
    top: object = _shallow(data, keep=envelope + 2)
    event = ""
    if envelope == _EVENT_ENVELOPE:
        event = _text(top, "type")
        top = top.get("object") if isinstance(top, dict) else None
    meta = top.get("metadata") if isinstance(top, dict) else None
    return Refused(
        f"nests deeper than {MAX_BODY_DEPTH} levels",
        event=event,
        namespace=_text(meta, "namespace"),
        name=_text(meta, "name"),
        version=_text(meta, "resourceVersion"),
    )


def _text(mapping: object, key: str) -> str:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value[:_NAME_LENGTH] if isinstance(value, str) else ""


def _shallow(data: bytes, *, keep: int) -> object:
    """``data`` decoded with every array and object nested deeper than ``keep`` replaced by
    null; None when that is not JSON either. Linear: one scan of the tokens."""
    pieces: list[bytes] = []
    depth = 0
    kept = 0  # where the bytes not copied yet start
    for token in _TOKENS.finditer(data):
        at = token.start()
        if data[at] == _QUOTE:
            continue
        if data[at] in _OPENERS:
            depth += 1
            if depth == keep + 1:
                pieces.append(data[kept:at])
        else:
            if depth == keep + 1:
                pieces.append(b"null")
                kept = token.end()
            depth -= 1
    if depth > keep:  # the text ends inside what is cut: it is no JSON
        return None
    pieces.append(data[kept:])
    try:
        return json.loads(b"".join(pieces).decode())
    except ValueError:
        return None


def _items(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]] | None:
    """Where the list's ``items`` array opens and closes, and the span and nesting of each
    array or object in it; None when the list has no such array. Linear: one scan of the
    tokens, the last string seen at the list's own level naming the value that follows."""
    depth = 0
    key = b""
    opened = closed = -1
    spans: list[tuple[int, int, int]] = []
    start = deepest = 0
    for token in _TOKENS.finditer(data):
        at = token.start()
        char = data[at]
        inside = opened >= 0 > closed
        if char == _QUOTE:
            if depth == 1:
                key = token.group()
        elif char in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
            if depth == _LIST_ENVELOPE and key == _ITEMS_KEY and opened < 0:
                opened = at
            elif depth == _LIST_ENVELOPE + 1 and inside:
                start, deepest = at, depth
        else:
            if depth == _LIST_ENVELOPE + 1 and inside:
                spans.append((start, token.end(), deepest - _LIST_ENVELOPE))
            elif depth == _LIST_ENVELOPE and inside:
                closed = at
            depth -= 1
    return None if closed < 0 else (opened, closed, spans)
