#!/usr/bin/env python3
"""The soak test of docs/RELIABILITY.md (issue 10): two paired agents for a while, under load, sampled.

Two agents on loopback (failed roster syncs retried after 0.2 s; since issue 11 rosters sync on change, not on a timer). On the laptop, ShopSnap makes a new list current again and
again; the desktop continues each one (its agent launches ShopSnap the first time). Meanwhile random 88-byte
datagrams flood both agents' advert ports, TCP and TLS connections are opened and dropped on both session ports,
and clients connect to both app sockets and go without a word. Every 10 s the descriptors, TCP sockets and resident
memory of each agent are sampled. At the end it checks that every continuation succeeded or failed with a typed
reason, that neither agent restarted, and that the samples stay flat; it prints a report (and JSON with --json)
and exits non-zero when a check fails.

Run it through scripts/soak.sh, which builds first."""
import argparse
import json
import os
import random
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

SAMPLE_SECONDS = 10


def rate(text):
    """A rate per second: 0 (that load off) or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: a rate is 0 (off) or more per second")
    return value


def parse():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10, help="how long to run (default 10)")
    parser.add_argument("--bin", default=".build/debug", help="folder with the built baton and shopsnap")
    parser.add_argument("--json", help="write the report as JSON to this file")
    parser.add_argument("--keep", action="store_true", help="keep the state folders and logs")
    parser.add_argument("--flood-rate", type=rate, default=200, help="forged datagrams per second per agent (0: none)")
    parser.add_argument("--churn-rate", type=rate, default=20, help="connections opened and dropped per second per port (0: none)")
    return parser.parse_args()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class World:
    def __init__(self, binaries, root):
        self.baton = os.path.join(binaries, "baton")
        self.shopsnap = os.path.abspath(os.path.join(binaries, "shopsnap"))
        self.root = root
        self.processes = []

    def state(self, name):
        return os.path.join(self.root, name)

    def run(self, *arguments, timeout=30):
        return subprocess.run([self.baton, *arguments], capture_output=True, text=True, timeout=timeout)

    def background(self, arguments, log, environment=None, stdin=subprocess.DEVNULL):
        handle = open(os.path.join(self.root, log), "w")
        process = subprocess.Popen(
            arguments, stdout=handle, stderr=subprocess.STDOUT, stdin=stdin, env={**os.environ, **(environment or {})}
        )
        self.processes.append(process)
        return process

    def log(self, name):
        with open(os.path.join(self.root, name), errors="replace") as handle:
            return handle.read()

    def wait_for(self, log, text, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if text in self.log(log):
                return True
            time.sleep(0.05)
        return False

    def setup(self, interval="0.2"):
        """Two paired devices, ShopSnap installed for both, and their agents started; `interval` is the agents'
        --interval (None: the default)."""
        for name in ("laptop", "desktop"):
            self.run("init", "--name", name, "--state", self.state(name)).check_returncode()
        port = free_port()
        waiting = self.background([self.baton, "pair", "--host", "127.0.0.1", "--port", str(port), "--yes", "--state", self.state("laptop")], "pair.log")
        if not self.wait_for("pair.log", "on port"):
            raise SystemExit("pairing did not start: " + self.log("pair.log"))
        self.run("pair", f"127.0.0.1:{port}", "--yes", "--state", self.state("desktop")).check_returncode()
        waiting.wait(timeout=10)
        apps = os.path.join(self.root, "apps", "ShopSnap.app")
        os.makedirs(apps)
        shutil.copy(os.path.join(os.path.dirname(__file__), "..", "Examples", "ShopSnap.app", "Info.plist"), apps)
        os.symlink(self.shopsnap, os.path.join(apps, "shopsnap"))
        self.ports = {"laptop": free_port(), "desktop": free_port()}
        self.agents = {}
        for name, other in (("laptop", "desktop"), ("desktop", "laptop")):
            self.agents[name] = self.background(
                [
                    self.baton, "agent", "--state", self.state(name), "--host", "127.0.0.1", "--port", str(self.ports[name]),
                    "--no-multicast", "--peer", f"127.0.0.1:{self.ports[other]}",
                    "--apps", os.path.join(self.root, "apps"), "--launch-timeout", "5",
                ]
                + (["--interval", interval] if interval else [])
                + (os.environ.get("BATON_AGENT_ARGS", "").split()),
                f"agent-{name}.log",
            )
        for name in self.agents:
            if not self.wait_for(f"agent-{name}.log", "apps connect at"):
                raise SystemExit(f"the {name} agent did not start: " + self.log(f"agent-{name}.log"))
        self.sockets = {name: open(os.path.join(self.state(name), "agent-socket")).read().strip() for name in self.agents}
        self.identity_files()

    def identity_files(self):
        """The desktop's certificate and key as PEM (converted by openssl), so the churn can open TLS sessions a
        member would."""
        import plistlib

        with open(os.path.join(self.state("desktop"), "identity.plist"), "rb") as handle:
            identity = plistlib.load(handle)
        self.cert_pem = os.path.join(self.root, "desktop-cert.pem")
        self.key_pem = os.path.join(self.root, "desktop-key.pem")
        for kind, der, pem in (("x509", identity["cert"], self.cert_pem), ("pkey", identity["key"], self.key_pem)):
            converted = subprocess.run(["openssl", kind, "-inform", "DER", "-out", pem], input=der, capture_output=True)
            if converted.returncode != 0:
                raise SystemExit(f"openssl {kind} could not read the identity: {converted.stderr.decode()}")
            os.chmod(pem, 0o600)

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()


def probe(pid):
    """Descriptors, TCP sockets and resident KiB of a process."""
    folder = f"/proc/{pid}/fd"
    inodes = set()
    count = 0
    for name in os.listdir(folder):
        count += 1
        try:
            target = os.readlink(os.path.join(folder, name))
        except OSError:
            continue
        match = re.match(r"socket:\[(\d+)\]", target)
        if match:
            inodes.add(match.group(1))
    tcp = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                next(handle)
                tcp += sum(1 for line in handle if line.split()[9] in inodes)
        except OSError:
            pass
    rss = 0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return {"fds": count, "tcp": tcp, "rssKiB": rss}


class Soak:
    def __init__(self, world, options):
        self.world = world
        self.options = options
        self.stopping = threading.Event()
        self.continuations = []
        self.samples = {name: [] for name in world.agents}
        self.errors = []

    def activity_loop(self):
        """Lists made current on the laptop, each continued on the desktop."""
        world = self.world
        number = 0
        while not self.stopping.is_set():
            number += 1
            app = world.background(
                [world.shopsnap, "list", f"Soak-{number}", "Eggs"], f"shopsnap-laptop-{number % 4}.log",
                environment={"BATON_AGENT_SOCKET": world.sockets["laptop"]}, stdin=subprocess.PIPE,
            )
            if not world.wait_for(f"shopsnap-laptop-{number % 4}.log", "connected to", timeout=10):
                self.continuations.append({"n": number, "ok": False, "reason": "appDidNotStart"})
                app.kill()
                app.wait()
                continue
            seen = False
            end = time.time() + 5
            while time.time() < end and not seen:
                nearby = world.run("nearby", "--state", world.state("desktop"))
                seen = f"Soak-{number}" in nearby.stdout or "Shopping list" in nearby.stdout
                if not seen:
                    time.sleep(0.05)
            result = world.run("continue", "--state", world.state("desktop"))
            output = result.stdout + result.stderr
            reason = re.search(r"\[(\w+)\]", output)
            self.continuations.append(
                {"n": number, "ok": result.returncode == 0, "reason": reason.group(1) if reason else None, "output": output.strip()[-300:]}
            )
            try:
                app.stdin.write(b"quit\n")
                app.stdin.flush()
            except OSError:
                pass
            try:
                app.wait(timeout=5)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
            world.processes.remove(app)

    def flood(self):
        """Random 88-byte datagrams at both advert ports."""
        if self.options.flood_rate <= 0:
            return  # --flood-rate 0: no flood (issue 25 item 7: 1 / 0 ended this thread)
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        interval = 1 / self.options.flood_rate
        while not self.stopping.is_set():
            for port in self.world.ports.values():
                sender.sendto(os.urandom(88), ("127.0.0.1", port))
            time.sleep(interval)

    def churn(self):
        """Connections opened and dropped: bare TCP, a TLS handshake as a member then silence, and app-socket clients
        that never say hello."""
        if self.options.churn_rate <= 0:
            return  # --churn-rate 0: no churn
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.load_cert_chain(self.world.cert_pem, self.world.key_pem)
        interval = 1 / self.options.churn_rate
        round_number = 0
        while not self.stopping.is_set():
            round_number += 1
            for name, port in self.world.ports.items():
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=2):
                        pass
                    if round_number % 5 == 0:
                        raw = socket.create_connection(("127.0.0.1", port), timeout=2)
                        with context.wrap_socket(raw) as tls:
                            tls.settimeout(0.2)
                            try:
                                tls.recv(1)
                            except (socket.timeout, ssl.SSLError, OSError):
                                pass
                    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    unix.connect(self.world.sockets[name])
                    unix.close()
                except OSError as error:
                    self.errors.append(f"churn {name}: {error}")
            time.sleep(interval)

    def sample(self):
        for name, process in self.world.agents.items():
            if process.poll() is None:
                entry = probe(process.pid)
                entry["t"] = round(time.time() - self.started)
                self.samples[name].append(entry)

    def run(self):
        self.started = time.time()
        threads = [threading.Thread(target=target, daemon=True) for target in (self.activity_loop, self.flood, self.churn)]
        for thread in threads:
            thread.start()
        duration = self.options.minutes * 60
        self.sample()
        while time.time() - self.started < duration:
            time.sleep(min(SAMPLE_SECONDS, max(0.1, duration - (time.time() - self.started))))
            self.sample()
            last = {name: samples[-1] for name, samples in self.samples.items() if samples}
            done = len(self.continuations)
            print(f"{int(time.time() - self.started):5d} s  continuations {done:4d}  " + "  ".join(
                f"{name}: fds {s['fds']} tcp {s['tcp']} rss {s['rssKiB'] // 1024} MB" for name, s in last.items()
            ), flush=True)
        self.stopping.set()
        for thread in threads:
            thread.join(timeout=15)

    def report(self):
        failures = []
        agents = {}
        for name, samples in self.samples.items():
            process = self.world.agents[name]
            alive = process.poll() is None
            if not alive:
                failures.append(f"the {name} agent ended (status {process.returncode})")
            if not samples:
                continue
            warm = samples[min(1, len(samples) - 1)]  # after the first sync and launch
            summary = {}
            for metric, slack in (("fds", 8), ("tcp", 4), ("rssKiB", 16 * 1024)):
                values = [s[metric] for s in samples]
                summary[metric] = {"first": values[0], "last": values[-1], "max": max(values)}
                if values[-1] > warm[metric] + slack:
                    failures.append(f"{name} {metric} grew from {warm[metric]} to {values[-1]}")
            agents[name] = summary
        typed = [c for c in self.continuations if c["ok"] or c["reason"]]
        untyped = [c for c in self.continuations if not c["ok"] and not c["reason"]]
        if not self.continuations:
            failures.append("no continuation ran")
        if untyped:
            failures.append(f"{len(untyped)} continuations failed without a typed reason: {untyped[:3]}")
        reasons = {}
        for continuation in self.continuations:
            if not continuation["ok"]:
                reasons[continuation["reason"]] = reasons.get(continuation["reason"], 0) + 1
        succeeded = sum(1 for c in self.continuations if c["ok"])
        return {
            "minutes": self.options.minutes,
            "continuations": len(self.continuations),
            "succeeded": succeeded,
            "failedByReason": reasons,
            "typed": len(typed),
            "agents": agents,
            "samples": self.samples,
            "churnErrors": self.errors[:10],
            "failures": failures,
            "passed": not failures,
        }


def main():
    options = parse()
    root = tempfile.mkdtemp(prefix="baton-soak-")
    world = World(options.bin, root)
    try:
        world.setup()
        soak = Soak(world, options)
        print(f"soak: {options.minutes} min, laptop port {world.ports['laptop']}, desktop port {world.ports['desktop']}, logs in {root}", flush=True)
        soak.run()
        report = soak.report()
    finally:
        world.stop()
    print()
    print(f"continuations: {report['continuations']} ({report['succeeded']} continued, failed by reason: {report['failedByReason'] or 'none'})")
    for name, summary in report["agents"].items():
        print(f"{name:8s} " + "  ".join(f"{metric} first {v['first']} last {v['last']} max {v['max']}" for metric, v in summary.items()))
    for failure in report["failures"]:
        print(f"FAILED: {failure}")
    print("soak: " + ("passed" if report["passed"] else "failed"))
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(report, handle, indent=1)
    if options.keep or not report["passed"]:
        print(f"logs kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(0 if report["passed"] else 1)


if __name__ == "__main__":
    main()
