"""Who is calling: bearer tokens the operator issues, and JWT access tokens from an IdP.

An HTTP server built with authentication asks an :class:`Authenticator` for the identity
behind each request's bearer token. Two kinds are offered, alone or together:

- :class:`TokenTable`: tokens the operator issues. The table holds only their SHA-256 hashes,
  each mapped to an identity (``Support_Agent sha256:9f86...``), one per line, from a file or
  an environment variable. A presented token is hashed and compared with every entry in
  constant time. :func:`issue_token` makes a token and its table line.
- :class:`JWTVerifier`: access tokens signed by the team's identity provider, verified with
  PyJWT (the mcp SDK's own dependency) against a JWKS (a file or an ``https://`` URL): an
  asymmetric algorithm only (``none`` and the HMAC family are refused, so a public key can
  never be used as an HMAC secret), the issuer, the audience, ``exp`` and ``nbf`` (with a
  small leeway for clock skew); the identity is a configured claim (``sub`` by default).

Every refusal carries a short reason (``expired``, ``wrong audience``...) for the audit
trail and the ``WWW-Authenticate`` header; no reason ever quotes the token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from agentkernel._loopback import is_loopback
from agentkernel.errors import AKConfigError
from agentkernel.mcp._jwks import RemoteKeys

logger = logging.getLogger(__name__)

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "Authenticator",
    "Authenticators",
    "JWTVerifier",
    "TokenTable",
    "Verdict",
    "issue_token",
    "valid_identity",
]

#: What an identity may be spelled with: an agent name, an e-mail address, an IdP subject.
_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:|+-]{0,199}\Z")
_HASH = re.compile(r"sha256:([0-9a-f]{64})\Z")
#: The JWS algorithms accepted: public-key signatures only.
ASYMMETRIC_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


@dataclass(frozen=True)
class Verdict:
    """What a token proved.

    Attributes:
        identity: Who presented it, or ``None`` when it proved nothing.
        reason: Why it was refused (never the token itself); empty when accepted.
    """

    identity: str | None
    reason: str = ""


class Authenticator(Protocol):
    """Tells who presented a bearer token. May block (a JWKS fetch): run it in a thread.

    An authenticator whose ``blocks`` attribute is false (a :class:`TokenTable`) answers at
    once from memory; the HTTP gate asks it first, outside the pool blocking ones share.
    """

    def authenticate(self, token: str) -> Verdict:
        """Check one token.

        Args:
            token: The bearer token, without the ``Bearer`` prefix.

        Returns:
            The identity, or the reason for refusing.
        """
        ...


def valid_identity(identity: str) -> bool:
    """Whether a name can be an identity (letters, digits and ``_.@:|+-``, at most 200).

    Args:
        identity: The candidate.

    Returns:
        True when it is spelled as an identity may be.
    """
    return bool(_IDENTITY.match(identity))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def issue_token(identity: str) -> tuple[str, str]:
    """Make a new bearer token for an identity, and the line the token table keeps for it.

    Args:
        identity: Who will present the token (an agent name of ``config.yaml``).

    Returns:
        ``(token, line)``: give the token to the caller; put the line (which holds only the
        token's hash) in the token file or variable.

    Raises:
        AKConfigError: The identity is not spelled as an identity may be.
    """
    if not valid_identity(identity):
        raise AKConfigError(
            f"{identity!r} cannot be an identity: use letters, digits and _.@:|+- (at most 200)."
        )
    token = "ak_" + secrets.token_urlsafe(32)
    return token, f"{identity} sha256:{_digest(token).hex()}"


class TokenTable:
    """Bearer tokens the operator issued, kept as hashes mapped to identities."""

    #: Answers from memory, at once: never waits on anything.
    blocks = False

    def __init__(self, entries: Iterable[tuple[str, bytes]]) -> None:
        """Keep the entries.

        Args:
            entries: ``(identity, sha256 digest)`` pairs.

        Raises:
            AKConfigError: No entry, or one hash given twice.
        """
        self._entries = list(entries)
        digests = [digest for _, digest in self._entries]
        if not self._entries:
            raise AKConfigError("The token table is empty: add one 'IDENTITY sha256:HEX' line.")
        if len(set(digests)) != len(digests):
            raise AKConfigError("The token table holds one token hash twice.")

    @classmethod
    def parse(cls, text: str, where: str) -> TokenTable:
        """Read ``IDENTITY sha256:HEX`` entries, one per line (or separated by commas).

        Blank lines and lines starting with ``#`` are skipped.

        Args:
            text: The table.
            where: Where it came from, for error messages.

        Returns:
            The table.

        Raises:
            AKConfigError: An entry is not ``IDENTITY sha256:HEX``; the message names its
                line and never repeats its hash.
        """
        entries: list[tuple[str, bytes]] = []
        for number, line in enumerate(re.split(r"[\n,]", text), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if (
                len(parts) != 2
                or not valid_identity(parts[0])
                or (found := _HASH.match(parts[1])) is None
            ):
                raise AKConfigError(
                    f"{where}, entry {number}: expected 'IDENTITY sha256:HEX' (64 lowercase hex "
                    "digits of the token's SHA-256; python -m agentkernel.mcp.tokens NAME makes "
                    "one). Tokens themselves never go in the table."
                )
            entries.append((parts[0], bytes.fromhex(found.group(1))))
        return cls(entries)

    @classmethod
    def load(cls, source: str) -> TokenTable:
        """Load the table from a file, or from an environment variable (``env:NAME``).

        Args:
            source: A file path, or ``env:NAME``.

        Returns:
            The table.

        Raises:
            AKConfigError: The file or variable is missing, unreadable, or malformed.
        """
        if source.startswith("env:"):
            name = source[4:]
            value = os.environ.get(name)
            if not name or value is None:
                raise AKConfigError(f"Token table variable {name!r} is not set.")
            return cls.parse(value, f"${name}")
        try:
            text = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AKConfigError(f"Cannot read the token file {source!r}: {exc}") from exc
        return cls.parse(text, source)

    @property
    def identities(self) -> list[str]:
        """The identities the table names, in order, each once."""
        return list(dict.fromkeys(identity for identity, _ in self._entries))

    def authenticate(self, token: str) -> Verdict:
        """Find the identity whose token hashes like ``token``, comparing every entry.

        Args:
            token: The presented token.

        Returns:
            The identity, or ``unknown token``.
        """
        digest = _digest(token)
        found: str | None = None
        for identity, expected in self._entries:  # no early exit: constant time per table
            if hmac.compare_digest(digest, expected):
                found = identity
        return Verdict(found) if found is not None else Verdict(None, "unknown token")


class JWTVerifier:
    """JWT access tokens from an identity provider, checked against its JWKS."""

    #: May wait on the identity provider (a JWKS URL): run it in a thread.
    blocks = True

    def __init__(
        self,
        jwks: str,
        *,
        issuer: str,
        audience: str,
        identity_claim: str = "sub",
        leeway: float = 30.0,
    ) -> None:
        """Load the keys (a file now, a URL on first use) and keep the rules.

        Args:
            jwks: A JWKS file, or an ``https://`` URL (``http://`` on loopback only).
            issuer: The ``iss`` every token must carry.
            audience: The ``aud`` every token must include (this server's resource URL, or
                what the identity provider calls it).
            identity_claim: The claim naming the caller (``sub``, ``email``, ``azp``...).
            leeway: Seconds of clock skew allowed on ``exp`` and ``nbf``.

        Raises:
            AKConfigError: The JWKS cannot be read, holds no usable public key, or its URL
                is plain http beyond loopback; the issuer or audience is empty.
        """
        import jwt  # PyJWT: the mcp SDK depends on it

        if not issuer.strip() or not audience.strip():
            raise AKConfigError("JWT verification needs an issuer and an audience.")
        self._jwt = jwt
        self.issuer = issuer
        self.audience = audience
        self.identity_claim = identity_claim
        self._leeway = leeway
        self._remote: RemoteKeys | None = None
        self._keys: Any = None
        if "://" in jwks:
            parts = urlsplit(jwks)
            local = parts.hostname is not None and is_loopback(parts.hostname)
            if parts.scheme != "https" and not (parts.scheme == "http" and local):
                raise AKConfigError(
                    f"The JWKS URL must be https:// (http:// only on loopback), got {jwks!r}."
                )
            self._remote = RemoteKeys(jwks)
            self.source = jwks
        else:
            try:
                data = json.loads(Path(jwks).read_text(encoding="utf-8"))
                self._keys = jwt.PyJWKSet.from_dict(data)
            except (OSError, ValueError, jwt.PyJWTError) as exc:
                raise AKConfigError(f"Cannot read the JWKS file {jwks!r}: {exc}") from exc
            usable = [k for k in self._keys.keys if _public_key(k)]
            if not usable:
                raise AKConfigError(f"The JWKS file {jwks!r} holds no public signing key.")
            self.source = jwks

    def authenticate(self, token: str) -> Verdict:
        """Verify a JWT and name its caller.

        Args:
            token: The presented token.

        Returns:
            The identity claim's value, or the reason the token was refused.
        """
        jwt = self._jwt
        if not jwt_shaped(token):
            return Verdict(None, "malformed token")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return Verdict(None, "malformed token")
        algorithm = header.get("alg")
        if algorithm not in ASYMMETRIC_ALGORITHMS:
            return Verdict(None, "algorithm not allowed")
        kid = header.get("kid")
        keys = self._signing_keys(None if kid is None else str(kid))
        if keys is None:
            return Verdict(None, "signing keys unavailable")
        key = _pick(keys, kid)
        if key is None:
            return Verdict(None, "unknown signing key")
        if not _fits(key, algorithm):
            return Verdict(None, "algorithm does not match the key")
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self._leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            return Verdict(None, "expired")
        except jwt.ImmatureSignatureError:
            return Verdict(None, "not yet valid")
        except jwt.InvalidAudienceError:
            return Verdict(None, "wrong audience")
        except jwt.InvalidIssuerError:
            return Verdict(None, "wrong issuer")
        except jwt.InvalidSignatureError:
            return Verdict(None, "bad signature")
        except jwt.MissingRequiredClaimError as exc:
            return Verdict(None, f"missing claim {exc.claim}")
        except jwt.PyJWTError:
            return Verdict(None, "invalid token")
        identity = claims.get(self.identity_claim)
        if not isinstance(identity, str) or not valid_identity(identity):
            return Verdict(None, f"no usable {self.identity_claim} claim")
        return Verdict(identity)

    def _signing_keys(self, kid: str | None) -> list[Any] | None:
        if self._remote is not None:
            return self._remote.keys(kid)
        return list(self._keys.keys)


def jwt_shaped(token: str) -> bool:
    """Whether a token could be a JWS in compact form (three dot-separated parts).

    Args:
        token: The presented token.

    Returns:
        True when it has exactly two dots.
    """
    return token.count(".") == 2


def _pick(keys: list[Any], kid: Any) -> Any:
    """The public signing key named ``kid`` (the only one, when no ``kid`` is named)."""
    usable = [k for k in keys if _public_key(k)]
    if kid is None:
        return usable[0] if len(usable) == 1 else None
    return next((k for k in usable if k.key_id == kid), None)


def _public_key(key: Any) -> bool:
    """Whether a JWK is a public signing key of an asymmetric type (never ``oct``)."""
    return getattr(key, "key_type", None) in ("RSA", "EC", "OKP") and (
        getattr(key, "public_key_use", None) in (None, "sig")
    )


_FAMILIES = {"RSA": ("RS", "PS"), "EC": ("ES",), "OKP": ("EdDSA",)}


def _fits(key: Any, algorithm: str) -> bool:
    """Whether a public key may verify ``algorithm``: its family, and its ``alg`` if named."""
    if not _public_key(key) or not algorithm.startswith(_FAMILIES[key.key_type]):
        return False
    named = getattr(key, "_jwk_data", {}).get("alg")
    return named is None or named == algorithm


class Authenticators:
    """Several authenticators: the first that names an identity wins.

    Those that answer at once (token tables) are asked first, so a JWKS fetch is only ever
    made for a token no table knows.
    """

    def __init__(self, members: Sequence[Authenticator]) -> None:
        """Keep the members, in order.

        Args:
            members: Token tables and JWT verifiers.
        """
        self.members = list(members)

    def authenticate(self, token: str) -> Verdict:
        """Ask each member in turn.

        Args:
            token: The presented token.

        Returns:
            The first identity found, or the last member's reason for refusing.
        """
        verdict = self.quick(token)
        if verdict.identity is not None or not self.needs_blocking(token):
            return verdict
        return self.blocking(token, verdict)

    def quick(self, token: str) -> Verdict:
        """Ask the members that answer at once (token tables), in order.

        Args:
            token: The presented token.

        Returns:
            The first identity found, or the last of their reasons (``unknown token``).
        """
        return self._ask([m for m in self.members if not _blocks(m)], token, Verdict(None, ""))

    def needs_blocking(self, token: str) -> bool:
        """Whether a member that may block (a JWT verifier) has a say on ``token``.

        Args:
            token: The presented token.

        Returns:
            True when :meth:`blocking` may still name an identity.
        """
        return any(_applies(m, token) for m in self.members if _blocks(m))

    def blocking(self, token: str, so_far: Verdict) -> Verdict:
        """Ask the members that may block (a JWKS fetch), in order; run it in a thread.

        Args:
            token: The presented token.
            so_far: What :meth:`quick` answered.

        Returns:
            The first identity found, or the last reason for refusing.
        """
        return self._ask([m for m in self.members if _blocks(m)], token, so_far)

    @staticmethod
    def _ask(members: list[Authenticator], token: str, so_far: Verdict) -> Verdict:
        reason = so_far.reason or "unknown token"
        for member in members:
            if not _applies(member, token):
                continue
            verdict = member.authenticate(token)
            if verdict.identity is not None:
                return verdict
            reason = verdict.reason
        return Verdict(None, reason)


def _blocks(member: Authenticator) -> bool:
    return bool(getattr(member, "blocks", True))


def _applies(member: Authenticator, token: str) -> bool:
    return not isinstance(member, JWTVerifier) or jwt_shaped(token)
