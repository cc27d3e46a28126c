"""The Docker backend (local and remote engines) and its Podman adapter: the only code of the project
that talks to an engine client (aiodocker for sandboxes, docker-py for images and clean-up without a
loop)."""
