#!/bin/bash
# Leaves the file system as the original InterCode's `git reset --hard; git clean -fd` (run from / before
# every episode and every gold run) left its containers, outside the names its .gitignore skipped:
# - no empty folder: git tracks files only, so the clean removed them all (/tmp and /mnt among them);
# - one time for everything: the reset rewrote every tracked file the first time it ran in a container
#   (the index's stat data never match a new container), undoing the fixtures' `touch -t`, so every
#   file was as recent as the run. A fixed time in the future keeps that true at any run time for the
#   relative tests agents use (`-mmin -60` and `-mtime +7` alike); ctime cannot be set.
set -euo pipefail
IGNORED='.dockerenv|bin|boot|dev|etc|home|lib|media|opt|proc|root|run|sbin|srv|sys|usr|var'
RUN_TIME='2099-01-01 00:00:00'
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
roots
if [ "${#top[@]}" -gt 0 ]; then
  find "${top[@]}" -xdev -depth -type d -empty "${outside_ignored[@]}" -print -delete
fi
roots
if [ "${#top[@]}" -gt 0 ]; then
  find "${top[@]}" -xdev "${outside_ignored[@]}" -exec touch -h -d "$RUN_TIME" {} +
fi
touch -h -d "$RUN_TIME" /
