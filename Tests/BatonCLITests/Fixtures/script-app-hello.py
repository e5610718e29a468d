#!/usr/bin/python3
"""Issue 28 item 3: an app that is a Python script, saying hello to its agent over the app socket (PROTOCOL.md §7:
4-byte big-endian length, binary property list). Prints the agent's answer: "welcome" or "refused <code> <message>".

usage: script-app-hello.py SOCKET BUNDLE"""
import plistlib
import socket
import struct
import sys

path, bundle = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(path)
body = plistlib.dumps({"t": "hello", "v": 1, "bundle": bundle}, fmt=plistlib.FMT_BINARY)
s.sendall(struct.pack(">I", len(body)) + body)

# A buffered reader reads exactly what it is asked, or less at the end of the stream.
answer = s.makefile("rb")
head = answer.read(4)
reply = plistlib.loads(answer.read(struct.unpack(">I", head)[0])) if len(head) == 4 else {"t": "closed"}
if reply.get("t") == "refused":
    print("refused", reply.get("code"), reply.get("message"))
else:
    print(reply.get("t"))
