"""Loading a user's code by reference: ``PATH.py:NAME`` or ``package.module:NAME``.

The CLI's ``--agent`` (an agent factory), ``--strategy`` (a Strategy subclass) and ``--model`` (a chat
model, or a function that makes one) take such references. Every problem is a
:class:`~intercode_agents.errors.ConfigError` that names the file (and the line, where there is one):
a missing file, a syntax error, an import that raises, a missing name (with the names the file does
define). :func:`where` finds the line of the user's file an exception came from, so that errors the
user's code raises later name it too.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from intercode_agents.errors import ConfigError

_FORMS = "write PATH.py:NAME (a file) or package.module:NAME (an importable module)"


@dataclass(frozen=True)
class Loaded:
    """An object loaded from a user's code, and where it came from."""

    obj: Any
    ref: str  # as the user wrote it
    source: str  # the file's resolved path, or the module's name
    name: str  # the attribute's name
    file: str | None  # the file that defines the module (None for built-in modules)

    @property
    def label(self) -> str:
        """A short, stable name for records: ``file_stem:NAME`` or ``package.module:NAME``."""
        stem = Path(self.source).stem if self.source.endswith(".py") else self.source
        return f"{stem}:{self.name}"


def is_reference(text: str) -> bool:
    """Whether ``text`` reads as a code reference rather than a plain name (``react``, ``local``)."""
    head, sep, tail = text.rpartition(":")
    return bool(sep and head and tail and (head.endswith(".py") or "/" in head or "." in head))


def anchored(ref: str) -> str:
    """``ref`` with a file's path made absolute (from this process's working folder), so that the
    same file is found from another working folder (a Ray node's, on a shared file system); module
    references and plain names are returned as they are."""
    head, sep, name = ref.strip().rpartition(":")
    if not (sep and head and name) or not (head.endswith(".py") or "/" in head or "\\" in head):
        return ref
    return f"{Path(head).expanduser().absolute()}:{name}"


def load_object(ref: str, what: str) -> Loaded:
    """The object ``ref`` names. ``what`` (``"agent factory"``, ``"strategy"``) goes into the errors."""
    head, sep, name = ref.strip().rpartition(":")
    if not sep or not head or not name:
        raise ConfigError(f"bad {what} reference {ref!r}: {_FORMS}")
    if not name.isidentifier():
        raise ConfigError(f"bad {what} reference {ref!r}: {name!r} is not a Python name")
    if head.endswith(".py") or "/" in head or "\\" in head:
        module, source = _load_file(Path(head).expanduser(), what, ref)
    else:
        module, source = _import_module(head, what, ref)
    if not hasattr(module, name):
        defined = sorted(n for n, v in vars(module).items() if not n.startswith("_") and callable(v))
        hint = f"; it defines {', '.join(defined)}" if defined else ""
        raise ConfigError(f"{what} {ref!r}: {source} has no {name!r}{hint}")
    return Loaded(getattr(module, name), ref, source, name, getattr(module, "__file__", None))


def _load_file(path: Path, what: str, ref: str) -> tuple[ModuleType, str]:
    if not path.is_file():
        raise ConfigError(f"{what} {ref!r}: the file {path} does not exist")
    resolved = path.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    module_name = f"intercode_user_{resolved.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name], str(resolved)
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{what} {ref!r}: {path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[module_name]
        raise ConfigError(f"{what} {ref!r}: {path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        del sys.modules[module_name]
        at = where(exc, str(resolved))
        raise ConfigError(
            f"{what} {ref!r}: importing {path} raised {type(exc).__name__}: {exc}"
            + (f" (at {at})" if at else "")
        ) from exc
    return module, str(resolved)


def _import_module(name: str, what: str, ref: str) -> tuple[ModuleType, str]:
    try:
        return importlib.import_module(name), name
    except ModuleNotFoundError as exc:
        raise ConfigError(f"{what} {ref!r}: cannot import module {name!r} ({exc})") from None
    except SyntaxError as exc:
        raise ConfigError(f"{what} {ref!r}: {exc.filename}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        at = where(exc)
        raise ConfigError(
            f"{what} {ref!r}: importing {name} raised {type(exc).__name__}: {exc}"
            + (f" (at {at})" if at else "")
        ) from exc


def where(exc: BaseException, file: str | None = None) -> str | None:
    """``path:line`` of the deepest frame of ``exc``'s traceback in ``file`` (any file when None)."""
    frames: list[traceback.FrameSummary] = list(traceback.extract_tb(exc.__traceback__))
    if file is not None:
        wanted = str(Path(file).resolve())
        frames = [f for f in frames if str(Path(f.filename).resolve()) == wanted]
    if not frames:
        return None
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno}"


def describe(exc: BaseException, file: str | None = None) -> str:
    """``Type: message (at path:line)``, the line being the deepest one in ``file`` (any file)."""
    at = where(exc, file)
    return f"{type(exc).__name__}: {exc}" + (f" (at {at})" if at else "")
