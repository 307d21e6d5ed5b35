"""Emails compared as identities: plain ASCII or nothing.

An email is who someone is (the caller's Slack profile, an instance's `proxy-user-mail`, ORGANIZER_EMAILS),
and either side may be written by a person the bot must not trust. Python's `str.lower()` and NFKC fold
look-alikes onto ASCII: U+212A KELVIN SIGN lowers to `k`, and NFKC turns it into `K` and full-width `ｋ`
into `k`. So an address is an identity only when it is plain ASCII as written (NFKC leaves it as it is);
then `casefold()` is the comparison. Anything else names nobody and matches nothing.
"""

from __future__ import annotations

import unicodedata


def identity(email: str | None) -> str | None:
    """The comparable form of an email, or None when it is not plain ASCII (a look-alike names nobody)."""
    if not isinstance(email, str):
        return None
    text = email.strip(" \t\r\n")
    if not text or not text.isascii() or unicodedata.normalize("NFKC", text) != text:
        return None
    return text.casefold()


def same_person(a: str | None, b: str | None) -> bool:
    """Both emails are identities, and the same one."""
    mine = identity(a)
    return mine is not None and mine == identity(b)


def shown(email: str | None) -> str | None:
    """An email as the bot keeps it: its identity when it has one, else the text as written (so organizers can
    see it), which identity() then never matches."""
    if not isinstance(email, str) or not email.strip():
        return None
    return identity(email) or email.strip()
