#!/usr/bin/python3
"""Issue 28 items 3 and 4: an app that is a Python script, saying hello to its agent over the app socket (PROTOCOL.md
§7: 4-byte big-endian length, binary property list).

usage: script-app-hello.py SOCKET BUNDLE
    prints the agent's answer: "welcome" or "refused <code> <message>".
usage: script-app-hello.py STATE-FOLDER BUNDLE OUTPUT
    as the session bus starts it (D-Bus activation): takes the name BUNDLE on the bus that started it (the bus answers
    the agent's StartServiceByName only then), finds the socket in STATE-FOLDER/agent-socket, says hello, and writes
    each message the agent sends, a line each ("welcome 0", "will TYPE", "deliver BYTES"), to OUTPUT until the
    state is delivered."""
import os
import plistlib
import socket
import struct
import sys
import time

path, bundle = sys.argv[1], sys.argv[2]
output = sys.argv[3] if len(sys.argv) > 3 else None
if os.path.isdir(path):
    with open(os.path.join(path, "agent-socket")) as named:
        path = named.read().strip()
if "DBUS_STARTER_ADDRESS" in os.environ:
    import dbus

    dbus.bus.BusConnection(os.environ["DBUS_STARTER_ADDRESS"]).request_name(bundle)

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(path)
body = plistlib.dumps({"t": "hello", "v": 1, "bundle": bundle}, fmt=plistlib.FMT_BINARY)
s.sendall(struct.pack(">I", len(body)) + body)
# A buffered reader reads exactly what it is asked, or less at the end of the stream.
frames = s.makefile("rb")


def receive():
    head = frames.read(4)
    return plistlib.loads(frames.read(struct.unpack(">I", head)[0])) if len(head) == 4 else {"t": "closed"}


if output is None:
    reply = receive()
    if reply.get("t") == "refused":
        print("refused", reply.get("code"), reply.get("message"))
    else:
        print(reply.get("t"))
    sys.exit(0)

with open(output, "a") as log:
    while True:
        message = receive()
        kind = message.get("t")
        log.write("%s %s\n" % (kind, message.get("type") or message.get("code") or len(message.get("payload", b""))))
        log.flush()
        if kind in ("deliver", "refused", "closed"):
            break
time.sleep(2)
