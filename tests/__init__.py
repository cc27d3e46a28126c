"""The intercode-agents test suite (real Docker engine, real images)."""

from pathlib import Path

#: The checkout: tests find the README, examples and ``../shared`` from here, whatever folder they sit in.
ROOT = Path(__file__).resolve().parent.parent
