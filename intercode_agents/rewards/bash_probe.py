"""Collect :class:`PathDigest` values inside a container with one exec.

The env runs ``probe_command(paths_to_probe(...))`` (an argv list; the paths travel as arguments, so
no quoting is involved) in the agent's and in the gold's container and feeds the stdout to
:func:`parse_probe_output`. It needs bash, coreutils (md5sum with ``-z``), findutils and sort, and only
reads: it never changes the file system it inspects. File hashes run in one batched md5sum call.
"""

from __future__ import annotations

from typing import cast

from intercode_agents.rewards.bash_changes import DigestKind, PathDigest, ProbeRequest

_SHALLOW_MARK = "--shallow"  # paths are absolute, so this argument cannot be a path

# One NUL-terminated record per path: kind TAB md5 TAB files TAB followed TAB path; "followed" is what a
# link leads to as md5sum sees it ("file <md5>", "dir", "other", "missing"), "-" for anything else.
_PROBE_SCRIPT = r"""
export LC_ALL=C
deep=1
files=()
for p in "$@"; do
  if [ "$p" = "--shallow" ]; then deep=0; continue; fi
  if [ -L "$p" ]; then
    h=$(readlink -- "$p" | md5sum)
    if [ -f "$p" ]; then t=$(md5sum < "$p" 2>/dev/null) && t="file ${t%% *}" || t=other
    elif [ -d "$p" ]; then t=dir; elif [ -e "$p" ]; then t=other; else t=missing; fi
    printf 'link\t%s\t1\t%s\t%s\0' "${h%% *}" "$t" "$p"
  elif [ -f "$p" ]; then
    files+=("$p")
  elif [ -d "$p" ] && [ "$deep" = 1 ]; then
    n=$(find "$p" \( -type f -o -type l \) -printf x 2>/dev/null | wc -c)
    h=$( (cd -- "$p" && find . -type f -print0 | sort -z | xargs -0 -r md5sum -z --;
          find . -type l -printf '%p -> %l\0' | sort -z) 2>/dev/null | md5sum)
    printf 'dir\t%s\t%s\t-\t%s\0' "${h%% *}" "$n" "$p"
  elif [ -d "$p" ]; then
    printf 'dir\t-\t0\t-\t%s\0' "$p"
  elif [ -e "$p" ]; then
    printf 'other\t-\t0\t-\t%s\0' "$p"
  else
    printf 'missing\t-\t0\t-\t%s\0' "$p"
  fi
done
if [ "${#files[@]}" -gt 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 md5sum -z -- 2>/dev/null |
    while IFS= read -r -d '' line; do printf 'file\t%s\t1\t-\t%s\0' "${line%%  *}" "${line#*  }"; done
fi
exit 0
"""

_KINDS: frozenset[str] = frozenset({"file", "dir", "link", "other", "missing"})


def probe_command(request: ProbeRequest) -> list[str]:
    """The argv to exec in a container to digest the requested paths."""
    return ["bash", "-c", _PROBE_SCRIPT, "intercode-probe", *request.deep, _SHALLOW_MARK, *request.shallow]


def parse_probe_output(output: str | bytes) -> dict[str, PathDigest]:
    """Parse the probe's stdout into ``{path: PathDigest}`` (an unreadable file is simply absent)."""
    text = output.decode("utf-8", errors="surrogateescape") if isinstance(output, bytes) else output
    digests: dict[str, PathDigest] = {}
    for record in text.split("\0"):
        if not record:
            continue
        fields = record.split("\t", 4)
        if len(fields) != 5 or fields[0] not in _KINDS or not fields[2].isdigit():
            raise ValueError(f"unexpected probe record {record[:200]!r}")
        kind = cast(DigestKind, fields[0])
        md5, followed = (None if value == "-" else value for value in fields[1:4:2])
        digests[fields[4]] = PathDigest(kind, md5, int(fields[2]), followed)
    return digests
