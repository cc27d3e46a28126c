#!/usr/bin/env python3
"""Tells you whether your guess is the flag."""

import sys

KEY = 0x2A
EXPECTED = [
    90,
    67,
    73,
    69,
    105,
    126,
    108,
    81,
    82,
    26,
    88,
    117,
    88,
    25,
    92,
    25,
    88,
    89,
    25,
    78,
    117,
    30,
    94,
    117,
    70,
    30,
    89,
    94,
    87,
]


def check(guess: str) -> bool:
    return [ord(c) ^ KEY for c in guess] == EXPECTED


if __name__ == "__main__":
    guess = sys.argv[1] if len(sys.argv) > 1 else input("flag? ")
    print("correct!" if check(guess) else "wrong.")
