"""``make run``: Coxswain standalone on the manifests of examples/, with a sample backend.

1. Every port the demo needs on 127.0.0.1 is checked before anything starts: the sample
   backend (9080), the Ingress ports (8080, 8443), the Gateway's internal ports (the compiler
   assigns them, docs/architecture.md: 30000 and 30001) and the admin port (9901). A port in
   use (often an earlier demo still running) is named on standard error, and the demo exits 1.
2. A sample backend listens on 127.0.0.1:9080, where the EndpointSlices of
   examples/services.yaml point. It answers every request with what it received, as JSON, with
   a header ``X-Coxswain-Demo-Run`` carrying a token drawn for this run of the demo.
3. ``coxswain serve`` serves examples/ on 127.0.0.1: the Ingress ports, the Gateway's listeners
   on their internal ports, the admin port. Edit a file in examples/ and routing follows within
   a second. The TLS Secret ``demo/demo-tls`` that examples/ingress.yaml and
   examples/gateway.yaml refer to is committed (examples/demo-tls.yaml, issued by the CA of
   examples/demo-ca.crt): its key is public, for this demo only. ``--new-certificates`` issues
   both again.
4. Once ready, the demo sends one request of each kind and prints the ``curl`` lines to try. An
   answer counts only with the expected status and, when the backend gave it, this run's token:
   an answer from anything else is a failure. Then it serves until stopped. ``--check`` stops
   after the requests instead: exit 1 if a request failed or ``coxswain serve`` is no longer
   running (the test suite runs it so).

The demo owns ``coxswain serve``, a child in its process group. Ctrl-C, SIGTERM and SIGHUP stop
the demo, which stops the child (SIGTERM: it drains) before exiting; SIGTERM to ``make run``
does the same, as make passes it on to the demo. A demo that is killed outright (SIGKILL)
cannot clean up, so the child watches its parent: its standard input is a pipe whose other end
only the demo holds, and when the demo exits, however it exits, the kernel closes that end and
the child sends itself SIGTERM (the proxy's workers watch their supervisor the same way,
coxswain/shell/proxy.py). A pipe rather than prctl(PR_SET_PDEATHSIG): it works on every
POSIX system, needs no ``preexec_fn`` (unsafe in a process that runs threads, as the demo does),
and a parent that dies before the child is set up is still seen (the end of file waits).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import http.client
import http.server
import json
import os
import re
import secrets
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import email.message
    from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SECRET_FILE = EXAMPLES / "demo-tls.yaml"
CA_FILE = EXAMPLES / "demo-ca.crt"
BIND = "127.0.0.1"
BACKEND_PORT = 9080
HTTP_PORT, HTTPS_PORT, ADMIN_PORT = 8080, 8443, 9901
INGRESS_HOST = "demo.example.com"
GATEWAY = "demo/web"  # examples/gateway.yaml, listeners "http" and "https"
GATEWAY_HOST = "shop.gateway.example.com"
RUN_HEADER = "X-Coxswain-Demo-Run"
MAX_BODY = 1 << 20  # the sample backend's largest request body
DRAIN_TIMEOUT = 10  # `coxswain serve`'s default --drain-timeout
READY_TIMEOUT = 30.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
CHILD = "--serve-child"  # how the demo runs `coxswain serve`: serve_child()
CA_VALIDITY = datetime.timedelta(days=20 * 365)
CERT_VALIDITY = datetime.timedelta(days=10 * 365)

SECRET_HEADER = """\
# PUBLIC: the TLS certificate and private key of `make run` (examples/demo.py), for the demo
# only and never for real use: everyone with this repository has this key. For
# demo.example.com and *.gateway.example.com, issued by the CA of demo-ca.crt, valid until
# {expires}. `python examples/demo.py --new-certificates` issues both files again.
"""

CA_HEADER = """\
# PUBLIC: the CA that issued the demo's certificate (examples/demo-tls.yaml, whose private key
# everyone has). Trust it for the demo's curl lines (--cacert) only, never in a trust store.
# Its own key was discarded when it was made; valid until {expires}.
# `python examples/demo.py --new-certificates` issues both files again.
"""

SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: demo-tls
  namespace: demo
type: kubernetes.io/tls
data:
  tls.crt: {cert}
  tls.key: {key}
"""


# --- the demo's certificates ---------------------------------------------------------------------


def write_certificates(now: datetime.datetime) -> None:
    """A new demo CA (CA_FILE, without its key: nothing else can be issued) and the Secret
    ``demo/demo-tls`` it issued (SECRET_FILE), for ``demo.example.com`` and
    ``*.gateway.example.com``, valid for years."""
    from coxswain.shell.discovery.ca import create_ca

    ca = create_ca(trust_domain="demo.coxswain.local", now=now, validity=CA_VALIDITY)
    hosts = [INGRESS_HOST, "*.gateway.example.com"]
    issued = ca.issue_server(hosts=hosts, now=now, validity=CERT_VALIDITY)
    secret = SECRET.format(
        cert=base64.b64encode(issued.cert_pem).decode(),
        key=base64.b64encode(issued.key_pem).decode(),
    )
    SECRET_FILE.write_text(SECRET_HEADER.format(expires=(now + CERT_VALIDITY).date()) + secret)
    CA_FILE.write_text(CA_HEADER.format(expires=(now + CA_VALIDITY).date()) + ca.cert_pem.decode())


# --- the sample backend -------------------------------------------------------------------------


class Backend(http.server.ThreadingHTTPServer):
    """The sample backend; ``token`` marks every answer as this run's."""

    def __init__(self, address: tuple[str, int], token: str) -> None:
        super().__init__(address, Echo)
        self.token = token


class Echo(http.server.BaseHTTPRequestHandler):
    """Answers every request with what it received, as JSON.

    The proxy keeps its connections to the backend alive, so a response must leave in one
    write with TCP_NODELAY: written in two, Nagle's algorithm holds the second until the first
    is acknowledged, which the client delays (about 40 ms on Linux) on every request after a
    connection's first.
    """

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # socketserver sets TCP_NODELAY on each connection
    server: Backend

    def _echo(self) -> None:
        if "Transfer-Encoding" in self.headers:
            self.send_error(411, "the sample backend reads bodies with a Content-Length only")
            return
        length = self.headers.get("Content-Length", "0")
        if not re.fullmatch(r"[0-9]{1,8}", length) or int(length) > MAX_BODY:
            self.send_error(413, f"the sample backend reads bodies of up to {MAX_BODY} bytes")
            return
        body = json.dumps(
            {
                "method": self.command,
                "path": self.path,
                "headers": dict(self.headers.items()),
                "body": self.rfile.read(int(length)).decode(errors="replace"),
            },
            indent=2,
        ).encode()
        fields = {
            "Date": self.date_time_string(),
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            RUN_HEADER: self.server.token,
        }
        head = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
        self.wfile.write(f"{self.protocol_version} 200 OK\r\n{head}\r\n".encode() + body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _echo

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the proxy logs
        pass


# --- ports ----------------------------------------------------------------------------------------


class ExamplesError(Exception):
    """The manifests cannot be read, or lack what the demo sends requests to."""


@dataclass(frozen=True, slots=True)
class Ports:
    """The internal ports of Gateway demo/web's listeners http and https."""

    gateway_http: int
    gateway_https: int

    def roles(self) -> dict[int, str]:
        """Every port the demo listens on, with what it is for."""
        return {
            BACKEND_PORT: "the sample backend",
            HTTP_PORT: "Ingress HTTP",
            HTTPS_PORT: "Ingress HTTPS",
            self.gateway_http: f"Gateway {GATEWAY}, listener http",
            self.gateway_https: f"Gateway {GATEWAY}, listener https",
            ADMIN_PORT: "admin",
        }


def demo_ports(manifests: Path) -> Ports:
    """The Gateway's internal ports: the compiler assigns them (docs/architecture.md, "Internal
    ports"), so it is asked. Its findings go to standard error, as ``coxswain compile`` prints
    them.

    Raises:
        ExamplesError: the manifests do not parse, or Gateway demo/web lacks its listeners.
    """
    from coxswain.compile import CompileConfig, SharedPool, build_state, compile
    from coxswain.shell.sources import LoadError, located, read_manifests

    try:
        bodies = read_manifests([str(manifests)])
    except LoadError as err:
        raise ExamplesError(str(err)) from err
    result = compile(build_state(b.body for b in bodies), SharedPool(), CompileConfig())
    for line in located(result.diagnostics, bodies):
        print(line, file=sys.stderr)
    listeners = {
        health.listener: health.target_port
        for health in result.snapshot.listener_health
        if health.gateway == GATEWAY
    }
    if not {"http", "https"} <= listeners.keys():
        raise ExamplesError(f"{manifests}: Gateway {GATEWAY} has no listeners http and https")
    return Ports(gateway_http=listeners["http"], gateway_https=listeners["https"])


def ports_in_use(roles: dict[int, str]) -> list[str]:
    """The ports of ``roles`` that cannot be bound on BIND, each with what it is for and why.
    SO_REUSEADDR, as the proxy and the backend bind: the TIME_WAIT of connections an earlier
    run closed is no obstacle, a listener is."""
    busy = []
    for port, role in roles.items():
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((BIND, port))
            except OSError as err:
                busy.append(f"  {BIND}:{port} ({role}): {err.strerror}")
    return busy


# --- coxswain serve ---------------------------------------------------------------------------


def start_serve(manifests: Path) -> subprocess.Popen[bytes]:
    """``coxswain serve`` on ``manifests``, as the child :func:`serve_child` describes."""
    arguments = [
        "--manifests", shown(manifests), "--bind", BIND,
        "--ingress-http-port", str(HTTP_PORT), "--ingress-https-port", str(HTTPS_PORT),
        "--admin-port", str(ADMIN_PORT), "--drain-timeout", str(DRAIN_TIMEOUT),
    ]  # fmt: skip
    print("$", shlex.join(["coxswain", "serve", *arguments]))
    return subprocess.Popen(
        [sys.executable, __file__, CHILD, *arguments],
        stdin=subprocess.PIPE,  # never written: its end of file is the demo's end
        env={**os.environ, "COXSWAIN_LOG_FORMAT": "text"},
    )


def serve_child(arguments: list[str]) -> int:
    """The demo's child: ``coxswain serve ARGUMENTS`` that sends itself SIGTERM (it drains)
    when its standard input reaches end of file, which happens when the demo exits."""

    def watch_parent() -> None:
        while os.read(sys.stdin.fileno(), 4096):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch_parent, name="watch-parent", daemon=True).start()
    from coxswain.cli import main

    try:
        return main(["serve", *arguments])
    except KeyboardInterrupt:  # Ctrl-C before serve handles signals itself
        return 0


def wait_ready(serve: subprocess.Popen[bytes], deadline: float) -> str | None:
    """None once ``/readyz`` answers 200 (every listener bound), else why not."""
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            return f"coxswain serve exited with {serve.returncode}"
        try:
            conn = http.client.HTTPConnection(BIND, ADMIN_PORT, timeout=1)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return None
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    return f"coxswain serve was not ready within {READY_TIMEOUT:g} s"


def stop_serve(serve: subprocess.Popen[bytes]) -> None:
    """SIGTERM (serve drains), and SIGKILL if it takes longer than its drain timeout."""
    if serve.poll() is None:
        serve.terminate()
        try:
            serve.wait(DRAIN_TIMEOUT + 5)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
    if serve.stdin is not None:
        serve.stdin.close()


# --- the requests ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Try:
    """One request the demo sends, and the ``curl`` line that sends it again. A redirect names
    the Location it must give; its curl line resolves both ports of the host, so that ``-L``
    follows it."""

    what: str
    port: int
    host: str
    path: str
    tls: bool
    expect: int
    location: str | None = None

    def curl(self) -> str:
        if self.tls or self.location:
            scheme = "https" if self.tls else "http"
            words = ["-i"] if self.location else []  # a redirect: its Location shows
            words += ["--cacert", shown(CA_FILE)]
            for port in (self.port, HTTPS_PORT) if self.location else (self.port,):
                words += ["--resolve", f"{self.host}:{port}:{BIND}"]
            words.append(f"{scheme}://{self.host}:{self.port}{self.path}")
        else:
            words = ["-H", f"Host: {self.host}", f"http://{BIND}:{self.port}{self.path}"]
        return shlex.join(["curl", *words])


def tries(ports: Ports) -> list[Try]:
    return [
        Try("an Ingress host over plain HTTP: redirected to HTTPS on the port the proxy serves "
            "it on (-L follows)", HTTP_PORT, INGRESS_HOST, "/", tls=False, expect=308,
            location=f"https://{INGRESS_HOST}:{HTTPS_PORT}/"),
        Try("the same host over HTTPS", HTTPS_PORT, INGRESS_HOST, "/api/users",
            tls=True, expect=200),
        Try("the Gateway's HTTP listener", ports.gateway_http, GATEWAY_HOST, "/api/cart",
            tls=False, expect=200),
        Try("the Gateway's HTTPS listener", ports.gateway_https, GATEWAY_HOST, "/",
            tls=True, expect=200),
    ]  # fmt: skip


def attempt(request: Try, token: str) -> tuple[bool, str]:
    """Send ``request``: whether it was answered as expected, and what to say of the answer."""
    try:
        status, headers = send(request)
    except (OSError, http.client.HTTPException) as err:
        return False, f"failed: {err}"
    said = f"answered {status} just now"
    if location := headers.get("Location"):
        said += f", Location: {location}"
    if status != request.expect:
        return False, f"{said}; expected {request.expect}"
    if request.location is not None and location != request.location:
        return False, f"{said}; expected Location: {request.location}"
    if status == 200 and headers.get(RUN_HEADER) != token:
        return False, f"{said}, but not from this demo's backend: what else listens?"
    return True, said


def send(request: Try) -> tuple[int, email.message.Message]:
    """The request through the proxy on 127.0.0.1; over TLS its handshake names the host (as
    ``curl --resolve`` does)."""
    if request.tls:
        context = ssl.create_default_context(cafile=str(CA_FILE))

        class Connection(http.client.HTTPConnection):
            def connect(self) -> None:
                super().connect()
                self.sock = context.wrap_socket(self.sock, server_hostname=request.host)

        conn: http.client.HTTPConnection = Connection(BIND, request.port, timeout=5)
    else:
        conn = http.client.HTTPConnection(BIND, request.port, timeout=5)
    try:
        host = f"{request.host}:{request.port}" if request.location else request.host
        conn.request("GET", request.path, headers={"Host": host})
        response = conn.getresponse()
        response.read()
        return response.status, response.headers
    finally:
        conn.close()


def shown(path: Path) -> str:
    """``path`` as the user types it: relative to the current directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# --- main -----------------------------------------------------------------------------------------


def demonstrate(
    serve: subprocess.Popen[bytes], token: str, manifests: Path, ports: Ports, *, check: bool
) -> int:
    """Once ``serve`` is ready, each request of :func:`tries` with its curl line; then, unless
    ``check``, serve until stopped."""
    if problem := wait_ready(serve, time.monotonic() + READY_TIMEOUT):
        print(f"demo: {problem}", file=sys.stderr)
        return 1
    print(f"\nCoxswain is serving {shown(manifests)}/. Try:\n")
    failed = 0
    for request in tries(ports):
        answered, said = attempt(request, token)
        failed += not answered
        print(f"# {request.what} ({said})\n{request.curl()}\n")
    if serve.poll() is not None:
        print(f"demo: coxswain serve exited with {serve.returncode}", file=sys.stderr)
        return 1
    if failed:
        print(f"demo: {failed} request(s) not answered as expected", file=sys.stderr)
    if check:
        return 1 if failed else 0
    print(f"Edit a file in {shown(manifests)}/ and routing follows within a second. Ctrl-C stops.")
    serve.wait()
    return serve.returncode


class Stop(BaseException):
    """SIGINT, SIGTERM or SIGHUP: the demo stops, and stops what it started."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit after the sample requests")
    parser.add_argument(
        "--manifests", default=str(EXAMPLES), help="the folder to serve (default: examples/)"
    )
    parser.add_argument(
        "--new-certificates",
        action="store_true",
        help=f"issue the demo's CA and Secret again ({shown(CA_FILE)}, {shown(SECRET_FILE)})",
    )
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # lines, not blocks
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop)
    try:
        return run(args)
    except Stop:
        return 0


def run(args: argparse.Namespace) -> int:
    """The demo as its options ask; :class:`Stop` may interrupt it anywhere."""
    if args.new_certificates:
        write_certificates(datetime.datetime.now(datetime.UTC))
        print(f"wrote {shown(CA_FILE)} and {shown(SECRET_FILE)}")
        return 0
    manifests = Path(args.manifests).resolve()
    try:
        ports = demo_ports(manifests)
    except ExamplesError as err:
        print(f"demo: {err}", file=sys.stderr)
        return 1
    if busy := ports_in_use(ports.roles()):
        print("demo: cannot start, ports in use:", *busy, sep="\n", file=sys.stderr)
        print("An earlier demo still running? `ss -ltnp` shows what listens.", file=sys.stderr)
        return 1
    token = secrets.token_hex(16)
    try:
        backend = Backend((BIND, BACKEND_PORT), token)
    except OSError as err:  # taken since it was checked
        print(
            f"demo: cannot start the sample backend on {BIND}:{BACKEND_PORT}: {err}",
            file=sys.stderr,
        )
        return 1
    threading.Thread(target=backend.serve_forever, name="backend", daemon=True).start()
    serve = None
    try:
        serve = start_serve(manifests)
        return demonstrate(serve, token, manifests, ports, check=args.check)
    finally:
        for signum in STOP_SIGNALS:  # stopping is bounded: a second Ctrl-C must not cut it short
            signal.signal(signum, signal.SIG_IGN)
        if serve is not None:
            stop_serve(serve)
        backend.shutdown()
        backend.server_close()


if __name__ == "__main__":
    if sys.argv[1:2] == [CHILD]:
        sys.exit(serve_child(sys.argv[2:]))
    sys.exit(main())
