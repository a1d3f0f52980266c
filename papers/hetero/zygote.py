"""A parent that has imported the rank's code once and forks a run's CPU-emulation ranks from it.

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007

Every rank of the CPU emulation used to be a fresh `python -m papers.hetero.train`, which imports torch
(about 1.5 s of CPU a rank) and, at its first optimizer, torch._dynamo (about 1 s more); a quick seed starts
12 such ranks, four at a time on 2 cores. `Zygote` starts one `python -m papers.hetero.zygote` with the
ranks' environment (one BLAS thread, no GPU visible), which imports `papers.hetero.train` and `PRELOAD` (the
list the pool workers' server preloads, `common.workerstart`), then forks one child per request that becomes one
rank: its own session (the launcher kills it with its process group), stdin from /dev/null, stdout and stderr into
the rank's log, the rank's environment and working directory, then `train.main(argv)`, what the command line runs.
The zygote computes nothing and, single-threaded, forks (it refuses to start otherwise); it reaps its children and
reports each one's exit status (a signal as its negative number, as `subprocess` does). It exits when its stdin
closes, at once (`os._exit`: it holds nothing worth a teardown, which took ~0.7 s with torch loaded).

A rank of the emulated cluster (`launch.launch(..., cluster=...)`) runs inside its node's network namespace: the
request names it ("netns") and the child enters it before the rank's code runs (`enter_netns`), as
`ip netns exec <namespace> python -m papers.hetero.train ...` (the command line's way) does before it execs the
rank: the network namespace, then a mount namespace of its own in which /sys describes that network. Only the CPU
emulation uses the zygote (`launch.launch`): a rank on a GPU is started as the command line as before.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import subprocess
import sys
import threading
import time
import traceback

# what a rank imports before its first step is what a pool's worker imports, and the pool workers' server preloads it:
# numpy, torch and torch._dynamo (torch.optim's optimizers import it on their first call, about 1 s of CPU a rank)
from common.workerstart import PRELOAD


CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000   # <sched.h>
MS_RDONLY, MS_BIND, MS_REC, MS_SLAVE, MNT_DETACH = 1, 4096, 16384, 1 << 19, 2   # <sys/mount.h>
NETNS_RUN_DIR, NETNS_ETC_DIR = "/var/run/netns", "/etc/netns"   # where `ip netns add` pins a namespace; its /etc files


def enter_netns(name: str) -> None:
    """Put this (single-threaded) process where `ip netns exec <name>` puts its command (iproute2's `netns_switch`):
    into the network namespace pinned at /var/run/netns/<name>, then into a mount namespace of its own (nothing
    propagates back) in which /sys is a sysfs of that network namespace (/sys/class/net lists its interfaces) and
    each file of /etc/netns/<name>/, if any, is bound over its /etc namesake. An OSError names the step that failed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what} ({name}): {os.strerror(err)}")

    fd = os.open(os.path.join(NETNS_RUN_DIR, name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        check(libc.setns(fd, CLONE_NEWNET), "setns")
    finally:
        os.close(fd)
    check(libc.unshare(CLONE_NEWNS), "unshare the mount namespace")
    check(libc.mount(b"", b"/", b"none", MS_SLAVE | MS_REC, None), "mount / as a slave")
    flags = 0
    if libc.umount2(b"/sys", MNT_DETACH) != 0:   # no sysfs there, or one that cannot go: overlay it (read-only stays so)
        try:
            flags = MS_RDONLY if os.statvfs("/sys").f_flag & os.ST_RDONLY else 0
        except OSError:
            pass
    check(libc.mount(name.encode(), b"/sys", b"sysfs", flags, None), "mount /sys")
    etc = os.path.join(NETNS_ETC_DIR, name)
    for entry in sorted(os.listdir(etc)) if os.path.isdir(etc) else []:   # as ip: a file that cannot be bound is skipped
        libc.mount(os.path.join(etc, entry).encode(), os.path.join("/etc", entry).encode(), b"none", MS_BIND, None)


def _child(req: dict, main) -> None:
    """In the forked child: become the rank of `req` and never return."""
    code = 1
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        if req.get("netns"):   # a node of the emulated cluster
            enter_netns(req["netns"])
        code = main(list(req["argv"]))
    except SystemExit as err:
        code = err.code if isinstance(err.code, int) else (0 if err.code is None else 1)
    except BaseException:  # noqa: BLE001 - a rank's crash is its log's last lines and exit 1
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(int(code) & 0xFF)


def serve(module: str = "papers.hetero.train") -> None:
    """The zygote's loop: import `module` (its `main(argv)` runs a rank), say "ready", then fork one child per
    request line {"log", "cwd", "env", "argv"[, "netns"]} (answered {"pid"}) and report {"exit": pid, "code"} for
    each child that ends, until stdin closes."""
    import importlib

    main = importlib.import_module(module).main
    for lazy in PRELOAD:
        importlib.import_module(lazy)
    out = sys.stdout
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    if threads != 1:  # forking a process with other threads may copy a lock one of them holds: refuse
        out.write(json.dumps({"error": f"{threads} threads after the imports (a BLAS pool? set OMP_NUM_THREADS=1)"}) + "\n")
        out.flush()
        return
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    stdin, buf, children = sys.stdin.fileno(), b"", set()
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.02 if children else None)   # idle: sleep until a request
        if ready:
            chunk = os.read(stdin, 1 << 16)
            if not chunk:   # the launcher is done: reap what has ended (its CPU time then counts), leave the rest
                while children and os.waitpid(-1, os.WNOHANG)[0] != 0:
                    children.pop()
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _child(req, main)
                children.add(pid)
                out.write(json.dumps({"pid": pid}) + "\n")
                out.flush()
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            children.discard(pid)
            out.write(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n")
            out.flush()


class Zygote:
    """The launcher's side: start the zygote (`env`, `cwd`: what the ranks import torch with), `spawn` ranks,
    `poll` their exit codes."""

    def __init__(self, env: dict, cwd: str, timeout_s: float = 120.0):
        # its own session: a signal to the caller's process group (a kernel's interrupt) does not reach it; it ends
        # when its stdin closes, with the caller
        self.proc = subprocess.Popen([sys.executable, "-m", "papers.hetero.zygote"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        self._buf, self.codes = b"", {}
        self._lock = threading.Lock()   # launches in several threads share one zygote: one request or poll at a time
        msg = self._read(timeout_s)
        if msg is None or "ready" not in msg:
            self.close()
            raise RuntimeError("the rank zygote did not start" + (f": {msg['error']}" if msg and "error" in msg else ""))

    def _read(self, timeout_s: float):
        """The next message, or None when none came within `timeout_s` (or the zygote ended)."""
        end = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def spawn(self, argv: list, env: dict, cwd: str, log: str, netns: str | None = None) -> int:
        """Fork one rank (inside network namespace `netns`, if given: `enter_netns`); its pid."""
        req = {"argv": argv, "env": env, "cwd": cwd, "log": log, **({"netns": netns} if netns else {})}
        with self._lock:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
            while True:
                msg = self._read(60.0)
                if msg is None:
                    raise RuntimeError("the rank zygote stopped answering")
                if "pid" in msg:
                    return msg["pid"]
                self.codes[msg["exit"]] = msg["code"]

    def poll(self) -> dict:
        """{pid: exit code} of every child reported ended so far."""
        with self._lock:
            while True:
                msg = self._read(0.0)
                if msg is None:
                    return dict(self.codes)
                if "exit" in msg:
                    self.codes[msg["exit"]] = msg["code"]

    def close(self) -> None:
        """End the zygote (its children are the launcher's to kill)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


if __name__ == "__main__":
    try:
        serve()
    except KeyboardInterrupt:  # asked to stop: its children are the launcher's
        pass
    sys.stdout.flush()
    os._exit(0)   # nothing to tear down: it only imported and forked (the interpreter's teardown with torch: ~0.7 s)
