"""Where a run's rank files are (``events.trace_paths``): one name for the run, ``.rankR`` beside
it, ``F#R`` and ``F@S`` selectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from modscope.events.trace_paths import (
    RankNotFoundError,
    rank_path,
    rank_path_base,
    rank_paths,
    resolve_rank,
    split_selector,
)


@pytest.mark.parametrize(("name", "rank1"), [("run.jsonl.gz", "run.rank1.jsonl.gz"), ("run.jsonl", "run.rank1.jsonl"),
                                             ("a.b.json", "a.b.rank1.json"), ("trace", "trace.rank1")])
def test_rank_files_sit_beside_the_runs_name(name, rank1):
    assert rank_path(Path("d") / name, 0) == Path("d") / name
    assert rank_path(Path("d") / name, 1) == Path("d") / rank1
    assert rank_path_base(Path("d") / rank1) == Path("d") / name
    assert rank_path_base(Path("d") / name) == Path("d") / name


def test_rank_paths_finds_every_rank_and_nothing_else(tmp_path):
    for name in ("run.jsonl.gz", "run.rank1.jsonl.gz", "run.rank12.jsonl.gz", "run.rank01.jsonl.gz",
                 "run.rankx.jsonl.gz", "other.rank1.jsonl.gz", "run.rank2.jsonl"):
        (tmp_path / name).write_text("")
    assert rank_paths(tmp_path / "run.jsonl.gz") == {0: tmp_path / "run.jsonl.gz", 1: tmp_path / "run.rank1.jsonl.gz",
                                                     12: tmp_path / "run.rank12.jsonl.gz"}
    assert rank_paths(tmp_path / "none.jsonl") == {}


def test_selectors(tmp_path):
    assert split_selector("run.jsonl#1@12") == ("run.jsonl", 1, 12)
    assert split_selector("run.jsonl#1") == ("run.jsonl", 1, None)
    assert split_selector("run.jsonl@3") == ("run.jsonl", None, 3)
    assert split_selector("run.jsonl#x") == ("run.jsonl#x", None, None)
    odd = tmp_path / "odd#1@2.jsonl"
    odd.write_text("")
    assert split_selector(str(odd)) == (str(odd), None, None)  # a file of that name is a file


def test_resolve_rank_names_the_ranks_there_are(tmp_path):
    (tmp_path / "run.jsonl").write_text("")
    (tmp_path / "run.rank1.jsonl").write_text("")
    assert resolve_rank(f"{tmp_path / 'run.jsonl'}#1") == tmp_path / "run.rank1.jsonl"
    assert resolve_rank(f"{tmp_path / 'run.jsonl'}#0") == tmp_path / "run.jsonl"
    with pytest.raises(RankNotFoundError, match=r"run.rank2.jsonl: no file for rank 2 of .*run.jsonl "
                                                r"\(ranks 0, 1 are recorded beside it\)"):
        resolve_rank(f"{tmp_path / 'run.jsonl'}#2")
    with pytest.raises(RankNotFoundError, match=r"no rank is recorded beside it"):
        resolve_rank(f"{tmp_path / 'gone.jsonl'}#1")


def test_every_reader_opens_a_ranks_file_by_the_runs_name(tmp_path):
    import shutil

    import engine
    import modscope
    from modscope.views.tui.sources import ReplaySource

    model = engine.nn.Linear(2, 2)
    with modscope.trace(model) as tr:
        model(engine.randn(1, 2)).sum().backward()
    tr.save(tmp_path / "run.jsonl")
    shutil.copy(tmp_path / "run.jsonl", tmp_path / "run.rank1.jsonl")
    run = modscope.load_trace(tmp_path / "run.jsonl")
    assert run.ranks == {0: tmp_path / "run.jsonl", 1: tmp_path / "run.rank1.jsonl"}
    assert run.rank_trace(1).path == tmp_path / "run.rank1.jsonl"
    assert modscope.load_trace(f"{tmp_path / 'run.jsonl'}#1").ranks == run.ranks
    assert ReplaySource(tmp_path / "run.jsonl").description == "replay run.jsonl · 2 ranks, opened at rank 0 (r: next rank)"
    with pytest.raises(modscope.TraceFileError, match=r"no file for rank 2 of .*run.jsonl \(ranks 0, 1 are recorded"):
        run.rank_trace(2)
    single = tmp_path / "one.jsonl"
    tr.save(single)
    assert modscope.load_trace(single).ranks == {0: single}
    assert ReplaySource(single).description == "replay one.jsonl"
