"""Who is calling the report API, and what they may report.

Authentication turns a bearer token into an `Identity`: by a Kubernetes TokenReview against the
spoke's API server in a cluster, by a fixed table in tests, or not at all in the explicit
insecure mode (which the server only allows on loopback). Authorization maps identities to the
actors of the vocabulary: the endpoint operator may send the operator's reasons about any
collector or about all of them; a collector may send only the collectors' reasons, and only about
itself. A token is never logged, never kept in clear (the cache is keyed by its hash) and never
part of an error message.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.kube.api import Kube, KubeError
from statemachines.errors import AddonStatusError, ConfigError
from statemachines.reports import Report
from statemachines.vocabulary import SEED, Actor, Profile
from statemachines.yamlfile import YAMLFileError, load_yaml

__all__ = [
    "AuthUnavailableError",
    "AuthenticationError",
    "Authenticator",
    "AuthorizationError",
    "Authorizer",
    "Identity",
    "InsecureAuthenticator",
    "StaticTokenAuthenticator",
    "TokenReviewAuthenticator",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller. `unrestricted` only for the insecure loopback mode."""

    username: str
    groups: tuple[str, ...] = ()
    unrestricted: bool = False


class AuthenticationError(AddonStatusError):
    """No token, or one that proves nobody (401). `invalid_token`: one was sent but is bad."""

    def __init__(self, message: str, *, invalid_token: bool) -> None:
        super().__init__(message)
        self.invalid_token = invalid_token


class AuthUnavailableError(AddonStatusError):
    """The token could not be checked (API server down, no permission for TokenReview): 503,
    because the caller is not at fault and may retry."""


class AuthorizationError(AddonStatusError):
    """The caller is known but may not send this report (403); `field` names what it may not."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Authenticator(Protocol):
    @property
    def loopback_only(self) -> bool:
        """True when the server must refuse to listen anywhere but on loopback."""
        ...

    def authenticate(self, token: str | None) -> Identity:
        """The caller's identity; raises AuthenticationError or AuthUnavailableError."""
        ...


class InsecureAuthenticator:
    """Everyone is `insecure` and may send anything: for demos on one machine only."""

    loopback_only = True

    def authenticate(self, token: str | None) -> Identity:
        return Identity("insecure", unrestricted=True)


class StaticTokenAuthenticator:
    """A fixed token -> username table, for tests and the demo (never in a cluster)."""

    loopback_only = False

    def __init__(self, table: Mapping[str, str]) -> None:
        self._table = dict(table)

    @classmethod
    def from_file(cls, path: Path) -> StaticTokenAuthenticator:
        """The Kubernetes static token file format: `token,user[,uid[,"group1,group2"]]`."""
        try:
            with path.open(encoding="utf-8", newline="") as stream:
                rows = [row for row in csv.reader(stream) if row and row[0].strip()]
        except OSError as error:
            raise ConfigError(f"{path}: cannot read the token file: {error.strerror}") from error
        table: dict[str, str] = {}
        for number, row in enumerate(rows, start=1):
            if len(row) < 2 or not row[1].strip():
                raise ConfigError(f"{path}: line {number}: expected token,user[,uid[,groups]]")
            table[row[0].strip()] = row[1].strip()
        return cls(table)

    def authenticate(self, token: str | None) -> Identity:
        if token is None:
            raise AuthenticationError("a bearer token is required", invalid_token=False)
        found = None
        for known, username in self._table.items():
            # Compare every entry in constant time: no timing hint about which prefix matched.
            if hmac.compare_digest(known.encode(), token.encode()):
                found = username
        if found is None:
            raise AuthenticationError("the bearer token is not valid", invalid_token=True)
        return Identity(found)


class TokenReviewAuthenticator:
    """Checks a token with a TokenReview against the spoke's API server.

    Positive answers are cached for `cache_ttl` seconds (a collector reports every few minutes,
    and each report would otherwise cost an API call); negative ones are not, so a token that
    just became valid works at once. The cache is keyed by the token's SHA-256.
    """

    loopback_only = False

    def __init__(
        self,
        kube: Kube,
        *,
        audiences: Sequence[str] = (),
        cache_ttl: float = 10.0,
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self._audiences = list(audiences)
        self._ttl = cache_ttl
        self._max = max_entries
        self._clock = clock
        self._cache: OrderedDict[bytes, tuple[float, Identity]] = OrderedDict()
        self._lock = threading.Lock()

    def authenticate(self, token: str | None) -> Identity:
        if token is None:
            raise AuthenticationError("a bearer token is required", invalid_token=False)
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cached(key)
        if cached is not None:
            return cached
        identity = self._review(token)
        with self._lock:
            self._cache[key] = (self._clock() + self._ttl, identity)
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return identity

    def _cached(self, key: bytes) -> Identity | None:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._cache[key]
                return None
            return entry[1]

    def _review(self, token: str) -> Identity:
        try:
            status = self._kube.review_token(token, self._audiences)
        except KubeError as error:
            hint = (
                "; may the controller's service account create tokenreviews.authentication.k8s.io?"
                if error.status is not None
                else ""
            )
            log.error("TokenReview failed%s", hint, extra={"status": error.status})
            raise AuthUnavailableError(f"TokenReview failed: {error.detail}") from error
        return _identity_of(status, self._audiences)


def _identity_of(status: Mapping[str, Any], audiences: Sequence[str]) -> Identity:
    """The reviewed identity, or AuthenticationError when the API server vouches for nobody."""
    user = status.get("user")
    if not status.get("authenticated") or not isinstance(user, Mapping):
        raise AuthenticationError("the bearer token is not valid", invalid_token=True)
    if audiences and not set(status.get("audiences") or ()) & set(audiences):
        raise AuthenticationError(
            "the bearer token is not meant for this audience", invalid_token=True
        )
    return Identity(str(user.get("username") or ""), tuple(user.get("groups") or ()))


Subject = Annotated[str, Field(min_length=1)]


class _Grants(BaseModel):
    """The authorization file as data; unknown keys are errors (a typo must not open access)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    operator: list[Subject] = Field(default_factory=list)
    collectors: dict[str, list[Subject]] = Field(default_factory=dict)


class Authorizer:
    """Which identities speak as the endpoint operator, and which as each collector."""

    def __init__(
        self,
        *,
        operator: Sequence[str],
        collectors: Mapping[str, Sequence[str]],
        profile: Profile = SEED,
    ) -> None:
        self._operator = frozenset(operator)
        self._collectors = {name: frozenset(subjects) for name, subjects in collectors.items()}
        self._profile = profile

    @classmethod
    def from_mapping(
        cls, data: object, *, profile: Profile = SEED, source: str = "authorization"
    ) -> Authorizer:
        """Validated grants; ConfigError names the offending field, e.g. `collectors.x[0]`."""
        if data is not None and not isinstance(data, Mapping):
            raise ConfigError(f"{source}: must be a mapping with `operator` and `collectors`")
        try:
            grants = _Grants.model_validate(data or {})
        except ValidationError as error:
            raise ConfigError(f"{source}: {_first_problem(error)}") from error
        for name in grants.collectors:
            if profile.collector(name) is None:
                known = ", ".join(c.name for c in profile.collectors)
                raise ConfigError(f"{source}: collectors.{name}: unknown collector; known: {known}")
        if not grants.operator and not any(grants.collectors.values()):
            raise ConfigError(f"{source}: grants nobody: name an operator or a collector identity")
        return cls(operator=grants.operator, collectors=grants.collectors, profile=profile)

    @classmethod
    def load(cls, path: Path, *, profile: Profile = SEED) -> Authorizer:
        try:
            data = load_yaml(path.read_bytes())
        except OSError as error:
            raise ConfigError(f"{path}: cannot read: {error.strerror}") from error
        except YAMLFileError as error:
            raise ConfigError(f"{path}: {error}") from None
        return cls.from_mapping(data, profile=profile, source=str(path))

    @classmethod
    def from_flags(
        cls, *, operator: Sequence[str], collectors: Sequence[str], profile: Profile = SEED
    ) -> Authorizer:
        """From `--operator-identity SUBJECT` and `--collector-identity NAME=SUBJECT` flags."""
        grants: dict[str, list[str]] = {}
        for pair in collectors:
            name, sep, subject = pair.partition("=")
            if not sep or not name or not subject:
                raise ConfigError(f"--collector-identity {pair!r}: expected NAME=SUBJECT")
            grants.setdefault(name, []).append(subject)
        data = {"operator": list(operator), "collectors": grants}
        return cls.from_mapping(data, profile=profile, source="flags")

    def authorize(self, identity: Identity, report: Report) -> None:
        """Raises AuthorizationError unless `identity` may send `report`."""
        if identity.unrestricted:
            return
        who, reason = identity.username, report.reason.value
        if self._profile.spec(report.reason).reported_by is Actor.ENDPOINT_OPERATOR:
            if who not in self._operator:
                raise AuthorizationError(
                    "reason", f"{who} may not send {reason}: the operator's reason"
                )
            return
        # A collector's reason: parse_report has made sure the report names the collector.
        if who in self._collectors.get(report.collector or "", frozenset()):
            return
        own = sorted(name for name, subjects in self._collectors.items() if who in subjects)
        if own:
            raise AuthorizationError(
                "collector", f"{who} reports for {', '.join(own)}, not for {report.collector}"
            )
        raise AuthorizationError("reason", f"{who} may not send {reason}: a collector's own reason")


def _first_problem(error: ValidationError) -> str:
    detail = error.errors()[0]
    path = ""
    for part in detail["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    problem = (
        "unknown key; known: operator, collectors"
        if detail["type"] == "extra_forbidden"
        else detail["msg"]
    )
    return f"{path}: {problem}" if path else str(problem)
