"""The string formats a CRD's schema may name (the subset of kube-openapi's strfmt registry a
controller meets), each checked as kube-apiserver checks it."""

from __future__ import annotations

import base64
import ipaddress
import re
import uuid
from collections.abc import Mapping
from datetime import date
from typing import Any, Final

__all__ = ["FORMATS"]

_TIME_OF_DAY = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(\.\d+)?(z|[+-]\d{2}:\d{2})$")
_HOSTNAME = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,62}))*\.?$")


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_date_time(text: str) -> bool:
    """strfmt.IsDateTime: a valid date, `t`, and a time of day with a mandatory zone."""
    parts = text.lower().split("t")
    if len(text) < 4 or len(parts) != 2 or not _is_date(parts[0]):
        return False
    match = _TIME_OF_DAY.match(parts[1])
    if match is None:
        return False
    return match.group(1) <= "23" and match.group(2) <= "59" and match.group(3) <= "59"


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return len(text) == 36


def _is_byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


def _is_ip(version: int) -> Any:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False

    return check


def _is_cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


FORMATS: Final[Mapping[str, Any]] = {
    "date-time": _is_date_time,
    "date": _is_date,
    "uuid": _is_uuid,
    "byte": _is_byte,
    "ipv4": _is_ip(4),
    "ipv6": _is_ip(6),
    "cidr": _is_cidr,
    "hostname": lambda text: len(text) <= 253 and bool(_HOSTNAME.match(text)),
}
