"""The paper's execution mode for the Bash and CTF envs: each action run as the original InterCode ran it.

The original harness ran an action by giving docker-py's ``exec_run`` the single string
``/bin/bash -c "<action>"``. docker-py splits a string command with ``shlex.split`` (POSIX rules),
so the command that ran was not always the action:

- the action's own double quotes close and reopen the outer ones, so they vanish
  (``find . -name "*.txt"`` ran as ``find . -name *.txt``, and bash expanded the glob);
- unquoted whitespace between them splits the script: bash runs the first part and takes the next
  one as ``$0`` (``cut -d" " -f2`` cut the rest of the command off);
- a backslash outside single quotes escapes the next character, inside double quotes only ``"`` and
  ``\\``; single quotes between two inner double quotes quote for real;
- an unbalanced quote makes the split fail, and the action never ran ("Malformed command").

(The Bash test split ran on an Alpine image with ``/bin/sh -c`` instead: :func:`paper_shell`.)

Every action was a new process, so no shell state survived (variables, functions, ``set``, ``umask``,
aliases). Only the working directory was carried, and only this way: an action that *starts with*
``cd`` (no leading blanks) has everything after its first ``cd `` taken as one path, resolved
against the current folder by text alone (``..`` pops a segment, ``.`` and empty ones vanish, an
argument starting with ``/`` starts from the root; no ``~``, variables or globs), and the action is
replaced by ``cd <that path>`` run in ``/``. When that exits 0 the path becomes the folder of later
actions, whatever it is: ``cd /testbed && ls`` lists /testbed and then leaves the folder
``/testbed && ls``, in which Docker cannot start a process, so later actions fail with its
"chdir to cwd" error until another ``cd`` succeeds. An action starting with ``cd`` but holding no
``cd `` (``cd``, ``cdrecord``) made the original raise and stop the whole run; here it runs as
written, with nothing tracked.

The output is stdout and stderr as one stream, decoded as UTF-8: output that is not UTF-8 made the
decode fail and the observation "Malformed command" (the command had run). An action running longer
than the original's 10 seconds gives the observation "Command timed out" (the original left such a
command running in the container; here it is killed).

The gold ran the same way, in the image's working folder: :func:`gold_command` turns a gold into the
session command that reproduces that, so the Bash env's gold machinery runs it unchanged.

Both containers started each episode (and each gold run) after ``git reset --hard; git clean -fd``
in a repository at ``/``. Git tracks files only, so that clean removed every empty folder outside
the names its .gitignore skipped (``/tmp`` and ``/mnt`` among them): ``echo x > /tmp/f`` failed there.
Paper execution therefore runs on image variants without those folders, ``<image>-paper``
(``docker/bash-paper``), so an untouched sandbox stays pristine and the change lists stay clean.

The clock. The original's runs began soon after its images were built (May 2023): the files its
fixture made were minutes old, the ones it dated (``touch -t``) as old as their dates then, and
golds such as ``find -mmin +5 -delete`` or ``find -mtime +31`` chose their files by those ages. The
paper images date what the fixture made to the build the logs show (20 May 2023, 23:44), and every
action and gold here runs with the clock stopped at :data:`PAPER_CLOCK`, half an hour later (datefudge,
loaded into every process of a paper image by ``/etc/ld.so.preload``, reads ``DATEFUDGE``): so the
same files are as old at any time the images are used, and two runs select the same files. What the
kernel stamps (a file written now, every change time) stays in real time, later than the clock: new
files count as recent, as they did. ``env`` lists the two variables.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from intercode_agents.envs.base import ActionResult
from intercode_agents.sandbox import Sandbox

EXECUTION_MODES = ("session", "paper")
PAPER_TIMEOUT = 10.0  # seconds: the original's alarm around each action
SH_IMAGES = {"bash-fstest": "/bin/sh"}  # images whose tasks the original ran with /bin/sh -c
# The clock of every paper action and gold: half an hour after the paper images' fixture time.
PAPER_CLOCK = datetime(2023, 5, 21, 0, 14, tzinfo=UTC)
CLOCK_ENV = {"DATEFUDGE": str(int(PAPER_CLOCK.timestamp())), "DATEFUDGE_DOSTATIC": "1"}
_CLOCK = " ".join(f"{k}={v}" for k, v in CLOCK_ENV.items())
MALFORMED = "Malformed command"
TIMED_OUT = "Command timed out"
# What Docker's exec answers when its working folder does not exist (docker-py returned it as the output).
CHDIR_FAILED = (
    "OCI runtime exec failed: exec failed: unable to start container process: "
    'chdir to cwd ("{}") set in config.json failed: no such file or directory: unknown\r\n'
)
# Enter the tracked folder as Docker's exec would (physically, no PWD inherited) or print its error,
# then run the command with its output through a pipe: as with Docker's exec stream, the action is over
# when every process holding its output (background jobs included) has let go of it.
_ENTER = (
    'cd -P -- "$1" 2>/dev/null || { printf "%s" "$2"; exit 126; }; '
    f'unset PWD OLDPWD SHLVL; export {_CLOCK}; shift 2; "$@" 2>&1 | cat; exit "${{PIPESTATUS[0]}}"'
)


def paper_image(name: str) -> str:
    """The image a task of image ``name`` runs on in paper execution (see the module docstring)."""
    return f"{name}-paper"


class MalformedCommand(ValueError):
    """The action cannot be split into a command, so the original never ran it."""


def paper_shell(image: str) -> str:
    """The shell the original ran a task's actions with: ``/bin/sh`` for the Bash test split (its image
    was Alpine's, with BusyBox; ours has dash there), ``/bin/bash`` everywhere else."""
    return SH_IMAGES.get(image, "/bin/bash")


def paper_argv(action: str, shell: str = "/bin/bash") -> list[str]:
    """The argv the original ran for ``action`` (docker-py's shlex split of ``/bin/bash -c "..."``)."""
    try:
        return shlex.split(f'{shell} -c "{action.strip()}"')
    except ValueError as exc:
        raise MalformedCommand(str(exc)) from exc


def resolve_cd(current: str, argument: str) -> str:
    """The folder the original tracked after ``cd <argument>`` from ``current``: text only."""
    if not argument:
        return current
    base = "" if argument.startswith("/") else current
    segments: list[str] = []
    for segment in f"{base}/{argument}".split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment and segment != ".":
            segments.append(segment)
    return "/" + "/".join(segments)


@dataclass(frozen=True)
class PaperCommand:
    """What one action becomes: the argv to run, the folder to run it in, and a folder to track."""

    argv: list[str]
    workdir: str
    tracks: str | None = None  # the new folder when the command exits 0


def plan(action: str, workdir: str, shell: str = "/bin/bash") -> PaperCommand:
    """Turn ``action`` into the command the original ran from ``workdir`` (raises MalformedCommand)."""
    if action.startswith("cd") and "cd " in action:
        target = resolve_cd(workdir, action[action.index("cd ") + 3 :].strip())
        return PaperCommand(paper_argv(f"cd {target}", shell), "/", tracks=target)
    return PaperCommand(paper_argv(action, shell), workdir)


def gold_command(gold: str, workdir: str = "/", shell: str = "/bin/bash") -> str:
    """A session command that runs ``gold`` as the original ran it (a fresh ``bash -c`` of the shlex
    split, in ``workdir``, no session state, no input, on the paper clock, over when its output
    closes). A gold that cannot be split runs ``false``."""
    try:
        argv = paper_argv(gold, shell)
    except MalformedCommand:
        argv = ["false"]
    enter = f"unset PWD OLDPWD SHLVL; export {_CLOCK}; cd -P -- {shlex.quote(workdir)}"
    return f"({enter} && {shlex.join(argv)} 2>&1 | cat) </dev/null"


class PaperShell:
    """One episode's paper execution in a sandbox: the tracked folder and how each action runs."""

    def __init__(
        self, sandbox: Sandbox, workdir: str = "/", timeout: float = PAPER_TIMEOUT, shell: str = "/bin/bash"
    ) -> None:
        self.sandbox = sandbox
        self.workdir = workdir
        self.timeout = timeout
        self.shell = shell

    async def run(self, action: str) -> ActionResult:
        started = time.perf_counter()
        try:
            command = plan(action, self.workdir, self.shell)
        except MalformedCommand:
            return ActionResult(MALFORMED, exit_code=None, errored=True)
        message = CHDIR_FAILED.format(command.workdir)
        r = await self.sandbox.exec(
            ["/bin/bash", "-c", _ENTER, "paper-exec", command.workdir, message, *command.argv],
            timeout=self.timeout,
        )
        await self.sandbox.after_command()  # (a killed main process ends this action, every time)
        elapsed = time.perf_counter() - started
        if r.timed_out:
            return ActionResult(TIMED_OUT, exit_code=None, errored=True, timed_out=True, duration_s=elapsed)
        if "\ufffd" in r.output:  # not UTF-8: the original's decode raised
            return ActionResult(MALFORMED, exit_code=r.exit_code, errored=True, duration_s=elapsed)
        if command.tracks is not None and r.exit_code == 0:
            self.workdir = command.tracks
        return ActionResult(
            r.output,
            exit_code=r.exit_code,
            errored=r.exit_code != 0,
            output_truncated=r.truncated,
            duration_s=elapsed,
        )
