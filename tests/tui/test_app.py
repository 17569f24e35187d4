"""The app's behaviour with an injected event source (Textual's run_test / Pilot)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import time

import pytest
from rich.console import Console
from textual.widgets import Static

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.screens import help_text
from modscope.views.tui.sources import EventListSource, QueueSource, ReplaySource, SocketSource
from modscope.views.tui.widgets.graph_view import AutogradGraphView
from modscope.views.tui.widgets.module_tree import ModuleTree
from modscope.views.tui.widgets.params_table import COLUMNS, ParamsTable
from modscope.views.tui.widgets.timeline import HookTimeline
from tests.tui.conftest import TRACE


async def settle(pilot, app, condition=lambda app: True, timeout=20.0):
    for _ in range(int(timeout / 0.05)):
        await pilot.pause(0.05)
        if condition(app):
            return
    raise AssertionError("condition not reached in time")


def loaded(app) -> bool:
    steps = app.state.steps_available()
    return (app.state.status == "ended" and app.query_one(ModuleTree).modules != {}
            and bool(steps) and app.query_one(HookTimeline).step == steps[-1])


@pytest.mark.asyncio
async def test_tree_selection_drives_the_params_table(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        tree = app.query_one(ModuleTree)
        assert tree.root.label.plain.startswith("Net Net 50p")
        await settle(pilot, app, lambda a: a.selected == "blk.a")  # the first module owning parameters
        await pilot.press("down")
        await settle(pilot, app, lambda a: a.selected == "blk.b")
        table = app.query_one(ParamsTable)
        assert table.row_count == 2 and table.module_path == "blk.b"
        assert "blk.b" in table.border_title


@pytest.mark.asyncio
async def test_the_first_module_owning_parameters_is_selected_at_start(events):
    """Not the root, which owns none: the parameter table has something to show at once."""
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        assert app.query_one(ModuleTree).cursor_node.data == "blk.a"
        table = app.query_one(ParamsTable)
        assert table.module_path == "blk.a" and table.row_count == 2
        await pilot.press("up", "up")  # the user can still go to the root
        await settle(pilot, app, lambda a: a.selected == "")
        await pilot.pause(0.3)
        assert app.selected == ""  # and is not pulled back


@pytest.mark.asyncio
async def test_timeline_selection_selects_the_module_in_the_tree(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        timeline = app.query_one(HookTimeline)
        timeline.focus()
        await pilot.press("home", "down", "down")  # ▶ root, ▶ blk, ▶ blk.a
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        assert app.query_one(ModuleTree).cursor_node.data == "blk.a"


@pytest.mark.asyncio
async def test_find_dialog_selects_a_module_and_keys_type_into_it(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press("slash")
        await pilot.press(*"head q")  # 'q' and space type into the field instead of quitting/pausing
        assert app.screen.query_one("#query").value == "head q"
        await pilot.press(*["backspace"] * 2, "enter")
        await settle(pilot, app, lambda a: a.selected == "head")
        assert app.is_running


@pytest.mark.asyncio
async def test_step_navigation_in_the_timeline(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        timeline = app.query_one(HookTimeline)
        last = timeline.step
        await pilot.press("left_square_bracket")
        # the title follows at the next refresh tick
        await settle(pilot, app, lambda a: timeline.step == last - 1 and "paused" in timeline.border_title)
        assert not timeline.follow
        await pilot.press("g")
        await pilot.press("2", "enter")
        await settle(pilot, app, lambda a: timeline.step == 2)
        await pilot.press("g")
        await pilot.press(*"999", "enter")
        assert "not kept" in str(app.screen.query_one("#error").render())
        await pilot.press("escape", "f")
        await settle(pilot, app, lambda a: timeline.follow and timeline.step == last)


@pytest.mark.asyncio
async def test_timeline_filters_by_kind_and_module(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        timeline = app.query_one(HookTimeline)
        # the step's lines are laid out at a refresh after it is shown: count them once they are
        await settle(pilot, app, lambda a: timeline.line_count > 0)
        full = timeline.line_count
        await pilot.press("2")  # hide backward
        await settle(pilot, app, lambda a: timeline.line_count < full)
        assert "hiding backward" in timeline.border_subtitle
        await settle(pilot, app, lambda a: a.selected == "blk.a")  # selected at start
        await pilot.press("m")  # filter to it
        await settle(pilot, app, lambda a: timeline.module_filter == "blk.a")
        await settle(pilot, app, lambda a: 0 < timeline.line_count <= 4)


@pytest.mark.asyncio
async def test_controls_on_a_replay_explain_instead_of_failing(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press("space", "n")
        await pilot.pause(0.1)
        messages = [n.message for n in app._notifications]
        assert any("replay" in m for m in messages)


@pytest.mark.asyncio
async def test_too_small_terminal_gets_a_message(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause(0.2)
        assert app.screen.has_class("too-small")
        assert "too small" in str(app.query_one("#too-small").render())
        await pilot.resize_terminal(120, 40)
        await pilot.pause(0.2)
        assert not app.screen.has_class("too-small")


@pytest.mark.asyncio
async def test_user_script_error_shows_its_traceback(events):
    error = {"v": 1, "kind": "error", "seq": len(events), "t": 0, "step": 6, "etype": "ValueError",
             "message": "bad batch", "where": "user script", "module": None,
             "traceback": "Traceback (most recent call last):\n  File \"train.py\", line 3\nValueError: bad batch"}
    app = ModscopeApp(EventListSource([e for e in events if e["kind"] != "end"] + [error]))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.screen is not a.screen_stack[0] and a.screen.query("Static"))
        text = str(app.screen.query_one("Static").render())
        assert "ValueError" in text and "train.py" in text
        assert app.state.modules  # every event before the error is kept


@pytest.mark.asyncio
async def test_help_and_command_palette_entries(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        shown = _screen_text(app)
        assert "pause / resume" in shown and "show / hide the BackwardHook" in shown
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Pause/resume", "Step", "Breakpoints", "Find", "Export", "Quit",
                       "Show/hide hook nodes in the graph"):
            assert wanted in titles


def _screen_text(app) -> str:
    console = Console(width=app.size.width, record=True, file=io.StringIO())
    console.print(app.screen.query_one(Static).content)
    return console.export_text()


@pytest.mark.parametrize("width", [60, 80, 104])
def test_help_descriptions_wrap_under_themselves(width):
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(help_text())
    lines = console.export_text().splitlines()
    column = next(line for line in lines if line.startswith("space")).index("pause")
    continued = [line for line in lines if line.startswith(" ") and line.strip()]
    assert continued or width >= 104  # narrow help wraps...
    for line in continued:  # ...each continuation under its own description, not under the keys
        assert len(line) - len(line.lstrip()) >= column, line
    assert all(len(line) <= width for line in lines)


@pytest.mark.asyncio
async def test_command_palette_lists_each_command_once_with_its_key_as_typed(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)):
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert len(titles) == len(set(titles))
        assert commands["Find"] == "key: /" and commands["Help"] == "key: ?"
        assert commands["Prev step"] == "key: [" and commands["Pause/resume"] == "key: space"
        assert commands["Timeline: show/hide error events"] == "key: 4"
        assert commands["Errors: the error panel"] == "key: x"


@pytest.mark.asyncio
async def test_replay_source_and_bad_trace_file(tmp_path):
    app = ModscopeApp(ReplaySource(TRACE))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.state.status == "ended" and a.query_one(ModuleTree).modules)
        assert app.sub_title.startswith("replay")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    from modscope.events.files import TraceFileError
    with pytest.raises(TraceFileError, match="bad.jsonl:1"):
        ReplaySource(bad)


@pytest.mark.asyncio
async def test_nothing_the_program_sends_crashes_the_viewer(events):
    source = SocketSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        await asyncio.get_running_loop().run_in_executor(None, client.connect, source.address)
        hello = json.dumps({"hello": "modscope", "token": source.token}).encode() + b"\n"
        garbage = [b"not json", b"[1,2,3]", json.dumps({**events[5], "kind": "forward", "path": 3}).encode(),
                   json.dumps({**events[5], "v": 42}).encode(), b"\xff\xfe"]
        good = [json.dumps(e).encode() for e in events[:40]]
        client.sendall(hello + b"\n".join(garbage + good) + b"\n")
        await settle(pilot, app, lambda a: a.state.modules and a.state.events_total >= 40)
        client.close()
        await settle(pilot, app, lambda a: a.state.status == "disconnected")
        assert source.rejected == len(garbage)
        assert sum(e["etype"] == "ProtocolError" for e in app.state.errors) == len(garbage)
        assert app.is_running


async def connect(source: SocketSource) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await asyncio.get_running_loop().run_in_executor(None, client.connect, source.address)
    return client


def closed_by_the_viewer(client: socket.socket) -> bool:
    client.settimeout(5)
    try:
        return client.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.asyncio
async def test_a_connection_without_the_token_is_refused_and_the_viewer_keeps_listening(events):
    source = SocketSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        loop = asyncio.get_running_loop()
        intruder = await connect(source)  # first in, wrong token
        intruder.sendall(json.dumps({"hello": "modscope", "token": "guess"}).encode() + b"\n")
        assert await loop.run_in_executor(None, closed_by_the_viewer, intruder)
        babbler = await connect(source)  # no newline within the first 4 KB
        babbler.sendall(b"x" * 10000)
        assert await loop.run_in_executor(None, closed_by_the_viewer, babbler)
        silent = await connect(source)  # says nothing: must not hold up the real program
        await settle(pilot, app, lambda a: sum(e["etype"] == "ProtocolError" for e in a.state.errors) == 2)
        assert "token" in app.state.errors[0]["message"] and app.state.status != "disconnected"
        child = await connect(source)  # the real program still gets in
        hello = json.dumps({"hello": "modscope", "token": source.token}).encode() + b"\n"
        child.sendall(hello + b"".join(json.dumps(e).encode() + b"\n" for e in events))
        await settle(pilot, app, lambda a: a.state.status == "ended" and a.state.modules)
        assert source.control({"cmd": "pause"})  # the control channel is the program's connection
        assert json.loads(child.recv(1000)) == {"cmd": "pause"}
        late = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # nobody gets in after the program
        with pytest.raises(OSError):
            late.connect(source.address)
        for s in (intruder, babbler, silent, child, late):
            s.close()
    for _ in range(100):  # the private directory is removed when the app unmounts
        if not os.path.exists(source.dir):
            break
        time.sleep(0.05)
    assert not os.path.exists(source.dir)


@pytest.mark.asyncio
async def test_q_quits_from_the_error_panel_the_script_opened(events):
    """The panel opens by itself when the script raises; q quits from it (not only Escape)."""
    error = {"v": 1, "kind": "error", "seq": len(events), "t": 0, "step": 6, "etype": "ValueError",
             "message": "bad batch", "where": "user script", "module": None, "traceback": "Traceback ..."}
    app = ModscopeApp(EventListSource([e for e in events if e["kind"] != "end"] + [error]))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.screen is not a.screen_stack[0])
        await pilot.press("q")
        await pilot.pause(0.2)
        assert not app.is_running and app.return_code == 0


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["question_mark", "l"])
async def test_q_quits_from_the_other_panels_too(events, key):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press(key)
        await settle(pilot, app, lambda a: a.screen is not a.screen_stack[0])
        await pilot.press("q")
        await pilot.pause(0.2)
        assert not app.is_running


@pytest.mark.asyncio
async def test_a_refresh_tick_during_shutdown_is_harmless(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await app.query_one(ModuleTree).remove()  # as when the app tears its screen down
        app._seen = {}  # everything looks changed: the tick would redraw every view
        app.refresh_views()  # no NoMatches escapes into Textual's timer


@pytest.mark.asyncio
async def test_a_first_selection_that_runs_after_the_views_are_gone_is_harmless(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await app.query_one(ModuleTree).remove()
        app.selected = ""
        app._select_first_with_params()  # scheduled at the first model; on a slow machine it ran late
        assert app.selected == "blk.a"


# --- a program that never sends a model ---------------------------------------------------------

def without_a_model(events, end=True):
    """The fixture session as a program that calls no module would send it: steps, metrics."""
    kept = [e for e in events if e["kind"] in ("session", "step", "metric") or (end and e["kind"] == "end")]
    return [dict(e, seq=i) for i, e in enumerate(kept)]


class FakeChild:
    def __init__(self, log, returncode=None):
        self.log, self.returncode = list(log), returncode


def no_model_text(app) -> str:
    return str(app.query_one("#no-model").render())


def drawn(app) -> bool:
    """The views have drawn every revision of the state (a tick saw it all): what they show is
    what the state holds, not what it held a tick before."""
    with app.state.lock:
        revs = app.state.rev.as_dict()
    return app._seen == revs


@pytest.mark.asyncio
async def test_a_program_that_ended_without_a_model_says_what_it_saw_and_what_to_do(events):
    child = FakeChild(["epoch 1 loss 0.29", "done"], returncode=0)
    app = ModscopeApp(EventListSource(without_a_model(events)), child=child)
    async with app.run_test(size=(160, 45)) as pilot:
        # the program is over AND a tick drew that (the source folds on its own thread, started
        # after the first frame: a tick can come between its batches)
        await settle(pilot, app, lambda a: a.state.status == "ended" and drawn(a))
        assert app.query_one("#left").has_class("no-model")
        assert not app.query_one(ModuleTree).display and app.query_one("#no-model").display
        text = no_model_text(app)
        for wanted in ("No model: the program ended", "at step 5", "loss=", "epoch 1 loss 0.29", "done",
                       "exit status 0", "modscope traces nn.Module calls: this program ran none",
                       "modscope.watch(model)"):
            assert wanted in text, wanted


@pytest.mark.asyncio
async def test_a_running_program_without_a_model_says_so_and_a_late_model_replaces_the_message(events):
    source = QueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        for e in without_a_model(events, end=False):
            source.sink.write(e)
        # every event folded AND drawn (the panel shows from the first step on; the source's
        # thread may still be folding the rest at that tick)
        await settle(pilot, app, lambda a: a.state.step == 5 and drawn(a))
        assert app.query_one("#left").has_class("no-model")
        text = no_model_text(app)
        assert "No model yet" in text and "at step 5" in text and "this program ran none" in text
        model = next(e for e in events if e["kind"] == "model")
        source.sink.write(dict(model, seq=100, step=5))
        await settle(pilot, app, lambda a: not a.query_one("#left").has_class("no-model"))
        assert app.query_one(ModuleTree).display and app.query_one(ModuleTree).modules


@pytest.mark.asyncio
async def test_output_alone_waits_a_moment_before_saying_no_model(events, monkeypatch):
    from modscope.views.tui import app as app_module
    # The grace is changed mid-test rather than timed: on a loaded machine a short pause can outlast
    # any short grace (a fresh-clone run at load 15 did), so "before" and "after" are set, not raced.
    monkeypatch.setattr(app_module, "NO_MODEL_GRACE", 3600.0)
    app = ModscopeApp(EventListSource(without_a_model(events)[:1]), child=FakeChild(["loading data…"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a._output_seen_at is not None)  # the output has been read
        await pilot.pause(0.3)
        assert not app.query_one("#left").has_class("no-model")  # still starting: no verdict yet
        monkeypatch.setattr(app_module, "NO_MODEL_GRACE", 0.0)
        await settle(pilot, app, lambda a: a.query_one("#left").has_class("no-model"))
        assert "loading data…" in no_model_text(app) and "No model yet" in no_model_text(app)


@pytest.mark.asyncio
async def test_a_session_with_a_model_never_shows_the_no_model_message(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        assert not app.query_one("#left").has_class("no-model") and not app.query_one("#no-model").display


# --- the autograd graph's hook nodes ------------------------------------------------------------

def graph_labels(view) -> list[str]:
    return [view.node_label(n) for n in view.canvas.order]


@pytest.mark.asyncio
async def test_hook_identity_nodes_are_hidden_and_i_shows_them(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        view = app.query_one(AutogradGraphView)
        await settle(pilot, app, lambda a: view.status == "ready" and view.canvas is not None)
        assert not any(label.startswith("BackwardHook") for label in graph_labels(view))
        assert "12 hook nodes hidden (i)" in view.border_title
        hidden = len(view.diagram.nodes)
        await pilot.press("i")
        await settle(pilot, app, lambda a: view.status == "ready" and view.canvas is not None
                     and "hook nodes shown (i)" in view.border_title)
        assert sum(label.startswith("BackwardHook") for label in graph_labels(view)) == 12
        assert len(view.diagram.nodes) == hidden + 12
        await pilot.press("i")
        await settle(pilot, app, lambda a: view.status == "ready" and view.canvas is not None
                     and "hidden" in view.border_title)
        assert len(view.diagram.nodes) == hidden


# --- the breakpoints dialog ---------------------------------------------------------------------

class LiveEvents(EventListSource):
    """A recorded session posing as a live program: records what the viewer sends it."""

    live = True

    def __init__(self, events):
        super().__init__(events)
        self.sent = []

    def control(self, message):
        self.sent.append(message)
        return True


@pytest.mark.asyncio
@pytest.mark.parametrize("keys", [("tab", "5", "enter"), ("tab", "tab", *"blk.a", "enter"), ("enter",)],
                         ids=["grad field", "modules field", "checkbox"])
async def test_enter_in_the_breakpoints_dialog_applies_it(events, keys):
    """Only what was asked for is armed: the selected module (``blk.a``) is not put in the
    modules field (a grad-norm threshold alone also armed a forward breakpoint on it)."""
    source = LiveEvents(events)
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        await pilot.press("b")
        await settle(pilot, app, lambda a: a.screen is not a.screen_stack[0])
        field = app.screen.query_one("#modules")
        assert field.value == "" and "blk.a" in field.placeholder
        await pilot.press(*keys)
        await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        grad = 5.0 if "5" in keys else None
        modules = ["blk.a"] if "." in keys else []
        assert source.sent == [{"cmd": "break", "nan": False, "grad_norm": grad, "modules": modules}]
        assert app.breakpoints == source.sent[0]


@pytest.mark.asyncio
async def test_enter_with_a_bad_grad_norm_keeps_the_dialog_open(events):
    source = LiveEvents(events)
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press("b")
        await settle(pilot, app, lambda a: a.screen is not a.screen_stack[0])
        await pilot.press("tab", *"abc", "enter")
        await pilot.pause(0.2)
        assert app.screen is not app.screen_stack[0] and source.sent == []
        assert "must be a number" in str(app.screen.query_one("#error").render())
        await pilot.press(*["backspace"] * 3, "shift+tab", "space")  # space toggles the checkbox
        assert app.screen.query_one("#nan").value and app.is_running
        await pilot.press("enter")
        await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        assert source.sent == [{"cmd": "break", "nan": True, "grad_norm": None, "modules": []}]


# --- the responsive layout: every view reachable at every size, the maximise key -------------

VIEWS = ("tree", "params", "timeline", "graph")
SIZES = [(80, 24), (100, 30), (200, 55)]
SIZE_IDS = ["80x24", "100x30", "200x55"]


def screen_text(app) -> str:
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


def on_screen(app, widget) -> bool:
    """Displayed, with a non-empty region inside the screen, and what the screen shows at the
    region's corners and centre is this widget (or one of its children): not covered, not clipped."""
    r = widget.region
    if not (widget.display and r.width > 0 and r.height > 0 and app.screen.region.contains_region(r)):
        return False
    points = [(r.x, r.y), (r.right - 1, r.bottom - 1), (r.x + r.width // 2, r.y + r.height // 2)]
    for x, y in points:
        try:
            hit, _ = app.screen.get_widget_at(x, y)
        except Exception:  # noqa: BLE001 - nothing there
            return False
        if hit is not widget and widget not in hit.ancestors:
            return False
    return True


def shown(app) -> set[str]:
    return {v for v in (*VIEWS, "training") if on_screen(app, app.query_one(f"#{v}"))}


async def ready(pilot, app) -> None:
    await settle(pilot, app, loaded)
    await settle(pilot, app, lambda a: a.selected == "blk.a")
    await pilot.pause(0.3)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_every_view_is_reachable_and_on_screen(events, size):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        seen = set()
        for view in (*VIEWS, VIEWS[0]):  # tab goes round every view, showing it
            await settle(pilot, app, lambda a, view=view: a.focused is a.query_one(f"#{view}")
                         and view in shown(a))
            now = shown(app)
            seen |= now
            regions = [app.query_one(f"#{v}").region for v in now]  # the panes on screen do not overlap
            assert not any(a.overlaps(b) for i, a in enumerate(regions) for b in regions[i + 1:])
            if size == (200, 55):
                assert now == {*VIEWS, "training"}  # every pane at once
            elif size == (80, 24):
                assert now == ({"tree", "training"} if view == "tree" else {view})  # one view at a time
            else:
                assert {"tree", "training", view} <= now and len(now) == 3  # modules + one view
            if view == "tree":
                text = screen_text(app)
                assert "q quit" in text and "? help" in text  # the footer keeps the keys that matter
                if size != (200, 55):
                    assert "Graph" in text.splitlines()[1]  # the view bar names the views not shown
                assert "status" in text and "sta…" not in text  # the training panel's names are whole
            await pilot.press("tab")
        assert seen == {*VIEWS, "training"}


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24", "100x30"])
async def test_the_view_bar_is_clickable_and_find_shows_the_tree(events, size):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        text = screen_text(app).splitlines()[1]
        await pilot.click(offset=(text.index("Graph") + 1, 1))
        await settle(pilot, app, lambda a: "graph" in shown(a) and a.focused is a.query_one(AutogradGraphView))
        await pilot.press("slash")
        await pilot.press(*"head", "enter")
        await settle(pilot, app, lambda a: a.selected == "head" and "tree" in shown(a)
                     and a.focused is a.query_one(ModuleTree))


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_z_maximises_the_focused_view_and_restores_it(events, size):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        screen = app.screen
        before = shown(app)
        for view in VIEWS:
            widget = app.query_one(f"#{view}")
            app.action_show_view(view)
            await settle(pilot, app, lambda a, widget=widget: a.focused is widget)
            await pilot.press("z")
            await settle(pilot, app, lambda a, widget=widget, view=view:
                         screen.maximized is widget and shown(a) == {view})
            assert widget.region.width == size[0]  # the whole width, the header and footer kept
            assert widget.region.height == size[1] - 2
            key = "z" if view != "graph" else "escape"  # escape restores too
            await pilot.press(key)
            await settle(pilot, app, lambda a, view=view: screen.maximized is None and view in shown(a))
        app.action_show_view("params")  # the right column's page at start
        app.action_show_view("tree")
        await settle(pilot, app, lambda a: shown(a) == before)  # the layout is back as it was


@pytest.mark.asyncio
async def test_the_modules_pane_is_as_wide_as_its_labels_and_the_graph_gets_the_rest(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(200, 55)) as pilot:
        await ready(pilot, app)
        tree, graph, timeline = app.query_one(ModuleTree), app.query_one(AutogradGraphView), app.query_one(HookTimeline)
        widest = tree.virtual_size.width  # the widest label, with its guides
        assert 30 <= tree.region.width <= 60 and widest <= tree.region.width - 2 <= widest + 4
        assert graph.region.width > timeline.region.width and graph.region.width >= 80
        await pilot.resize_terminal(80, 24)  # resizing changes the layout, and back
        await settle(pilot, app, lambda a: a.layout_mode == "narrow" and shown(a) == {"tree", "training"})
        assert tree.region.width == 80
        await pilot.resize_terminal(200, 55)
        await settle(pilot, app, lambda a: a.layout_mode == "wide" and shown(a) == {*VIEWS, "training"})


# --- a module called outside the model (a loss: ``criterion(model(x), y)``) -----------------------

def with_a_loss_root(events):
    """The fixture session as the global trace sends it when the program also calls a loss module:
    a second ``model`` event for the new root, named ``CrossEntropyLoss2``, and its calls."""
    model = next(e for e in events if e["kind"] == "model")
    loss = dict(model, model="CrossEntropyLoss2", params=[], buffers=[],
                modules=[{"path": "CrossEntropyLoss2", "cls": "CrossEntropyLoss", "extra_repr": "",
                          "training": True, "children": [], "aliases": []}])
    calls = [dict(model, kind="forward_pre", path="CrossEntropyLoss2", call=0, inputs=[]),
             dict(model, kind="forward", path="CrossEntropyLoss2", call=0, outputs=[], dur_ns=1000)]
    for e in calls:
        for key in ("model", "modules", "params", "buffers"):
            e.pop(key)
    end = [e for e in events if e["kind"] == "end"]
    body = [e for e in events if e["kind"] != "end"]
    return [dict(e, seq=i) for i, e in enumerate(body[:2] + [loss] + body[2:] + calls + end)]


@pytest.mark.asyncio
async def test_a_module_called_outside_the_model_is_in_the_tree_as_in_the_timeline(events):
    app = ModscopeApp(EventListSource(with_a_loss_root(events)))
    async with app.run_test(size=(160, 45)) as pilot:
        # (the second root grows the state's module dict in place: the tree is rebuilt for it)
        await settle(pilot, app, lambda a: loaded(a) and "CrossEntropyLoss2" in a.query_one(ModuleTree)._node_by_path)
        tree = app.query_one(ModuleTree)
        node = tree._node_by_path.get("CrossEntropyLoss2")
        assert node is not None and node.parent is tree.root  # listed with the model's children
        label = tree._build_label("CrossEntropyLoss2").plain
        assert label.startswith("CrossEntropyLoss2 CrossEntropyLoss") and label.endswith("called outside the model")
        assert [c.data for c in tree.root.children][-1] == "CrossEntropyLoss2"  # after the model's own
        app._select("CrossEntropyLoss2")  # as a click on its timeline row does
        await settle(pilot, app, lambda a: tree.cursor_node is node)


@pytest.mark.asyncio
async def test_a_selection_message_still_queued_at_shutdown_is_harmless(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await app.query_one(ParamsTable).remove()  # as when the app tears its screen down
        app.on_module_tree_selected(ModuleTree.Selected("head"))  # no NoMatches escapes
        assert app.selected == "head"


@pytest.mark.asyncio
async def test_the_params_table_sizes_its_columns_to_rows_shown_by_a_plain_call(events):
    """Rows put in by the ticker (no message to the table) are measured without waiting for a
    key or the mouse: the columns fit ``weight`` and ``float32`` (they stayed ``weig``, ``float``)."""
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        table = app.query_one(ParamsTable)
        with app.state.lock:
            params = app.state.params_of("head")
        table.show("head", params)
        await pilot.pause(0.3)
        widths = {str(c.label): c.get_render_width(table) for c in table.columns.values()}
        assert widths["name"] >= len("weight") + 2 and widths["dtype"] >= len("float32") + 2, widths


@pytest.mark.asyncio
async def test_the_params_table_widens_a_column_when_a_value_grows(events):
    """Values that arrive after the rows were drawn (``–`` until the first step) widen their
    column: they were cut to the header's width (``update 5.63e-``, ``mean -0.0``)."""
    import dataclasses

    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: loaded(a) and a.selected == "blk.a")
        table = app.query_one(ParamsTable)
        with app.state.lock:
            params = app.state.params_of("head")
        blank = [dataclasses.replace(p, norm=None, grad_norm=None, update_ratio=None, mean=None, std=None)
                 for p in params]
        table.clear(columns=True)  # a fresh table: columns keep the widest cell they ever had
        table.add_columns(*COLUMNS)
        table.show("head", blank)
        await pilot.pause(0.3)
        grown = [dataclasses.replace(p, norm=123.456, grad_norm=0.000123456, update_ratio=5.63e-4,
                                     mean=-0.00321, std=0.0123) for p in params]
        table.show("head", grown)
        await pilot.pause(0.3)
        widths = {str(c.label): c.get_render_width(table) - 2 * table.cell_padding for c in table.columns.values()}
        assert widths["update"] >= len("5.63e-04") and widths["mean"] >= len("-0.00321"), widths
        assert widths["grad norm"] >= len("0.000123"), widths


@pytest.mark.asyncio
async def test_find_lists_name_matches_before_class_matches_and_down_moves_through_them(events):
    """``/ head`` with modules of class ``HeadLinear`` before the module ``head``: Enter picks
    ``head`` (it picked the first class match), and down reaches the next match while typing."""
    for event in events:
        if event["kind"] == "model":
            for m in event["modules"]:
                if m["path"] in ("blk.a", "blk.b"):
                    m["cls"] = "HeadLinear"
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: loaded(a) and a.selected == "blk.a")
        await pilot.press("slash", *"head")
        options = app.screen.query_one("#matches")
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == \
            ["m:head", "m:blk.a", "m:blk.b"]
        await pilot.press("enter")
        await settle(pilot, app, lambda a: a.selected == "head")
        await pilot.press("slash", *"head", "down", "down", "down", "up", "enter")
        await settle(pilot, app, lambda a: a.selected == "blk.a")


def test_find_ranks_a_name_over_a_prefix_over_a_path_over_a_class():
    from modscope.views.tui.screens import NO_MATCH, match_rank

    assert match_rank("conv2", "conv2", "conv2d") == 0
    assert match_rank("conv2", "block.conv2", "conv2d") == 0
    assert match_rank("conv2", "conv2_drop", "dropout2d") == 1
    assert match_rank("conv2", "conv2s.0", "sequential") == 2
    assert match_rank("conv2d", "stem", "conv2d") == 3
    assert match_rank("conv2", "conv1", "conv2d") == 4
    assert match_rank("conv2", "fc1", "linear") == NO_MATCH


@pytest.mark.asyncio
@pytest.mark.parametrize("replayed", [True, False], ids=["replay file", "events"])
async def test_going_to_a_step_shows_its_parameters_and_timings(events, tmp_path, replayed):
    """``g 0`` in a replay: the parameter table and the module timings are step 0's (they
    stayed at the last step's), the titles say so; ``f`` (follow) brings the latest back."""
    for e in events:
        if e["kind"] == "forward" and e["path"] == "blk.a" and e["step"] == 0:
            e["dur_ns"] = 1_500_000  # two calls: 3.00ms in step 0, 0.01ms in the others
    first = next(e for e in events if e["kind"] == "params" and e["step"] == 0)
    norm0 = next(i["norm"] for i in first["items"] if i["path"] == "blk.a.weight")
    if replayed:
        path = tmp_path / "run.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        source = ReplaySource(path)
    else:
        source = EventListSource(events)
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: loaded(a) and a.selected == "blk.a")
        tree, table = app.query_one(ModuleTree), app.query_one(ParamsTable)
        latest = str(table.get_cell("blk.a.weight", table.ordered_columns[6].key))
        assert latest != f"{norm0:.3g}"
        assert "3.00ms" not in tree._build_label("blk.a").plain
        await pilot.press("g", "0", "enter")
        await settle(pilot, app, lambda a: a.step_values is not None and a.step_values.step == 0)
        await pilot.pause(0.1)
        assert str(table.get_cell("blk.a.weight", table.ordered_columns[6].key)) == f"{norm0:.3g}"
        assert "3.00ms" in tree._build_label("blk.a").plain
        assert table.border_title.endswith("· step 0") and tree.border_title == "Modules · step 0"
        await pilot.press("f")
        await settle(pilot, app, lambda a: a.step_values is None)
        await pilot.pause(0.1)
        assert str(table.get_cell("blk.a.weight", table.ordered_columns[6].key)) == latest
        assert "3.00ms" not in tree._build_label("blk.a").plain and tree.border_title == "Modules"


def test_step_values_sum_a_steps_calls_and_take_its_params_event():
    from modscope.views.tui.state import ModuleInfo, ParamInfo
    from modscope.views.tui.step_values import step_values

    events = [
        {"kind": "forward", "step": 3, "path": "a", "dur_ns": 100},
        {"kind": "forward", "step": 3, "path": "a", "dur_ns": 50},
        {"kind": "backward", "step": 3, "path": "a", "dur_ns": 7},
        {"kind": "forward", "step": 4, "path": "a", "dur_ns": 999},
        {"kind": "params", "step": 3, "items": [{"path": "a.w", "norm": 2.0, "grad_norm": None,
                                                 "update_ratio": 0.1, "mean": 0.0, "std": 1.0, "nan": 0, "inf": 1}]},
    ]
    values = step_values(events, 3)
    m = values.module(ModuleInfo("a", "Linear", "", True, [], [], fwd_ns=5, bwd_ns=5))
    assert (m.fwd_ns, m.bwd_ns) == (150, 7)
    assert values.module(ModuleInfo("b", "ReLU", "", True, [], [], fwd_ns=5)).fwd_ns == 0  # not run in step 3
    p = values.param(ParamInfo("a.w", [2], "float32", 2, True, norm=9.0, grad_norm=9.0))
    assert (p.norm, p.grad_norm, p.update_ratio, p.inf) == (2.0, None, 0.1, 1)
    assert values.param(ParamInfo("a.b", [2], "float32", 2, True, norm=9.0)).norm is None
    assert step_values(events, 5).params is None


@pytest.mark.asyncio
async def test_paused_training_says_paused_instead_of_its_last_rate(events):
    from modscope.views.tui.widgets.training import TrainingPanel

    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        panel = app.query_one(TrainingPanel)
        snap = {"status": "paused", "reason": "paused by the viewer", "step": 3, "optimizer": "", "lrs": [],
                "metrics": {}, "steps_s": 12.5, "events_s": 300.0, "events": 10, "dropped": 0, "skipped": 0,
                "errors": 0, "model": "Net"}
        panel.show(snap)
        await pilot.pause()
        text = "\n".join(line.text for line in panel.render_lines(panel.region.reset_offset))
        assert "paused (was 12.5 steps/s)" in text and "events/s" not in text
        panel.show(dict(snap, status="running"))
        await pilot.pause()
        text = "\n".join(line.text for line in panel.render_lines(panel.region.reset_offset))
        assert "12.5 steps/s" in text and "was" not in text


def test_the_programs_thread_count_is_told_when_modscope_chose_it():
    from modscope.views.tui.app import child_threads, threads_note, threads_row

    assert child_threads({}, 8) == (7, 8) and child_threads({"PATH": "/bin"}, 2) == (1, 2)
    assert child_threads({"OMP_NUM_THREADS": "4"}, 8) is None  # the user chose
    assert child_threads({}, 1) is None  # one core: as a plain run
    assert threads_row(1, 2) == "1 of 2 cores (l: why)"
    assert "1 BLAS/torch thread " in threads_note(1, 2) and "OMP_NUM_THREADS" in threads_note(1, 2)


def app_of_a_program_given_3_of_4_cores(events, monkeypatch) -> ModscopeApp:
    """A viewer whose child would get fewer BLAS threads than the machine's 4 cores."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    return ModscopeApp(EventListSource(events), child=FakeChild(["epoch 1"], returncode=0))


@pytest.mark.asyncio
async def test_the_log_and_the_training_panel_say_the_program_got_fewer_threads(events, monkeypatch):
    from modscope.views.tui.widgets.training import TrainingPanel

    app = app_of_a_program_given_3_of_4_cores(events, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        panel = app.query_one(TrainingPanel)
        await settle(pilot, app, lambda a: any("threads 3 of 4 cores" in line.text
                                               for line in panel.render_lines(panel.region.reset_offset)))
        await pilot.press("l")
        await settle(pilot, app, lambda a: a.screen is not a.screen_stack[0])
        body = str(app.screen.query_one(Static).render())
        assert "with 3 BLAS/torch threads" in body and body.rstrip().endswith("epoch 1")


@pytest.mark.asyncio
async def test_a_view_focused_as_the_app_shuts_down_is_ignored(events):
    """Focusing the hidden graph at 100x30 just before exit raised IndexError in _apply_view
    (the screen stack is empty during shutdown)."""
    from types import SimpleNamespace

    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, loaded)
        view = app.view
    assert not app.screen_stack
    app.on_descendant_focus(SimpleNamespace(widget=SimpleNamespace(id="graph")))
    assert app.view == view


@pytest.mark.asyncio
async def test_the_threads_row_wraps_in_a_narrow_training_panel(events, monkeypatch):
    """In a narrow modules column (100x30, before the labels widened it) the row was cut at
    ``(l: w``: it wraps to the panel as the status reason does."""
    from modscope.views.tui.widgets.training import TrainingPanel

    app = app_of_a_program_given_3_of_4_cores(events, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, loaded)
        panel = app.query_one(TrainingPanel)
        panel.styles.width = 28  # room for 18 cells beside the names: the row is 21

        def text() -> str:
            return " ".join(" ".join(line.text.strip("│ ").split())
                            for line in panel.render_lines(panel.region.reset_offset))

        await settle(pilot, app, lambda a: panel.content_region.width < 28 and "threads 3 of 4" in text())
        assert "3 of 4 cores (l: why)" in text()


@pytest.mark.asyncio
@pytest.mark.parametrize(("size", "left_out"), [((100, 30), {"persist", "numel", "grad", "dtype", "std"}),
                                                ((80, 24), {"persist", "numel"}), ((200, 55), set())])
async def test_the_params_table_fits_its_pane_and_names_what_it_left_out(events, size, left_out):
    """At 100x30 and 80x24 the table went on past its pane (cut at ``norm`` or ``update``): it
    leaves out the least live columns, in order, and says which; z gives it all of them."""
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app, lambda a: loaded(a) and a.selected == "blk.a")
        if size != (200, 55):
            await pilot.press("tab")  # the parameters
        table = app.query_one(ParamsTable)
        await settle(pilot, app, lambda a: table.display and table.region.width > 0)
        await pilot.pause(0.2)
        widths = sum(c.get_render_width(table) for c in table.columns.values())
        assert widths <= table.scrollable_content_region.width
        assert set(COLUMNS) - set(table.shown) == left_out
        assert {"name", "norm", "grad norm", "update", "mean"} <= set(table.shown)
        if left_out:
            assert table.border_subtitle.startswith(", ".join(c for c in COLUMNS if c in left_out))
        if size == (100, 30):  # the whole screen's width holds them all
            await pilot.press("z")
            await settle(pilot, app, lambda a: set(table.shown) == set(COLUMNS))
        if not left_out:
            assert table.border_subtitle == ""


@pytest.mark.asyncio
async def test_a_module_label_wider_than_its_pane_ends_in_an_ellipsis(events):
    """At 100x30 labels were cut mid-number (``0.50m``) behind a sideways scrollbar."""
    for e in events:
        if e["kind"] == "model":
            for m in e["modules"]:
                if m["path"] == "blk.a":
                    m["cls"] = "AVeryLongLinearLayerClassNameIndeed"
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, lambda a: loaded(a) and a.selected == "blk.a")
        await pilot.pause(0.3)
        tree = app.query_one(ModuleTree)
        lines = [line.text for line in tree.render_lines(tree.region.reset_offset.shrink(tree.styles.gutter))]
        line = next(text for text in lines if "AVeryLong" in text)
        assert line.rstrip().endswith("…") and len(line.rstrip()) <= tree.scrollable_content_region.width
        assert tree.styles.overflow_x == "hidden"


@pytest.mark.asyncio
async def test_a_long_pause_reason_wraps_instead_of_being_cut(events):
    from modscope.views.tui.widgets.training import TrainingPanel

    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, loaded)
        panel = app.query_one(TrainingPanel)
        reason = "breakpoint: grad norm 12.3 of block.layer4.conv1.weight > 10"
        panel.show({"status": "paused", "reason": reason, "step": 3, "optimizer": "", "lrs": [], "metrics": {},
                    "steps_s": 1.0, "events_s": 1.0, "events": 10, "dropped": 0, "skipped": 0, "errors": 0,
                    "model": "Net"})
        await pilot.pause(0.2)
        lines = [line.text.strip(" │") for line in panel.render_lines(panel.region.reset_offset)]
        shown = "".join(x.strip() for x in lines[2:-4])  # whole, between status and step (wrapped)
        assert shown.replace(" ", "") == reason.replace(" ", ""), lines
        assert lines[1].split() == ["status", "paused"] and lines[-4].split() == ["step", "3"]


@pytest.mark.asyncio
async def test_the_help_is_one_dialog_kept_between_openings(events):
    """Composed once (``?`` took 0.3-1 s while training, most of it building the dialog again)."""
    from modscope.views.tui.screens import HelpScreen

    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press("question_mark")
        await settle(pilot, app, lambda a: isinstance(a.screen, HelpScreen))
        first = app.screen
        await pilot.press("escape")
        await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        await pilot.press("question_mark")
        await settle(pilot, app, lambda a: isinstance(a.screen, HelpScreen))
        assert app.screen is first and "this help" in screen_text(app)
        await pilot.press("question_mark")  # closes it, as escape does
        await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        assert app.is_running
