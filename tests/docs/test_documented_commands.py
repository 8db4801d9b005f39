"""The documentation's commands, checked so that the docs cannot drift from the CLI.

Two checks over README.md, docs/*.md and every environment's README:

* **Runnable blocks run.** A fenced ``bash`` or ``python`` block directly preceded by the line
  ``<!-- runnable -->`` is executed as written (bash with ``set -euo pipefail``; python as a script) in a
  fresh temporary folder holding a read-only link ``src`` to the repository's ``src/`` (so the shipped example
  data is at the paths a user of a clone sees), with this interpreter's ``bin`` folder first on ``PATH``
  (``gym``, ``python``). It must exit 0 within the timeout. Only offline commands are marked.
* **Every documented ``gym`` command exists with the options it shows.** Each line starting with ``gym`` in
  any ``bash`` block (runnable or not; placeholders such as ``…`` allowed) must name a real command, and each
  ``--option`` on it must be an option of that command.
* **Every documented server stack resolves.** For each documented ``gym env start``, serving ``gym eval run``
  and ``gym eval reverify`` line, ``gym config show`` with the same config options (selectors, model flags,
  overrides; placeholders kept as values) must succeed — the pre-flight check of what that line would start.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

MARKER = "<!-- runnable -->"
BLOCK_TIMEOUT_S = 240
_FENCE = re.compile(r"^\s*```(\w*)")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    text: str
    runnable: bool

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"


def _doc_files() -> list[Path]:
    return [
        REPO_ROOT / "README.md",
        *sorted((REPO_ROOT / "docs").glob("*.md")),
        *sorted((REPO_ROOT / "src/rewardgym/environments").glob("*/README.md")),
    ]


def _blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        runnable = index > 0 and lines[index - 1].strip() == MARKER
        found.append(Block(path, index + 1, match[1], "\n".join(lines[index + 1 : end]), runnable))
        index = end + 1
    return found


ALL_BLOCKS = [block for path in _doc_files() for block in _blocks(path)]
RUNNABLE = [block for block in ALL_BLOCKS if block.runnable]


def test_runnable_blocks_are_marked_in_each_area() -> None:
    """The marker cannot silently disappear: the pages that document offline commands keep theirs."""
    pages = {block.path.relative_to(REPO_ROOT).as_posix() for block in RUNNABLE}
    assert {"README.md", "docs/collect.md", "docs/config.md", "docs/environments.md", "docs/profile.md",
            "docs/servers.md"} <= pages  # fmt: skip
    assert all(block.language in ("bash", "python") for block in RUNNABLE), [b.id for b in RUNNABLE]


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.id for block in RUNNABLE])
def test_runnable_block(block: Block, tmp_path: Path) -> None:
    (tmp_path / "src").symlink_to(REPO_ROOT / "src", target_is_directory=True)
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO_ROOT),
        "COLUMNS": "120",
    }
    if block.language == "bash":
        script = tmp_path / "block.sh"
        script.write_text("set -euo pipefail\n" + block.text + "\n", encoding="utf-8")
        argv = ["bash", str(script)]
    else:
        script = tmp_path / "block.py"
        script.write_text(block.text + "\n", encoding="utf-8")
        argv = [sys.executable, str(script)]
    result = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False
    )
    assert result.returncode == 0, (
        f"{block.id} exited {result.returncode}\n--- stdout\n{result.stdout[-3000:]}\n"
        f"--- stderr\n{result.stderr[-3000:]}"
    )


def _gym_lines(text: str) -> list[str]:
    """The ``gym …`` commands of a bash block, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands = []
    for raw in joined.split("\n"):
        line = raw.split(" #", 1)[0].strip()
        if line.startswith("gym "):
            commands.append(line)
    return commands


def _cli_options() -> dict[tuple[str, ...], set[str]]:
    """Every command path of the CLI (``("eval", "run")``) → its option names."""
    import typer

    from rewardgym.cli import main

    main._load_commands()
    root = typer.main.get_command(main.app)
    table: dict[tuple[str, ...], set[str]] = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        names = {opt for param in getattr(command, "params", []) for opt in getattr(param, "opts", [])}
        table[path] = names | {"--help"}
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(root, ())
    return table


GYM_LINES = [
    (block, line)
    for block in ALL_BLOCKS
    if block.language in ("bash", "sh")
    for line in _gym_lines(block.text)
]


def test_every_documented_gym_command_and_option_exists() -> None:
    options = _cli_options()
    assert len(GYM_LINES) >= 20
    problems = []
    for block, line in GYM_LINES:
        words = [w for w in line.split()[1:] if not w.startswith("-")]
        path: tuple[str, ...] = ()
        for word in words:
            if (*path, word) in options:
                path = (*path, word)
            else:
                break
        if not path:
            problems.append(f"{block.id}: unknown command in {line!r}")
            continue
        for flag in re.findall(r"(?<![\w=])--[a-z][a-z0-9-]*", line):
            if flag not in options[path]:
                problems.append(f"{block.id}: 'gym {' '.join(path)}' has no option {flag} ({line!r})")
    assert not problems, "\n".join(problems)


_CONFIG_FLAGS = {"--resources-server", "--model-type", "--search-dir", "--model", "-m", "--model-url",
                 "--model-api-key"}  # fmt: skip


def _config_show_args(line: str) -> list[str] | None:
    """``gym config show`` arguments with the config options of a server-starting ``line``; ``None`` when the
    line starts no servers, or names a config file the docs only describe."""
    tokens = [t for t in shlex.split(line.replace("…", " ").replace("...", " ")) if t not in ("[", "]")]
    words = tokens[1:3]
    serving = words in (["env", "start"], ["eval", "reverify"])
    serving |= words == ["eval", "run"] and "--no-serve" not in tokens and "[--no-serve]" not in tokens
    if not serving or "--config" in tokens or "--resources-server" not in tokens:
        return None
    args: list[str] = []
    index = 3
    while index < len(tokens):
        token = tokens[index]
        if token in _CONFIG_FLAGS and index + 1 < len(tokens):
            value = tokens[index + 1]
            if token == "--model-url" and "://" not in value:  # a placeholder the page explains (`U`)
                value = "http://127.0.0.1:8000/v1"
            args += [token, value]
            index += 2
            continue
        if token.startswith("+"):
            args.append(token)
        index += 1
    return args


STACK_LINES = [
    (block, line, args) for block, line in GYM_LINES if (args := _config_show_args(line)) is not None
]


def test_documented_stacks_are_found() -> None:
    assert len(STACK_LINES) >= 8, [line for _, line, _ in STACK_LINES]


@pytest.mark.parametrize(
    "args", [args for _, _, args in STACK_LINES], ids=[f"{b.id}:{' '.join(a)}" for b, _, a in STACK_LINES]
)
def test_documented_stack_resolves(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    # A documented line that reads a variable (`${oc.env:RG_TOKEN}`) follows an `export` of it in its block.
    for name in re.findall(r"\$\{oc\.env:(\w+)\}", " ".join(args)):
        env.setdefault(name, "documented-example-value")
    result = subprocess.run(
        [sys.executable, "-m", "rewardgym", "config", "show", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
