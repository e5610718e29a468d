#!/usr/bin/env python3
"""How quiet an idle agent is, for each way it runs (issue 11, "Quiet when idle"; issue 26 item 6; figures in
docs/RELIABILITY.md).

For each way of running the agent, two paired agents with their default settings, ShopSnap installed, nothing
current and the rosters in step. The ways (--ways):

  baton-agent   the lean executable, run directly (the user unit's way)
  baton agent   `baton agent` with `baton-agent` beside it: it replaces itself with that (execv, same pid)
  in-process    `baton agent` with no `baton-agent` beside it (a `swift build --product baton`): the agent runs
                inside the full `baton` binary

By default the two agents run in two network namespaces on one bridge (scripts/netns.sh; root only) with their
defaults, multicast on, each the other's --peer: a LAN, as a desktop runs. --network loopback runs them on
loopback without multicast instead (the only choice without root); that hides whatever multicast does when idle.

After a settling pause each agent is measured over --seconds (default 60). Wakeups are the voluntary context
switches of every thread (/proc/PID/task/*/status, sampled every 0.25 s so short-lived threads count too): each is
a thread going back to sleep after something woke it. With perf (`perf stat -p`; its counters follow threads created
later): CPU time (task-clock), threads created (task:task_newtask, counted in the thread that creates) and all
context switches (wakeups plus preemptions, which grow with the machine's load, not with the agent's work). Without
perf, threads created are the sampled ones and CPU time is /proc's, in 10 ms clock ticks: too coarse to judge. Beside them, from /proc, resident memory (anonymous and file-backed). `idle-floor` (when built in --bin)
runs beside the agents: a program on the same libraries that only makes a key and a TLS context and listens, no
Baton code; its figures are the floor.

Targets (--check exits non-zero when one is missed), per agent: no thread created while idle; at most
--max-wakeups a second (a thread woken once a second shows 60 or 61 times in a 60 s window, by phase: one more than
the rate allows is not judged a miss); at most --max-cpu-ms of CPU a minute (perf only); under --max-rss MB.

  sudo python3 scripts/idle.py --bin .build/release
  python3 scripts/idle.py --bin .build/debug --ways in-process --network loopback --seconds 20
  python3 scripts/idle.py --bin .build/release --check --json /tmp/idle.json"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import World  # noqa: E402  (the same two paired devices the soak test sets up)

WAYS = ("baton-agent", "baton agent", "in-process")
NETNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns.sh")
PERF_EVENTS = {"task-clock": "cpuMilliseconds", "context-switches": "switches", "task:task_newtask": "threadsCreated"}


def parse():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=".build/debug", help="folder with the built baton (and baton-agent, shopsnap, idle-floor)")
    parser.add_argument("--ways", default=",".join(WAYS), help=f"which ways of running, comma-separated (default: {','.join(WAYS)})")
    parser.add_argument("--network", choices=("lan", "loopback", "auto"), default="auto", help="two namespaces with multicast, or loopback without (default: lan where it can be built)")
    parser.add_argument("--seconds", type=float, default=60, help="how long to measure each way (default 60)")
    parser.add_argument("--settle", type=float, default=15, help="seconds to wait after both agents start, for start-up threads to end (default 15)")
    parser.add_argument("--check", action="store_true", help="fail when a target is missed")
    parser.add_argument("--max-wakeups", type=float, default=1.0, help="target: wakeups per second (default 1)")
    parser.add_argument("--max-cpu-ms", type=float, default=2.0, help="target: milliseconds of CPU a minute (default 2)")
    parser.add_argument("--max-threads", type=int, default=0, help="target: threads created while idle (default 0)")
    parser.add_argument("--max-rss", type=float, default=25.0, help="target: resident MB (default 25)")
    parser.add_argument("--json", help="write the report as JSON to this file")
    return parser.parse_args()


def switches(pid):
    """Voluntary context switches of each thread of a process so far, by thread id: each one is the thread going
    back to sleep after it woke (a preemption, an involuntary switch, is the machine's load, not a wakeup)."""
    counts = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as handle:
                counts[task] = sum(
                    int(line.split()[1])
                    for line in handle
                    if line.startswith("voluntary_ctxt_switches")
                )
        except FileNotFoundError:
            continue  # a thread that ended between the listing and the read
    return counts


class WakeupCounter:
    """Voluntary context switches over a window, sampled every SAMPLE_SECONDS: a thread's switches count from the first
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


class PerfCounter:
    """`perf stat` attached to one process for the window: CPU time, context switches and threads created, its
    counters inherited by threads the process creates after attaching."""

    def __init__(self, pid, seconds, folder):
        self.output = os.path.join(folder, f"perf-{pid}.csv")
        self.process = subprocess.Popen(
            ["perf", "stat", "-x", ",", "-e", ",".join(PERF_EVENTS), "-p", str(pid), "-o", self.output, "--", "sleep", str(seconds)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def figures(self):
        """The counts by PERF_EVENTS' names, or None when perf could not count (not installed, not allowed)."""
        self.process.wait()
        counts = {}
        try:
            with open(self.output) as handle:
                for line in handle:
                    fields = line.strip().split(",")
                    if len(fields) > 2 and fields[2] in PERF_EVENTS:
                        try:
                            counts[PERF_EVENTS[fields[2]]] = float(fields[0])
                        except ValueError:
                            return None  # "<not counted>", "<not supported>"
        except FileNotFoundError:
            return None
        return counts if len(counts) == len(PERF_EVENTS) else None


def perf_works():
    return shutil.which("perf") is not None and subprocess.run(
        ["perf", "stat", "-e", "task-clock,task:task_newtask", "--", "true"], capture_output=True
    ).returncode == 0


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


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def start_floor(world, binaries):
    """`idle-floor` from `binaries`, started in the world's folder and waited for; None when it is not built."""
    program = os.path.join(binaries, "idle-floor")
    if not os.access(program, os.X_OK):
        return None
    process = world.background([program, os.path.join(world.root, "floor.sock")], "floor.log")
    if not world.wait_for("floor.log", "idle-floor listening"):
        raise SystemExit("idle-floor did not start: " + world.log("floor.log"))
    return process


def agent_command(way, binaries, root):
    """The command that runs an agent `way`, or why it cannot be run here."""
    baton, lean = os.path.join(binaries, "baton"), os.path.join(binaries, "baton-agent")
    if way == "in-process":
        # `baton agent` looks for baton-agent in the folder of its own executable (/proc/self/exe, links
        # resolved): a hard link (or a copy) of baton alone in a folder runs the agent in-process.
        alone = os.path.join(root, "baton-alone")
        os.makedirs(alone, exist_ok=True)
        copy = os.path.join(alone, "baton")
        try:
            os.link(os.path.realpath(baton), copy)
        except OSError:
            shutil.copy(baton, copy)
        return [copy, "agent"], None
    if not os.access(lean, os.X_OK):
        return None, f"no baton-agent in {binaries}"
    return ([lean] if way == "baton-agent" else [baton, "agent"]), None


def running_as(pid):
    """The executable a process runs now (after any execv)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return "?"


def lan_wanted(network):
    """Whether to run the agents in two namespaces: asked for, or (auto) where scripts/netns.sh can build them."""
    if network != "auto":
        return network == "lan"
    return subprocess.run([NETNS, "check"], capture_output=True).returncode == 0


def measure(way, options, use_perf, lan):
    """Two paired agents run `way` (and the floor beside them), idle for the window: their figures by name, or a
    reason the way was not measured."""
    root = tempfile.mkdtemp(prefix="baton-idle-")
    world = World(options.bin, root)
    prefix = f"id{os.getpid() % 10000}" if lan else None
    try:
        command, missing = agent_command(way, options.bin, root)
        if missing:
            return None, missing
        if prefix:
            subprocess.run([NETNS, "up", prefix, "2"], check=True, capture_output=True)
        world.setup(interval=None, agent=command, lan=prefix)
        floor = start_floor(world, options.bin)
        time.sleep(options.settle)
        processes = dict(world.agents)
        if floor:
            processes["floor"] = floor
        pids = {name: process.pid for name, process in processes.items()}
        counters = {name: WakeupCounter(pid) for name, pid in pids.items()}
        cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
        perf = {name: PerfCounter(pid, options.seconds, root) for name, pid in pids.items()} if use_perf else {}
        started = time.monotonic()
        while time.monotonic() - started < options.seconds:
            time.sleep(WakeupCounter.SAMPLE_SECONDS)
            for counter in counters.values():
                counter.sample()
        elapsed = time.monotonic() - started
        figures = {}
        for name, pid in pids.items():
            counted = perf[name].figures() if name in perf else None
            if processes[name].poll() is not None:
                log = "floor.log" if name == "floor" else f"agent-{name}.log"
                raise SystemExit(f"{way}: the {name} agent ended while idle: " + world.log(log))
            memory = memory_mb(pid)
            window = options.seconds if counted else elapsed
            figures[name] = {
                "runs": running_as(pid),
                "measuredBy": "perf" if counted else "/proc",
                "wakeups": counters[name].total,
                "wakeupsPerSecond": round(counters[name].total / elapsed, 2),
                "switchesWithPreemptions": int(counted["switches"]) if counted else None,
                "threadsCreated": int(counted["threadsCreated"]) if counted else counters[name].threads_started,
                "cpuMillisecondsPerMinute": round(counted["cpuMilliseconds"] * 60 / window, 2) if counted else None,
                "cpuSecondsByTicks": round(cpu_seconds(pid) - cpu[name], 3),
                "rssMB": round(memory.get("VmRSS", 0), 1),
                "rssAnonMB": round(memory.get("RssAnon", 0), 1),
                "rssFileMB": round(memory.get("RssFile", 0), 1),
                "threads": threads(pid),
                "seconds": round(elapsed, 1),
            }
        return figures, None
    finally:
        world.stop()
        if prefix:
            subprocess.run([NETNS, "down", prefix], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def missed(name, figures, options):
    """The targets `figures` misses, each as a line."""
    lines = []
    if figures["threadsCreated"] > options.max_threads:
        lines.append(f"{name}: {figures['threadsCreated']} threads created while idle, target at most {options.max_threads}")
    # A thread woken once a second is seen 60 or 61 times in a 60 s window, by phase: one more is no miss.
    if figures["wakeups"] > options.max_wakeups * figures["seconds"] + 1:
        lines.append(f"{name}: {figures['wakeupsPerSecond']} wakeups/s, target at most {options.max_wakeups}")
    cpu = figures["cpuMillisecondsPerMinute"]
    if cpu is not None and cpu > options.max_cpu_ms:
        lines.append(f"{name}: {cpu} ms CPU a minute, target at most {options.max_cpu_ms}")
    if figures["rssMB"] > options.max_rss:
        lines.append(f"{name}: {figures['rssMB']} MB resident, target under {options.max_rss}")
    return lines


def line(name, figures):
    cpu = figures["cpuMillisecondsPerMinute"]
    cpu_text = f"{cpu:5.2f} ms CPU/min" if cpu is not None else f"{figures['cpuSecondsByTicks']:.2f} s CPU (ticks)"
    return (
        f"  {name:8} {figures['wakeupsPerSecond']:5.2f} wakeups/s  {cpu_text}  {figures['threadsCreated']} threads created  "
        f"{figures['rssMB']:5.1f} MB resident ({figures['rssAnonMB']:.1f} anonymous, {figures['rssFileMB']:.1f} file-backed)  "
        f"{figures['threads']} threads, runs {figures['runs']}"
        + (f"; {figures['switchesWithPreemptions']} switches with preemptions" if figures["switchesWithPreemptions"] is not None else "")
    )


def main():
    # A SIGTERM (a CI timeout) still stops the agents and takes the namespaces down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    options = parse()
    ways = [way.strip() for way in options.ways.split(",") if way.strip()]
    unknown = [way for way in ways if way not in WAYS]
    if unknown:
        raise SystemExit(f"unknown ways {unknown}: choose from {', '.join(WAYS)}")
    use_perf = perf_works()
    lan = lan_wanted(options.network)
    if options.network == "lan" and not lan:
        raise SystemExit("--network lan: scripts/netns.sh cannot build namespaces here (needs root and iproute2)")
    where = "two network namespaces on a bridge, multicast on" if lan else "loopback, multicast off"
    how = "/proc's voluntary switches and perf stat (task-clock, task:task_newtask)" if use_perf else "/proc, sampled (no perf here)"
    print(f"idle agents, two paired, nothing current; {where}; measured by {how} over {options.seconds:g} s each:")
    report = {"seconds": options.seconds, "network": "lan" if lan else "loopback", "measuredBy": "perf" if use_perf else "/proc", "ways": {}}
    failed = []
    for way in ways:
        figures, skipped = measure(way, options, use_perf, lan)
        if skipped:
            print(f"{way}: not measured ({skipped})")
            report["ways"][way] = {"skipped": skipped}
            continue
        floor = figures.pop("floor", None)
        if floor:
            report.setdefault("floors", []).append(floor)
        verdicts = {}
        print(f"{way}:")
        for name, agent in figures.items():
            print(line(name, agent))
            lines = missed(f"{way}, {name}", agent, options)
            agent["passed"] = not lines
            verdicts[name] = "pass" if not lines else "FAIL"
            failed += lines
            if floor:
                agent["rssRatioToFloor"] = round(agent["rssMB"] / floor["rssMB"], 2)
        if floor:
            print(line("floor", floor).replace("threads, runs", "threads (same libraries, no Baton code), runs"))
        print(f"  targets ({options.max_threads} threads created, <= {options.max_wakeups:g} wakeups/s, "
              + (f"<= {options.max_cpu_ms:g} ms CPU/min, " if use_perf else "CPU not judged without perf, ")
              + f"< {options.max_rss:g} MB): " + ", ".join(f"{name} {verdict}" for name, verdict in verdicts.items()))
        report["ways"][way] = {"agents": figures, "floor": floor}
    report["failed"] = failed
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(report, handle, indent=2)
    for text in failed:
        print("  missed: " + text)
    if not failed:
        print("every target met" if use_perf else "every target judged met (CPU not judged without perf)")
    if options.check and failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
