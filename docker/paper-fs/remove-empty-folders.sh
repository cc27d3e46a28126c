#!/bin/bash
# Deletes every empty folder outside the names the original InterCode's .gitignore skipped, innermost
# first: what its `git clean -fd` from / did before every episode and every gold run. Git tracks files
# only, so after that clean no empty folder was left outside the ignored ones (/tmp and /mnt among them).
set -euo pipefail
IGNORED='.dockerenv|bin|boot|dev|etc|home|lib|media|opt|proc|root|run|sbin|srv|sys|usr|var'
set --
for d in /*; do
  [ -d "$d" ] && [ ! -L "$d" ] || continue
  case "|$IGNORED|" in *"|${d#/}|"*) continue ;; esac
  set -- "$@" "$d"
done
if [ "$#" -gt 0 ]; then
  find "$@" -xdev -depth -type d -empty -regextype posix-extended \
    ! -regex "(.*/)?(${IGNORED//./\\.})(/.*)?" -print -delete
fi
