#!/usr/bin/env python3
"""Property-list interop with Python's plistlib, an implementation independent of Baton's and Foundation's.

  plist_interop.py write DIR   writes every fixture as DIR/NAME.binary.plist and DIR/NAME.xml.plist
  plist_interop.py check DIR   reads every DIR/NAME.FORMAT.plist (written by Baton) and compares it with the
                               fixture NAME built here; prints "ok NAME.FORMAT" or "MISMATCH ..." and exits 1
                               on any mismatch or unreadable file

The values mirror Tests/BatonCoreTests/Support/Fixtures.swift; keep the two in step.
"""
import datetime
import math
import os
import plistlib
import sys

# Deep nesting recurses in plistlib's reader and in compare() below.
sys.setrecursionlimit(20000)

DEPTH_LIMIT = 256


def nested(depth):
    value = "deep"
    for _ in range(depth):
        value = [value]
    return value


FIXTURES = {
    "scalars": {
        "string": "hello",
        "empty": "",
        "unicode": "h\u00e9llo w\u00f6rld \U0001F600 \U0001D11E \u4e2d\u6587 \U0010FFFF",
        "markup": "a < b && c > d \"quoted\" 'single'",
        "int_zero": 0,
        "int_small": 42,
        "int_neg": -1,
        "int_255": 255,
        "int_256": 256,
        "int_u32": 1 << 32,
        "int64_min": -(1 << 63),
        "int64_max": (1 << 63) - 1,
        "uint64_max": (1 << 64) - 1,
        "real": 3.5,
        "real_small": 1e-300,
        "real_negative_zero": -0.0,
        "nan": float("nan"),
        "inf": float("inf"),
        "ninf": float("-inf"),
        "true": True,
        "false": False,
        "data": bytes(range(256)),
        "empty_data": b"",
        "date_1900": datetime.datetime(1900, 1, 1),
        "date_1969": datetime.datetime(1969, 7, 20, 20, 17, 40),
        "date_2001": datetime.datetime(2001, 1, 1),
        "date_2040": datetime.datetime(2040, 2, 29, 12),
        "date_2262": datetime.datetime(2262, 4, 11, 23, 47, 16),
        "date_9999": datetime.datetime(9999, 12, 31, 23, 59, 59),
        "empty_array": [],
        "empty_dict": {},
    },
    "big_array": [i if i % 2 == 0 else "s%d" % i for i in range(10000)],
    "mixed": {
        "version": 2,
        "items": [
            {"name": "Milk", "quantity": 2, "done": False},
            {"name": "Cr\u00e8me fra\u00eeche", "quantity": 1, "done": True, "tags": ["dairy", "\U0001F95B"]},
        ],
        "selection": {"start": 3, "length": 0},
    },
    "nested_at_limit": nested(DEPTH_LIMIT),
}

# Written for Baton to refuse; never expected back.
WRITE_ONLY = {"nested_past_limit": nested(DEPTH_LIMIT + 1)}


def compare(expected, actual, path="top"):
    """Returns a list of differences; NaN equals NaN, -0.0 must keep its sign, bool is not int."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return [] if type(expected) is type(actual) and expected == actual else ["%s: %r != %r" % (path, expected, actual)]
    if isinstance(expected, float):
        if not isinstance(actual, float):
            return ["%s: expected real %r, got %r" % (path, expected, actual)]
        if math.isnan(expected) and math.isnan(actual):
            return []
        if expected != actual or math.copysign(1, expected) != math.copysign(1, actual):
            return ["%s: %r != %r" % (path, expected, actual)]
        return []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return ["%s: expected dict, got %r" % (path, type(actual))]
        problems = []
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                problems.append("%s.%s: missing" % (path, key))
            elif key not in expected:
                problems.append("%s.%s: unexpected" % (path, key))
            else:
                problems += compare(expected[key], actual[key], path + "." + key)
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            return ["%s: expected list of %d, got %r" % (path, len(expected), type(actual))]
        problems = []
        for index, (left, right) in enumerate(zip(expected, actual)):
            problems += compare(left, right, "%s[%d]" % (path, index))
        return problems
    if type(expected) is not type(actual) or expected != actual:
        return ["%s: %r != %r" % (path, expected, actual)]
    return []


def write(directory):
    os.makedirs(directory, exist_ok=True)
    for name, value in list(FIXTURES.items()) + list(WRITE_ONLY.items()):
        for label, fmt in (("binary", plistlib.FMT_BINARY), ("xml", plistlib.FMT_XML)):
            with open(os.path.join(directory, "%s.%s.plist" % (name, label)), "wb") as handle:
                plistlib.dump(value, handle, fmt=fmt, sort_keys=True)
    print("wrote %d fixtures" % (2 * (len(FIXTURES) + len(WRITE_ONLY))))
    return 0


def check(directory):
    failures = 0
    checked = 0
    for filename in sorted(os.listdir(directory)):
        if not filename.endswith(".plist"):
            continue
        name, label, _ = filename.rsplit(".", 2)
        if name not in FIXTURES:
            print("MISMATCH %s: no such fixture" % filename)
            failures += 1
            continue
        try:
            with open(os.path.join(directory, filename), "rb") as handle:
                actual = plistlib.load(handle)
        except Exception as error:  # any failure to read is a finding, reported with its reason
            print("MISMATCH %s.%s: plistlib cannot read it: %r" % (name, label, error))
            failures += 1
            continue
        # The fixtures' dates are whole seconds, so XML (which carries no fractions) compares exactly too.
        problems = compare(FIXTURES[name], actual)
        checked += 1
        if problems:
            failures += 1
            print("MISMATCH %s.%s: %s" % (name, label, "; ".join(problems[:5])))
        else:
            print("ok %s.%s" % (name, label))
    print("checked %d files, %d mismatches" % (checked, failures))
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        print(__doc__)
        sys.exit(2)
    sys.exit(write(sys.argv[2]) if sys.argv[1] == "write" else check(sys.argv[2]))
