"""Keys first (``key_window``): from a key until its screen is painted, live redraws, full
garbage collections and the folding thread wait; the window closes at the first refresh after
the key, or after ``WINDOW_S`` at most. Behaviour only; the timings are
``bench/bench_tui_dialogs.py``'s."""

from __future__ import annotations

import threading
import time

import pytest

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.key_window import KEYS, KeyWindow
from modscope.views.tui.sources import QueueSource, fold
from modscope.views.tui.state import SessionState
from tests.tui.test_app import settle
from tests.tui.test_key_latency import step_events, training_to_step_5


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_a_window_opens_on_a_key_and_closes_when_painted_or_at_its_bound():
    clock = Clock()
    w = KeyWindow(window_s=0.15, clock=clock)
    assert not w.open
    w.press()
    assert w.open
    w.painted()
    assert not w.open
    w.press()
    clock.now += 0.1
    assert w.open
    clock.now += 0.06  # past the bound: a key whose effect is not painted holds nothing up for long
    assert not w.open


def test_a_background_thread_waits_while_the_window_is_open():
    w = KeyWindow(window_s=5.0)
    w.wait()  # closed: returns at once
    w.press()
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (w.wait(), done.set()))
    waiter.start()
    assert not done.wait(0.1)  # still open
    w.painted()
    assert done.wait(2.0)
    waiter.join()


def test_folding_waits_for_the_window_between_slices(events, monkeypatch):
    w = KeyWindow(window_s=5.0)
    monkeypatch.setattr("modscope.views.tui.sources.KEYS", w)
    state = SessionState()
    w.press()
    folder = threading.Thread(target=fold, args=(state, events))
    folder.start()
    time.sleep(0.2)
    with state.lock:
        folded = state.events_total
    assert folded <= 200  # one slice at most, then it waits for the key's screen
    w.painted()
    folder.join(5.0)
    assert not folder.is_alive() and state.events_total == len(events)


@pytest.mark.asyncio
async def test_a_key_holds_live_values_and_collections_until_its_screen_is_painted(events, monkeypatch):
    source = QueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await training_to_step_5(pilot, app, source, events)
        app._live_drawn_at = 0.0  # live values are due
        with app.state.lock:
            assert not app._hold_live({"training", "params"})
            KEYS.press()  # as a key does
            assert app._hold_live({"training", "params"})  # not between a key and its screen
            assert not app._hold_live({"training", "status"})  # a status change: at once
        ran = []
        monkeypatch.setattr(app.gc_policy, "tick", lambda: ran.append(1))
        app.refresh_views()
        assert ran == []  # no full collection either
        KEYS.painted()
        app.refresh_views()
        assert ran == [1]
        calls = []
        press, painted = KEYS.press, KEYS.painted
        monkeypatch.setattr(KEYS, "press", lambda: (calls.append("press"), press()))
        monkeypatch.setattr(KEYS, "painted", lambda: (calls.append("painted"), painted()))
        await pilot.press("down")  # a real key: the window opens, and closes after the next refresh
        await settle(pilot, app, lambda a: calls[-1:] == ["painted"] and not KEYS.open)
        # (the key reaches the app twice: from the driver, then bubbling up from the screen)
        # (each arrival opens the window and asks for a paint after the refresh: as many of each)
        assert calls and calls[0] == "press" and calls[-1] == "painted"
        assert calls.count("press") == calls.count("painted")
        for e in step_events(6, 1000):  # and folding goes on
            source.sink.write(e)
        await settle(pilot, app, lambda a: a.state.step == 6)


def _styles(screen) -> dict:
    """Every node's computed rules (what a full restyle would set)."""
    return {id(node): dict(node.styles.get_rules()) for node in screen.walk_children(with_self=True)}


@pytest.mark.asyncio
async def test_z_restyles_the_view_alone_and_as_textual_would(events, monkeypatch):
    """z restyles the maximised view (not the screen: Textual's ``-maximized-view`` class would
    restyle every node under it, for a hatch and a centring nothing shows, see
    ``MainScreen._watch_maximized``), and every node ends with the styles a full restyle gives;
    the view fills the space between the header and the footer."""
    from modscope.views.tui.sources import EventListSource
    from modscope.views.tui.widgets.module_tree import ModuleTree

    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: bool(a.query_one(ModuleTree).modules))
        screen, tree = app.screen_stack[0], app.query_one(ModuleTree)
        tree.focus()
        await pilot.pause()
        applied = []
        apply = app.stylesheet.apply
        monkeypatch.setattr(app.stylesheet, "apply", lambda node, **kw: (applied.append(node), apply(node, **kw)))
        for maximised in (True, False):  # maximise, then restore
            applied.clear()
            await pilot.press("z")
            await settle(pilot, app, lambda a, m=maximised: (screen.maximized is tree) == m)
            await pilot.pause()
            ours, restyled = _styles(screen), len(applied)
            assert tree in applied and screen not in applied
            assert not screen.has_class("-maximized-view") and tree.has_class("-maximized") == maximised
            if maximised:
                assert tree.region.width == 160 and tree.region.height == 45 - 2
            applied.clear()
            app.update_styles(screen)  # Textual's way: every node under the screen, and their parts
            assert _styles(screen) == ours  # the same styles
            assert restyled < len(applied) / 3, (restyled, len(applied))
