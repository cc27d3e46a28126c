#!/bin/bash
# Leaves the file system as the original InterCode's containers were when its runs began, outside the
# names its .gitignore skipped:
# - no empty folder: its `git reset --hard; git clean -fd` from / before every episode and every gold
#   run removed them all, git tracking files only (/tmp and /mnt among them);
# - the files its fixture script made (all but those it dated with `touch -t`) date from when its
#   images were built, FIXTURE_TIME: the logs' listings show the fs_3 image built on 20 May 2023 at
#   23:44, and its files as that old throughout its runs. Paper execution gives every process the
#   clock of such a run, half an hour later (envs/bash/paper.py, through datefudge, which
#   /etc/ld.so.preload loads into every process and the DATEFUDGE variable switches on), so that
#   `find -mmin +5`, `-mmin -60`, `-mtime +31` select what they selected then, at any time this
#   image is used. The fixture ran after the packages were installed: it made what is newer than
#   dpkg's status file. The members of the archives it made get that time too (extracting them under
#   the paper clock would otherwise warn of time stamps in the future).
set -euo pipefail
IGNORED='.dockerenv|bin|boot|dev|etc|home|lib|media|opt|proc|root|run|sbin|srv|sys|usr|var'
FIXTURE_TIME='2023-05-20 23:44:00 UTC'
outside_ignored=(-regextype posix-extended ! -regex "(.*/)?(${IGNORED//./\\.})(/.*)?")
roots() {  # the top-level folders git looked into
  top=()
  local d
  for d in /*; do
    [ -d "$d" ] && [ ! -L "$d" ] || continue
    case "|$IGNORED|" in *"|${d#/}|"*) continue ;; esac
    top+=("$d")
  done
}
retime_archive() {  # $1: a tar archive the fixture made, rewritten with its members at FIXTURE_TIME
  local archive=$1 work zip=()
  work=$(mktemp -d -p /var/tmp)
  case "$archive" in *.gz | *.tgz) zip=(-z) ;; esac
  tar "${zip[@]}" -tf "$archive" >"$work.list" # the members, in the fixture's order
  tar "${zip[@]}" -xpf "$archive" -C "$work"
  find "$work" -mindepth 1 -exec touch -h -d "$FIXTURE_TIME" {} +
  tar "${zip[@]}" -cf "$archive" -C "$work" --no-recursion -T "$work.list"
  rm -rf "$work" "$work.list"
}

made_by_fixture=$(mktemp -p /var/tmp)
touch -r /var/lib/dpkg/status "$made_by_fixture"

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends datefudge
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log
dpkg -L datefudge | grep '/datefudge\.so$' >/etc/ld.so.preload

roots
if [ "${#top[@]}" -gt 0 ]; then
  find "${top[@]}" -xdev -depth -type d -empty "${outside_ignored[@]}" -print -delete
fi
roots
if [ "${#top[@]}" -gt 0 ]; then
  while IFS= read -r -d '' archive; do
    retime_archive "$archive"
  done < <(find "${top[@]}" -xdev -type f \( -name '*.tar' -o -name '*.tar.gz' -o -name '*.tgz' \) \
    -newer "$made_by_fixture" "${outside_ignored[@]}" -print0)
  find "${top[@]}" -xdev -newer "$made_by_fixture" "${outside_ignored[@]}" \
    -exec touch -h -d "$FIXTURE_TIME" {} +
fi
find / -maxdepth 1 -type f -newer "$made_by_fixture" "${outside_ignored[@]}" -exec touch -h -d "$FIXTURE_TIME" {} +
rm -f "$made_by_fixture"
