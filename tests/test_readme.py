"""Every command and snippet in README.md works as written.

The fenced code blocks of README.md are extracted and run; every failure names the README line.

```python`` blocks run on their own, as a reader pastes them: each in a fresh interpreter
(``sys.executable -c``) in a temp dir, with nothing defined beforehand. A block written for the
engine whose first import says ``# or: import torch`` runs a second time with torch's imports in
place of the engine's. A block that imports torch is skipped, saying so, where torch is not
installed. An expression line whose trailing comment is a Python literal
(``tr.firing_order()[:3]  # [('forward_pre', ''), ...]``) is checked: the expression must equal
the literal. Other comments are illustrative and the line just runs.

```bash`` blocks: each ``modscope ...`` line runs through the venv's ``modscope`` console script in a
temp dir, except those that open the full-screen TUI (``demo``, ``run``, ``replay FILE``): their
arguments, as written (a ``[--opt a|b]`` synopsis expanded to each alternative), are parsed by the
CLI's own parser without running, and ``modscope SUB --help`` runs. ``FILE.py:NAME`` targets
resolve against the repo root, else against ``FIXTURE_FILES`` (files the README assumes the reader
has, written into the temp dir). Lines that set up the machine (``make``, ``pip install``,
``apt-get``) are skipped: they install things or run the whole suite, CI's own job.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
TIMEOUT = 100  # seconds per subprocess; pytest's own timeout is 120

# --- extraction -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    lang: str
    line: int  # README line of the opening fence
    code: str

    def where(self) -> str:
        return f"README.md:{self.line} ({self.lang} block)"


def readme_blocks(text: str | None = None) -> list[Block]:
    """The fenced blocks of the README, with the line number of each opening fence."""
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        blocks.append(Block(lang.lower(), start, "\n".join(body) + "\n"))
        i += 1
    return blocks


BLOCKS = readme_blocks()
PY_BLOCKS = [b for b in BLOCKS if b.lang in ("python", "py")]
SH_BLOCKS = [b for b in BLOCKS if b.lang in ("bash", "sh", "shell", "console")]


def test_extraction_finds_the_readme_blocks():
    assert PY_BLOCKS, "no ```python blocks found in README.md"
    assert SH_BLOCKS, "no ```bash blocks found in README.md"
    known = {"python", "py", "bash", "sh", "shell", "console", "text", ""}
    other = [f"README.md:{b.line} ```{b.lang}" for b in BLOCKS if b.lang not in known]
    assert not other, f"fenced blocks in a language this test does not run: {other}"


def test_extraction_of_a_small_document():
    doc = "x\n```python\na = 1\n```\ntext\n```bash\nmodscope --help   # c\n```\n"
    assert readme_blocks(doc) == [Block("python", 2, "a = 1\n"), Block("bash", 6, "modscope --help   # c\n")]


# --- python blocks ----------------------------------------------------------------------------

# A block written for the engine whose first import line says ``# or: import torch`` runs a
# second time with real torch: these import lines swapped, nothing else (as a torch user pastes it).
TORCH_SWAPS = {"import engine as torch": "import torch", "import engine.nn as nn": "import torch.nn as nn",
               "import engine.nn.functional as F": "import torch.nn.functional as F"}
OR_TORCH = "# or: import torch"
TORCH_IMPORT = re.compile(r"^\s*(import torch\b|from torch\b)", re.M)


def needs_torch(code: str) -> bool:
    """The block imports real PyTorch (``import engine as torch`` is the bundled engine)."""
    return bool(TORCH_IMPORT.search(code))


def torch_variant(code: str) -> str | None:
    """The block with real torch in place of the engine, if it says it runs on both."""
    if OR_TORCH not in code:
        return None
    for engine_line, torch_line in TORCH_SWAPS.items():
        code = re.sub(rf"^{re.escape(engine_line)}\b", torch_line, code, flags=re.M)
    return code


def test_torch_blocks_are_told_from_engine_blocks():
    assert needs_torch("import torch\n") and needs_torch("from torch import nn\n")
    assert needs_torch("x = 1\nimport torch.nn as nn\n")
    assert not needs_torch("import engine as torch\n") and not needs_torch("import torchvision_like\n")
    both = "import engine as torch  # or: import torch\nimport engine.nn as nn\nx = torch.ones(1)\n"
    assert torch_variant(both) == "import torch  # or: import torch\nimport torch.nn as nn\nx = torch.ones(1)\n"
    assert torch_variant("import engine as torch\n") is None


_EXPECT_HELPER = '''
def __readme_expect__(value, expected, line):
    if value != expected:
        raise AssertionError(f"README.md:{line}: the line gives {value!r}, its comment says {expected!r}")
'''


def _comments(code: str) -> dict[int, str]:
    """Line number (1-based, in ``code``) -> the text of the comment on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string[1:].strip()
    return out


def with_checked_comments(code: str, first_line: int) -> tuple[str, list[int]]:
    """``code`` with each one-line top-level expression whose comment is a Python literal turned
    into a check of its value; also the README lines checked. ``first_line``: README line of the
    code's first line (``_run_python`` defines the helper the checks call)."""
    lines = code.splitlines()
    comments = _comments(code)
    checked = []
    for node in ast.parse(code).body:
        if not isinstance(node, ast.Expr) or node.lineno != node.end_lineno or node.lineno not in comments:
            continue
        try:
            expected = ast.literal_eval(comments[node.lineno])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue  # an illustrative comment, not a value
        src = lines[node.lineno - 1]
        if src[: node.col_offset].strip() or src[node.end_col_offset:].strip().split("#")[0].strip():
            continue  # more than this expression on the line (``a; b``)
        readme_line = first_line + node.lineno - 1
        expr = ast.get_source_segment(code, node)
        lines[node.lineno - 1] = f"{src[: node.col_offset]}__readme_expect__({expr}, {expected!r}, {readme_line})"
        checked.append(readme_line)
    return "\n".join(lines) + "\n", checked


def test_comment_checks_rewrite_only_literal_comments():
    code = "a = [1]\na   # [1]\na  # a list\nb = 2; a  # [1]\n"
    new, checked = with_checked_comments(code, 10)
    assert checked == [11]
    assert new.splitlines()[1] == "__readme_expect__(a, [1], 11)"
    assert new.splitlines()[2:] == code.splitlines()[2:]


def _run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter in ``cwd``: nothing but the block and the checks' helper."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", _EXPECT_HELPER + code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def _python_cases():
    for block in PY_BLOCKS:
        yield pytest.param(block, "as written", id=f"python-L{block.line}")
        if torch_variant(block.code) is not None:
            yield pytest.param(block, "torch", id=f"python-L{block.line}-torch")


@pytest.mark.parametrize(("block", "variant"), list(_python_cases()))
def test_python_block(block: Block, variant: str, tmp_path: Path):
    """Each block runs on its own, as pasted into a fresh interpreter (no prelude)."""
    code = block.code if variant == "as written" else torch_variant(block.code)
    assert code is not None
    if needs_torch(code) and importlib.util.find_spec("torch") is None:
        pytest.skip(f"{block.where()} imports torch ({variant}), which is not installed")
    body, checked = with_checked_comments(code, block.line + 1)
    result = _run_python(body, tmp_path)
    if result.returncode == 0:
        return
    tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-25:])
    if "__readme_expect__" in tail:
        pytest.fail(f"{block.where()} ({variant}): a line's value differs from the value its comment shows:\n{tail}")
    pytest.fail(f"{block.where()} ({variant}) does not run on its own, as a reader pastes it"
                f"{f' (value checks on lines {checked})' if checked else ''}:\n{tail}")


# --- bash blocks ------------------------------------------------------------------------------

# Files the README's commands name but a reader brings: written into the temp dir before the command runs.
FIXTURE_FILES: dict[str, str] = {
    # "Headless, distributed and remote runs": ``modscope record ... train.py``; a few engine steps.
    "train.py": '''
        import engine as torch
        import engine.nn as nn

        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            loss = model(torch.randn(16, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    ''',
    # "On PyTorch": ``modscope export models.py:make_model --what autograd --input 1,3,32,32``; a small
    # torch CNN taking 3-channel images (the section is about torch models).
    "models.py": '''
        import torch
        from torch import nn


        def make_model():
            return nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                nn.Flatten(), nn.Linear(16, 10),
            )
    ''',
}

# Trace files the README's ``modscope diff`` lines name: a recorded run the reader has (the TUI
# tests' fixture session, six steps of a small Net).
TRACE_FIXTURE = REPO / "tests" / "tui" / "data" / "small_trace.jsonl"
TRACE_FILES = ("run_a.jsonl", "run_b.jsonl", "run.jsonl", "engine.jsonl", "torch.jsonl")
# Subcommands whose exit status 1 is an answer, not a failure (diff: the runs differ).
ANSWERS_WITH_1 = {"diff"}

# First words of lines that are not run, and why.
SKIPPED = {
    "make": "make targets set up .venv, graphviz and torch or run the whole suite: CI's own job",
    "pip": "installs packages; the venv this test runs in is already set up",
    "apt-get": "installs system packages",
    "sudo": "installs system packages",
    "pipx": "installs the wheel as a tool: make smoke installs the same wheel into a fresh venv and runs it",
    "uv": "installs the wheel as a tool: make smoke installs the same wheel into a fresh venv and runs it",
    "python": "python -m build: tests/packaging/test_wheel.py builds the sdist and the wheel",
    "torchrun": "starts ranks: tests/cli/test_record_ranks.py runs modscope record under torchrun",
    "ssh": "reaches another machine",
    "scp": "reaches another machine",
}

TUI_COMMANDS = {"demo", "run", "replay", "attach", "web"}  # open the TUI, here or in a browser (unless --help)


def _needs_a_distributed_run(argv: tuple[str, ...]) -> bool:
    """Lines that start ranks, serve a port or name a rank's file (``F#R``) are parsed, not run:
    tests/cli/test_record_ranks.py, test_run_ranks.py and test_record_serve.py run them for real."""
    return any(a.startswith(("--nproc-per-node", "--serve")) or re.search(r"\.jsonl(\.gz)?#\d", a) for a in argv)


@dataclass(frozen=True)
class Command:
    line: int  # README line
    text: str  # the command as written, without its comment
    argv: tuple[str, ...]

    def where(self) -> str:
        return f"README.md:{self.line} `{self.text}`"


def readme_commands() -> list[Command]:
    out = []
    for block in SH_BLOCKS:
        for offset, raw in enumerate(block.code.splitlines()):
            argv = shlex.split(raw, comments=True)
            if argv and argv[0] == "$":
                argv = argv[1:]
            if argv:
                text = shlex.join(argv)
                out.append(Command(block.line + 1 + offset, text, tuple(argv)))
    return out


COMMANDS = readme_commands()


def expand_synopsis(argv: tuple[str, ...]) -> list[list[str]]:
    """A synopsis like ``demo [--model net|simple] [--stats] train.py [script args]`` as concrete
    command lines: one without the optional ``[...]`` parts, and one with all of them for each
    alternative of each ``a|b|c`` choice (the first alternative elsewhere)."""
    words = list(argv)
    has_optional = any(w.startswith("[") or w.endswith("]") for w in words)
    choices = [i for i, w in enumerate(words) if "|" in w.strip("[]")]

    def concrete(pick: dict[int, str], keep_optional: bool) -> list[str]:
        out, depth = [], 0
        for i, w in enumerate(words):
            opens, closes = len(w) - len(w.lstrip("[")), len(w) - len(w.rstrip("]"))
            depth += opens
            word = w.strip("[]")
            if "|" in word:
                word = pick.get(i, word.split("|")[0])
            if depth == 0 or keep_optional:
                out.append(word)
            depth -= closes
        return out

    if not has_optional and not choices:
        return [words]
    forms = [concrete({}, keep_optional=False)] if has_optional else []
    forms.append(concrete({}, keep_optional=True))
    for i in choices:
        for alt in words[i].strip("[]").split("|")[1:]:
            forms.append(concrete({i: alt}, keep_optional=True))
    unique = []
    for form in forms:
        if form not in unique:
            unique.append(form)
    return unique


def test_expand_synopsis():
    assert expand_synopsis(("modscope", "demo", "[--model", "a|b]")) == [
        ["modscope", "demo"], ["modscope", "demo", "--model", "a"], ["modscope", "demo", "--model", "b"]]
    assert expand_synopsis(("modscope", "run", "[--stats]", "t.py", "[x", "y]")) == [
        ["modscope", "run", "t.py"], ["modscope", "run", "--stats", "t.py", "x", "y"]]
    assert expand_synopsis(("modscope", "summary", "net")) == [["modscope", "summary", "net"]]


def _modscope_script() -> str:
    script = Path(sys.executable).parent / "modscope"
    found = str(script) if script.exists() else shutil.which("modscope")
    if not found:
        pytest.fail("the `modscope` console script is not installed next to this Python (pip install -e .)")
    return found


def _run_modscope(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", COLUMNS="120", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([_modscope_script(), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def _output(result: subprocess.CompletedProcess) -> str:
    return "\n".join((result.stdout + result.stderr).strip().splitlines()[-25:])


def _resolve(args: list[str], cwd: Path, cmd: Command) -> list[str]:
    """Paths the README names, as the reader has them: in the repo (examples/...), or written
    from FIXTURE_FILES into the temp dir."""
    out = []
    for arg in args:
        trace = re.match(r"^([\w.-]+\.jsonl)(@\d+)?$", arg)
        if trace and trace.group(1) in TRACE_FILES:
            shutil.copyfile(TRACE_FIXTURE, cwd / trace.group(1))
            out.append(arg)
            continue
        path, sep, name = arg.partition(":") if re.match(r"^[\w./-]+\.py:\w+$", arg) else (arg, "", "")
        if path.endswith(".py") or "/" in path:
            if (REPO / path).exists():
                arg = str(REPO / path) + sep + name
            elif path in FIXTURE_FILES:
                (cwd / path).write_text(textwrap.dedent(FIXTURE_FILES[path]).lstrip(), encoding="utf-8")
            elif sep:
                pytest.fail(f"{cmd.where()}: names {path}, which is neither in the repo nor in "
                            f"tests/test_readme.py FIXTURE_FILES")
        out.append(arg)
    return out


def _opens_tui(argv: tuple[str, ...]) -> bool:
    if {"-h", "--help"} & set(argv[2:]):
        return False
    return len(argv) > 1 and (argv[1] in TUI_COMMANDS or _needs_a_distributed_run(argv))


def _command_cases():
    for cmd in COMMANDS:
        yield pytest.param(cmd, id=f"bash-L{cmd.line}-{'-'.join(cmd.argv[:2])}")


@pytest.mark.parametrize("cmd", list(_command_cases()))
def test_bash_command(cmd: Command, tmp_path: Path):
    head = cmd.argv[0]
    if head in SKIPPED:
        pytest.skip(f"{cmd.where()}: {SKIPPED[head]}")
    assert head == "modscope", (f"{cmd.where()}: this test runs `modscope ...` lines and skips {sorted(SKIPPED)}; "
                                "teach tests/test_readme.py about this command")
    if _opens_tui(cmd.argv):
        _check_tui_command(cmd, tmp_path)
        return
    for arg in cmd.argv[1:]:  # a target file the README assumes (models.py) may be a torch model
        source = FIXTURE_FILES.get(arg.partition(":")[0])
        if source is not None and needs_torch(source) and importlib.util.find_spec("torch") is None:
            pytest.skip(f"{cmd.where()}: {arg.partition(':')[0]} imports torch, which is not installed")
    args = _resolve(list(cmd.argv[1:]), tmp_path, cmd)
    result = _run_modscope(args, tmp_path)
    ok = (0, 1) if cmd.argv[1] in ANSWERS_WITH_1 else (0,)
    assert result.returncode in ok, f"{cmd.where()}: exit status {result.returncode}:\n{_output(result)}"
    if "-o" in args or "--output" in args:
        flag = "-o" if "-o" in args else "--output"
        written = tmp_path / args[args.index(flag) + 1]
        assert written.is_file() and written.stat().st_size > 0, f"{cmd.where()}: did not write {written.name}"


_PARSE_ONLY = '''
import sys
from modscope.cli import build_parser
args = build_parser().parse_args(sys.argv[1:])
assert callable(getattr(args, "run", None)), "no subcommand"
'''


def _check_tui_command(cmd: Command, cwd: Path) -> None:
    """A command that opens the TUI: each concrete form of it parses (without running), and
    ``modscope SUB --help`` works."""
    for form in expand_synopsis(cmd.argv):
        result = subprocess.run([sys.executable, "-c", _PARSE_ONLY, *form[1:]], cwd=cwd, capture_output=True,
                                text=True, timeout=TIMEOUT)
        assert result.returncode == 0, (f"{cmd.where()}: `{shlex.join(form)}` does not parse "
                                        f"(exit status {result.returncode}):\n{_output(result)}")
    result = _run_modscope([cmd.argv[1], "--help"], cwd)
    assert result.returncode == 0 and "usage: modscope " + cmd.argv[1] in result.stdout, (
        f"{cmd.where()}: `modscope {cmd.argv[1]} --help` failed (exit status {result.returncode}):\n{_output(result)}")


@pytest.mark.parametrize("sub", ["--help", "export --help", "summary --help", "run --help", "replay --help",
                                 "demo --help", "--version"])
def test_cli_help_parses(sub: str, tmp_path: Path):
    """The README's subcommands all answer --help (and the program --version) through the console script."""
    result = _run_modscope(sub.split(), tmp_path)
    assert result.returncode == 0 and result.stdout.startswith(("usage: modscope", "modscope ")), _output(result)
