#!/usr/bin/env bash
# A virtual environment for langchain-mcp-adapters, which (as of 0.3.2) requires mcp < 2, while our
# server is built on mcp 2.x. The venv sits on top of the system packages (LangChain, this project)
# and adds mcp 1.x and the adapters, so a test can drive our server from that other SDK version.
#   scripts/mcp-adapters-venv.sh [DIR]   (default: ~/.cache/intercode-agents/mcp-adapters-venv)
set -euo pipefail
PYTHON=${PYTHON:-python3}
DIR=${1:-${INTERCODE_AGENTS_MCP_ADAPTERS_VENV:-$HOME/.cache/intercode-agents/mcp-adapters-venv}}
if ! "$DIR/bin/python" -c "import langchain_mcp_adapters.tools" 2>/dev/null; then
  "$PYTHON" -m venv --system-site-packages "$DIR"
  "$DIR/bin/python" -m pip install -q --disable-pip-version-check 'mcp>=1.24,<2' 'langchain-mcp-adapters>=0.3.2' 2>&1 \
    | grep -v -e "Running pip as the 'root' user" -e "is ignored: it is neither" || true
  "$DIR/bin/python" -c "import langchain_mcp_adapters.tools"
fi
echo "$DIR"
