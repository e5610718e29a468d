#!/usr/bin/env python3
"""How quiet an idle agent is (issue 11, "Quiet when idle"; figures in docs/RELIABILITY.md).

Two paired agents on loopback with their default settings, ShopSnap installed, nothing current and the rosters in
step. After a settling pause it samples each agent over --seconds (default 60): context switches per second (voluntary
and involuntary, summed over /proc/PID/task/*/status: each is a wakeup), CPU time (user + system, from
/proc/PID/stat) and resident memory. Beside them runs `idle-floor` (when it is built in --bin): a program on the same libraries that
only makes a key and a TLS context and listens, no Baton code; its memory is the floor the agents' is compared with.
It prints a report (and JSON with --json) and, with --check, exits non-zero when an agent wakes more than
--max-wakeups times a second or holds more than --max-rss MB.

  python3 scripts/idle.py --bin .build/release
  python3 scripts/idle.py --bin .build/release --seconds 60 --check --json /tmp/idle.json"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import World  # noqa: E402  (the same two paired devices the soak test sets up)


def parse():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=".build/debug", help="folder with the built baton and shopsnap")
    parser.add_argument("--seconds", type=float, default=60, help="how long to sample (default 60)")
    parser.add_argument("--settle", type=float, default=15, help="seconds to wait after both agents start, for start-up threads to end (default 15)")
    parser.add_argument("--check", action="store_true", help="fail when a target is missed")
    parser.add_argument("--max-wakeups", type=float, default=1.0, help="target: wakeups per second (default 1)")
    parser.add_argument("--max-rss", type=float, default=25.0, help="target: resident MB (default 25)")
    parser.add_argument("--json", help="write the report as JSON to this file")
    return parser.parse_args()


def switches(pid):
    """Context switches of each thread of a process so far, by thread id: each one is the thread waking (or being
    woken)."""
    counts = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as handle:
                counts[task] = sum(
                    int(line.split()[1])
                    for line in handle
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))
                )
        except FileNotFoundError:
            continue  # a thread that ended between the listing and the read
    return counts


class WakeupCounter:
    """Context switches over a window, sampled every SAMPLE_SECONDS: a thread's switches count from the first
    sample that saw it (all of them, for a thread born in the window), so threads that come and go are counted
    too, up to their last sample."""

    SAMPLE_SECONDS = 0.25

    def __init__(self, pid):
        self.pid = pid
        self.last = switches(pid)
        self.total = 0
        self.threads_started = 0

    def sample(self):
        now = switches(self.pid)
        for task, count in now.items():
            if task in self.last:
                self.total += count - self.last[task]
            else:
                self.total += count
                self.threads_started += 1
        self.last = now


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    # Fields 14 and 15 (utime, stime) counted from the state, which is field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mb(pid):
    """Resident memory in MB: all of it, the anonymous part (heap, stacks) and the file-backed part (code)."""
    figures = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                figures[key] = int(line.split()[1]) / 1024
    return figures


def start_floor(world, binaries):
    """`idle-floor` from `binaries`, started in the world's folder and waited for; None when it is not built."""
    program = os.path.join(binaries, "idle-floor")
    if not os.access(program, os.X_OK):
        return None
    process = world.background([program, os.path.join(world.root, "floor.sock")], "floor.log")
    if not world.wait_for("floor.log", "idle-floor listening"):
        raise SystemExit("idle-floor did not start: " + world.log("floor.log"))
    return process


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def main():
    options = parse()
    root = tempfile.mkdtemp(prefix="baton-idle-")
    world = World(options.bin, root)
    try:
        world.setup(interval=None)
        floor = start_floor(world, options.bin)
        time.sleep(options.settle)
        pids = {name: process.pid for name, process in world.agents.items()}
        if floor:
            pids["floor"] = floor.pid
        counters = {name: WakeupCounter(pid) for name, pid in pids.items()}
        cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
        started = time.monotonic()
        while time.monotonic() - started < options.seconds:
            time.sleep(WakeupCounter.SAMPLE_SECONDS)
            for counter in counters.values():
                counter.sample()
        elapsed = time.monotonic() - started
        report = {"seconds": round(elapsed, 1), "agents": {}}
        for name, pid in pids.items():
            if (world.agents.get(name) or floor).poll() is not None:
                raise SystemExit(f"the {name} agent ended while idle: " + world.log(f"agent-{name}.log"))
            memory = memory_mb(pid)
            report["agents"][name] = {
                "wakeupsPerSecond": round(counters[name].total / elapsed, 2),
                "threadsStarted": counters[name].threads_started,
                "cpuSeconds": round(cpu_seconds(pid) - cpu[name], 3),
                "rssMB": round(memory.get("VmRSS", 0), 1),
                "rssAnonMB": round(memory.get("RssAnon", 0), 1),
                "rssFileMB": round(memory.get("RssFile", 0), 1),
                "threads": threads(pid),
            }
    finally:
        world.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"idle for {report['seconds']} s, two paired agents, nothing current:")
    failed = []
    floor = report["agents"].pop("floor", None)
    if floor:
        report["floor"] = floor
    for name, figures in report["agents"].items():
        print(
            f"  {name:8} {figures['wakeupsPerSecond']:6.2f} wakeups/s  {figures['cpuSeconds']:6.3f} s CPU  "
            f"{figures['rssMB']:5.1f} MB resident ({figures['rssAnonMB']:.1f} anonymous, {figures['rssFileMB']:.1f} "
            f"file-backed)  {figures['threads']} threads ({figures['threadsStarted']} started while idle)"
        )
        if floor:
            figures["rssRatioToFloor"] = round(figures["rssMB"] / floor["rssMB"], 2)
            print(f"           {figures['rssRatioToFloor']}x the floor's resident memory")
        if figures["wakeupsPerSecond"] > options.max_wakeups:
            failed.append(f"{name}: {figures['wakeupsPerSecond']} wakeups/s, target at most {options.max_wakeups}")
        if figures["rssMB"] > options.max_rss:
            failed.append(f"{name}: {figures['rssMB']} MB resident, target under {options.max_rss}")
    if floor:
        print(
            f"  floor    {floor['wakeupsPerSecond']:6.2f} wakeups/s  {floor['rssMB']:5.1f} MB resident "
            f"({floor['rssAnonMB']:.1f} anonymous, {floor['rssFileMB']:.1f} file-backed): the same libraries, a key, a TLS "
            "context and three listening sockets, no Baton code"
        )
    else:
        print("  (no floor: build idle-floor into --bin to measure it, e.g. swift build -c release --product idle-floor)")
    report["failed"] = failed
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(report, handle, indent=2)
    for line in failed:
        print("  missed: " + line)
    if options.check and failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
