#!/usr/bin/env python3
"""The agent's shape, counted the same way before and after a change (issue 26, "Show").

Reads the sources as text (it runs nothing) and prints one line per count, or JSON with --json:

  agent.lines          lines of the files that declare `class Agent` or `extension Agent` (the largest type)
  agent.files          how many files those are
  agent.lockBoxes      locks made in Sources/BatonAgent (NIOLockedValueBox, NIOLock, Mutex)
  agent.lockUses       their acquisitions there (withLockedValue, withLock)
  agent.clockReads     direct reads of a clock there (Date(), ContinuousClock.now, NIODeadline.now(), ...)
  modules.lockBoxes,   the same three over the agent and the targets split out of it (BatonAgent, BatonAssociations,
  modules.lockUses,    BatonNotifications, BatonFolders), so code that only moved is still counted
  modules.clockReads
  uncheckedSendable    `@unchecked Sendable` in Sources/
  c5Places             files in Sources/ outside the broker that name C5 ("exactly one of continue or didFail")
  testSleeps           fixed sleeps of 100 ms or more in the in-process test targets (BatonTests, BatonAgentTests,
                       AppleShapedTests, BatonCoreTests, BatonProtocolTests, BatonRegistryTests, BatonSearchTests,
                       BatonFoldersTests),
                       with their total seconds: a sleep inside a polling loop (`while` or `for … in` on the same line) is
                       not counted, nor one over 10 s (a task parked until it is cancelled)

  python3 scripts/architecture-counts.py            # in the repository's root
  python3 scripts/architecture-counts.py --json
  git worktree add /tmp/before OLDER_COMMIT && python3 scripts/architecture-counts.py --root /tmp/before"""
import argparse
import json
import os
import re
import sys

IN_PROCESS_TESTS = [
    "BatonTests", "BatonAgentTests", "AppleShapedTests", "BatonCoreTests", "BatonProtocolTests",
    "BatonRegistryTests", "BatonSearchTests", "BatonFoldersTests",
]
AGENT_MODULES = ["BatonAgent", "BatonAssociations", "BatonNotifications", "BatonFolders"]
# The generic arguments may hold a closure type (`<[@Sendable (A) -> Void]>`): up to the last `>(` on the line.
LOCK_MADE = re.compile(r"NIOLockedValueBox\s*(<.*>)?\s*\(|NIOLock\s*\(\s*\)|\bMutex\s*(<.*>)?\s*\(")
LOCK_USED = re.compile(r"\.withLockedValue\b|\.withLock\b")
CLOCK_READ = re.compile(
    r"\bDate\s*\(\s*\)|ContinuousClock\s*\(\s*\)\.now|ContinuousClock\.now|SuspendingClock\s*\(\s*\)\.now|"
    r"NIODeadline\.now\s*\(|DispatchTime\.now\s*\(|clock_gettime\s*\(")
AGENT_TYPE = re.compile(r"^\s*(public\s+|package\s+)?(final\s+)?(class|extension)\s+Agent\b", re.MULTILINE)
SLEEP = re.compile(
    r"Task\.sleep\s*\(\s*for:\s*\.(seconds|milliseconds)\(\s*([0-9_.]+)\s*\)|"
    r"Thread\.sleep\s*\(\s*forTimeInterval:\s*([0-9_.]+)|\busleep\s*\(\s*([0-9_]+)\s*\)")


def swift_files(root):
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".swift"):
                yield os.path.join(folder, name)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def code_lines(text):
    """The text without `//` comments, so a comment that names a lock or a sleep is not counted."""
    return [re.sub(r"//.*", "", line) for line in text.splitlines()]


def sleep_seconds(match):
    unit, amount, interval, micros = match.groups()
    if amount is not None:
        value = float(amount.replace("_", ""))
        return value if unit == "seconds" else value / 1000
    if interval is not None:
        return float(interval.replace("_", ""))
    return float(micros.replace("_", "")) / 1_000_000


def counts(root):
    agent_dir = os.path.join(root, "Sources", "BatonAgent")
    result = {"agent.lines": 0, "agent.files": 0, "agent.lockBoxes": 0, "agent.lockUses": 0, "agent.clockReads": 0}
    for path in swift_files(agent_dir):
        text = read(path)
        lines = "\n".join(code_lines(text))
        if AGENT_TYPE.search(lines):
            result["agent.files"] += 1
            result["agent.lines"] += len(text.splitlines())
        result["agent.lockBoxes"] += len(LOCK_MADE.findall(lines))
        result["agent.lockUses"] += len(LOCK_USED.findall(lines))
        result["agent.clockReads"] += len(CLOCK_READ.findall(lines))
    for name in ["lockBoxes", "lockUses", "clockReads"]:
        result[f"modules.{name}"] = 0
    for module in AGENT_MODULES:
        for path in swift_files(os.path.join(root, "Sources", module)):
            lines = "\n".join(code_lines(read(path)))
            result["modules.lockBoxes"] += len(LOCK_MADE.findall(lines))
            result["modules.lockUses"] += len(LOCK_USED.findall(lines))
            result["modules.clockReads"] += len(CLOCK_READ.findall(lines))
    unchecked = 0
    c5 = []
    for path in swift_files(os.path.join(root, "Sources")):
        text = read(path)
        unchecked += len(re.findall(r"@unchecked\s+Sendable", "\n".join(code_lines(text))))
        if re.search(r"\bC5\b", text) and "Broker" not in os.path.basename(path):
            c5.append(os.path.relpath(path, root))
    result["uncheckedSendable"] = unchecked
    result["c5Places"] = len(c5)
    sleeps, total = 0, 0.0
    for target in IN_PROCESS_TESTS:
        for path in swift_files(os.path.join(root, "Tests", target)):
            for line in code_lines(read(path)):
                if re.search(r"\bwhile\b|\bfor\s+(\w+|\(.*\))\s+in\b", line):
                    continue
                for match in SLEEP.finditer(line):
                    seconds = sleep_seconds(match)
                    if 0.1 <= seconds <= 10:
                        sleeps += 1
                        total += seconds
    result["testSleeps"] = sleeps
    result["testSleepSeconds"] = round(total, 1)
    return result, c5


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=".", help="the repository's root (default: here)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--list", action="store_true", help="also name the files counted as places that decide C5")
    arguments = parser.parse_args()
    if not os.path.isdir(os.path.join(arguments.root, "Sources", "BatonAgent")):
        sys.exit(f"architecture-counts: no Sources/BatonAgent under {os.path.abspath(arguments.root)}; run it in the repository's root or pass --root")
    result, c5 = counts(arguments.root)
    if arguments.json:
        print(json.dumps(result, indent=2))
    else:
        for name, value in result.items():
            print(f"{name:20} {value}")
    if arguments.list:
        for path in c5:
            print(f"  C5 named in {path}")


if __name__ == "__main__":
    main()
