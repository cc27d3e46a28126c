#!/usr/bin/env bash
# Render the HTML + Markdown report of one or more run directories, and optionally a PNG of the HTML.
#
#   scripts/render_report.sh RUN_DIR... [-o OUT.html]
#   SCREENSHOT=report.png scripts/render_report.sh runs/react-local
#
# The screenshot needs Debian's chromium (apt-get install -y chromium); --no-sandbox is for root.
set -euo pipefail

paths="$(python -m intercode_agents.report.writer "$@")"
echo "$paths"
if [[ -n "${SCREENSHOT:-}" ]]; then
  html="$(head -n 1 <<<"$paths")"
  profile="$(mktemp -d)"
  trap 'rm -rf "$profile"' EXIT
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --no-first-run --user-data-dir="$profile" \
    --screenshot="$SCREENSHOT" --window-size="${WINDOW_SIZE:-1200,2000}" "file://$(realpath "$html")" 2>/dev/null
  echo "$SCREENSHOT"
fi
