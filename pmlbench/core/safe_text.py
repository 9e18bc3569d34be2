"""Text that came from a plugin, a file, a store record or a user, made safe to write.

Names (datasets, methods, parameter values), error messages and tracebacks reach the
terminal, CSV files, Markdown, LaTeX and HTML. Each of these would act on some characters
instead of showing them. :func:`visible` is the one rule for which characters are shown as
escapes wherever text is written; the writers of each format add their own escaping on top
(pmlbench.report.render for Markdown and LaTeX, :mod:`html` for HTML, :func:`csv_cell`
here for CSV).

Escaped by :func:`visible`: every character of the Unicode categories Cc (C0 and C1
controls, DEL: an ESC starts a terminal escape sequence), Cf (format characters: the
bidirectional marks, embeddings, overrides and isolates, zero-width characters, U+2064
INVISIBLE PLUS, the tag characters U+E0000-E007F, the soft hyphen ...), Zl and Zp (line and
paragraph separators), Cs (lone surrogates, which no UTF-8 file can hold) and Cn
(code points unassigned in this Python's Unicode database: a format character of a later
Unicode version is one of them). Each becomes ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``.
The terminal (pmlbench.core.console) shows messages through :func:`visible` too, keeping
their newlines and tabs.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

_ESCAPED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@lru_cache(maxsize=65536)
def _visible(text: str, keep_newlines: bool) -> str:
    if _PRINTABLE_ASCII.fullmatch(text):
        return text
    kept = "\n\t" if keep_newlines else ""
    return "".join(
        _escape(c) if c not in kept and unicodedata.category(c) in _ESCAPED else c for c in text
    )


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control, format, separator, surrogate and unassigned character
    written as a visible escape (see the module docstring), so that it is shown, never
    acted on. Newlines and tabs are escaped too (a name or a table cell is one line), unless
    ``keep_newlines`` (a traceback)."""
    return _visible(str(text), keep_newlines)


def has_hidden(text: str) -> bool:
    """Whether :func:`visible` would change ``text``: such a text cannot be a name."""
    return visible(text) != text


# A spreadsheet reads a cell starting with one of these as a formula (=HYPERLINK(...),
# +cmd|..., -1+..., @SUM(...)); a tab or carriage return is escaped by visible already.
_FORMULA_STARTS = ("=", "+", "-", "@")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_GUARD = "'"


def _needs_guard(text: str) -> bool:
    """Whether a CSV cell holding ``text`` needs the guard: it would start a formula (a plain
    number such as ``-1`` does not), or it starts with the guard before such a text (so
    that :func:`from_csv_cell` gives back exactly what :func:`csv_cell` was given)."""
    if text.startswith(_FORMULA_STARTS):
        return _NUMBER.fullmatch(text) is None
    return text.startswith(_GUARD) and _needs_guard(text[len(_GUARD) :])


def csv_cell(value: Any) -> Any:
    """A CSV cell: a string :func:`visible` on one line, with an apostrophe before text a
    spreadsheet would run as a formula (``=HYPERLINK(...)`` is shown as
    ``'=HYPERLINK(...)``); anything else as it is."""
    if not isinstance(value, str):
        return value
    text = visible(value)
    return _GUARD + text if _needs_guard(text) else text


def from_csv_cell(value: Any) -> Any:
    """The text :func:`csv_cell` was given (its escapes stay escapes): the apostrophe it
    put before a formula removed."""
    if isinstance(value, str) and value.startswith(_GUARD) and _needs_guard(value[1:]):
        return value[len(_GUARD) :]
    return value


def csv_frame(frame: Any) -> Any:
    """A pandas DataFrame as CSV cells: :func:`csv_cell` on every text cell and column name."""
    from pandas.api.types import is_string_dtype

    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or is_string_dtype(safe[column]):
            safe[column] = safe[column].map(csv_cell)
    safe.columns = [csv_cell(c) for c in safe.columns]
    return safe
