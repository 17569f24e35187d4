"""The app's behaviour with an injected event source (Textual's run_test / Pilot)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time

import pytest

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.sources import EventListSource, ReplaySource, SocketSource
from modscope.views.tui.widgets.module_tree import ModuleTree
from modscope.views.tui.widgets.params_table import ParamsTable
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
        await pilot.press("down", "down")
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        table = app.query_one(ParamsTable)
        assert table.row_count == 2 and table.module_path == "blk.a"
        assert "blk.a" in table.border_title


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
        full = timeline.line_count
        await pilot.press("2")  # hide backward
        await settle(pilot, app, lambda a: timeline.line_count < full)
        assert "hiding backward" in timeline.border_subtitle
        await pilot.press("down", "down", "m")  # select blk.a, filter to it
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
        assert "pause / resume" in str(app.screen.query_one("Static").render())
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Pause/resume", "Step", "Breakpoints", "Find", "Export", "Quit"):
            assert wanted in titles


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
