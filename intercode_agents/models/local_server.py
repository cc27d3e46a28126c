"""In-process llama.cpp servers (xllamacpp), one per weights file and server settings per process.

Loading costs seconds and about 1.9 GB for the default model, so servers are cached and shared by
every :class:`~intercode_agents.models.local.LocalChatModel` with the same key. The server queues
requests itself and decodes up to ``n_parallel`` of them together; each server has its own small
thread pool so that waiting calls never occupy the event loop's default executor.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from intercode_agents.errors import ChatModelError, ConfigError

INSTALL_HINT = "pip install 'intercode-agents[local]'"
# Host memory for saved prompt prefixes, so interleaved episodes reuse their KV cache; llama.cpp's
# default (8 GiB) is more than the small machines this runs on can spare.
_PROMPT_CACHE_MIB = 1024


@dataclass(frozen=True)
class ServerKey:
    """What a loaded server is bound to: changing any of these needs another server."""

    weights: Path
    n_ctx: int  # tokens per request slot
    n_parallel: int
    n_threads: int


@dataclass
class LocalServer:
    key: ServerKey
    server: Any  # xllamacpp.Server
    executor: ThreadPoolExecutor = field(repr=False)

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One OpenAI-style chat completion; raises ChatModelError for a rejected request."""
        try:
            response = self.server.handle_chat_completions(payload)
        except ValueError as exc:  # xllamacpp raises for a malformed request
            raise ChatModelError(f"the local model rejected the request: {exc}") from exc
        if not isinstance(response, dict):
            raise ChatModelError(f"the local model returned {type(response).__name__}, not a JSON object")
        if "error" in response:
            error = response["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ChatModelError(f"the local model failed: {message}")
        return response

    def prompt_ids(self, payload: dict[str, Any]) -> list[int]:
        """The token ids of the prompt a chat completion of ``payload`` reads: the model's chat
        template applied by llama.cpp itself (``/apply-template``), tokenized as a completion tokenizes
        its prompt (``/tokenize``, special tokens read), over the loopback port the server listens on."""
        chat: dict[str, Any] = {
            key: payload[key] for key in ("messages", "tools", "tool_choice") if key in payload
        }
        prompt = self._post("/apply-template", chat)["prompt"]
        found = self._post("/tokenize", {"content": prompt, "add_special": True, "parse_special": True})
        return [int(token) for token in found["tokens"]]

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.server.listening_address}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return json.loads(answer.read())
        except (OSError, ValueError) as exc:
            raise ChatModelError(f"the local model's {path} failed: {exc}") from exc


_servers: dict[ServerKey, LocalServer] = {}
_lock = threading.Lock()


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def import_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise ConfigError(f"the local model needs the xllamacpp package: {INSTALL_HINT}") from exc
    return xllamacpp


def get_server(key: ServerKey) -> LocalServer:
    """Return the cached server for ``key``, loading it on first use."""
    with _lock:
        cached = _servers.get(key)
        if cached is not None:
            return cached
        xllamacpp = import_xllamacpp()
        params = xllamacpp.CommonParams()
        params.model.path = str(key.weights)
        params.n_parallel = key.n_parallel
        params.n_ctx = key.n_ctx * key.n_parallel  # llama.cpp splits n_ctx across the slots
        params.cpuparams.n_threads = key.n_threads
        params.cpuparams_batch.n_threads = key.n_threads
        params.verbosity = -1  # keep llama.cpp's log lines off the user's terminal
        params.warmup = False
        params.cache_ram_mib = _PROMPT_CACHE_MIB
        try:
            server = xllamacpp.Server(params)
        except Exception as exc:  # the extension raises plain exceptions for unreadable models
            raise ChatModelError(f"llama.cpp could not load {key.weights}: {exc}") from exc
        loaded = LocalServer(
            key=key,
            server=server,
            executor=ThreadPoolExecutor(max_workers=key.n_parallel, thread_name_prefix="local-llm"),
        )
        _servers[key] = loaded
        return loaded


def loaded_servers() -> list[ServerKey]:
    with _lock:
        return list(_servers)
