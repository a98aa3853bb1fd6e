"""The built-in harness (`--harness sandbox`): replays file and shell tool steps in a fresh
temporary directory per execution.

Each execution gets `<tmp>/work` (the workspace copied in, the steps' working directory),
`<tmp>/bin` (a `python` that is this interpreter) and a clean environment (`PATH`, `HOME`,
`TMPDIR`, locale: no OTEL_* or PYTHONPATH of the caller leaks in). Nothing is written outside the
temporary directory, and paths that point outside it are refused; the user's working directory is
never used. It is a fresh directory, not a security boundary: a shell step can still reach what
the user can (replay only traces you would run yourself).

Tools, by name (or `tool_kinds={"name": kind}`): `write` (write/save/append/create/edit + path,
content), `read` (read/cat/open/view), `list` (list_dir, ls), `shell` (shell/bash/command/exec/
terminal), `python` (python/run_code: code, or a script path); `tool_kinds` keys may be glob
patterns (`exec_*`). Other tools replay as no-ops that return their recorded result. Limits per step: `time_limit` seconds, `output_limit` bytes of
captured output (the rest is cut), `file_limit` bytes per file a process writes.

Signature: with `output` (a path relative to the sandbox), the file's content hash
(`WRONG_OUTPUT`, or `PASS` when its sha256 starts with `expect`), else the last failed step's
`TOOL_ERROR`, else `NO_OUTPUT`; the step blamed is the last one that changed the file (or the
failed one). Without `output`: the last failed step's `TOOL_ERROR`, else the final step's result
(`WRONG_OUTPUT(hash)`, `NO_OUTPUT` when empty).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Mapping, Sequence

if os.name == "posix":
    import resource

from otel_agent_trace.minimizer.ddmin import Outcome
from otel_agent_trace.minimizer.signature import NO_OUTPUT, Signature, error_signature, output_signature
from otel_agent_trace.minimizer.trajectory import MinimizeError, Step

KINDS = ("write", "read", "list", "shell", "python", "noop")
_BY_NAME = [  # first match wins
    ("python", re.compile(r"python|run_code|execute_code|exec_code", re.I)),
    ("list", re.compile(r"list_dir|list_files|^ls$|listdir", re.I)),
    ("shell", re.compile(r"shell|bash|command|terminal|^sh$|^exec|run_cmd", re.I)),
    ("write", re.compile(r"write|save|append|create_file|edit_file|put_file", re.I)),
    ("read", re.compile(r"read|cat_file|^cat$|open_file|view_file|load_file", re.I)),
]
_PATH_KEYS = ("path", "file", "filename", "file_path", "filepath", "target", "name")
_CONTENT_KEYS = ("content", "contents", "text", "data", "body", "code")
_COMMAND_KEYS = ("command", "cmd", "commands", "script")
_CODE_KEYS = ("code", "source", "script", "program")
# a shell command made only of these (no redirection) has no effect a later step could need
_LOOKING = {"ls", "cat", "head", "tail", "wc", "grep", "pwd", "find", "stat", "du", "file", "tree", "echo",
            "true", "sort", "uniq", "diff", "which", "env", "date"}


class Sandbox:
    """`Sandbox(workspace="task/", output="out.json")(steps) -> Outcome`: one isolated replay."""

    def __init__(self, workspace: str | os.PathLike[str] | None = None, output: str | None = None,
                 expect: str | None = None, time_limit: float = 10.0, output_limit: int = 1 << 20,
                 file_limit: int = 64 << 20, tool_kinds: Mapping[str, str] | None = None, keep: bool = False):
        if workspace is not None and not os.path.isdir(workspace):
            raise MinimizeError(f"--workspace {workspace}: not a directory")
        if output is not None and (os.path.isabs(output) or os.path.normpath(output).startswith("..")):
            raise MinimizeError(f"--output {output}: must be a path relative to the sandbox")
        for name, kind in (tool_kinds or {}).items():
            if kind not in KINDS:
                raise MinimizeError(f"tool kind {name}={kind}: one of {', '.join(KINDS)}")
        self.workspace = os.fspath(workspace) if workspace is not None else None
        self.output = output
        self.expect = expect
        self.time_limit = time_limit
        self.output_limit = output_limit
        self.file_limit = file_limit
        self.tool_kinds = dict(tool_kinds or {})
        self.keep = keep
        self.last_root: str | None = None  # the last execution's directory (kept only with keep=True)

    # --- what the closure may skip --------------------------------------------------------------
    def kind_of(self, step: Step) -> str:
        """The tool's kind: `tool_kinds` by name or glob pattern (`exec_*`), else by what its name says."""
        if step.tool in self.tool_kinds:
            return self.tool_kinds[step.tool]
        for name, kind in self.tool_kinds.items():
            if fnmatch.fnmatchcase(step.tool, name):
                return kind
        for kind, pattern in _BY_NAME:
            if pattern.search(step.tool):
                return kind
        return "noop"

    def pure(self, step: Step) -> bool:
        """Whether replaying `step` changes nothing a later step could need."""
        kind = self.kind_of(step)
        if kind in ("read", "list", "noop"):
            return True
        if kind == "shell":
            command = _argument(step.arguments, _COMMAND_KEYS)
            return isinstance(command, str) and _only_looks(command)
        return False

    # --- one execution ----------------------------------------------------------------------------
    def __call__(self, steps: Sequence[Step]) -> Outcome:
        root = tempfile.mkdtemp(prefix="otel-agent-trace-minimize-")
        self.last_root = root
        try:
            return self._replay(root, steps)
        finally:
            if not self.keep:
                shutil.rmtree(root, ignore_errors=True)

    def _replay(self, root: str, steps: Sequence[Step]) -> Outcome:
        work = os.path.join(root, "work")
        if self.workspace:
            shutil.copytree(self.workspace, work, symlinks=True)
        else:
            os.mkdir(work)
        env = self._environment(root)
        last_error: tuple[int, Signature] | None = None
        output_hash, changed_by = self._output_hash(work), None
        result: Any = None
        for n, step in enumerate(steps):
            try:
                result = self._step(root, work, env, n, step)
            except _StepFailed as failed:
                last_error = (step.position, self._clean(failed.signature, root))
                result = None
            now = self._output_hash(work)
            if now != output_hash:
                output_hash, changed_by = now, step.position
        if self.output is not None:
            path = os.path.join(work, self.output)
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    return Outcome(output_signature(handle.read(), self.expect), changed_by)
        if last_error is not None:
            return Outcome(last_error[1], last_error[0])
        if self.output is not None or not steps:
            return Outcome(Signature(NO_OUTPUT))
        text = result if isinstance(result, str) else json.dumps(result, sort_keys=True, default=str)
        if result is None or not text.strip():
            return Outcome(Signature(NO_OUTPUT), steps[-1].position)
        return Outcome(output_signature(text, self.expect), steps[-1].position)

    def _output_hash(self, work: str) -> str | None:
        if self.output is None:
            return None
        path = os.path.join(work, self.output)
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    def _environment(self, root: str) -> dict[str, str]:
        bin_dir = os.path.join(root, "bin")
        os.mkdir(bin_dir)
        for name in ("python", "python3"):  # a wrapper, not a symlink: a venv's python stays in its venv
            launcher = os.path.join(bin_dir, name)
            with open(launcher, "w", encoding="utf-8") as handle:
                handle.write(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
            os.chmod(launcher, 0o755)
        home, tmp = os.path.join(root, "home"), os.path.join(root, "tmp")
        os.mkdir(home)
        os.mkdir(tmp)
        return {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", os.defpath), "HOME": home, "TMPDIR": tmp,
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}

    def _clean(self, signature: Signature, root: str) -> Signature:
        """The signature without this execution's directory in it (each execution has its own)."""
        detail = signature.detail.replace(os.path.join(root, "work") + os.sep, "").replace(root, "<sandbox>")
        return Signature(signature.kind, detail)

    def _step(self, root: str, work: str, env: dict[str, str], n: int, step: Step) -> Any:
        kind = self.kind_of(step)
        arguments = step.arguments
        if kind == "noop":
            return step.result
        if kind == "write":
            path = _inside(work, _argument(arguments, _PATH_KEYS))
            content = _argument(arguments, _CONTENT_KEYS)
            if content is None:
                content = ""
            if not isinstance(content, str):
                content = json.dumps(content)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a" if re.search("append", step.tool, re.I) else "w", encoding="utf-8") as handle:
                handle.write(content)
            return "ok"
        if kind == "read":
            path = _inside(work, _argument(arguments, _PATH_KEYS))
            try:
                with open(path, "rb") as handle:
                    return handle.read(self.output_limit).decode("utf-8", "replace")
            except OSError as exc:
                raise _StepFailed(error_signature(type(exc).__name__, f"{type(exc).__name__}: {exc}")) from None
        if kind == "list":
            target = _argument(arguments, _PATH_KEYS)
            path = _inside(work, target if isinstance(target, str) else ".")
            try:
                return "\n".join(sorted(os.listdir(path)))
            except OSError as exc:
                raise _StepFailed(error_signature(type(exc).__name__, f"{type(exc).__name__}: {exc}")) from None
        if kind == "python":
            code = _argument(arguments, _CODE_KEYS)
            script = _argument(arguments, _PATH_KEYS)
            if code is None and isinstance(script, str):
                return self._process(root, work, env, n, ["python", _inside(work, script)])
            if not isinstance(code, str):
                raise _StepFailed(error_signature("ValueError", f"{step.tool}: no code in the arguments"))
            source = os.path.join(root, f"step-{n}.py")  # outside work/: a later `ls` does not see it
            with open(source, "w", encoding="utf-8") as handle:
                handle.write(code)
            return self._process(root, work, env, n, ["python", source])
        command = arguments if isinstance(arguments, str) else _argument(arguments, _COMMAND_KEYS)
        if isinstance(command, list):
            command = " ".join(map(str, command))
        if not isinstance(command, str):
            raise _StepFailed(error_signature("ValueError", f"{step.tool}: no command in the arguments"))
        return self._process(root, work, env, n, command)

    def _process(self, root: str, work: str, env: dict[str, str], n: int, command: Any) -> str:
        out_path, err_path = os.path.join(root, f"step-{n}.out"), os.path.join(root, f"step-{n}.err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            if isinstance(command, list):
                command = [os.path.join(root, "bin", command[0])] + command[1:]
            process = subprocess.Popen(command, shell=isinstance(command, str), cwd=work, env=env, stdout=out,
                                       stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
                                       preexec_fn=self._limits if os.name == "posix" else None)
            try:
                code = process.wait(timeout=self.time_limit)
            except subprocess.TimeoutExpired:
                _kill(process)
                raise _StepFailed(error_signature("TimeoutError", f"TimeoutError: step ran over {self.time_limit:g} s")) from None
        stdout, stderr = _head(out_path, self.output_limit), _head(err_path, self.output_limit)
        if code != 0:
            raise _StepFailed(error_signature(f"exit {code}", stderr or stdout))
        return stdout

    def _limits(self) -> None:  # in the child, between fork and exec: one C call, no import, no lock
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_limit, self.file_limit))


class _StepFailed(Exception):
    def __init__(self, signature: Signature):
        super().__init__(str(signature))
        self.signature = signature


def _argument(arguments: Any, keys: Sequence[str]) -> Any:
    if not isinstance(arguments, dict):
        return None
    for key in keys:
        if key in arguments:
            return arguments[key]
    return None


def _inside(work: str, path: Any) -> str:
    if not isinstance(path, str) or not path:
        raise _StepFailed(error_signature("ValueError", "ValueError: no path in the arguments"))
    resolved = os.path.normpath(os.path.join(work, path))
    if os.path.isabs(path) or not (resolved == work or resolved.startswith(work + os.sep)):
        raise _StepFailed(error_signature("PermissionError", f"PermissionError: {path} is outside the sandbox"))
    return resolved


def _only_looks(command: str) -> bool:
    if ">" in command or "`" in command or "$(" in command:
        return False
    for segment in re.split(r"&&|\|\||[;|]", command):
        words = segment.split()
        if words and (words[0] not in _LOOKING or "-delete" in words or "-exec" in words):
            return False
    return True


def _head(path: str, limit: int) -> str:
    with open(path, "rb") as handle:
        return handle.read(limit).decode("utf-8", "replace")


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, 9)
    except (OSError, AttributeError):
        process.kill()
    process.wait()
