"""The report API's front door: the shipped server against the alternatives, by measurement.

Three servers answer the same report (token check, JSON, the core's parse, grant, the real
core's judgement behind a lock, as `tests/report_api/conftest.CoreSink` does it), each in a
process of its own so that its memory is its own:

- `stdlib`: the shipped `ReportServer` (http.server, the framing checks of
  `controller.report_api.framing`, backlog 1,024, a pool of 32 workers);
- `stdlib-before`: today's handler (framing checks included) served as before, on
  `ThreadingHTTPServer` (backlog 5, a thread per connection), to show what the pool changes;
- `uvicorn`: uvicorn 0.54 (h11) and Starlette, the same work in an `async` route, the core's
  judgement in a thread pool of 32 (`anyio.to_thread`).

For each it prints: the RSS after start and its peak; p50/p99 of a report round trip (one
keep-alive connection, sequential); bursts of C clients at once, each on a new connection with
one report, within 30 s: how many were answered and the p99 of their answers; K idle
keep-alive connections held (each sent one report, then stayed open): how many the server still
held 2 s later and how long a new reporter waited meanwhile; and the status each answers to
the three framing attacks of issue 9.

    .venv/bin/python tests/bench/front_door.py [--reports 2000] [--bursts 100,1000] [--held 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TOKEN = "op-tok-7f3a9c1e5b"  # tests.report_api.conftest.TOKENS["operator"]
BODY = b'{"reason": "UpdateSuccessful", "message": "deployed", "observedGeneration": 3}'
REQUEST = (
    b"POST /v1/reports HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
    b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
    b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
)
ATTACKS = {
    "two Content-Lengths (46, 0)": REQUEST.replace(
        b"\r\n\r\n", b"\r\nContent-Length: 0\r\n\r\n", 1
    ),
    "Content-Length 0xB2": REQUEST.replace(
        b"Content-Length: " + str(len(BODY)).encode(), b"Content-Length: \xb2"
    ),
    "bare CR in a header": REQUEST.replace(b"Host: bench", b"Host: bench\rX-Smuggled: 1"),
}
VARIANTS = ("stdlib", "stdlib-before", "uvicorn")
# A client that got no answer: refused, reset, timed out, or cut off mid-answer.
FAILED = (TimeoutError, OSError, ValueError, IndexError, asyncio.IncompleteReadError)


# --- the servers, each run as `front_door.py --serve VARIANT` in its own process -----------


def _parts() -> tuple[Any, Any, Any, Any]:
    import yaml

    from controller.report_api.auth import Authorizer, StaticTokenAuthenticator
    from statemachines.config import Config
    from tests.clock import FakeClock
    from tests.report_api.conftest import GRANTS, OPERATOR_SA, CoreSink

    config = Config.create()
    return (
        CoreSink(config, FakeClock()),
        StaticTokenAuthenticator({TOKEN: OPERATOR_SA}),
        Authorizer.from_mapping(yaml.safe_load(GRANTS)),
        config,
    )


def serve_stdlib(port: int, *, before: bool) -> None:
    from prometheus_client import CollectorRegistry

    from controller.report_api import server as reports

    sink, authenticator, authorizer, config = _parts()
    options: dict[str, Any] = {"authenticator": authenticator, "authorizer": authorizer}
    options |= {"config": config, "host": "127.0.0.1", "port": port}
    server = reports.ReportServer(
        sink, metrics=reports.ReportMetrics(CollectorRegistry()), **options
    )
    if before:
        _serve_as_before(server)
    else:
        server.start()
    print("ready", flush=True)
    time.sleep(3600)


def _serve_as_before(shipped: Any) -> None:
    """The same handler on the standard library's thread per connection, backlog 5."""
    import contextlib
    import threading
    from http.server import ThreadingHTTPServer

    from controller.report_api.handler import ReportHandler

    class Before(ThreadingHTTPServer):
        daemon_threads = True
        service = shipped._service

        def crowded(self) -> bool:
            return False

        def reclaimable(self, connection: Any) -> Any:
            return contextlib.nullcontext()

    httpd = Before(shipped._address, ReportHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()


def serve_uvicorn(port: int) -> None:
    import json
    from functools import partial

    import anyio
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from controller.report_api.auth import AuthenticationError
    from statemachines.errors import ReportError
    from statemachines.reports import parse_report

    sink, authenticator, authorizer, config = _parts()
    limiter = anyio.CapacityLimiter(32)

    def error(code: int, message: str, field: str | None = None) -> Response:
        body = {"error": {"code": code, "reason": "", "field": field, "message": message}}
        return Response(json.dumps(body), code, media_type="application/json")

    async def reports(request: Request) -> Response:
        _, _, token = (request.headers.get("authorization") or "").partition(" ")
        try:
            identity = await anyio.to_thread.run_sync(authenticator.authenticate, token)
        except AuthenticationError as failure:
            return error(401, str(failure))
        if request.headers.get("content-type", "").split(";")[0] != "application/json":
            return error(415, "not application/json")
        if int(request.headers.get("content-length", "0")) > 65536:
            return error(413, "too large")
        try:
            report = parse_report(json.loads(await request.body()), config)
        except ValueError as failure:
            return error(400, str(failure))
        except ReportError as failure:
            return error(422, failure.problem, failure.field)
        authorizer.authorize(identity, report)
        submit = partial(sink.submit, report, timeout=3.0)
        verdict = await anyio.to_thread.run_sync(submit, limiter=limiter)
        return Response(json.dumps(verdict.to_api(config.profile)), media_type="application/json")

    app = Starlette(routes=[Route("/v1/reports", reports, methods=["POST"])])
    settings = uvicorn.Config(
        app, host="127.0.0.1", port=port, http="h11", loop="asyncio", lifespan="off",
        log_level="error", access_log=False, backlog=1024, timeout_keep_alive=10,
    )  # fmt: skip
    server = uvicorn.Server(settings)
    print("ready", flush=True)
    server.run()


# --- the measurements, from this process -------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_kib(pid: int) -> dict[str, int]:
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM", "Threads"):
            found[name] = int(value.split()[0])
    return found


def round_trips(port: int, count: int) -> list[float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    took = []
    for _ in range(count):
        started = time.perf_counter()
        connection.request("POST", "/v1/reports", body=BODY, headers=headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
        took.append(time.perf_counter() - started)
    connection.close()
    return took


async def _one(port: int, raw: bytes, *, keep: list[Any] | None = None) -> tuple[int, float]:
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    took = time.perf_counter() - started
    if keep is None:
        writer.close()
    else:
        keep.append((reader, writer))
    return status, took


async def _burst(port: int, clients: int) -> list[float | None]:
    async def timed() -> float | None:
        try:
            status, took = await asyncio.wait_for(_one(port, REQUEST), 30)
        except FAILED:
            return None
        return took if status == 200 else None

    return await asyncio.gather(*(timed() for _ in range(clients)))


async def _held(port: int, count: int) -> tuple[int, float | None]:
    kept: list[Any] = []

    async def open_one() -> None:
        with contextlib.suppress(*FAILED):
            await asyncio.wait_for(_one(port, REQUEST, keep=kept), 30)

    await asyncio.gather(*(open_one() for _ in range(count)))
    await asyncio.sleep(2.0)
    newcomer = await _burst(port, 1)
    held = sum(1 for reader, _ in kept if not reader.at_eof())  # the server's FIN seen
    for _, writer in kept:
        writer.close()
    return held, newcomer[0]


def attack(port: int, raw: bytes) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(raw)
        try:
            answer = sock.recv(64)
        except OSError:
            return "-1"  # no answer
    return answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/") else "-1"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def measure(variant: str, args: argparse.Namespace) -> None:
    port = free_port()
    command = [sys.executable, __file__, "--serve", variant, "--port", str(port)]
    quiet = subprocess.DEVNULL  # the servers' own complaints (broken pipes) are not figures
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=quiet, text=True, cwd=ROOT)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        at_start = rss_kib(server.pid)
        round_trips(port, 50)  # warm up
        took = round_trips(port, args.reports)
        print(f"\n{variant}")
        print(f"  {variant} rss at start MiB: {at_start['VmRSS'] / 1024:.1f}")
        print(f"  {variant} round trip p50 p99 ms: {pct(took, 0.5):.2f} {pct(took, 0.99):.2f}")
        for clients in args.bursts:
            answered = [t for t in asyncio.run(_burst(port, clients)) if t is not None]
            p99 = pct(answered, 0.99) if answered else -1
            print(f"  {variant} burst of {clients}, answered and p99 ms: {len(answered)} {p99:.0f}")
        held, newcomer = asyncio.run(_held(port, args.held))
        waited = newcomer * 1000 if newcomer is not None else -1
        print(f"  {variant} {args.held} idle keep-alive, still open 2 s later: {held}")
        print(f"  {variant} a new report meanwhile, ms: {waited:.0f}")
        for name, raw in ATTACKS.items() if variant != "stdlib-before" else ():
            print(f"  {variant} {name}, answer: {attack(port, raw)}")
        after = rss_kib(server.pid)
        print(f"  {variant} rss peak MiB, threads at the end: {after['VmHWM'] / 1024:.1f} "
              f"{after['Threads']}")  # fmt: skip
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=2000)
    parser.add_argument("--bursts", default="100,1000")
    parser.add_argument("--held", type=int, default=1000)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--serve", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "uvicorn":
        serve_uvicorn(args.port)
    elif args.serve:
        serve_stdlib(args.port, before=args.serve == "stdlib-before")
    else:
        args.bursts = [int(size) for size in args.bursts.split(",")]
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
        for variant in args.variants.split(","):
            measure(variant, args)


if __name__ == "__main__":
    main()
