"""Bursty CPU load, as a shared machine's neighbours make it, for robustness checks.

    python -m tools.bursty_load --workers 2 --seconds 600 &
    .venv/bin/pytest notebooks/08_attention_at_scale.ipynb   # three times in a row

Each worker alternates busy and idle spells of 3-300 ms: half the busy spells
spin in pure Python (CPU), half copy a 32 MiB array (memory bandwidth). A
steady burner slows every size of a measurement alike and hides timing-fragile
asserts; bursts hit one size and not the next, which is what breaks them.
It stops by itself after ``--seconds``, or at SIGTERM/SIGINT.
"""

import argparse
import multiprocessing
import random
import signal
import sys
import time

import numpy as np


def worker(seed, until):
    """Alternate busy and idle spells until the wall clock passes ``until``."""
    rng = random.Random(seed)
    source = np.ones(8 * 2**20, dtype=np.float32)  # 32 MiB
    target = np.empty_like(source)
    while time.time() < until:
        end = time.perf_counter() + rng.uniform(0.003, 0.3)
        if rng.random() < 0.5:
            count = 0
            while time.perf_counter() < end:
                count += 1
        else:
            while time.perf_counter() < end:
                np.copyto(target, source)
        time.sleep(rng.uniform(0.003, 0.3))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=600)
    args = parser.parse_args(argv)
    until = time.time() + args.seconds
    workers = [
        multiprocessing.Process(target=worker, args=(i, until), daemon=True)
        for i in range(args.workers)
    ]
    for process in workers:
        process.start()

    def stop(*_):
        for process in workers:
            process.terminate()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for process in workers:
        process.join()


if __name__ == "__main__":
    main()
