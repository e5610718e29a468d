#!/usr/bin/env python3
"""Issue 10 item 7: does the agent give memory back after bursts of idle TLS connections?

Starts two paired agents (as scripts/soak.py does), then, ROUNDS times, opens COUNT TLS 1.3 connections to the
laptop's agent as the desktop would (a member's certificate), holds them HOLD seconds, closes them, waits for the
agent's next sweep, and samples its resident memory. Prints one line per round and, with --json, the figures; exits
non-zero when the memory after the last round exceeds the memory after the first by more than --slack MB."""
import argparse
import json
import os
import resource
import shutil
import socket
import ssl
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--bin", default=".build/debug", help="folder with the built baton and shopsnap")
parser.add_argument("--count", type=int, default=2000, help="connections per round (default 2000)")
parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
parser.add_argument("--hold", type=float, default=25, help="seconds each round's connections stay open (default 25)")
parser.add_argument("--settle", type=float, default=7, help="seconds after closing before sampling (default 7)")
parser.add_argument("--slack", type=float, default=12, help="MB the last round may exceed the first by (default 12)")
parser.add_argument("--json", help="write the figures as JSON to this file")
options = parser.parse_args()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, options.count + 256)), hard))
root = tempfile.mkdtemp(prefix="baton-idle-")
world = soak.World(options.bin, root)
figures = {"count": options.count, "rounds": []}
try:
    world.setup()
    agent = world.agents["laptop"].pid
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(world.cert_pem, world.key_pem)
    figures["before"] = soak.probe(agent)
    print(f"before: {figures['before']}", flush=True)
    for number in range(options.rounds):
        connections = []
        refused = 0
        for _ in range(options.count):
            raw = socket.create_connection(("127.0.0.1", world.ports["laptop"]), timeout=5)
            try:
                connections.append(context.wrap_socket(raw))
            except (ssl.SSLError, OSError):
                refused += 1  # closed by the agent (a limit), as it should be under such a burst
                raw.close()
        held = soak.probe(agent)
        time.sleep(options.hold)
        for connection in connections:
            connection.close()
        time.sleep(options.settle)
        after = soak.probe(agent)
        figures["rounds"].append({"held": held, "after": after, "closedByAgent": refused})
        print(f"round {number + 1}: open {held}, after {after}, {refused} closed by the agent at once", flush=True)
    if world.agents["laptop"].poll() is not None:
        raise SystemExit("the agent ended")
finally:
    world.stop()
    shutil.rmtree(root, ignore_errors=True)

first = figures["rounds"][0]["after"]["rssKiB"]
last = figures["rounds"][-1]["after"]["rssKiB"]
figures["growthMB"] = round((last - first) / 1024, 1)
figures["passed"] = figures["growthMB"] <= options.slack
print(f"resident memory after round 1: {first // 1024} MB, after round {options.rounds}: {last // 1024} MB: " + ("flat" if figures["passed"] else "GROWING"))
if options.json:
    with open(options.json, "w") as handle:
        json.dump(figures, handle, indent=1)
sys.exit(0 if figures["passed"] else 1)
