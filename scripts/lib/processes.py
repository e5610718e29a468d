"""What scripts/faults.py and scripts/load.py share: a temporary folder of devices' state, the logs of the processes
started there, and the ShopSnap bundle their agents launch (its executable a link to the built `shopsnap`)."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def unblock_signals():
    """Clears the signal mask this process was started with, so the processes it starts have none either.

    Run from `swift test`, a script inherits the test process's mask, which blocks SIGTERM (and most others): a child
    that handles SIGTERM itself (the delay relay's asyncio loop) then never sees it, and waiting for it hung
    FaultScriptTests. A mask survives fork and exec; Python's subprocess resets handlers, not the mask."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


class Folder:
    """A temporary folder (baton-PREFIX-...) with the built binaries, a ShopSnap bundle in apps/, state folders and
    the logs of every process started for it."""

    def __init__(self, binaries, prefix, keep):
        self.baton = os.path.abspath(os.path.join(binaries, "baton"))
        self.shopsnap = os.path.abspath(os.path.join(binaries, "shopsnap"))
        self.root = tempfile.mkdtemp(prefix=f"baton-{prefix}-")
        self.keep = keep
        self.processes = []
        self.apps = os.path.join(self.root, "apps")
        bundle = os.path.join(self.apps, "ShopSnap.app")
        os.makedirs(bundle)
        for file in ("Info.plist", "ShopSnap.entitlements"):
            shutil.copy(os.path.join(PACKAGE, "Examples", "ShopSnap.app", file), bundle)
        os.symlink(self.shopsnap, os.path.join(bundle, "shopsnap"))

    def state(self, name):
        return os.path.join(self.root, "state-" + name)

    def log(self, name):
        """What the process logging to `name` wrote so far ("" before it exists)."""
        try:
            with open(os.path.join(self.root, name), errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""

    def wait_for(self, log, text, timeout=30, after=0):
        """Whether `text` appears in log `log` (from character `after` on) within `timeout` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.log(log)[after:]:
                return True
            time.sleep(0.05)
        return False

    def kill_all(self):
        """SIGKILL to every process started here that still runs, and to its process group when it leads one."""
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except OSError:
                    process.kill()

    def stop_all(self, grace=10):
        """SIGTERM to every process still running, newest first, then SIGKILL to any still there after `grace` s."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes = []

    def remove(self):
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
