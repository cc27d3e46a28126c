"""The Bash guard: which commands may destroy task files, read from a real parse of the command.

Many Bash tasks must change files, so nothing is refused here: a flagged command is checkpointed
before it runs (see :mod:`intercode_agents.guards.checkpoint`), and a policy may roll it back. The
parser is tree-sitter's Bash grammar (``tree-sitter-bash`` on PyPI): it covers the whole language
(functions, ``case``, arithmetic, here-documents, process substitution) and marks what it cannot read
instead of failing, where bashlex, the other parser on PyPI, stops at ``case`` and other constructs.

What is flagged, with the path it reaches (a flag is a :class:`Flag`):

- ``truncate``: a ``>``-family redirection (``>``, ``>|``, ``&>``, ``2>``; not ``>>``, not ``/dev/*``,
  not a descriptor), ``tee`` without ``-a``, ``truncate``;
- ``delete`` and ``recursive_delete``: ``rm`` (recursive with ``-r``/``-R``), ``rmdir``, ``unlink``,
  ``shred``, ``find ... -delete``;
- ``move``: ``mv`` (its sources leave their place, its target is replaced), and the compressors that
  replace their input (``gzip``, ``bzip2``, ``xz`` and their opposites, unless ``-k``/``-c``);
- ``overwrite``: ``cp``, ``install``, ``rsync``, ``ln -f`` onto their target, ``dd of=``, ``tar -x``;
- ``in_place_edit``: ``sed -i``, ``perl -i``;
- ``mode_change``: ``chmod``, ``chown``, ``chgrp``;
- ``opaque``: code the guard cannot see into (``eval`` of computed text, ``bash -c`` of computed
  text, ``python -c``, ``perl -e``, a command whose name is computed, ``git`` commands that rewrite
  the work tree);
- ``unparseable``: text the grammar cannot read.

Wrappers (``sudo``, ``env``, ``nice``, ``nohup``, ``time``, ``timeout``, ``command``, ``exec``,
``xargs``) are looked through; ``find -exec`` and ``xargs`` run their command on computed paths;
``bash -c`` and ``eval`` of a literal are parsed in turn. A path is classified against the task's
directories (``/testbed`` for Bash): ``task`` (inside one), ``ancestor`` (``/`` or a parent of one),
``relative`` (resolved against a ``cd`` earlier in the same command when there is one, else unknown),
``dynamic`` (variables, globs, ``~``) or ``outside``. Only ``outside`` targets are never flagged.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from intercode_agents.errors import ConfigError

FlagKind = Literal[
    "truncate",
    "delete",
    "recursive_delete",
    "move",
    "overwrite",
    "in_place_edit",
    "mode_change",
    "opaque",
    "unparseable",
]
Where = Literal["task", "ancestor", "relative", "dynamic", "outside"]

#: Kinds that change or remove what a file holds (the destructive-mutation metric counts these).
DESTRUCTIVE_KINDS: frozenset[str] = frozenset(
    {"truncate", "delete", "recursive_delete", "move", "overwrite", "in_place_edit"}
)
WRAPPERS = frozenset(
    {"sudo", "env", "nice", "nohup", "time", "timeout", "command", "exec", "stdbuf", "ionice"}
)
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
INTERPRETERS = {"python": "-c", "python3": "-c", "perl": "-e", "ruby": "-e", "node": "-e", "php": "-r"}
COMPRESSORS = frozenset({"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "zstd", "unzstd"})
_GLOB = re.compile(r"[*?\[]|^~|\{[^}]*,[^}]*\}")
_TRUNCATING = frozenset({">", ">|", "&>", ">&"})
GIT_REWRITES = frozenset({"clean", "checkout", "reset", "restore", "rm", "mv", "stash"})
_OPTIONS_WITH_VALUE: dict[str, tuple[str, ...]] = {
    "sudo": ("-u", "-g"),
    "nice": ("-n",),
    "timeout": ("-s", "-k"),
    "xargs": ("-I", "-d", "-P", "-L", "-E", "-n", "-s"),
    "stdbuf": ("-i", "-o", "-e"),
    "ionice": ("-c", "-n"),
}


@dataclass(frozen=True)
class Flag:
    """One thing a command may do to task files."""

    kind: FlagKind
    command: str  # the command (or redirection) as written, shortened
    target: str | None = None  # the path as written (None for opaque and unparseable)
    where: Where = "dynamic"
    path: str | None = None  # the absolute path, when it is known

    def describe(self) -> str:
        what = self.kind.replace("_", " ")
        return f"{what} of {self.target}" if self.target else f"{what}: {self.command}"


@dataclass
class _Word:
    value: str | None  # the literal text, None when something in it is computed
    text: str  # as written


@dataclass
class _Walk:
    task_dirs: tuple[str, ...]
    source: bytes
    cwd: str | None = None
    flags: list[Flag] = field(default_factory=list)
    depth: int = 0


@cache
def _parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError as exc:  # pragma: no cover - both are dependencies
        raise ConfigError("the Bash guard needs tree-sitter and tree-sitter-bash (pip install them)") from exc
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _text(node: Any, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _word(node: Any, source: bytes) -> _Word:
    """A word's literal value, or None where any part of it is computed (expansions, globs)."""
    text = _text(node, source)
    kind = node.type
    if kind == "raw_string":
        return _Word(text[1:-1], text)
    if kind == "word" or kind == "number":
        if _GLOB.search(text) or "$" in text or "`" in text:
            return _Word(None, text)
        return _Word(re.sub(r"\\(.)", r"\1", text), text)
    if kind == "string":
        parts = [c for c in node.named_children if c.type != "string_content"]
        return _Word(None if parts else text[1:-1], text)
    if kind == "concatenation":
        values = [_word(child, source).value for child in node.named_children]
        if any(v is None for v in values):
            return _Word(None, text)
        return _Word("".join(v for v in values if v is not None), text)
    return _Word(None, text)


def classify(path: str | None, cwd: str | None, task_dirs: Sequence[str]) -> tuple[Where, str | None]:
    """Where a path is with respect to the task's directories, and its absolute form if known."""
    if path is None:
        return "dynamic", None
    if not path.startswith("/"):
        if cwd is None:
            return "relative", None
        path = posixpath.join(cwd, path)
    absolute = posixpath.normpath(path)
    if absolute.startswith("//"):
        absolute = "/" + absolute.lstrip("/")
    for task_dir in task_dirs:
        if absolute == task_dir or absolute.startswith(task_dir.rstrip("/") + "/"):
            return "task", absolute
        if absolute == "/" or task_dir.startswith(absolute.rstrip("/") + "/"):
            return "ancestor", absolute
    return "outside", absolute


def _options(args: list[_Word]) -> tuple[set[str], list[_Word]]:
    """Short and long options (``-rf`` gives r and f) and the other arguments, ``--`` respected."""
    options: set[str] = set()
    rest: list[_Word] = []
    ended = False
    for arg in args:
        value = arg.value
        if not ended and value == "--":
            ended = True
        elif not ended and value is not None and value.startswith("--"):
            options.add(value.split("=", 1)[0])
        elif not ended and value is not None and value.startswith("-") and len(value) > 1:
            options.update(value[1:])
        else:
            rest.append(arg)
    return options, rest


def _option_value(args: list[_Word], names: tuple[str, ...]) -> _Word | None:
    """The argument after the first of ``names`` (``-C DIR``), or None."""
    for i, arg in enumerate(args[:-1]):
        if arg.value in names:
            return args[i + 1]
    return None


def _extracts(options: set[str], args: list[_Word]) -> bool:
    """Whether a tar command extracts (``-x``, ``--extract``, or the old style ``tar xzf``)."""
    old_style = bool(args) and (args[0].value or "").startswith("x")
    return bool(options & {"x", "--extract", "--get"}) or old_style


def _in_place(options: set[str], args: list[_Word]) -> bool:
    return "i" in options or any((a.value or "").startswith("--in-place") for a in args)


def _edited_files(args: list[_Word], rest: list[_Word]) -> list[_Word]:
    """The files ``sed -i``/``perl -i`` rewrite: the operands, less the script (the first operand, or
    the values of ``-e``/``-f``)."""
    scripts = [
        args[i + 1] for i, a in enumerate(args[:-1]) if a.value in ("-e", "--expression", "-f", "--file")
    ]
    if not scripts:
        return rest[1:]
    return [operand for operand in rest if all(operand is not script for script in scripts)]


class _Analyzer:
    def __init__(self, walk: _Walk) -> None:
        self.walk = walk

    def flag(self, kind: FlagKind, command: str, target: _Word | None) -> None:
        if target is None:
            self.walk.flags.append(Flag(kind, _short(command)))
            return
        where, path = classify(target.value, self.walk.cwd, self.walk.task_dirs)
        if where == "outside":
            return
        if target.value is not None and target.value.startswith("/dev/"):
            return
        self.walk.flags.append(Flag(kind, _short(command), target.text, where, path))

    def command(self, name: _Word, args: list[_Word], text: str) -> None:
        """Flags of one simple command (name and arguments as words)."""
        if name.value is None:
            self.flag("opaque", text, None)
            return
        program = posixpath.basename(name.value)
        if program in WRAPPERS or program == "xargs":
            self._wrapped(program, args, text)
            return
        options, rest = _options(args)
        if program == "cd":
            return
        if program in ("rm", "rmdir", "unlink", "shred"):
            kind: FlagKind = "recursive_delete" if options & {"r", "R", "--recursive"} else "delete"
            for target in rest:
                self.flag(kind, text, target)
        elif program == "truncate":
            sized = [a for i, a in enumerate(args) if not (i > 0 and args[i - 1].value in ("-s", "--size"))]
            for target in _options(sized)[1]:
                if not re.fullmatch(r"[-+<>/%]?\d+[KMGTPEZY]?i?B?", target.value or ""):
                    self.flag("truncate", text, target)
        elif program == "tee" and not options & {"a", "--append"}:
            for target in rest:
                self.flag("truncate", text, target)
        elif program == "mv":
            for target in rest:
                self.flag("move", text, target)
        elif program in ("cp", "install", "rsync") or (program == "ln" and options & {"f", "--force"}):
            directory = _option_value(args, ("-t", "--target-directory"))
            for target in [directory] if directory else rest[-1:] if len(rest) >= 2 else []:
                self.flag("overwrite", text, target)
        elif program == "dd":
            for arg in args:
                if arg.value is None and arg.text.startswith("of="):
                    self.flag("overwrite", text, _Word(None, arg.text[3:]))
                elif arg.value is not None and arg.value.startswith("of="):
                    self.flag("overwrite", text, _Word(arg.value[3:], arg.text[3:]))
        elif program == "tar" and _extracts(options, args):
            directory = _option_value(args, ("-C", "--directory"))
            self.flag("overwrite", text, directory or _Word(None, "."))
        elif program in ("sed", "perl") and _in_place(options, args):
            for target in _edited_files(args, rest):
                self.flag("in_place_edit", text, target)
        elif program in ("chmod", "chown", "chgrp"):
            for target in rest[1:]:
                self.flag("mode_change", text, target)
        elif program in COMPRESSORS and not options & {"k", "c", "--keep", "--stdout", "t", "l"}:
            for target in rest:
                self.flag("move", text, target)
        elif program == "find":
            self._find(args, text)
        elif program in SHELLS:
            self._shell(options, args, text)
        elif program == "eval":
            values = [a.value for a in args]
            if any(v is None for v in values):
                self.flag("opaque", text, None)
            else:
                self.nested(" ".join(v for v in values if v is not None))
        elif program in ("source", ".") or INTERPRETERS.get(program) in {a.value for a in args}:
            self.flag("opaque", text, None)
        elif program == "git" and rest and rest[0].value in GIT_REWRITES:
            self.flag("opaque", text, None)

    def _wrapped(self, program: str, args: list[_Word], text: str) -> None:
        """The command a wrapper runs; xargs and find -exec feed it computed paths."""
        rest = list(args)
        while (
            rest
            and rest[0].value is not None
            and (rest[0].value.startswith("-") or (program == "env" and "=" in rest[0].value))
        ):
            option = rest.pop(0).value or ""
            if option in _OPTIONS_WITH_VALUE.get(program, ()) and rest:
                rest.pop(0)
        if program == "timeout" and rest:
            rest.pop(0)  # the duration
        if not rest:
            return
        extra = [_Word(None, "{stdin}")] if program == "xargs" else []
        self.command(rest[0], rest[1:] + extra, text)

    def _find(self, args: list[_Word], text: str) -> None:
        starts = []
        for arg in args:
            if arg.value is not None and (arg.value.startswith("-") or arg.value in ("(", "!", ")")):
                break
            starts.append(arg)
        starts = starts or [_Word(".", ".")]
        values = [a.value for a in args]
        if "-delete" in values:
            for start in starts:
                self.flag("recursive_delete", text, start)
        for i, value in enumerate(values):
            if value in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(args):
                inner = []
                for arg in args[i + 2 :]:
                    if arg.value in (";", "+", "\\;"):
                        break
                    inner.append(_Word(None, arg.text) if "{}" in arg.text else arg)
                self.command(args[i + 1], inner, text)

    def _shell(self, options: set[str], args: list[_Word], text: str) -> None:
        if "c" not in options:
            if any(a.value is None or not a.value.startswith("-") for a in args):
                self.flag("opaque", text, None)  # a script file: its text is not here
            return
        codes = [a for a in args if not (a.value or "").startswith("-")]
        if not codes or codes[0].value is None:
            self.flag("opaque", text, None)
        else:
            self.nested(codes[0].value)

    def nested(self, code: str) -> None:
        if self.walk.depth >= 4:
            self.flag("opaque", code, None)
            return
        inner = _Walk(self.walk.task_dirs, code.encode(), self.walk.cwd, depth=self.walk.depth + 1)
        _walk_tree(inner)
        self.walk.flags.extend(inner.flags)


def _command_words(node: Any, source: bytes) -> tuple[_Word | None, list[_Word]]:
    name = node.child_by_field_name("name")
    args = [_word(child, source) for child in node.children_by_field_name("argument")]
    return (_word(name.named_children[0] if name.named_children else name, source) if name else None), args


def _redirect(node: Any, walk: _Walk, analyzer: _Analyzer) -> None:
    operators = [c.type for c in node.children if not c.is_named]
    destination = node.child_by_field_name("destination")
    if destination is None or not operators:
        return
    target = _word(destination, walk.source)
    if operators[0] in _TRUNCATING and not re.fullmatch(r"-|\d+", target.value or "x"):
        analyzer.flag("truncate", _text(node, walk.source), target)


def _nodes(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _analyze(node: Any, walk: _Walk) -> None:
    """Flags of every command and redirection inside ``node``."""
    analyzer = _Analyzer(walk)
    for current in _nodes(node):
        if current.type == "command":
            name, args = _command_words(current, walk.source)
            if name is not None:
                analyzer.command(name, args, _text(current, walk.source))
        elif current.type == "file_redirect":
            _redirect(current, walk, analyzer)
        elif current.type == "ERROR" or current.is_missing:
            walk.flags.append(Flag("unparseable", _short(_text(current, walk.source))))


def _statements(node: Any) -> Iterator[Any]:
    """The program's statements in order, ``a && b ; c`` flattened."""
    for child in node.named_children:
        if child.type == "list":
            yield from _statements(child)
        elif child.type != "comment":
            yield child


def _walk_tree(walk: _Walk) -> None:
    tree = _parser().parse(walk.source)
    for statement in _statements(tree.root_node):
        if statement.type == "command":
            name, args = _command_words(statement, walk.source)
            if name is not None and name.value == "cd":
                target = args[0].value if args else None
                where, path = classify(target, walk.cwd, ()) if target else ("dynamic", None)
                walk.cwd = path if where != "dynamic" and path else None
                continue
        _analyze(statement, walk)
        if any(
            n.type == "command"
            and _command_words(n, walk.source)[0]
            and (
                _command_words(n, walk.source)[0].value == "cd"  # type: ignore[union-attr]
            )
            for n in _nodes(statement)
        ):
            walk.cwd = None  # a cd inside a compound statement: the directory is unknown from here on
    if tree.root_node.has_error and not any(f.kind == "unparseable" for f in walk.flags):
        walk.flags.append(Flag("unparseable", _short(walk.source.decode("utf-8", "replace"))))


def bash_flags(command: str, task_dirs: Sequence[str], *, cwd: str | None = None) -> list[Flag]:
    """What ``command`` may do to the files under ``task_dirs`` (empty: nothing the guard sees).

    ``cwd`` is the shell's directory when the caller knows it (relative paths resolve against it)."""
    walk = _Walk(tuple(d.rstrip("/") or "/" for d in task_dirs), command.encode("utf-8", "replace"), cwd)
    _walk_tree(walk)
    unique: dict[tuple[str, str | None, str | None], Flag] = {}
    for flag in walk.flags:
        unique.setdefault((flag.kind, flag.target, flag.command), flag)
    return list(unique.values())
