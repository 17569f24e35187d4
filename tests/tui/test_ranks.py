"""Every rank in one viewer: the rank bar and switcher, the grad-norm spread across ranks, a rank
whose parameters parted, a rank gone silent, and holding paused ranks at one step boundary
(``views.tui.ranks``), with Pilot over two ranks' events and with the board alone."""

from __future__ import annotations

import copy
import json

import pytest

from modscope.events.files import save_events
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.ranks import RankBoard, RankHold, parted_ranks
from modscope.views.tui.sources import EventListSource, ReplaySource, Source
from modscope.views.tui.state import SessionState
from modscope.views.tui.widgets.module_tree import ModuleTree
from modscope.views.tui.widgets.params_table import SPREAD, ParamsTable
from modscope.views.tui.widgets.rank_bar import RankBar
from modscope.views.tui.widgets.timeline import HookTimeline
from tests.tui.test_app import settle

PART_STEP = 3  # rank 1's blk.b.weight parts from rank 0's here
GRAD_SCALE = 1.5  # rank 1's gradient norms of blk.a.weight, against rank 0's


def rank_events(events: list[dict], rank: int, world: int = 2, *, upto: int | None = None) -> list[dict]:
    """``events`` as rank ``rank`` of ``world`` would send them: the rank fields on every event and
    a fingerprint per parameter; rank 1's blk.b.weight parts from step ``PART_STEP`` and its
    blk.a.weight gradients are ``GRAD_SCALE`` times rank 0's."""
    out = []
    for e in events:
        if upto is not None and e["step"] > upto and e["kind"] != "session":
            continue
        e = copy.deepcopy(e)
        e.update(rank=rank, local_rank=rank, world_size=world, restart=0)
        if e["kind"] == "params":
            for item in e["items"]:
                item["fp"] = hash((item["path"], e["step"])) & 0xFFFF_FFFF
                if rank == 1 and item["path"] == "blk.b.weight" and e["step"] >= PART_STEP:
                    item["fp"] += 1
                if rank == 1 and item["path"] == "blk.a.weight":
                    item["grad_norm"] *= GRAD_SCALE
        if e["kind"] == "model" and rank == 1:
            e["model"] = e["model"]  # (the same model on every rank)
        out.append(e)
    return out


def two_ranks(events: list[dict], **kw) -> list[dict]:
    a, b = rank_events(events, 0), rank_events(events, 1, **kw)
    merged = []
    for i in range(max(len(a), len(b))):  # interleaved, as two connections arrive
        merged += a[i:i + 1] + b[i:i + 1]
    return merged


def loaded(app) -> bool:
    board = app.root.board
    return (board is not None and all(r.status == "ended" for r in board.last.values()) and len(board.last) == 2
            and app.query_one(ModuleTree).modules != {} and app.query_one(RankBar).display)


# --- the board alone ------------------------------------------------------------------------------

def test_the_state_folds_each_rank_apart_and_the_board_sees_every_rank(events):
    state = SessionState()
    with state.lock:
        for e in two_ranks(events):
            state.apply(e)
        ranks = state.all_ranks()
    assert list(ranks) == [0, 1] and ranks[1].rank == 1 and ranks[1].lock is state.lock
    assert ranks[0].events_total == ranks[1].events_total == len(events)
    assert ranks[0].gaps == ranks[1].gaps == 0  # each rank's seq counted on its own
    assert ranks[1].params["blk.a.weight"].grad_norm == pytest.approx(
        GRAD_SCALE * ranks[0].params["blk.a.weight"].grad_norm)
    board = state.board
    assert board.world_size == 2 and board.ranks == [0, 1]
    assert board.parted == {1: board.parted[1]} and (board.parted[1].step, board.parted[1].path) == \
        (PART_STEP, "blk.b.weight")
    step, spread = board.spread()
    assert step == 5  # the last step with parameters
    lo, hi, n = spread["blk.a.weight"]
    assert hi / lo == pytest.approx(GRAD_SCALE) and n == 2
    assert spread["blk.b.weight"][0] == spread["blk.b.weight"][1]
    assert board.parted_at(2) == {} and board.parted_at(PART_STEP) == {1: ["blk.b.weight"]}


def test_a_single_process_has_no_board(events):
    state = SessionState()
    with state.lock:
        for e in events:
            state.apply(e)
    assert state.board is None and list(state.all_ranks()) == [0]


def test_parted_ranks_takes_the_most_common_value_and_rank_0_on_a_tie():
    assert parted_ranks({0: {"w": 1}, 1: {"w": 2}}) == [(1, "w", 1)]
    assert parted_ranks({0: {"w": 2}, 1: {"w": 1}, 2: {"w": 1}}) == [(0, "w", 2)]
    assert parted_ranks({0: {"w": 1, "b": 5}, 1: {"w": 1, "b": 5}}) == []
    assert parted_ranks({0: {"w": 1, "b": 5}, 1: {"w": 2, "b": 6}}, every=True) == [(1, "w", 1), (1, "b", 1)]


def test_a_silent_rank_and_a_gone_rank_say_their_last_event_and_how_long_ago():
    now = [100.0]
    board = RankBoard(clock=lambda: now[0])
    base = {"v": 1, "seq": 0, "t": 0, "world_size": 2, "local_rank": 0, "restart": 0}
    board.saw({**base, "kind": "params", "step": 7, "rank": 0, "items": []})
    board.saw({**base, "kind": "forward", "step": 8, "rank": 1})
    now[0] = 112.0
    board.saw({**base, "kind": "params", "step": 8, "rank": 0, "items": []})
    rows = {r["rank"]: r for r in board.rows()}
    assert rows[0]["state"] == "running" and rows[0]["age"] == 0
    assert rows[1]["state"] == "silent" and rows[1]["age"] == 12 and rows[1]["step"] == 8 and rows[1]["kind"] == "forward"
    board.gone(1, "its process disconnected")
    rows = {r["rank"]: r for r in board.rows()}
    assert rows[1]["state"] == "gone" and rows[1]["why"] == "its process disconnected"


# --- holding every rank at one step boundary ------------------------------------------------------

class _Rank:
    def __init__(self, status: str, step: int) -> None:
        self.status, self.step = status, step
        self.rev = type("Rev", (), {"status": 0})()


def _board(params_steps: dict[int, int]) -> RankBoard:
    board = RankBoard(clock=lambda: 0.0)
    for rank, step in params_steps.items():
        board.saw({"v": 1, "seq": 0, "t": 0, "kind": "params", "step": step, "rank": rank, "world_size": 2,
                   "items": []})
    return board


def test_a_rank_paused_behind_another_runs_on_to_the_others_boundary():
    hold = RankHold()
    hold.start()
    # rank 0 stopped at the end of step 4; rank 1 had passed it (its step 4 reported) before the
    # pause reached it: it stops at the end of step 5, so rank 0 must run step 5 too
    states = {0: _Rank("paused", 4), 1: _Rank("running", 5)}
    assert hold.settle(_board({0: 4, 1: 4}), states) == {0: {"cmd": "resume", "until": 5}, 1: {"cmd": "pause"}}
    assert hold.settle(_board({0: 4, 1: 4}), states) == {}  # sent once
    states = {0: _Rank("paused", 5), 1: _Rank("paused", 5)}
    assert hold.settle(_board({0: 5, 1: 5}), states) == {} and RankHold.held_at(states) == 5


def test_a_breakpoint_on_one_rank_holds_the_others_and_a_resume_lets_all_go():
    hold = RankHold()
    states = {0: _Rank("running", 3), 1: _Rank("paused", 3)}
    assert hold.settle(_board({0: 2, 1: 3}), states) == {0: {"cmd": "pause"}} and hold.holding
    hold.release(states)  # the viewer resumed: the pause statuses not yet replaced hold nothing
    assert hold.settle(_board({0: 2, 1: 3}), states) == {} and not hold.holding
    states[1].status, states[1].step, states[1].rev.status = "paused", 4, 1  # a new pause (the breakpoint again)
    assert hold.settle(_board({0: 3, 1: 4}), states) == {0: {"cmd": "pause"}}


def test_ended_ranks_are_not_waited_for():
    hold = RankHold()
    hold.start()
    states = {0: _Rank("paused", 2), 1: _Rank("ended", 9)}
    assert hold.settle(_board({0: 2, 1: 9}), states) == {}


# --- the app: Pilot over two ranks ----------------------------------------------------------------

@pytest.mark.asyncio
async def test_the_rank_bar_switches_every_view_to_another_rank(events):
    app = ModscopeApp(EventListSource(two_ranks(events)))
    async with app.run_test(size=(180, 50)) as pilot:
        await settle(pilot, app, loaded)
        bar = app.query_one(RankBar)
        text = bar.render().plain if hasattr(bar.render(), "plain") else str(bar.render())
        assert "▶ rank 0" in text and "rank 1" in text and f"parted at step {PART_STEP}: blk.b.weight" in text
        assert "rank 0 of 2" in app.title
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        table = app.query_one(ParamsTable)
        assert SPREAD in [str(c.label) for c in table.columns.values()]
        cell = str(table.get_cell("blk.a.weight", list(table.columns)[-1]))
        assert f"×{GRAD_SCALE:.2f}" in cell and "/2" in cell
        a0 = app.state.params["blk.a.weight"].grad_norm
        await pilot.press("r")
        await settle(pilot, app, lambda a: a.state.rank == 1 and "rank 1 of 2" in a.title)
        assert app.state.params["blk.a.weight"].grad_norm == pytest.approx(GRAD_SCALE * a0)
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: tree.modules is a.state.modules)  # the tree reads rank 1's modules
        timeline = app.query_one(HookTimeline)
        await settle(pilot, app, lambda a: timeline.step == a.state.steps_available()[-1])
        await pilot.press("r")  # round to rank 0
        await settle(pilot, app, lambda a: a.state.rank == 0 and tree.modules is a.state.modules)


@pytest.mark.asyncio
async def test_the_parted_parameter_is_flagged_on_the_step_the_timeline_stays_on(events):
    app = ModscopeApp(EventListSource(two_ranks(events)))
    async with app.run_test(size=(180, 50)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        app._select("blk.b")
        await pilot.press("r")
        await settle(pilot, app, lambda a: a.state.rank == 1)
        table = app.query_one(ParamsTable)
        spread_col = list(table.columns)[-1]
        await settle(pilot, app, lambda a: "≠" in str(table.get_cell("blk.b.weight", spread_col)))
        app._timeline_step(step=2)  # before it parted
        await settle(pilot, app, lambda a: a.step_values is not None and a.step_values.step == 2)
        await settle(pilot, app, lambda a: "≠" not in str(table.get_cell("blk.b.weight", list(table.columns)[-1])))


@pytest.mark.asyncio
async def test_one_process_shows_no_rank_bar_and_r_says_so(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.state.status == "ended" and a.query_one(ModuleTree).modules != {})
        assert not app.query_one(RankBar).display
        table = app.query_one(ParamsTable)
        assert SPREAD not in [str(c.label) for c in table.columns.values()]
        await pilot.press("r")
        await pilot.pause(0.2)
        assert app.state.rank == 0


class _Recording(Source):
    """A live source of two ranks that records what the viewer sends to each."""

    live = True

    def __init__(self, events: list[dict]) -> None:
        self.inner = EventListSource(events)
        self.sent: list[tuple[int | None, dict]] = []

    def start(self, state: SessionState) -> None:
        self.inner.start(state)

    def control(self, message: dict, rank: int | None = None) -> bool:
        self.sent.append((rank, message))
        return True


@pytest.mark.asyncio
async def test_a_rank_stopped_behind_another_is_brought_to_its_boundary_and_space_lets_all_go(events):
    # rank 0 paused at the end of step 2; rank 1 ran on (it reported the end of step 3, so the
    # pause reaches it in step 4 at the earliest): the viewer holds rank 1 at the end of step 4
    # (pause) and lets rank 0 run to it (until 4)
    base = [e for e in two_ranks(events) if e["kind"] != "end"]
    a = [e for e in base if e["rank"] == 0 and e["step"] <= 2]
    b = [e for e in base if e["rank"] == 1 and e["step"] <= 3]
    paused = {**a[-1], "kind": "status", "state": "paused", "reason": "paused from the viewer", "seq": a[-1]["seq"] + 1}
    for key in ("path", "items", "optimizer", "index", "lrs", "values", "call", "dur_ns", "nodes", "edges"):
        paused.pop(key, None)
    source = _Recording(a + b + [paused])
    app = ModscopeApp(source)
    async with app.run_test(size=(180, 50)) as pilot:
        await settle(pilot, app, lambda a: (0, {"cmd": "resume", "until": 4}) in source.sent)
        assert (1, {"cmd": "pause"}) in source.sent and app.hold.holding
        await settle(pilot, app, lambda a: "holding: bringing every rank to one step" in str(
            a.query_one(RankBar).render()))
        source.sent.clear()
        await pilot.press("space")  # a rank is paused: space resumes every rank
        await settle(pilot, app, lambda a: (None, {"cmd": "resume"}) in source.sent)
        await pilot.pause(0.3)
        assert not app.hold.holding and source.sent == [(None, {"cmd": "resume"})]  # no hold again


@pytest.mark.asyncio
async def test_pause_and_step_go_to_every_rank(events):
    source = _Recording([e for e in two_ranks(events) if e["kind"] != "end"])
    app = ModscopeApp(source)
    async with app.run_test(size=(180, 50)) as pilot:
        await settle(pilot, app, lambda a: a.root.board is not None and len(a.root.board.last) == 2)
        await pilot.press("space")
        await settle(pilot, app, lambda a: (None, {"cmd": "pause"}) in source.sent)
        assert app.hold.holding
        await pilot.press("n")
        await settle(pilot, app, lambda a: (None, {"cmd": "step"}) in source.sent)


@pytest.mark.asyncio
async def test_a_replay_of_a_run_of_several_ranks_opens_every_rank(events, tmp_path):
    both = two_ranks(events)
    save_events([e for e in both if e["rank"] == 0], tmp_path / "run.jsonl")
    save_events([e for e in both if e["rank"] == 1], tmp_path / "run.rank1.jsonl")
    app = ModscopeApp(ReplaySource(tmp_path / "run.jsonl"))
    async with app.run_test(size=(180, 50)) as pilot:
        await settle(pilot, app, loaded)
        assert app.root.board.parted[1].step == PART_STEP
        await pilot.press("r")
        await settle(pilot, app, lambda a: a.state.rank == 1 and a.query_one(HookTimeline).step == a.state.steps_available()[-1])
    # rank 1's file opened alone (F#1): its own rank first, rank 0 beside it
    app = ModscopeApp(ReplaySource(f"{tmp_path / 'run.jsonl'}#1"))
    async with app.run_test(size=(180, 50)) as pilot:
        # (rank 0's file is folded beside it: the title counts it once it is in)
        await settle(pilot, app, lambda a: loaded(a) and "rank 1 of 2" in a.title)
        assert app.state.rank == 1 and app.root.rank == 1


def test_fixture_is_json(events):
    json.dumps(two_ranks(events))  # (what a socket would carry)


def test_a_light_steps_step_event_is_its_boundary():
    board = RankBoard(clock=lambda: 0.0)
    base = {"v": 1, "seq": 0, "t": 0, "world_size": 2, "optimizer": "SGD", "index": 0, "lrs": [0.1]}
    board.saw({**base, "kind": "step", "step": 7, "rank": 1, "detail": "light"})
    assert board.last[1].params_step == 7
    hold = RankHold()
    hold.start()
    states = {0: _Rank("paused", 6), 1: _Rank("running", 7)}
    assert hold.settle(board, states)[0] == {"cmd": "resume", "until": 8}


def test_a_step_from_the_viewer_ignores_the_pause_statuses_from_before_it():
    # n on ranks held at step 4: rank 1 already reported its step 5 (its optimizer step event)
    # while rank 0's status still says "paused at 4" from before the step. That pause is stale:
    # taking it for a rank stopped behind would send rank 0 on to step 6, past the others.
    hold = RankHold()
    states = {0: _Rank("paused", 4), 1: _Rank("paused", 4)}
    hold.start(states)
    states[1].status, states[1].step, states[1].rev.status = "running", 5, 1
    assert hold.settle(_board({0: 4, 1: 5}), states) == {}
    states[1].status, states[1].rev.status = "paused", 2  # rank 1 stopped at 5
    states[0].status, states[0].step, states[0].rev.status = "paused", 5, 2  # so did rank 0
    assert hold.settle(_board({0: 5, 1: 5}), states) == {} and RankHold.held_at(states) == 5
