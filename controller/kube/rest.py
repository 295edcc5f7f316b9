"""`Kube` over HTTP: Kubernetes' REST API on one `Connection`, plain JSON dicts in and out,
every failure translated once into the error tree of `controller.kube.api`.

Custom resources, Leases, Events and TokenReviews share one code path; nothing passes through
typed models (which validate what they receive, and lose fields they do not know). Every call
carries `request_timeout`: a hung API server must never hang a caller.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from urllib3 import BaseHTTPResponse
from urllib3.exceptions import HTTPError, ProtocolError

from controller.kube.answers import MAX_ANSWER, READ, read_answer, refused, too_late, unanswered
from controller.kube.api import (
    ApiResource,
    Keep,
    KindNotServedError,
    KubeError,
    NotFoundError,
    Page,
    WatchEvent,
    error_for,
)
from controller.kube.connection import Connection, ConnectionSetupError
from controller.kube.deadlines import within
from controller.kube.listing import decode_event, decode_page
from controller.kube.reads import Reads

__all__ = ["RequestTimeout", "RestKube"]

RequestTimeout = float | tuple[float, float]
T = TypeVar("T")


class RestKube:
    """`controller.kube.api.Kube` over a `Connection` (which the caller owns and closes)."""

    def __init__(self, connection: Connection, *, request_timeout: RequestTimeout = 10.0) -> None:
        self._api = connection
        self._timeout = request_timeout
        # A call, its answer read whole, is bounded as client-go's Timeout bounds a request:
        # not each socket read (which a server trickling a byte at a time would renew).
        self._whole_call = (
            sum(request_timeout) if isinstance(request_timeout, tuple) else request_timeout
        )
        self._discovered: dict[tuple[str, str], ApiResource] = {}

    def discover(self, api_version: str, kind: str) -> ApiResource:
        """From the group version's resource list (`/apis/<group>/<version>`, `/api/v1`); a
        kind found is remembered, one not found is asked again next time (its CRD may come)."""
        known = self._discovered.get((api_version, kind))
        if known is not None:
            return known
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{api_version}" if group else f"/api/{api_version}"
        not_served = f"{api_version} {kind} is not served"
        try:
            listed = self._call("GET", path, what=f"discover {api_version}")
        except NotFoundError as error:  # the whole group version is unknown
            raise KindNotServedError(not_served, status=404) from error
        for entry in listed.get("resources") or []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if entry.get("kind") == kind and isinstance(name, str) and "/" not in name:
                found = ApiResource(group, version, name, kind, bool(entry.get("namespaced")))
                self._discovered[(api_version, kind)] = found
                return found
        raise KindNotServedError(not_served, status=404)

    def get(self, resource: ApiResource, namespace: str, name: str) -> dict[str, Any]:
        what = f"get {resource.kind} {namespace}/{name}"
        return self._call("GET", resource.path(namespace, name), what=what)

    def list(
        self,
        resource: ApiResource,
        namespace: str,
        *,
        keep: Keep[T],
        field_selector: str = "",
        label_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        reads: Reads = "object",
    ) -> Page[T]:
        query = [("fieldSelector", field_selector)] if field_selector else []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if limit:
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        what = f"list {resource.kind} in {namespace or 'every namespace'}"
        answer = self._answer("GET", resource.path(namespace), query=query, what=what)
        return decode_page(answer, keep, what, reads)

    def watch(
        self,
        resource: ApiResource,
        namespace: str,
        *,
        resource_version: str,
        timeout_seconds: int,
        field_selector: str = "",
        label_selector: str = "",
        reads: Reads = "object",
    ) -> _Watch:
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if label_selector:
            query.append(("labelSelector", label_selector))
        connect = self._timeout[0] if isinstance(self._timeout, tuple) else self._timeout
        # The read timeout outlasts the server's own timeout, so a quiet watch ends cleanly;
        # only a dead connection hits it.
        timeout = (connect, timeout_seconds + max(connect, 5.0))
        what = f"watch {resource.kind} in {namespace or 'every namespace'}"
        path = resource.path(namespace)
        return _Watch(lambda: self._open(path, query, timeout, what), what, reads)

    def create(
        self, resource: ApiResource, namespace: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        what = f"create {resource.kind} in {namespace}"
        return self._call("POST", resource.path(namespace), body=body, what=what)

    def replace(
        self, resource: ApiResource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        what = f"replace {resource.kind} {namespace}/{name}"
        return self._call("PUT", resource.path(namespace, name), body=body, what=what)

    def replace_status(
        self, resource: ApiResource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        what = f"replace status of {resource.kind} {namespace}/{name}"
        path = resource.path(namespace, name, "status")
        return self._call("PUT", path, body=body, what=what)

    def patch(
        self,
        resource: ApiResource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        merge: bool = False,
    ) -> dict[str, Any]:
        what = f"patch {resource.kind} {namespace}/{name}"
        kind = "merge-patch" if merge else "strategic-merge-patch"
        return self._call(
            "PATCH",
            resource.path(namespace, name),
            body=patch,
            what=what,
            content_type=f"application/{kind}+json",
        )

    def patch_status(
        self, resource: ApiResource, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        what = f"patch status of {resource.kind} {namespace}/{name}"
        return self._call(
            "PATCH",
            resource.path(namespace, name, "status"),
            body=patch,
            what=what,
            content_type="application/merge-patch+json",
        )

    def server_date(self) -> datetime | None:
        """The API server's clock: the `Date` of its answer to `GET /version` (the cheapest
        one), read within the call's bounds like any answer; None when it sends none."""
        dates: builtins.list[str] = []
        self._answer("GET", "/version", what="GET /version", date=dates.append)
        try:
            date = parsedate_to_datetime(dates[0]) if dates else None
        except (TypeError, ValueError):
            return None
        if date is None:
            return None
        return date if date.tzinfo is not None else date.replace(tzinfo=UTC)

    def review_token(self, token: str, audiences: builtins.list[str]) -> dict[str, Any]:
        spec: dict[str, Any] = {"token": token}
        if audiences:
            spec["audiences"] = list(audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        path = "/apis/authentication.k8s.io/v1/tokenreviews"
        # The server's message may echo the review, token included: keep the status line only.
        review = self._call("POST", path, body=body, what="TokenReview", quote_server=False)
        status = review.get("status")
        return status if isinstance(status, dict) else {}

    # --- inside

    def _call(self, method: str, path: str, *, what: str, **request: Any) -> dict[str, Any]:
        """The JSON object a 2xx answer holds (`request`: as `_answer` takes it)."""
        answer = self._answer(method, path, what=what, **request)
        try:
            data = json.loads(answer)
        except ValueError as error:
            raise KubeError(f"{what}: the API server answered something not JSON") from error
        if not isinstance(data, dict):
            raise KubeError(f"{what}: the API server answered {type(data).__name__}, not an object")
        return data

    def _answer(
        self,
        method: str,
        path: str,
        *,
        what: str,
        body: Mapping[str, Any] | None = None,
        query: builtins.list[tuple[str, str]] | None = None,
        quote_server: bool = True,
        content_type: str = "application/json",
        date: Callable[[str], None] | None = None,
    ) -> bytes:
        """The body of a 2xx answer, read whole within the call's bounds; else the error.
        `date` hears the answer's `Date` header, if it has one."""
        payload = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        with within(self._whole_call) as deadline:
            try:
                response = self._api.request(
                    method, path, query=query or [], body=payload, content_type=content_type,
                    timeout=self._timeout, stream=True,
                )  # fmt: skip
                answer = read_answer(response, what, deadline=deadline.at)
            except ConnectionSetupError as error:  # the credential plugin's, not the server's
                raise error_for(f"{what}: {error}", status=None) from error
            except (HTTPError, OSError) as error:
                raise too_late(what) if deadline.fired else unanswered(error, what) from error
        if not 200 <= response.status <= 299:
            raise refused(response, answer, what, quote_server=quote_server, connection=self._api)
        if date is not None and (told := response.headers.get("Date")):
            date(told)
        return answer

    def _open(
        self,
        path: str,
        query: builtins.list[tuple[str, str]],
        timeout: tuple[float, float],
        what: str,
    ) -> BaseHTTPResponse:
        """The unread response of a watch request (2xx), to read line by line. Its beginning
        (the headers, or a refusal whole) comes within the request timeout, as any call's; the
        stream after it is bounded by the server's `timeoutSeconds`."""
        with within(self._whole_call) as deadline:
            try:
                response = self._api.request("GET", path, query=query, timeout=timeout, stream=True)
                if deadline.fired:  # headers the deadline cut short, taken as ended
                    response.close()
                    raise too_late(what)
                if 200 <= response.status <= 299:
                    return response
                # the server's Status says why (an RBAC 403 names the verb and resource)
                answer = read_answer(response, what, deadline=deadline.at)
            except ConnectionSetupError as error:
                raise error_for(f"{what}: {error}", status=None) from error
            except (HTTPError, OSError) as error:
                raise too_late(what) if deadline.fired else unanswered(error, what) from error
        raise refused(response, answer, what, connection=self._api)


class _Watch:
    """One watch request, read line by line; `close()` from another thread shuts the
    connection down, so a quiet watch ends at once."""

    def __init__(self, open_response: Callable[[], Any], what: str, reads: Reads) -> None:
        self._open = open_response
        self._what, self._reads = what, reads
        self._closed = threading.Event()
        self._response: Any = None

    def __iter__(self) -> Iterator[WatchEvent]:
        response = self._response = self._open()
        if self._closed.is_set():
            self._shut()
        try:
            for line in _lines(response, self._what):
                if self._closed.is_set():
                    return
                event = _event_from(line, self._what, self._reads)
                if event is not None:
                    yield event
        except KubeError:
            if not self._closed.is_set():
                raise
        finally:
            self._response = None
            response.close()
            response.release_conn()

    def close(self) -> None:
        self._closed.set()
        self._shut()

    def _shut(self) -> None:
        response = self._response
        if response is not None:
            # ValueError: the response was released in between (the stream already ended).
            with contextlib.suppress(OSError, ValueError):
                response.shutdown()


def _lines(response: Any, what: str) -> Iterator[bytes]:
    """The stream's lines, each within `MAX_ANSWER` bytes (a line that never ends must not
    fill the pod), each byte scanned for a line break once. A connection cut mid-stream ends
    the watch as the server's own end would (client-go's decoder takes an unexpected EOF so):
    the caller resumes from the last resourceVersion, and a server really gone fails that
    request."""
    buffer = bytearray()
    try:
        while chunk := response.read1(READ, decode_content=False):
            buffer += chunk
            if b"\n" in chunk:  # only the new bytes can end a line
                *complete, rest = buffer.split(b"\n")
                yield from (bytes(line) for line in complete if line.strip())
                buffer = bytearray(rest)
            if len(buffer) > MAX_ANSWER:
                raise KubeError(f"{what}: a watch line over {MAX_ANSWER >> 20} MiB")
    except ProtocolError:
        return
    except (HTTPError, OSError) as error:
        raise unanswered(error, what) from error
    if buffer.strip():
        yield bytes(buffer)


def _event_from(line: bytes, what: str, reads: Reads = "object") -> WatchEvent | None:
    """One watch line as a WatchEvent (its object decoded as much as `reads` says); an ERROR
    line (410 Gone, say) as the error it names."""
    try:
        kind, obj = decode_event(line, reads)
    except ValueError as error:
        raise KubeError(f"{what}: a watch line that is not JSON") from error
    if not isinstance(obj, dict):
        return None
    if kind == "ERROR":
        code = obj.get("code")
        status = code if isinstance(code, int) else None
        raise error_for(f"{what}: {status} {obj.get('reason') or ''}".rstrip(), status=status)
    if kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") and not isinstance(
        obj.get("metadata"), dict
    ):  # what every caller reads first: refused here in one line, not as a traceback there
        raise KubeError(f"{what}: a watch event whose object has no metadata object")
    if kind == "BOOKMARK":
        return WatchEvent("BOOKMARK", {"metadata": obj.get("metadata") or {}})
    if kind in ("ADDED", "MODIFIED", "DELETED"):
        return WatchEvent(kind, obj)
    return None
