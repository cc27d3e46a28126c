"""The pinned InterCode data: which files belong to which part of it, and their sha256 checksums.

The upstream repository keeps its tasks in four parts (``bash``, ``sql``, ``python``, ``ctf``), and a
download fetches only the parts a caller needs. These names describe that repository's folders; the
project's env families do not depend on them (an env names the files it reads in its YAML).

The data's checksum list (``SHA256SUMS``, in ``sha256sum`` format with paths relative to the data
root) is read at run time from the copy a download comes from; the package pins only that list's own
sha256 (:data:`CHECKSUMS_SHA256`), so every file it names is pinned through it.
"""

from __future__ import annotations

from intercode_agents.errors import ConfigError

INTERCODE_COMMIT = "c3e46d827cfc9d4c704ec078f7abf9f41e3191d8"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/princeton-nlp/intercode/{INTERCODE_COMMIT}"
FAMILIES: tuple[str, ...] = ("bash", "sql", "python", "ctf")

CHECKSUMS_FILE = "SHA256SUMS"
CHECKSUMS_SHA256 = "8c16a54be195259c86ec09a70cfcdbbff69f527c8b145f9787467ad1d5615cdd"

# Path prefixes (relative to the data root) of each family's files; LICENSE.md goes with every family.
_FAMILY_PREFIXES: dict[str, tuple[str, ...]] = {
    "bash": ("data/nl2bash/", "docker/bash_scripts/", "docker/docker.gitignore"),
    "sql": ("data/sql/",),
    "python": ("data/python/",),
    "ctf": ("data/ctf/",),
}
_COMMON = ("LICENSE.md",)

# The task index files each family's loader reads; a data root without them is not usable.
INDEX_FILES: dict[str, tuple[str, ...]] = {
    "bash": (
        "data/nl2bash/nl2bash_fs_1.json",
        "data/nl2bash/nl2bash_fs_2.json",
        "data/nl2bash/nl2bash_fs_3.json",
        "data/nl2bash/nl2bash_fs_4.json",
        "data/nl2bash/test_queries.json",
    ),
    "sql": ("data/sql/spider/ic_spider_dev.json", "data/sql/wikisql/ic_wikisql_dev.json"),
    "python": ("data/python/mbpp/ic_mbpp.json",),
    "ctf": ("data/ctf/ic_ctf.json",),
}


def parse_checksums(text: str) -> dict[str, str]:
    """Map each pinned file (relative path) to its sha256 hex digest, from ``SHA256SUMS``'s text."""
    table: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        digest, _, rel = line.partition("  ")
        table[rel.removeprefix("./")] = digest.strip()
    return table


def check_families(families: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """Validate family names; None means all of them."""
    if families is None:
        return FAMILIES
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ConfigError(f"unknown task family {unknown[0]!r}; choose from {', '.join(FAMILIES)}")
    return tuple(dict.fromkeys(families))


def family_of(rel: str) -> str | None:
    """The part of the pinned data a file (path relative to the data root) belongs to, if any."""
    return next((fam for fam, prefixes in _FAMILY_PREFIXES.items() if rel.startswith(prefixes)), None)


def family_files(family: str, checksums: dict[str, str]) -> dict[str, str]:
    """The files (relative path -> sha256) of ``checksums`` a family needs, LICENSE.md included."""
    prefixes = _FAMILY_PREFIXES[check_families([family])[0]]
    return {rel: digest for rel, digest in checksums.items() if rel.startswith(prefixes) or rel in _COMMON}
