"""A served judge's URL as the project stores and shows it, and where it leads.

A URL may carry a secret: `https://user:password@host/v1`, `http://host/v1?key=...`. Every judge id, report, card
and log line that names a URL writes `shown_url(url)`, which keeps the scheme, host, port and path and drops the rest.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit


def shown_url(url: str) -> str:
    """`url` without credentials (`user:pass@`), query string (`?key=...`) or fragment: safe to store and show."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def is_loopback(url: str) -> bool:
    """Whether `url` leads to this machine (localhost, 127.0.0.0/8, ::1): its traffic never crosses a network."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name other than localhost: it may resolve anywhere
        return False


def crosses_the_network_in_clear(url: str) -> bool:
    """Whether requests to `url` travel unencrypted to another machine (plain http, not loopback)."""
    return urlsplit(url).scheme == "http" and not is_loopback(url)
