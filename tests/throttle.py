#!/usr/bin/env python3
"""Run a program at a fraction of the time: stopped (SIGSTOP) for the rest of every 20 ms.

usage: throttle.py SHARE PROGRAM [ARGS...]

A slow node for one rank of an MPI launch, without root or cgroups: in an
MPMD launch, `throttle.py 0.2 ./app` runs that rank for at most 20 % of the
wall-clock time, whatever else the machine does. Exits with the program's
status (128 + the signal if one ended it).
"""
import os
import signal
import sys
import time

PERIOD_S = 0.02


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    share = float(sys.argv[1])
    if not 0 < share <= 1:
        print("throttle.py: SHARE must be in (0, 1]", file=sys.stderr)
        return 2
    child = os.fork()
    if child == 0:
        try:
            os.execvp(sys.argv[2], sys.argv[2:])
        finally:
            os._exit(127)
    for sig in (signal.SIGTERM, signal.SIGINT):  # the launcher ending the rank ends the program
        signal.signal(sig, lambda s, f: (os.kill(child, signal.SIGCONT), os.kill(child, s)))
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
        time.sleep(PERIOD_S * share)
        if share < 1:
            try:
                os.kill(child, signal.SIGSTOP)
                time.sleep(PERIOD_S * (1 - share))
                os.kill(child, signal.SIGCONT)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    sys.exit(main())
