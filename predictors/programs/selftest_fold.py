"""A predictor for testing the runners, not in the catalogue: a trivial folding, and misbehaviour on demand.

The structure is the stem closing the sequence: the outermost bases pair while they are Watson-Crick or
G-U complementary and at least three bases stay in the loop. It is deterministic and cheap, so a test can
compare a batch's results with single runs. ``--fault KIND --on SEQUENCE`` makes the program misbehave on
that one target only (the others of a batch are folded as usual):

- ``loop``: an endless CPU loop; ``sleep``: an endless sleep;
- ``memory``: allocates and touches memory until a limit stops it;
- ``fork``: a fork bomb (every child forks for ever);
- ``crash``: a segmentation fault (SIGSEGV); ``abort``: SIGABRT; ``exit``: ``os._exit(0)`` with no output;
- ``raise``: an uncaught exception; ``fail``: ``sys.exit`` with a message;
- ``flood``: writes stdout without end; ``garbage``: prints text that is no structure.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from predictors.programs._common import print_dot_bracket, read_query

PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}
FAULTS = ("loop", "sleep", "memory", "fork", "crash", "abort", "exit", "raise", "fail", "flood", "garbage")


def predict(sequence: str) -> dict:
    """``{"structure": dot-bracket}``: the closing stem of ``sequence``."""
    chars = ["."] * len(sequence)
    i, j = 0, len(sequence) - 1
    while j - i > 3 and (sequence[i], sequence[j]) in PAIRS:
        chars[i], chars[j] = "(", ")"
        i, j = i + 1, j - 1
    return {"structure": "".join(chars)}


def misbehave(kind: str) -> None:
    if kind == "loop":
        while True:
            pass
    if kind == "sleep":
        signal.pause()
    if kind == "memory":
        hog = []
        while True:
            hog.append(bytearray(64 << 20))
            hog[-1][::4096] = b"x" * len(hog[-1][::4096])  # touch the pages: real memory, not a reservation
    if kind == "fork":
        while True:
            try:
                os.fork()
            except OSError:
                pass
    if kind == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "abort":
        os.abort()
    if kind == "exit":
        os._exit(0)
    if kind == "raise":
        raise RuntimeError("selftest: an uncaught exception")
    if kind == "fail":
        sys.exit("selftest: failed on purpose")
    if kind == "flood":
        line = "x" * 4095 + "\n"
        while True:
            sys.stdout.write(line)
    if kind == "garbage":
        print("this is not a structure")
        sys.exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fasta", help="FASTA file; the first sequence is folded")
    parser.add_argument("--fault", choices=FAULTS, help="misbehave on the target given by --on")
    parser.add_argument("--on", default="", help="the sequence (upper case, U) to misbehave on")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    if args.fault and seq == args.on:
        misbehave(args.fault)
    print_dot_bracket(name, seq, predict(seq)["structure"])


if __name__ == "__main__":
    main()
