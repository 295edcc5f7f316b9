"""The API server: its lifecycle (serving on a background thread; stop and start again on
the same port with the data intact, as a test needs to simulate an outage), the controls a
test uses, and the path of every request: authenticate, inject faults, dispatch to the
registry or a watch stream, audit."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from kubesim.access import (
    AuditLog,
    AuditRecord,
    Authenticator,
    UserInfo,
)
from kubesim.admission import Admission, admission_types
from kubesim.builtins import builtin_types
from kubesim.codec import SERVER_CLOCK, Clock, encode_json
from kubesim.controls import StorageControls
from kubesim.definitions import definition_type, store_definitions
from kubesim.discovery import Discovery
from kubesim.errors import (
    APIError,
    internal,
    method_not_allowed,
    not_acceptable,
    unauthorized,
)
from kubesim.faults import Faults
from kubesim.impersonation import impersonate
from kubesim.rbac import RBAC_GROUP, Authorizer, rbac_types
from kubesim.reads import Result, Target
from kubesim.registry import Registry
from kubesim.resources import ResourceType, load_crds
from kubesim.reviews import review_types
from kubesim.routing import RequestInfo, request_info
from kubesim.store import Store
from kubesim.table import table_version, to_table
from kubesim.transport import Handler, HTTPServer, ServingTLS, accepts_json
from kubesim.watch import serve_watch
from kubesim.workloads import workload_types

__all__ = ["DEFAULT_NAMESPACES", "APIServer"]

_log = logging.getLogger(__name__)
DEFAULT_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
_STOP_GRACE: Final = 2.0


class APIServer(StorageControls):
    """A strict Kubernetes API server for tests and the demo: the CRDs from `crd_paths`, the
    built-in types (`builtins`, `workloads`, `rbac`), over real HTTP on `host:port` (HTTPS with
    `tls`), authorizing every request with RBAC when `rbac` is on."""

    def __init__(
        self,
        crd_paths: Sequence[Path],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tokens: Mapping[str, UserInfo] | None = None,
        watch_history: int = 1000,
        namespaces: Sequence[str] = DEFAULT_NAMESPACES,
        bookmark_interval: float = 60.0,
        tls: ServingTLS | None = None,
        rbac: bool = False,
        anonymous: bool = False,
        clock: Clock | None = None,
    ) -> None:
        built_in = [*builtin_types(), *review_types(), *workload_types(), *rbac_types(),
                    definition_type()]  # fmt: skip
        self._types: list[ResourceType] = [*built_in, *admission_types(), *load_crds(crd_paths)]
        self._store = Store(watch_history)
        self._clock = clock or (lambda: datetime.now(UTC))  # what it stamps, Date included
        self._auth = Authenticator(tokens, anonymous=anonymous)
        self._registry = Registry(self._store, self._types, self._auth)
        self._audit = AuditLog()
        # How many audited requests match; by default the successful writes, so that
        # `count_requests(resource="observabilityaddons", subresource="status")` is the number
        # of status writes a controller made.
        self.count_requests = self._audit.count
        self.plural_of = self._registry.plural_of  # the resource serving a kind, as discovery
        self.faults = Faults()
        self._host, self._port = host, port
        self._bookmark_interval = bookmark_interval
        self._tls = tls.context() if tls is not None else None
        # kube-apiserver's --authorization-mode=RBAC; off, every authenticated request is allowed
        self._authorizer = (
            Authorizer(lambda plural, namespace: self._store.items((RBAC_GROUP, plural), namespace))
            if rbac
            else None
        )
        self._registry.admit = Admission(self._store, self._authorizer)
        self._registry.authorizer = self._authorizer
        self._lifecycle = threading.Lock()
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._streams = 0
        self._streams_done = threading.Condition()
        store_definitions(self._store, self._types, self._clock)
        namespaces_target = Target(self._registry.served("", "v1", "namespaces"), "v1")
        for name in namespaces:
            self._registry.create(namespaces_target, {"metadata": {"name": name}}, {})

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._port == 0:
            raise RuntimeError("the port is chosen on start(); start the server first")
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{'https' if self._tls else 'http'}://{host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def start(self) -> APIServer:
        """Listen (on the same port as before after a stop) and serve in the background."""
        with self._lifecycle:
            if self._httpd is not None:
                return self
            httpd = HTTPServer((self._host, self._port), self._serve, self._tls)
            self._port = httpd.server_address[1]
            self._discovery = Discovery(self._types, f"{self._host}:{self._port}")
            thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"apiserver:{self._port}",
                daemon=True,
            )
            self._httpd, self._thread = httpd, thread
            thread.start()
            return self

    def stop(self) -> None:
        """Stop listening: open watches end cleanly, idle connections are cut; data stays."""
        with self._lifecycle:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
            if httpd is None:
                return
            httpd.shutdown()
            self._store.end_watches("stopped")
            with self._streams_done:
                self._streams_done.wait_for(lambda: self._streams == 0, _STOP_GRACE)
            httpd.cut_connections()
            self._store.end_watches("stopped")  # any watch that slipped in meanwhile
            httpd.server_close()
            if thread is not None:
                thread.join(_STOP_GRACE)

    def __enter__(self) -> APIServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    # -- test controls --------------------------------------------------------------------------

    def set_tokens(self, tokens: Mapping[str, UserInfo] | None) -> None:
        self._auth.set_tokens(tokens)

    @property
    def audit(self) -> list[AuditRecord]:
        return self._audit.records()

    def clear_audit(self) -> None:
        self._audit.clear()

    @property
    def open_watches(self) -> int:
        """Watches being served now."""
        return self._store.watch_count

    def drop_watches(self) -> int:
        """Cut every open watch connection abruptly, as a network failure would."""
        return self._store.end_watches("dropped")

    def compact(self) -> None:
        """Forget the watch history: resuming from any earlier resourceVersion gets 410."""
        self._store.compact()

    @property
    def resource_version(self) -> str:
        return str(self._store.resource_version)

    # -- serving --------------------------------------------------------------------------------

    def _serve(self, handler: Handler) -> None:
        if handler.server is not self._httpd:  # a connection that outlived stop()
            handler.close_connection = True
            return
        SERVER_CLOCK.set(self._clock)  # this handler's thread answers on this server's clock
        split = urlsplit(handler.path)
        query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        info = request_info(handler.command, split.path, query)
        try:
            user = self._caller(handler)
            body = handler.read_body()
        except APIError as refused:  # any body left is not read: the connection closes
            handler.close_connection = handler.close_connection or handler.body_pending()
            self._answer(handler, info, refused.code, refused.status(), headers=refused.headers)
            return
        info = replace(info, user=user.username, pod=user.pod)
        denied = self._authorizer.authorize(user, info) if self._authorizer else None
        if denied is not None:
            self._answer(handler, info, denied.code, denied.status())
            return
        wait, fault = self.faults.take(info)
        if wait:
            time.sleep(wait)
        if fault is not None:
            self._answer(handler, info, fault.code, fault.status(), headers=fault.headers)
            return
        try:
            if not accepts_json(handler.headers.get("Accept")):
                raise not_acceptable()
            if not info.is_resource:
                if info.method not in ("GET", "HEAD"):
                    raise method_not_allowed()
                self._answer(handler, info, 200, self._discovery.answer(info.path))
            elif info.verb == "watch":
                self._watch(handler, info, query)
            else:
                result = self._resource(handler, info, query, body, user)
                self._answer(
                    handler,
                    info,
                    result.code,
                    result.body,
                    sort_keys=result.sort_keys,
                    warnings=result.warnings,
                )
        except APIError as error:
            self._answer(handler, info, error.code, error.status(), headers=error.headers)
        except Exception as exc:  # a bug here must still answer like kube-apiserver
            _log.exception("apiserver: %s %s failed", handler.command, handler.path)
            self._answer(handler, info, 500, internal(str(exc)).status())

    def _caller(self, handler: Handler) -> UserInfo:
        """Who the request runs as, from its headers alone (authentication, then
        impersonation): the body is read only for a caller kube-apiserver would serve."""
        headers = handler.headers
        user = self._auth.authenticate(headers.get("Authorization"), handler.client_certificate())
        if user is None:
            raise unauthorized()
        return impersonate(headers, user, self._authorizer.authorize if self._authorizer else None)

    def _resource(
        self,
        handler: Handler,
        info: RequestInfo,
        query: Mapping[str, str],
        body: bytes,
        user: UserInfo,
    ) -> Result:
        registry = self._registry
        target = replace(registry.target(info), user=user)
        kind = target.rt.kind

        def options() -> Any:
            return handler.object_body(body, "DeleteOptions") if body.strip() else None

        verbs: dict[str, Callable[[], Result]] = {
            "get": lambda: registry.get(target),
            "list": lambda: registry.list_objects(target, query),
            "create": lambda: registry.create(target, handler.object_body(body, kind), query),
            "update": lambda: registry.update(target, handler.object_body(body, kind), query),
            "patch": lambda: registry.patch(
                target, body, handler.headers.get("Content-Type", ""), query
            ),
            "delete": lambda: registry.delete(target, options(), query),
            "deletecollection": lambda: registry.delete_collection(target, query),
        }
        result = verbs[info.verb]()
        table = table_version(handler.headers.get("Accept"))
        if table is None or info.verb not in ("get", "list") or result.code != 200:
            return result
        table_body = to_table(result.body, target.rt.columns(info.api_version), table, query)
        return replace(result, body=table_body)

    def _watch(self, handler: Handler, info: RequestInfo, query: Mapping[str, str]) -> None:
        plan = self._registry.open_watch(self._registry.target(info), query)
        handler.start_chunked()
        self._record(info, 200)
        with self._streams_done:
            self._streams += 1
        try:
            how = serve_watch(
                plan,
                self._registry,
                self._store,
                handler.write_chunk,
                bookmark_interval=self._bookmark_interval,
            )
            if how == "dropped":
                handler.cut()
            elif how in ("timeout", "stopped"):
                handler.end_chunked(keep_alive=how == "timeout")
            else:
                handler.close_connection = True
        except OSError:
            handler.close_connection = True
        except Exception:  # the headers are out: a Status can no longer be sent
            _log.exception("apiserver: watch %s failed", handler.path)
            handler.cut()
        finally:
            with self._streams_done:
                self._streams -= 1
                self._streams_done.notify_all()

    def _answer(
        self,
        handler: Handler,
        info: RequestInfo,
        code: int,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        sort_keys: bool = False,
        warnings: Sequence[str] = (),
    ) -> None:
        name = info.name
        if info.verb == "create" and 200 <= code < 300:
            name = (body.get("metadata") or {}).get("name", "")
        self._record(replace(info, name=name), code)
        handler.send_json(
            code, encode_json(body, sort_keys=sort_keys), headers=headers, warnings=warnings
        )

    def _record(self, info: RequestInfo, code: int) -> None:
        self._audit.append(
            AuditRecord(
                user=info.user,
                verb=info.verb,
                api_group=info.api_group,
                resource=info.resource,
                subresource=info.subresource,
                namespace=info.namespace,
                name=info.name or info.selected_name,
                code=code,
                path="" if info.is_resource else info.path,
                pod=info.pod,
            )
        )
