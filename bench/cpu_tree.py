#!/usr/bin/env python3
"""CPU seconds of a command and of every process it started, orphans included.

    python3 bench/cpu_tree.py OUTFILE COMMAND [ARGS...]

Writes one line to OUTFILE: "EXIT USER SYS WALL" (exit status of COMMAND; user and system CPU
seconds of the whole process tree; wall seconds), as `/usr/bin/time -f '%x %U %S %e'` does.
Why not /usr/bin/time: a process's CPU time reaches its parent's account only when the parent
waits for it. Chromium's GPU and renderer processes (where SwiftShader compiles and the wasm
runs) outlive or escape the processes that started them, nobody waits for them, and /usr/bin/time
missed them: test_wasm_webgpu measured 45 CPU s for 877 s of wall at load 10 (2026-12-02).
Here this process becomes the "child subreaper" (Linux prctl PR_SET_CHILD_SUBREAPER): every
orphan of the tree is re-parented to it, and it waits for all of them, so their CPU time counts.
After COMMAND exits it waits up to 30 s for the remaining processes of the tree and then kills
them (their CPU so far counts; a note names how many were left).
"""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: cpu_tree.py OUTFILE COMMAND [ARGS...]")
    out, cmd = sys.argv[1], sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"cpu_tree: prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        except OSError as e:
            print(f"cpu_tree: {cmd[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127)
    rc, deadline, left = None, None, 0
    while True:
        try:
            if deadline is None:
                p, status = os.waitpid(-1, 0)
            else:
                p, status = os.waitpid(-1, os.WNOHANG)
                if p == 0:
                    if time.monotonic() > deadline:
                        left = kill_tree()
                        deadline = float("inf")
                    time.sleep(0.05)
                    continue
        except ChildProcessError:
            break
        if p == pid:
            rc = os.waitstatus_to_exitcode(status)
            if rc < 0:
                rc = 128 - rc
            wall = time.monotonic() - t0
            deadline = time.monotonic() + 30
    ru = os.times()
    with open(out, "w") as f:
        f.write(f"{rc} {ru.children_user:.2f} {ru.children_system:.2f} {wall:.2f}\n")
    if left:
        print(f"cpu_tree: killed {left} processes still running 30 s after the command ended", file=sys.stderr)


def kill_tree():
    """SIGKILL the processes whose parent is this one (the tree's orphans); returns how many."""
    me, n = os.getpid(), 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            try:
                os.kill(int(d), signal.SIGKILL)
                n += 1
            except OSError:
                pass
    return n


if __name__ == "__main__":
    main()
