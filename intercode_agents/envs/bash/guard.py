"""The Bash guard: which commands may destroy task files, read from a real parse of the command.

Many Bash tasks must change files, so nothing is refused here: a flagged command is checkpointed
before it runs (see :mod:`intercode_agents.guards.checkpoint`), and a policy may roll it back. The
parser is tree-sitter's Bash grammar (``tree-sitter-bash`` on PyPI): it covers the whole language
(functions, ``case``, arithmetic, here-documents, process substitution) and marks what it cannot read
instead of failing, where bashlex, the other parser on PyPI, stops at ``case`` and other constructs.

What is flagged, with the path it reaches (a flag is a :class:`Flag`):

- ``truncate``: a ``>``-family redirection (``>``, ``>|``, ``&>``, ``2>``; not ``>>``, not a device,
  not a descriptor), ``tee`` without ``-a``, ``truncate``;
- ``delete`` and ``recursive_delete``: ``rm`` (recursive with ``-r``/``-R``), ``rmdir``, ``unlink``,
  ``shred``, ``find ... -delete``;
- ``move``: ``mv``, ``rename`` (its sources leave their place, its target is replaced), and the
  compressors that replace their input (``gzip``, ``bzip2``, ``xz`` and their opposites, unless
  ``-k``/``-c``);
- ``overwrite``: the writers by position (``cp``, ``install``, ``rsync``, ``ln -f`` onto their target,
  ``uniq``'s and ``xxd -r``'s second operand), by option (``dd of=``, ``sort``/``shuf``/``iconv``
  ``-o``, ``tar -f`` when it creates or adds, ``wget -O``, ``curl -o``, ``find -fprint``, ...), and the
  extractors (``tar -x``, ``unzip``, ``cpio -i``) onto their folder;
- ``in_place_edit``: ``sed -i``, ``perl -i``, ``gawk -i inplace``, ``patch``;
- ``mode_change``: ``chmod``, ``chown``, ``chgrp``;
- ``opaque``: code the guard cannot see into: an interpreter given code at all (``python3``, ``perl``,
  ``ruby``, ``node``, ... with ``-c``/``-e``, a script, or its input: a pipe, a here-document), a
  shell reading a pipe, a file or a here-document with expansions, ``eval``/``bash -c`` of computed
  text, ``source``, ``awk`` programs that write or run commands, editors, a command whose name is
  computed, ``git`` commands that rewrite the work tree;
- ``unparseable``: text the grammar cannot read.

Wrappers (``sudo``, ``env``, ``nice``, ``nohup``, ``setsid``, ``time``, ``timeout``, ``command``,
``exec``, ``busybox``, ``xargs``) are looked through; ``find -exec`` and ``xargs`` run their command on
computed paths; ``bash -c``, ``eval`` and a shell's literal here-document are parsed in turn.

Every path is resolved before any rule is applied: variables that hold a literal value
(``f=/testbed/a; rm "$f"``) are substituted, a relative path is joined to the directory of an earlier
``cd`` in the same command, and the result is normalised (``/dev/../testbed`` is ``/testbed``). It is
then classified against the task's directories (``/testbed`` for Bash): ``task`` (inside one),
``ancestor`` (``/`` or a parent of one), ``relative`` (no ``cd`` tells where it is), ``dynamic``
(computed: command substitutions, globs, ``~``, variables of unknown value) or ``outside``. Only
``outside`` targets (and devices under ``/dev``) are never flagged. What no reading of the text can
know (a symlink that leads into the task directory, a file named by a program's output) is why the
destructive-mutation metric is measured on the file system, not taken from these flags.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
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

#: Kinds that change or remove what a file holds.
DESTRUCTIVE_KINDS: frozenset[str] = frozenset(
    {"truncate", "delete", "recursive_delete", "move", "overwrite", "in_place_edit"}
)
WRAPPERS = frozenset(
    {
        "sudo", "env", "nice", "nohup", "setsid", "time", "timeout", "command", "exec", "stdbuf",
        "ionice", "busybox", "chronic", "unbuffer",
    }
)  # fmt: skip
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash", "mksh"})
# Interpreters: any code they are given may write anywhere (their inline-code options for the record).
INTERPRETERS = frozenset(
    {
        "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh",
        "Rscript", "julia", "guile", "expect",
    }
)  # fmt: skip
EDITORS = frozenset({"ed", "ex", "vi", "vim", "nvim", "nano", "emacs", "red"})
# Options that only print a version or help: such a call runs no code.
_INFO_OPTIONS = frozenset({"--version", "-V", "--help", "-h", "-v", "-version", "-help"})
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
# Programs that write the file an option names: program -> (its short option letter or None, long options).
WRITER_OPTIONS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "sort": ("o", ("--output",)),
    "shuf": ("o", ("--output",)),
    "iconv": ("o", ("--output",)),
    "wget": ("O", ("--output-document",)),
    "curl": ("o", ("--output",)),
    "gpg": ("o", ("--output",)),
}
# Programs whose n-th operand (0-based) is a file they write (``xxd`` only with ``-r``).
POSITIONAL_WRITERS: dict[str, int] = {"uniq": 1, "xxd": 1, "zip": 0}
# Extractors: what they unpack lands in a folder (an option's, else the working directory).
EXTRACTORS: dict[str, tuple[str, ...]] = {"unzip": ("-d",), "cpio": ("-D", "--directory"), "7z": ("-o",)}
# tar's options that take a value, for the old style (``tar czf FILE``) and option clusters.
_TAR_VALUE_LETTERS = "bCfgHKLNTVX"
_TAR_WRITES = frozenset(
    {*"crAu", "--create", "--append", "--update", "--catenate", "--concatenate", "--delete"}
)
# awk writes files or runs commands through print/printf redirections, pipes and system().
_AWK_WRITES = re.compile(r"\bsystem\s*\(|\bprintf?\b[^;{}]*?(?:>|\|)|\|\s*getline|\bclose\s*\(")
# Commands that (re)assign shell variables in ways this guard does not follow.
_ASSIGNERS = frozenset(
    {"read", "mapfile", "readarray", "printf", "let", "getopts", "declare", "typeset", "local",
     "export", "readonly", "unset", "source", ".", "eval"}
)  # fmt: skip


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
    value: str | None  # the literal text (variables of known value substituted), None when computed
    text: str  # as written


@dataclass
class _Walk:
    task_dirs: tuple[str, ...]
    source: bytes
    cwd: str | None = None
    variables: dict[str, str] = field(default_factory=dict)  # names whose literal value is known
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


def _expansion(node: Any, source: bytes, variables: Mapping[str, str]) -> str | None:
    """The value of ``$name`` or ``${name}`` when the variable holds a known literal, else None."""
    named = node.named_children
    if len(named) != 1 or named[0].type != "variable_name":
        return None  # ${name:-x}, ${#name}, ${name[0]}, $1, $@: computed
    if node.type == "expansion" and _text(node, source) != "${" + _text(named[0], source) + "}":
        return None
    return variables.get(_text(named[0], source))


def _word(node: Any, source: bytes, variables: Mapping[str, str] | None = None) -> _Word:
    """A word's literal value, or None where any part of it is computed (unknown expansions, globs)."""
    known = variables or {}
    text = _text(node, source)
    kind = node.type
    if kind == "raw_string":
        return _Word(text[1:-1], text)
    if kind in ("word", "number"):
        if _GLOB.search(text) or "$" in text or "`" in text:
            return _Word(None, text)
        return _Word(re.sub(r"\\(.)", r"\1", text), text)
    if kind in ("simple_expansion", "expansion"):
        return _Word(_expansion(node, source, known), text)
    if kind == "string":
        parts: list[str] = []
        for child in node.named_children:
            if child.type == "string_content":
                parts.append(re.sub(r'\\([$`"\\\n])', r"\1", _text(child, source)))
            elif child.type in ("simple_expansion", "expansion"):
                value = _expansion(child, source, known)
                if value is None:
                    return _Word(None, text)
                parts.append(value)
            else:
                return _Word(None, text)
        return _Word("".join(parts), text)
    if kind == "concatenation":
        values = [_word(child, source, known).value for child in node.named_children]
        if any(v is None for v in values) or len(node.named_children) != len(node.children):
            return _Word(None, text)
        return _Word("".join(v for v in values if v is not None), text)
    return _Word(None, text)


def classify(path: str | None, cwd: str | None, task_dirs: Sequence[str]) -> tuple[Where, str | None]:
    """Where a path is with respect to the task's directories, and its absolute, normalised form if
    known."""
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


def _option_values(args: list[_Word], letter: str | None, longs: tuple[str, ...]) -> list[_Word]:
    """Every value given to short option ``letter`` (``-o F``, ``-oF``, ``-no F`` in a cluster) or to
    one of ``longs`` (``--output F``, ``--output=F``); an argument computed where the option may
    be counts as a computed value."""
    found: list[_Word] = []
    i = 0
    while i < len(args):
        arg, value = args[i], args[i].value
        nxt = args[i + 1] if i + 1 < len(args) else None
        if value == "--":
            break
        if value is not None and value.startswith("--"):
            name, eq, given = value.partition("=")
            if name in longs:
                if eq:
                    found.append(_Word(given, arg.text.partition("=")[2]))
                elif nxt is not None:
                    found.append(nxt)
                    i += 1
        elif value is not None and letter and value.startswith("-") and len(value) > 1:
            at = value.find(letter, 1)
            if at != -1:
                attached = value[at + 1 :]
                if attached:
                    found.append(_Word(attached, attached))
                elif nxt is not None:
                    found.append(nxt)
                    i += 1
        elif value is None and letter and arg.text.startswith("-") and letter in arg.text.split("$")[0]:
            found.append(_Word(None, arg.text))
        i += 1
    return found


def _tar_archives_written(args: list[_Word]) -> list[_Word]:
    """The archive a tar command writes (``-cf F``, ``--create --file=F``, old style ``tar czf F``),
    or nothing when it only lists or extracts."""
    options, _ = _options(args)
    first = args[0].value if args else None
    old_style = first is not None and re.fullmatch(r"[A-Za-z]+", first) is not None
    letters = set(first) if old_style and first else set()
    if not (options | letters) & _TAR_WRITES:
        return []
    if old_style and first and "f" in first:
        values = [letter for letter in first if letter in _TAR_VALUE_LETTERS]
        position = 1 + values.index("f")
        return args[position : position + 1]
    return _option_values(args, "f", ("--file",))


def _extracts(options: set[str], args: list[_Word]) -> bool:
    """Whether a tar command extracts (``-x``, ``--extract``, or the old style ``tar xzf``)."""
    old_style = bool(args) and re.fullmatch(r"[A-Za-z]*x[A-Za-z]*", args[0].value or "") is not None
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


def _only_informs(args: list[_Word]) -> bool:
    """The call only asks for a version or help (``python3 --version``)."""
    return bool(args) and all(a.value in _INFO_OPTIONS for a in args)


def _here_document(node: Any | None, source: bytes) -> tuple[bool, str | None]:
    """(``node``'s command reads a redirected input, the here-document's text if it is literal)."""
    parent = node.parent if node is not None else None
    if parent is None or parent.type != "redirected_statement":
        redirects = [c for c in (node.children if node is not None else []) if "redirect" in c.type]
    else:
        redirects = parent.children_by_field_name("redirect")
    text = None
    reads = False
    for redirect in redirects:
        if redirect.type == "heredoc_redirect":
            reads = True
            start = next((c for c in redirect.named_children if c.type == "heredoc_start"), None)
            body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
            quoted = start is not None and _text(start, source)[:1] in ("'", '"', "\\")
            literal = body is None or quoted or all(c.type == "heredoc_content" for c in body.named_children)
            text = (_text(body, source) if body is not None else "") if literal else None
        elif redirect.type == "herestring_redirect":
            reads = True
        elif redirect.type == "file_redirect" and any(c.type == "<" for c in redirect.children):
            reads = True
    return reads, text


class _Analyzer:
    def __init__(self, walk: _Walk) -> None:
        self.walk = walk

    def flag(self, kind: FlagKind, command: str, target: _Word | None) -> None:
        if target is None:
            self.walk.flags.append(Flag(kind, _short(command)))
            return
        where, path = classify(target.value, self.walk.cwd, self.walk.task_dirs)
        if where == "outside" or (path is not None and (path == "/dev" or path.startswith("/dev/"))):
            return
        self.walk.flags.append(Flag(kind, _short(command), target.text, where, path))

    def command(self, name: _Word, args: list[_Word], text: str, node: Any | None = None) -> None:
        """Flags of one simple command (name and arguments as words; ``node`` is its parse node)."""
        if name.value is None:
            self.flag("opaque", text, None)
            return
        program = posixpath.basename(name.value)
        if program in WRAPPERS or program == "xargs":
            self._wrapped(program, args, text, node)
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
        elif program in ("mv", "rename", "prename", "mmv"):
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
        elif program == "tar":
            for archive in _tar_archives_written(args):
                self.flag("overwrite", text, archive)
            if _extracts(options, args):
                directory = _option_value(args, ("-C", "--directory"))
                self.flag("overwrite", text, directory or _Word(None, "."))
        elif program in EXTRACTORS and (program != "cpio" or options & {"i", "--extract"}):
            directory = _option_value(args, EXTRACTORS[program])
            self.flag("overwrite", text, directory or _Word(".", "."))
        elif program in ("sed", "perl") and _in_place(options, args):
            for target in _edited_files(args, rest):
                self.flag("in_place_edit", text, target)
        elif program in ("awk", "gawk", "mawk", "nawk", "busybox-awk"):
            self._awk(options, args, rest, text)
        elif program == "patch":
            self._patch(args, rest, text)
        elif program in ("chmod", "chown", "chgrp"):
            for target in rest[1:]:
                self.flag("mode_change", text, target)
        elif program in COMPRESSORS and not options & {"k", "c", "--keep", "--stdout", "t", "l"}:
            for target in rest:
                self.flag("move", text, target)
        elif program == "find":
            self._find(args, text)
        elif program in SHELLS:
            self._shell(options, args, text, node)
        elif program == "eval":
            values = [a.value for a in args]
            if any(v is None for v in values):
                self.flag("opaque", text, None)
            else:
                self.nested(" ".join(v for v in values if v is not None))
        elif program in ("source", ".") or program in EDITORS:
            self.flag("opaque", text, None)
        elif program in INTERPRETERS or re.fullmatch(r"python3?\.\d+|perl5[.\d]*", program):
            if not _only_informs(args):
                self.flag("opaque", text, None)  # -c/-e code, a script, or its input (a pipe, a here-doc)
        elif program == "git" and rest and rest[0].value in GIT_REWRITES:
            self.flag("opaque", text, None)
        if program in WRITER_OPTIONS:
            letter, longs = WRITER_OPTIONS[program]
            for target in _option_values(args, letter, longs):
                self.flag("overwrite", text, target)
        index = POSITIONAL_WRITERS.get(program)
        if index is not None and len(rest) > index and (program != "xxd" or "r" in options):
            self.flag("overwrite", text, rest[index])

    def _awk(self, options: set[str], args: list[_Word], rest: list[_Word], text: str) -> None:
        """awk only reads, unless its program writes or runs commands, or edits in place."""
        included = _option_value(args, ("-i", "--include"))
        if included is not None and included.value in ("inplace", "inplace.awk"):
            for target in [r for r in rest if r is not included][1:]:  # (less the program)
                self.flag("in_place_edit", text, target)
            return
        if "f" in options or "--file" in options:
            self.flag("opaque", text, None)  # the program is in a file
            return
        values = [a.value for a in args]
        skip = {i + 1 for i, v in enumerate(values) if v in ("-v", "-F", "--assign", "--field-separator")}
        program = next(
            (a for i, a in enumerate(args) if i not in skip and not (a.value or "x").startswith("-")), None
        )
        if program is None:
            return
        if program.value is None or _AWK_WRITES.search(program.value):
            self.flag("opaque", text, None)

    def _patch(self, args: list[_Word], rest: list[_Word], text: str) -> None:
        output = _option_values(args, "o", ("--output",))
        if output:
            for target in output:
                self.flag("overwrite", text, target)
        elif rest:
            self.flag("in_place_edit", text, rest[0])
        else:
            self.flag("opaque", text, None)  # the files are named inside the patch

    def _wrapped(self, program: str, args: list[_Word], text: str, node: Any | None) -> None:
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
        self.command(rest[0], rest[1:] + extra, text, node)

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
            if value in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
                self.flag("overwrite", text, args[i + 1])
            if value in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(args):
                inner = []
                for arg in args[i + 2 :]:
                    if arg.value in (";", "+", "\\;"):
                        break
                    inner.append(_Word(None, arg.text) if "{}" in arg.text else arg)
                self.command(args[i + 1], inner, text)

    def _shell(self, options: set[str], args: list[_Word], text: str, node: Any | None) -> None:
        if "c" in options:
            codes = [a for a in args if not (a.value or "").startswith("-")]
            if not codes or codes[0].value is None:
                self.flag("opaque", text, None)
            else:
                self.nested(codes[0].value)
            return
        if _only_informs(args) or "n" in options:
            return  # a version, or a syntax check
        operands = [a for a in args if a.value is None or not a.value.startswith("-")]
        if operands:
            self.flag("opaque", text, None)  # a script file: its text is not here
            return
        redirected, document = _here_document(node, self.walk.source)
        if redirected and document is not None:
            self.nested(document)  # a literal here-document: read it as the shell will
        else:
            self.flag("opaque", text, None)  # a pipe, a file or an expanded here-document

    def nested(self, code: str) -> None:
        if self.walk.depth >= 4:
            self.flag("opaque", code, None)
            return
        inner = _Walk(
            self.walk.task_dirs,
            code.encode(),
            self.walk.cwd,
            dict(self.walk.variables),
            depth=self.walk.depth + 1,
        )
        _walk_tree(inner)
        self.walk.flags.extend(inner.flags)


def _command_words(node: Any, walk: _Walk) -> tuple[_Word | None, list[_Word]]:
    name = node.child_by_field_name("name")
    args = [_word(child, walk.source, walk.variables) for child in node.children_by_field_name("argument")]
    if name is None:
        return None, args
    return _word(name.named_children[0] if name.named_children else name, walk.source, walk.variables), args


def _program(node: Any, walk: _Walk) -> str | None:
    """The literal name of a command node's program (None when computed or absent)."""
    name = _command_words(node, walk)[0]
    return name.value if name is not None else None


def _redirect(node: Any, walk: _Walk, analyzer: _Analyzer) -> None:
    operators = [c.type for c in node.children if not c.is_named]
    destination = node.child_by_field_name("destination")
    if destination is None or not operators:
        return
    target = _word(destination, walk.source, walk.variables)
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
            name, args = _command_words(current, walk)
            if name is not None:
                analyzer.command(name, args, _text(current, walk.source), current)
        elif current.type == "file_redirect":
            _redirect(current, walk, analyzer)
        elif current.type == "ERROR" or current.is_missing:
            walk.flags.append(Flag("unparseable", _short(_text(current, walk.source))))


def _assignment(node: Any, walk: _Walk) -> tuple[str, str | None]:
    """(name, literal value or None) of a ``name=value`` node."""
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    label = _text(name, walk.source) if name is not None else ""
    if name is None or name.type != "variable_name" or _text(node, walk.source).startswith(label + "+="):
        return label, None
    return label, "" if value is None else _word(value, walk.source, walk.variables).value


def _forget_assigned(node: Any, walk: _Walk) -> None:
    """Drop what ``node`` may assign from the known variables (all of them where it cannot tell)."""
    for current in _nodes(node):
        if current.type == "variable_assignment":
            walk.variables.pop(_assignment(current, walk)[0], None)
        elif current.type == "for_statement":
            variable = current.child_by_field_name("variable")
            if variable is not None:
                walk.variables.pop(_text(variable, walk.source), None)
        elif current.type in ("unset_command", "declaration_command") or (
            current.type == "command" and _program(current, walk) in _ASSIGNERS
        ):
            walk.variables.clear()


def _statement(node: Any, walk: _Walk) -> None:
    """One statement of a sequence: a ``cd`` or an assignment changes what later paths mean."""
    if node.type == "command":
        name, args = _command_words(node, walk)
        if name is not None and name.value == "cd":
            target = args[0].value if args else None
            where, path = classify(target, walk.cwd, ()) if target and target != "-" else ("dynamic", None)
            walk.cwd = path if where != "dynamic" and path else None
            return
    if node.type in ("variable_assignment", "variable_assignments"):
        assignments = [node] if node.type == "variable_assignment" else node.named_children
        for assignment in assignments:
            _analyze(assignment, walk)  # (a command substitution in the value runs)
            label, value = _assignment(assignment, walk)
            if value is None:
                walk.variables.pop(label, None)
            else:
                walk.variables[label] = value
        return
    has_cd = any(n.type == "command" and _program(n, walk) in ("cd", "pushd", "popd") for n in _nodes(node))
    if has_cd:
        walk.cwd = None  # a cd inside a compound statement: where its paths lead is unknown
    _analyze(node, walk)
    _forget_assigned(node, walk)


def _sequence(node: Any, walk: _Walk) -> None:
    """The statements of a program or list in order (``a && b ; c``). The grammar hangs a redirection
    after a list (``cd d && printf x > f``) on the whole list; Bash applies it to the last command, so
    it is judged after the list's statements, with their ``cd``."""
    for child in node.named_children:
        body = child.child_by_field_name("body") if child.type == "redirected_statement" else None
        if child.type == "list":
            _sequence(child, walk)
        elif body is not None and body.type == "list":
            _sequence(body, walk)
            analyzer = _Analyzer(walk)
            for redirect in child.children_by_field_name("redirect"):
                for current in _nodes(redirect):
                    if current.type == "file_redirect":
                        _redirect(current, walk, analyzer)
                    elif current.type == "command_substitution":
                        _analyze(current, walk)
        elif child.type != "comment":
            _statement(child, walk)


def _walk_tree(walk: _Walk) -> None:
    tree = _parser().parse(walk.source)
    _sequence(tree.root_node, walk)
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
