#!/usr/bin/env python3
"""A relay that adds latency between two devices on a namespace LAN (issue 25 item 9).

This kernel has neither the netem qdisc nor nftables' `queue` expression, so latency cannot be added to packets in
the kernel. Instead two devices reach each other only through this relay, run in a third host that owns one
address standing for each of them: device A is told `--peer` A_FACE, device B `--peer` B_FACE, and whatever reaches
A_FACE is forwarded to A from B_FACE after --delay milliseconds, and the other way round. Both UDP (adverts) and
TCP (sessions: each connection accepted is dialled onwards from the other face, its bytes held --delay each way)
on one port, so each device sees the other at the face's address and dials it back there.

    python3 scripts/delay-relay.py --port 47810 --delay 150 \\
        --pair 10.77.0.11=10.77.0.1 --pair 10.77.0.12=10.77.0.2

`--pair FACE=TARGET`: datagrams and connections to FACE go to TARGET, from the other pair's FACE (exactly two).
With --loss PERCENT, that share of datagrams is dropped too (TCP loss is nftables' job: scripts/faults.py).
"""
import argparse
import asyncio
import random
import signal
import socket
import sys


class Datagrams(asyncio.DatagramProtocol):
    """One face's UDP socket: what arrives is sent on by the other face's socket, later."""

    def __init__(self, relay, face):
        self.relay, self.face, self.transport = relay, face, None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, source):
        target, other = self.relay.route(self.face)
        if self.relay.loss and random.random() * 100 < self.relay.loss:
            return
        loop = asyncio.get_running_loop()
        loop.call_later(self.relay.delay, lambda: self.relay.udp[other].transport.sendto(data, (target, self.relay.port)))


class Relay:
    def __init__(self, port, delay, pairs, loss):
        self.port, self.delay, self.pairs, self.loss = port, delay, pairs, loss
        self.udp = {}
        self.connections = 0

    def route(self, face):
        """Where traffic to `face` goes, and the face it leaves from."""
        target = self.pairs[face]
        other = next(f for f in self.pairs if f != face)
        return target, other

    async def pipe(self, reader, writer):
        """Copies reader to writer, each chunk written --delay after it was read, in order."""
        queue = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def deliver():
            while True:
                due, data = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if data is None:
                    break
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                data = await reader.read(65536)
                queue.put_nowait((loop.time() + self.delay, data or None))
                if not data:
                    break
            await sender
        except (ConnectionError, OSError):
            sender.cancel()
        finally:
            writer.close()

    async def accepted(self, face, reader, writer):
        target, other = self.route(face)
        self.connections += 1
        try:
            onward_reader, onward_writer = await asyncio.open_connection(
                target, self.port, local_addr=(other, 0)
            )
        except OSError:
            writer.close()
            return
        await asyncio.gather(self.pipe(reader, onward_writer), self.pipe(onward_reader, writer), return_exceptions=True)

    async def run(self, ready):
        loop = asyncio.get_running_loop()
        servers = []
        for face in self.pairs:
            transport, protocol = await loop.create_datagram_endpoint(
                lambda face=face: Datagrams(self, face), local_addr=(face, self.port), family=socket.AF_INET
            )
            self.udp[face] = protocol
            servers.append(
                await asyncio.start_server(lambda r, w, face=face: self.accepted(face, r, w), face, self.port)
            )
        if ready:
            open(ready, "w").close()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        await stop.wait()
        for server in servers:
            server.close()


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--port", type=int, default=47810, help="the agents' port, relayed on both faces")
    parser.add_argument("--delay", type=float, required=True, help="milliseconds added each way")
    parser.add_argument("--loss", type=float, default=0, help="percent of datagrams dropped (default 0)")
    parser.add_argument("--pair", action="append", required=True, help="FACE=TARGET (give two)")
    parser.add_argument("--ready", help="a file to create once both faces listen")
    options = parser.parse_args()
    pairs = dict(p.split("=", 1) for p in options.pair)
    if len(pairs) != 2:
        parser.error("give exactly two --pair FACE=TARGET")
    try:
        asyncio.run(Relay(options.port, options.delay / 1000, pairs, options.loss).run(options.ready))
    except OSError as error:
        print(f"delay-relay: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
