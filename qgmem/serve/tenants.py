"""API keys, each bound to the namespaces it may touch.

A keys file (`--keys FILE`, YAML) lists one entry per key:

    keys:
      - tenant: alice
        key: "a-long-random-secret"          # or sha256: "<hex digest of the key>" to keep the secret out of the file
        namespaces: ["alice", "alice-*"]     # exact names, or a prefix ending in "*"

or the environment holds them: `QGMEM_API_KEYS="KEY=alice,alice-*;KEY2=bob-*"`. A client sends its key
as `Authorization: Bearer KEY` (or `X-API-Key: KEY`). Keys are kept and compared as SHA-256 digests in
constant time. A namespace outside a key's patterns is refused with the same 403 whether it exists or
not, and namespace listings show only the key's own. With no key configured the server is open, so it
binds only to loopback (cli.py) and says so.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from qgmem.config import ConfigError, read_yaml
from qgmem.serve.errors import ServeError, forbidden

ENV_KEYS = "QGMEM_API_KEYS"
NAMESPACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]*")  # no "/", no leading dot: never a path


@dataclass
class ApiKey:
    tenant: str
    digest: str  # sha256 hex of the key
    patterns: list[str] = field(default_factory=list)

    def allows(self, namespace: str) -> bool:
        return any(namespace.startswith(p[:-1]) if p.endswith("*") else namespace == p for p in self.patterns)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _check_patterns(patterns: object, where: str) -> list[str]:
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
        raise ConfigError(f"{where}: field 'namespaces' must be a non-empty list of names or prefixes ending in '*'")
    for p in patterns:
        body = p[:-1] if p.endswith("*") else p
        if "*" in body or (body and not NAMESPACE_RE.fullmatch(body)):
            raise ConfigError(f"{where}: namespace pattern {p!r} is not a name or a prefix ending in '*'")
    return list(patterns)


def load_keys_file(path: str | Path) -> list[ApiKey]:
    data = read_yaml(path)
    entries = data.get("keys")
    if set(data) - {"keys"} or not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: expected one top-level key 'keys' holding a non-empty list")
    out = []
    for i, e in enumerate(entries):
        where = f"{path}: keys[{i}]"
        if not isinstance(e, dict) or set(e) - {"tenant", "key", "sha256", "namespaces"}:
            raise ConfigError(f"{where}: expected a mapping with tenant, key (or sha256) and namespaces")
        if ("key" in e) == ("sha256" in e):
            raise ConfigError(f"{where}: give exactly one of 'key' and 'sha256'")
        if "key" in e and (not isinstance(e["key"], str) or len(e["key"]) < 8):
            raise ConfigError(f"{where}: field 'key' must be a string of at least 8 characters")
        if "sha256" in e and not re.fullmatch(r"[0-9a-f]{64}", str(e["sha256"])):
            raise ConfigError(f"{where}: field 'sha256' must be 64 lower-case hex digits")
        tenant = e.get("tenant")
        if not isinstance(tenant, str) or not tenant:
            raise ConfigError(f"{where}: field 'tenant' must be a non-empty string")
        digest = _digest(e["key"]) if "key" in e else str(e["sha256"])
        out.append(ApiKey(tenant, digest, _check_patterns(e.get("namespaces"), where)))
    _unique(out, str(path))
    return out


def parse_env_keys(text: str, where: str = ENV_KEYS) -> list[ApiKey]:
    """`KEY=pattern,pattern;KEY2=pattern` -> keys (tenants named key1, key2, ...)."""
    out = []
    for i, part in enumerate(p for p in text.split(";") if p.strip()):
        key, sep, pats = part.strip().partition("=")
        if not sep or len(key) < 8:
            raise ConfigError(f"${where}: entry {i + 1} must be KEY=pattern[,pattern] with a key of >= 8 characters")
        out.append(ApiKey(f"key{i + 1}", _digest(key), _check_patterns([p.strip() for p in pats.split(",")],
                                                                        f"${where}: entry {i + 1}")))
    _unique(out, f"${where}")
    return out


def _unique(keys: list[ApiKey], where: str) -> None:
    if len({k.digest for k in keys}) != len(keys):
        raise ConfigError(f"{where}: the same key is listed twice")


class Tenants:
    """Who a request is, and which namespaces it may touch. `keys=[]`: open (loopback-only) server."""

    def __init__(self, keys: list[ApiKey]):
        self.keys = list(keys)

    @classmethod
    def load(cls, keys_file: str | None) -> Tenants:
        if keys_file:
            return cls(load_keys_file(keys_file))
        env = os.environ.get(ENV_KEYS, "")
        return cls(parse_env_keys(env) if env.strip() else [])

    @property
    def open(self) -> bool:
        return not self.keys

    def identify(self, presented: str | None) -> ApiKey | None:
        """The key presented (None on an open server); 401 when it is missing or unknown."""
        if self.open:
            return None
        if not presented:
            raise ServeError(401, "an API key is required: send 'Authorization: Bearer KEY'", "Authorization")
        got = _digest(presented)
        found = None
        for k in self.keys:  # every digest compared, in constant time, whatever matches
            if hmac.compare_digest(k.digest, got):
                found = k
        if found is None:
            raise ServeError(401, "unknown API key", "Authorization")
        return found

    @staticmethod
    def check(who: ApiKey | None, namespace: str) -> None:
        """403 unless `who` may use `namespace`; the same answer whether the namespace exists or not."""
        if who is not None and not who.allows(namespace):
            raise forbidden()

    @staticmethod
    def visible(who: ApiKey | None, namespaces: list[str]) -> list[str]:
        return list(namespaces) if who is None else [ns for ns in namespaces if who.allows(ns)]


def presented_key(headers: object) -> str | None:
    """The key in `Authorization: Bearer KEY` or `X-API-Key` of a header mapping (None when absent)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    auth = get("authorization") or get("Authorization") or ""
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return (get("x-api-key") or get("X-API-Key") or "").strip() or None
