"""Provider endpoints as a user setting: validated base URLs, recorded without credentials.

A base URL must be `https://`, except on a loopback host (a local model server or a test
server on 127.0.0.1), where `http://` is allowed: an API key or a threat model must never cross
a network in clear text. User names, passwords, query strings and fragments are refused, so
no credential can hide in a setting or an audit record.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class EndpointError(ValueError):
    """A base URL that may not be used; the message says why and what to do."""


def is_loopback_host(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A checked base URL (no trailing slash)."""

    url: str

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)


def parse_endpoint(text: str, *, what: str = "the provider address") -> Endpoint:
    """`text` as an `Endpoint`, or `EndpointError` naming the problem."""
    raw = text.strip()
    if not raw:
        raise EndpointError(f"{what} is empty")
    try:
        parts = urlsplit(raw)
        port = parts.port  # raises on a malformed port
    except ValueError:
        raise EndpointError(f"{what} {raw!r} is not a valid URL") from None
    del port
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"{what} must be an https:// URL (http:// only on this machine), "
                            f"got {raw!r}")
    if parts.username is not None or parts.password is not None:
        raise EndpointError(f"{what} may not contain a user name or password; keys belong in "
                            "the keyring")
    if parts.query or parts.fragment:
        raise EndpointError(f"{what} may not contain a query string or fragment")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise EndpointError(
            f"{what} {raw!r} uses http:// to another machine; requests (with your key and your "
            "model) would cross the network unencrypted. Use https://, or http:// only for a "
            "server on this machine (127.0.0.1, localhost)")
    return Endpoint(raw.rstrip("/"))
