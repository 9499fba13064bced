"""Checking a password against an htpasswd hash: the formats Apache's ``htpasswd`` writes and
ingress-nginx's basic authentication accepts (docs/migrating-from-ingress-nginx.md, "Access").

- bcrypt (``$2a$``, ``$2b$``, ``$2y$``), with the ``bcrypt`` library;
- Apache MD5 (``$apr1$``) and MD5-crypt (``$1$``): the same 1000-round MD5 algorithm with a
  different magic (Poul-Henning Kamp's ``md5crypt``, as Apache's ``apr_md5.c`` documents it);
- SHA-1 (``{SHA}`` and the base64 of the password's SHA-1 digest).

Comparisons take the same time whatever the bytes compared (``hmac.compare_digest``). Pure.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Final

import bcrypt

__all__ = ["verify"]

_ALPHABET: Final = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_MAX_BCRYPT_COST: Final = 12
"""About 250 ms per check on one core; a dearer hash is refused rather than let one request
hold the proxy's event loop for seconds."""


def verify(password: bytes, hashed: str) -> bool:
    """Whether ``password`` is the one ``hashed`` was made from; False for a format not
    listed in the module docstring, and for a hash that is not ASCII (no format's is, and the
    constant-time comparison refuses such text)."""
    if not hashed.isascii():
        return False
    if hashed.startswith(("$2a$", "$2b$", "$2y$")):
        cost = hashed[4:6]
        if not cost.isdigit() or int(cost) > _MAX_BCRYPT_COST:
            return False
        try:
            return bcrypt.checkpw(password, hashed.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            return False
    if hashed.startswith("{SHA}"):
        digest = base64.b64encode(hashlib.sha1(password).digest()).decode("ascii")
        return hmac.compare_digest(digest, hashed[5:])
    for magic in ("$apr1$", "$1$"):
        if hashed.startswith(magic):
            salt = hashed[len(magic) :].split("$", 1)[0][:8]
            return hmac.compare_digest(md5_crypt(password, salt.encode(), magic), hashed)
    return False


def md5_crypt(password: bytes, salt: bytes, magic: str) -> str:
    """``magic + salt + "$" + hash``, the md5crypt algorithm (module docstring)."""
    alternate = hashlib.md5(password + salt + password).digest()
    context = hashlib.md5(password + magic.encode() + salt)
    for i in range(len(password), 0, -16):
        context.update(alternate[: min(16, i)])
    i = len(password)
    while i:
        context.update(b"\x00" if i & 1 else password[:1])
        i >>= 1
    final = context.digest()
    for round_ in range(1000):
        step = hashlib.md5()
        step.update(password if round_ & 1 else final)
        if round_ % 3:
            step.update(salt)
        if round_ % 7:
            step.update(password)
        step.update(final if round_ & 1 else password)
        final = step.digest()
    groups = ((0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5))
    encoded = "".join(_to64((final[a] << 16) | (final[b] << 8) | final[c], 4) for a, b, c in groups)
    encoded += _to64(final[11], 2)
    return f"{magic}{salt.decode('ascii', 'replace')}${encoded}"


def _to64(value: int, count: int) -> str:
    out = []
    for _ in range(count):
        out.append(_ALPHABET[value & 0x3F])
        value >>= 6
    return "".join(out)
