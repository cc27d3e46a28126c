"""``python -m intercode_agents`` runs the command line (the same as ``intercode-agents``)."""

from intercode_agents.cli import main

main()
