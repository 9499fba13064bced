"""Benchmark: the proxy's two TLS stacks towards clients, ``ssl`` and pyOpenSSL.

Run from the repository root::

    .venv/bin/python bench/tls_stacks.py            # 5 rounds, about a minute
    .venv/bin/python bench/tls_stacks.py --quick    # a smoke run

A port with an ``AllowInsecureFallback`` listener handshakes on pyOpenSSL
(``coxswain/shell/dataplane/tls_openssl.py``, whose ``OpenSSLContext`` moves every byte between
trio's memory BIOs and OpenSSL's in Python); every other port stays on ``ssl``. This measures
what that costs the server, each stack wrapped by ``trio.SSLStream`` as the proxy wraps a
client connection:

- a full handshake (TLS 1.3, ECDSA P-256 server certificate, the client presenting a
  certificate from the port's bundle, one byte answered so that ``ssl`` sends its session
  tickets too), ``--handshakes`` of them one after the other;
- ``--megabytes`` received on one established connection, sent by the client in 16 KiB writes.

The server is this process, its CPU (user + system, ``getrusage``) read around each phase; the
client is a subprocess (blocking ``ssl`` sockets), so its work is not counted. The two stacks
run in turn, the order swapped every round; medians and the best over ``--rounds``.
Wall-clock rates are shown too, but the client shares the machine's cores: CPU is the figure.
"""

from __future__ import annotations

import os
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import harness
import trio
import trustme

from coxswain.compile.snapshot import Certificate
from coxswain.shell.dataplane.tls import load_chain
from coxswain.shell.dataplane.tls_openssl import OpenSSLContext

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

CHUNK = 16 * 1024
ALPN = ["h2", "http/1.1"]
FOLDER = "COXSWAIN_BENCH_TLS"  # where the client finds its certificates (environment)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--handshakes", type=int, default=300)
    parser.add_argument("--megabytes", type=int, default=64)


def _contexts(folder: Path) -> dict[str, ssl.SSLContext]:
    """The server context of each stack, built as ``tls.TLSContexts`` builds them, and the
    client's files in ``folder``."""
    server_ca, client_ca = trustme.CA(), trustme.CA()
    leaf = server_ca.issue_cert("bench.example.com")
    server_ca.cert_pem.write_to_path(str(folder / "server-ca.pem"))
    client_ca.issue_cert("client.example.com").private_key_and_cert_chain_pem.write_to_path(
        str(folder / "client.pem")
    )
    certificate = Certificate(
        chain_pem="".join(b.bytes().decode() for b in leaf.cert_chain_pems),
        key_pem=leaf.private_key_pem.bytes().decode(),
        secret="bench/tls",
    )
    bundle = client_ca.cert_pem.bytes().decode()
    native = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    native.minimum_version = ssl.TLSVersion.TLSv1_2
    native.set_alpn_protocols(ALPN)
    native.load_verify_locations(cadata=bundle)
    native.verify_mode = ssl.CERT_OPTIONAL
    load_chain(native, certificate)
    return {
        "ssl": native,
        "pyOpenSSL": OpenSSLContext(certificate=certificate, bundles=bundle, alpn=ALPN),
    }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _serve(context: ssl.SSLContext, handshakes: int, megabytes: int) -> dict[str, float]:
    """Accept the client's connections; the server's CPU and wall time for each phase."""
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    assert isinstance(listener, trio.SocketListener)
    port = listener.socket.getsockname()[1]
    command = [sys.executable, __file__, "--worker", "client", str(port)]
    client = await trio.lowlevel.open_process(
        [*command, str(handshakes), str(megabytes)], stdout=subprocess.DEVNULL
    )
    try:
        await _handshake(listener, context)  # the first waits for the client to start
        started, cpu = time.perf_counter(), _cpu()
        for _ in range(handshakes):
            await _handshake(listener, context)
        figures = {
            "handshake_cpu": (_cpu() - cpu) / handshakes,
            "handshake_wall": (time.perf_counter() - started) / handshakes,
        }
        tls = trio.SSLStream(await listener.accept(), context, server_side=True)
        await tls.do_handshake()
        started, cpu, received = time.perf_counter(), _cpu(), 0
        while received < megabytes * harness.MB:
            data = await tls.receive_some(65536)
            if not data:
                raise SystemExit(f"the client closed after {received} bytes")
            received += len(data)
        figures["mb_cpu"] = (_cpu() - cpu) / megabytes
        figures["mb_wall"] = (time.perf_counter() - started) / megabytes
        await tls.send_all(b"k")
        await trio.aclose_forcefully(tls)
    finally:
        await listener.aclose()
        with trio.fail_after(60):
            if await client.wait():
                raise SystemExit(f"the client failed with exit code {client.returncode}")
    return figures


async def _handshake(listener: trio.SocketListener, context: ssl.SSLContext) -> None:
    tls = trio.SSLStream(await listener.accept(), context, server_side=True)
    await tls.do_handshake()
    if tls.getpeercert(binary_form=True) is None:
        raise SystemExit("the client presented no certificate")
    await tls.send_all(b"k")
    await trio.aclose_forcefully(tls)


def _client(port: int, handshakes: int, megabytes: int) -> dict[str, Any]:
    """In the subprocess: the handshakes, then the bulk connection."""
    folder = Path(os.environ[FOLDER])
    context = ssl.create_default_context(cafile=str(folder / "server-ca.pem"))
    context.load_cert_chain(str(folder / "client.pem"))
    context.set_alpn_protocols(ALPN)

    def connect() -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", port), timeout=60)
        return context.wrap_socket(raw, server_hostname="bench.example.com")

    for _ in range(handshakes + 1):  # one to start with, then those measured
        with connect() as tls:
            if tls.recv(1) != b"k":
                raise SystemExit("no answer after the handshake")
    block = b"x" * CHUNK
    with connect() as tls:
        for _ in range(megabytes * harness.MB // CHUNK + 1):
            tls.sendall(block)
        if tls.recv(1) != b"k":
            raise SystemExit("no answer after the bulk transfer")
    return {}


def main(argv: Sequence[str]) -> None:
    args = harness.parse_args(__doc__, argv, _options)
    if args.worker:
        harness.answer_worker(args.worker, {"client": _client})
        return
    rounds, handshakes, megabytes = (
        (1, 10, 1) if args.quick else (args.rounds, args.handshakes, args.megabytes)
    )
    with harness.session(__file__, argv), tempfile.TemporaryDirectory() as folder:
        os.environ[FOLDER] = folder
        contexts = _contexts(Path(folder))
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in contexts}
        for turn in range(rounds):
            order = list(contexts) if turn % 2 == 0 else list(reversed(contexts))
            for name in order:
                runs[name].append(trio.run(_serve, contexts[name], handshakes, megabytes))
        print(f"\n{handshakes} handshakes and {megabytes} MB per round, {rounds} rounds")
        harness.print_table(
            [
                ("stack", 10),
                ("CPU/handshake µs", 18),
                ("handshakes/s", 16),
                ("CPU/MB ms", 16),
                ("MB/s", 14),
            ],
            [
                (
                    name,
                    harness.med_best([r["handshake_cpu"] for r in found], 1e6, 0),
                    harness.med_best([1 / r["handshake_wall"] for r in found], 1, 0, best=max),
                    harness.med_best([r["mb_cpu"] for r in found], 1e3, 1),
                    harness.med_best([1 / r["mb_wall"] for r in found], 1, 0, best=max),
                )
                for name, found in runs.items()
            ],
        )


if __name__ == "__main__":
    main(sys.argv[1:])
