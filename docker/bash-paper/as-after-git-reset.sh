#!/bin/bash
# Leaves the file system as the original InterCode's containers were when its runs began, outside the
# names its .gitignore skipped:
# - no empty folder: its `git reset --hard; git clean -fd` from / before every episode and every gold
#   run removed them all, git tracking files only (/tmp and /mnt among them);
# - the files its fixture script made (all but those it dated with `touch -t`) were as recent as the
#   run, which began soon after the images were built (`find -mmin -60` listed them). They get a time
#   in the future here, so that they stay recent at any run time for the relative tests agents use
#   (`-mmin -60`, `-amin -60`, `-mtime +7`); a ctime cannot be set, so `-cmin` still depends on when the
#   image was built. The fixture ran after the packages were installed: it made what is newer than
#   dpkg's status file.
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
  find "${top[@]}" -xdev -newer /var/lib/dpkg/status "${outside_ignored[@]}" -exec touch -h -d "$RUN_TIME" {} +
fi
