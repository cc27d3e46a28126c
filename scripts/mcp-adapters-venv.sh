#!/usr/bin/env bash
# A virtual environment for the langchain-mcp-adapters test client. The adapters (as of 0.3.2)
# require mcp < 2, while our server is built on mcp 2.x, so the client cannot share the project's
# environment. The venv holds its own copy of all the client needs: this project's dependencies with
# the `agents` extra (LangChain), mcp 1.x and the adapters. It never leans on the system Python's
# site-packages, which on a new machine hold none of them; the client imports this checkout's code
# through PYTHONPATH. It is rebuilt when pyproject.toml changes (a stamp of its digest inside it).
#   scripts/mcp-adapters-venv.sh [DIR]   (default: ~/.cache/intercode-agents/mcp-adapters-venv)
# Prints DIR. $PYTHON (python3) makes it; the test passes its own interpreter.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
DIR=${1:-${INTERCODE_AGENTS_MCP_ADAPTERS_VENV:-$HOME/.cache/intercode-agents/mcp-adapters-venv}}
STAMP="$DIR/intercode-agents-pyproject.sha256"
WANT=$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)
CHECK="import langchain.agents, langchain_mcp_adapters.tools, mcp; assert mcp.__name__"

if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] || ! "$DIR/bin/python" -c "$CHECK" 2>/dev/null; then
  if [ -e "$DIR" ] && [ ! -f "$DIR/pyvenv.cfg" ]; then
    echo "$DIR exists and is no virtual environment: remove it or name another folder" >&2
    exit 1
  fi
  "$PYTHON" -m venv --clear "$DIR"
  "$DIR/bin/python" -m pip install -q --disable-pip-version-check \
    "$ROOT[agents]" 'mcp>=1.24,<2' 'langchain-mcp-adapters>=0.3.2' 2>&1 \
    | { grep -v -e "Running pip as the 'root' user" || true; }  # (pip's status decides)
  "$DIR/bin/python" -c "$CHECK"
  PYTHONPATH="$ROOT" "$DIR/bin/python" -c "import intercode_agents.strategies"
  echo "$WANT" > "$STAMP"
fi
echo "$DIR"
