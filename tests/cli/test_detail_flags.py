"""``--every N`` / ``--full`` on ``modscope run`` and ``record`` (``capture.sampling``): parsed into
the policy the trace uses, passed to ``run``'s child in its environment, bad values refused."""

from __future__ import annotations

import pytest

from modscope.capture.sampling import DEFAULT_EVERY, DEFAULT_FIRST, ENV_VARIABLE, DetailPolicy
from modscope.cli import build_parser, policy_from_flags


@pytest.mark.parametrize("command", ["run", "record"])
def test_every_and_full_become_the_policy(command):
    parser = build_parser()
    default = policy_from_flags(parser.parse_args([command, "train.py"]))
    assert (default.every, default.first) == (DEFAULT_EVERY, DEFAULT_FIRST)
    assert policy_from_flags(parser.parse_args([command, "--every", "7", "train.py"])).every == 7
    assert policy_from_flags(parser.parse_args([command, "--full", "train.py"])).every is None


@pytest.mark.parametrize("args", [["--every", "0"], ["--every", "x"], ["--every", "3", "--full"]])
@pytest.mark.parametrize("command", ["run", "record"])
def test_bad_flags_are_refused(command, args, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([command, *args, "train.py"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--every" in err


def test_run_tells_the_child_through_its_environment(monkeypatch, tmp_path):
    from modscope.cli import live

    monkeypatch.setenv(ENV_VARIABLE, "full")  # (undone after the test, whatever _run writes)
    args = build_parser().parse_args(["run", "--every", "9", str(tmp_path / "missing.py")])
    assert live._run(args) == 2  # no such script: refused, but the child's policy was set first
    import os

    policy = DetailPolicy.from_env(os.environ[ENV_VARIABLE])
    assert (policy.every, policy.first) == (9, DEFAULT_FIRST)
