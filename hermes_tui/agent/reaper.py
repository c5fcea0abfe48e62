"""Runs one ``run_bash`` command when there is no sandbox, and leaves none of its processes behind.

Started by ``shell.py`` as ``python -I -S reaper.py FD COMMAND...`` (a script, not ``-m``: it must
not import anything from the workspace). On Linux it first makes itself a child subreaper, so every
process the command starts stays its descendant even after ``setsid``, ``setpgid`` or a double fork:
orphans are re-parented to it instead of to init. The command runs in a process group of its own.

The reaper ends everything when the command exits, or when FD (a pipe whose only writer is Hermes)
closes: Hermes closes it on timeout and cancel, and the kernel closes it when Hermes dies, kill -9
included. Ending means: kill the command's group, then kill every descendant found in ``/proc`` and
reap, until no child is left. Without ``/proc`` and subreapers (macOS) only the group is killed.
It exits with the command's exit status.
"""

import os
import signal
import sys
import threading

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` by parent links in /proc (empty without /proc)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill(pid: int, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)
    except OSError:
        pass


def _end_everything(group: int) -> None:
    me = os.getpid()
    while True:
        _kill(group, group=True)
        for pid in _descendants(me):
            _kill(pid)
        try:
            os.waitpid(-1, 0)  # one child gone (or re-parented orphans arrive): look again
        except ChildProcessError:
            return


def main() -> None:
    watch = int(sys.argv[1])
    command = sys.argv[2:]
    _become_subreaper()
    child = os.fork()
    if child == 0:
        try:
            os.close(watch)
            os.setpgid(0, 0)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    try:
        os.setpgid(child, child)  # also from here, so the group exists before anyone kills it
    except OSError:
        pass

    def watchdog() -> None:
        while os.read(watch, 1):  # Hermes never writes: this returns only when the pipe closes
            pass
        _kill(child, group=True)
        _kill(child)

    threading.Thread(target=watchdog, daemon=True).start()
    _, status = os.waitpid(child, 0)
    _end_everything(child)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)  # killed by a signal: 128 + its number, as bash says


if __name__ == "__main__":
    main()
