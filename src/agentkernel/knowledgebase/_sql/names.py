r"""Names in SQL resolved the way the server resolves them, for the statement guard.

The guard judges functions and relations by name, so it must see the name the server will
look up, not the text the agent typed: ``pg_catalog.U&"pg_r\0065ad_file"`` is PostgreSQL's
``pg_read_file``, ``"Upper"`` is not ``upper`` there but is in DuckDB, and ``public.lower``
is not the built-in. The rules per dialect are listed in ``functions``. Anything this
module cannot resolve raises :class:`UnresolvedName`, and the guard refuses the statement.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp
from sqlglot.tokens import Token, TokenType  # type: ignore[attr-defined]

from agentkernel.errors import AKError

# PostgreSQL cuts identifiers to NAMEDATALEN - 1 bytes
_PG_MAX_IDENTIFIER_BYTES = 63
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_CASE_INSENSITIVE = frozenset({"duckdb", "sqlite", "trino", "mysql"})
_QUOTES = frozenset('"`[')
_HEX = frozenset("0123456789abcdefABCDEF")


class UnresolvedName(AKError, ValueError):
    """A name the guard cannot resolve as the server would; the message says which."""


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as PostgreSQL and SQLite fold names."""
    return text.translate(_ASCII_LOWER)


def resolve(name: str, *, quoted: bool, dialect: str | None) -> str:
    """The name the server looks up for one identifier part.

    Args:
        name: The identifier's text without its quotes.
        quoted: It was written in quotes.
        dialect: The sqlglot dialect name, ``None`` for generic SQL.

    Returns:
        PostgreSQL: quoted names exactly, others folded to lower case, cut to 63 bytes.
        DuckDB, SQLite, Trino, MySQL: lower case. Other dialects: lower case for unquoted
        names, the text itself for quoted ones.
    """
    if dialect == "postgres":
        folded = name if quoted else ascii_lower(name)
        raw = folded.encode("utf-8")
        if len(raw) > _PG_MAX_IDENTIFIER_BYTES:
            folded = raw[:_PG_MAX_IDENTIFIER_BYTES].decode("utf-8", errors="ignore")
        return folded
    if dialect in _CASE_INSENSITIVE or not quoted:
        return ascii_lower(name)
    return name


def quoted_function_names_resolve(dialect: str | None) -> bool:
    """Whether a quoted function name has a known meaning in this dialect."""
    return dialect == "postgres" or dialect in _CASE_INSENSITIVE


def identifier_parts(node: exp.Expression | None, dialect: str | None) -> list[str]:
    """The resolved parts of a dotted name (``a.b.c``) given as Identifier/Dot/Var nodes."""
    if node is None:
        return []
    if isinstance(node, exp.Identifier):
        return [resolve(str(node.this), quoted=bool(node.quoted), dialect=dialect)]
    if isinstance(node, exp.Var):
        return [resolve(str(node.this), quoted=False, dialect=dialect)]
    if isinstance(node, exp.Dot):
        return identifier_parts(node.this, dialect) + identifier_parts(node.expression, dialect)
    if isinstance(node, exp.Column):
        parts = [node.args.get(key) for key in ("catalog", "db", "table", "this")]
        return [p for part in parts if part is not None for p in identifier_parts(part, dialect)]
    raise UnresolvedName(f"a name qualified by {node.sql()[:60]!r} cannot be resolved")


def function_parts(
    node: exp.Expr, text: str, dialect: str | None, name_key: str
) -> tuple[str, ...]:
    """The qualified name the server calls for a function node, qualifier first.

    Args:
        node: A function node of the parsed statement.
        text: The statement text the node was parsed from (for quoting of known names).
        dialect: The sqlglot dialect name.
        name_key: The meta key under which the parser recorded a known function's name.

    Returns:
        The resolved parts, e.g. ``("pg_catalog", "upper")`` or ``("sheet",)``.

    Raises:
        UnresolvedName: The node's written name or qualifier cannot be recovered.
    """
    if isinstance(node, exp.Anonymous):
        this = node.this
        if isinstance(this, exp.Identifier):
            name, quoted = str(this.this), bool(this.quoted)
        elif isinstance(this, str):
            name, quoted = this, False
        else:
            raise UnresolvedName("a function whose name is an expression cannot be resolved")
    else:
        written = node.meta_get(name_key)
        start = node.meta_get("start")
        if not isinstance(written, str) or not isinstance(start, int):
            raise UnresolvedName(f"the function behind {type(node).__name__} has no name")
        name, quoted = written, text[start : start + 1] in _QUOTES
    if quoted and not quoted_function_names_resolve(dialect):
        raise UnresolvedName(f'a quoted function name ("{name}") is not accepted in this dialect')
    qualifier: list[str] = []
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        qualifier = identifier_parts(parent.this, dialect)
    elif isinstance(parent, exp.Table) and parent.this is node:
        qualifier = identifier_parts(parent.args.get("catalog"), dialect)
        qualifier += identifier_parts(parent.args.get("db"), dialect)
    return (*qualifier, resolve(name, quoted=quoted, dialect=dialect))


def relation_parts(table: exp.Table, dialect: str | None) -> tuple[str, ...]:
    """The resolved ``catalog.db.name`` parts of a table reference (those given)."""
    parts = [table.args.get(key) for key in ("catalog", "db", "this")]
    return tuple(p for part in parts if part is not None for p in identifier_parts(part, dialect))


def decode_unicode_identifiers(text: str, tokens: Sequence[Token], dialect: str | None) -> str:
    r"""Rewrite PostgreSQL ``U&"..."`` identifiers as the plain quoted names they spell.

    PostgreSQL reads ``U&"d\0061ta"`` (optionally followed by ``UESCAPE 'c'``) as the
    identifier ``data``; sqlglot reads it as ``U & "d\0061ta"``. The rewritten text is what
    the guard judges and what the server runs, so both see the same name.

    Args:
        text: The statement.
        tokens: Its tokens in ``dialect``.
        dialect: The sqlglot dialect name.

    Returns:
        ``text`` with every such identifier replaced by a plain ``"..."`` identifier;
        ``text`` itself when there is none.

    Raises:
        UnresolvedName: An escape PostgreSQL would reject, or the form in a dialect other
            than PostgreSQL where the guard cannot know what the server makes of it.
    """
    spans: list[tuple[int, int, str]] = []
    i = 0
    while i + 2 < len(tokens):
        u, amp, ident = tokens[i], tokens[i + 1], tokens[i + 2]
        if not (
            u.token_type == TokenType.VAR
            and u.text in ("U", "u")
            and amp.token_type == TokenType.AMP
            and ident.token_type == TokenType.IDENTIFIER
            and u.end + 1 == amp.start
            and amp.end + 1 == ident.start
            and text[ident.start] == '"'
        ):
            i += 1
            continue
        if dialect != "postgres":
            raise UnresolvedName('a U&"..." identifier is read only in the postgres dialect')
        end, escape = ident.end, "\\"
        following = tokens[i + 3 : i + 5]
        if len(following) == 2 and following[0].text.upper() == "UESCAPE":
            escape = _uescape(following[1], text)
            end = following[1].end
            i += 2
        body = text[ident.start + 1 : ident.end].replace('""', '"')
        spans.append((u.start, end, _decode(body, escape)))
        i += 3
    for start, end, name in reversed(spans):
        text = text[:start] + '"' + name.replace('"', '""') + '"' + text[end + 1 :]
    return text


def _uescape(token: Token, text: str) -> str:
    raw = text[token.start : token.end + 1]
    if token.token_type != TokenType.STRING or len(raw) != 3 or raw[0] != "'":
        raise UnresolvedName("UESCAPE must be followed by a one-character string")
    char = raw[1]
    if char in _HEX or char in "+'\" \t\r\n\f":
        raise UnresolvedName(f"invalid Unicode escape character {char!r}")
    return char


def _decode(body: str, escape: str) -> str:
    """PostgreSQL's decoding of a ``U&`` body; raise where the server raises."""
    out: list[str] = []
    high: int | None = None
    i = 0
    while i < len(body):
        char = body[i]
        if char != escape:
            if high is not None:
                raise UnresolvedName("invalid Unicode surrogate pair in a U& identifier")
            out.append(char)
            i += 1
            continue
        if body[i + 1 : i + 2] == escape:
            if high is not None:
                raise UnresolvedName("invalid Unicode surrogate pair in a U& identifier")
            out.append(escape)
            i += 2
            continue
        if body[i + 1 : i + 2] == "+":
            digits, size, i = body[i + 2 : i + 8], 6, i + 8
        else:
            digits, size, i = body[i + 1 : i + 5], 4, i + 5
        if len(digits) != size or any(d not in _HEX for d in digits):
            raise UnresolvedName("invalid Unicode escape in a U& identifier")
        code = int(digits, 16)
        if high is not None:
            if not 0xDC00 <= code <= 0xDFFF:
                raise UnresolvedName("invalid Unicode surrogate pair in a U& identifier")
            code, high = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00), None
        elif 0xD800 <= code <= 0xDBFF:
            high = code
            continue
        elif 0xDC00 <= code <= 0xDFFF or code == 0 or code > 0x10FFFF:
            raise UnresolvedName("invalid Unicode escape value in a U& identifier")
        out.append(chr(code))
    if high is not None:
        raise UnresolvedName("invalid Unicode surrogate pair in a U& identifier")
    return "".join(out)
