#!/usr/bin/env python3
"""Issue 25 item 8, the same-user impostor in a loop: connect to the agent's socket, hand the socket to a child, exec
the app's real binary in the connecting process (so that SO_PEERCRED and /proc/PID/exe name the app), and say hello
as the app from the child, which kept the socket. The connecting process keeps its own copy across the exec in every
other try (inheritable) and drops it (close-on-exec) in the rest. Prints one line per try:
"WELCOMED <try> welcome" or "REFUSED <try> <the agent's message>".

usage: same-user-impostor.py SOCKET APP-EXECUTABLE BUNDLE TRIES"""
import os
import plistlib
import socket
import struct
import sys
import time

path, app, bundle, tries = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def frame(message):
    body = plistlib.dumps(message, fmt=plistlib.FMT_BINARY)
    return struct.pack(">I", len(body)) + body

def read_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data

def reply(s):
    head = read_exactly(s, 4)
    if head is None:
        return {"t": "closed"}
    body = read_exactly(s, struct.unpack(">I", head)[0])
    return plistlib.loads(body) if body is not None else {"t": "closed"}

def exe(pid):
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return None

target = os.path.realpath(app)
for attempt in range(tries):
    # The connecting process: keeps the socket across exec in every other try (inheritable), drops it in the rest.
    result, report = os.pipe()
    connector = os.fork()
    if connector == 0:
        os.close(result)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.set_inheritable(attempt % 2 == 1)
        holder = os.fork()
        if holder == 0:
            parent = os.getppid()
            deadline = time.monotonic() + 10
            while exe(parent) != target and time.monotonic() < deadline:
                time.sleep(0.0005)
            s.settimeout(10)
            try:
                s.sendall(frame({"t": "hello", "bundle": bundle, "v": 1}))
                answer = reply(s)
            except Exception as error:
                answer = {"t": "error %s" % error}
            kind = answer.get("t")
            line = "%s %d %s\n" % ("WELCOMED" if kind == "welcome" else "REFUSED", attempt, answer.get("message", kind))
            os.write(report, line.encode())
            os._exit(0)
        # Now the real app, in the process the agent saw connect.
        os.close(report)
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        os.execv(app, [app])
    # The holder's line (it is this process's grandchild; the connector runs the app until it is killed).
    os.close(report)
    with os.fdopen(result) as lines:
        print(lines.readline().strip() or "REFUSED %d no answer" % attempt, flush=True)
    os.kill(connector, 9)
    os.waitpid(connector, 0)
