#!/usr/bin/env python3
"""Issue 25 item 8, after the hello: a process of the same user takes copies of every socket an app holds
(pidfd_getfd, which needs the same rights as ptrace) and keeps them, as a thief of the app's agent connection would.
Prints "holding N" once it holds them, then waits until its standard input closes.

usage: steal-connection.py PID"""
import ctypes
import os
import sys

pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
target = os.pidfd_open(pid)
held = []
for name in os.listdir("/proc/%d/fd" % pid):
    try:
        if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith("socket:"):
            continue
    except OSError:
        continue
    # pidfd_getfd is system call 438 on every Linux architecture.
    copy = libc.syscall(438, target, int(name), 0)
    if copy >= 0:
        held.append(copy)
print("holding %d" % len(held), flush=True)
sys.stdin.read()
