"""The key footer is rebuilt only when the keys it shows change (``widgets/footer.py``), and the
module tree draws each line once when maximised (``ModuleTree._on_resize``): two costs of ``z``
and ``?`` while training (issue 30). Behaviour only; the timings are ``bench/bench_tui_dialogs.py``'s.

The footer fits its width: the keys that do not fit are left out from the end and ``? more``
says so, at 80×24, 100×30 and 200×55, after a resize and with a view's own keys (checked
against Textual's own layout and the screen's last line)."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.screens import HelpScreen
from modscope.views.tui.sources import EventListSource
from modscope.views.tui.widgets.footer import MORE, KeyFooter
from modscope.views.tui.widgets.graph_view import AutogradGraphView
from modscope.views.tui.widgets.module_tree import ModuleTree
from tests.tui.test_app import ready, settle
from tests.tui.test_key_latency import screen_lines

MAIN_KEYS = ["quit", "help", "next view", "maximise/restore", "pause/resume", "step", "breakpoints", "find", "export"]


def footer_keys(app: ModscopeApp) -> list[str]:
    return [k.description for k in app.screen_stack[0].query_one(KeyFooter).query(FooterKey)]


@pytest.mark.asyncio
async def test_the_footer_is_rebuilt_only_when_its_keys_change(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot, app)
        footer, tree = app.query_one(KeyFooter), app.query_one(ModuleTree)
        tree.focus()
        await pilot.pause(0.2)
        before, keys = footer.rebuilds, footer_keys(app)
        assert "maximise/restore" in keys and "zoom in" not in keys
        for _ in range(2):  # maximise and restore: the same keys
            await pilot.press("z")
            await pilot.pause(0.2)
        await pilot.press("question_mark")  # the help covers the screen: its footer is left as it was
        await settle(pilot, app, lambda a: isinstance(a.screen, HelpScreen))
        await pilot.pause(0.2)
        assert footer.rebuilds == before and footer_keys(app) == keys
        await pilot.press("escape")  # back: the same keys as before the help
        await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        await pilot.pause(0.2)
        assert footer.rebuilds == before and footer_keys(app) == keys
        app.query_one(AutogradGraphView).focus()  # the graph's own keys: rebuilt, and shown
        await settle(pilot, app, lambda a: "zoom in" in footer_keys(a))
        assert footer.rebuilds == before + 1
        tree.focus()
        await settle(pilot, app, lambda a: footer_keys(a) == keys)
        assert footer.rebuilds == before + 2


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(160, 45), (80, 24)], ids=["wide", "compact"])
async def test_a_rebuilt_footers_keys_are_styled_once_in_its_style(events, monkeypatch, size):
    """A rebuilt footer's keys come with its compact style set (a key started compact and took
    the footer's style once bound: two restyles of each key of a wide footer at every rebuild)."""
    restyled = []
    update = FooterKey.update_node_styles
    monkeypatch.setattr(FooterKey, "update_node_styles",
                        lambda self, animate=True: (restyled.append(self), update(self, animate))[1])
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        footer = app.query_one(KeyFooter)
        before = footer.rebuilds
        restyled.clear()
        app.query_one(AutogradGraphView).focus()  # the graph's own keys: a rebuild
        await settle(pilot, app, lambda a: footer.rebuilds > before)
        await pilot.pause(0.2)
        assert restyled == []
        assert all(key.has_class("-compact") is (footer.compact or key.has_class("-command-palette"))
                   for key in footer.query(FooterKey))  # (Textual's palette key: compact always)
        assert footer.compact is (size == (80, 24))


@pytest.mark.asyncio
async def test_a_maximised_tree_draws_each_line_once(events, monkeypatch):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot, app)
        tree = app.query_one(ModuleTree)
        tree.focus()
        await pilot.pause(0.2)
        drawn: list[tuple[str, int]] = []  # (module, the width it was drawn at)
        render_label = tree.render_label
        monkeypatch.setattr(tree, "render_label", lambda node, *a: (drawn.append((node.data, tree.size.width)), render_label(node, *a))[1])
        await pilot.press("z")
        await settle(pilot, app, lambda a: a.screen_stack[0].maximized is tree)
        await pilot.pause(0.3)
        lines = len(tree._tree_lines)
        assert lines > 3 and tree.region.width == 160
        # every line drawn at the new width, once (Tree's resize handler dropped them all after
        # the first paint at that width, and they were drawn a second time)
        wide = [path for path, width in drawn if width == tree.size.width]
        assert sorted(wide) == sorted(line.node.data for line in tree._tree_lines), drawn
        text = "".join(s.text for s in tree.render_line(0))
        assert tree.root_name in text  # and drawn right


def fitted(app: ModscopeApp) -> tuple[list[str], list[str], bool]:
    """(every key the footer holds, in order; those shown; whether ``? more`` is shown), once the
    footer is laid out as fitted: each shown key whole inside the footer, left of the palette's."""
    footer = app.screen_stack[0].query_one(KeyFooter)
    keys = [k for k in footer.query_children(FooterKey) if not k.has_class("-command-palette") and not k.has_class("-more")]
    more = footer.query_children(".-more").first()
    right = min([footer.region.right] + [k.region.x for k in footer.query_children(".-command-palette") if k.display])
    shown = [k for k in keys if k.display]
    for key in shown + ([more] if more.display else []):
        assert key.region.width == key.render().cell_len and key.region.right <= right, (key.description, key.region)
    return [k.description for k in keys], [k.description for k in shown], more.display


def footer_line(app: ModscopeApp) -> str:
    """The footer's keys as on screen (left of the palette's key, when it is shown)."""
    return screen_lines(app)[-1].split("▏")[0].strip()


async def footer_fitted(pilot, app: ModscopeApp, cut: bool) -> list[str]:
    """Wait until the footer is fitted (cut or not), and check what is on screen; the keys shown."""
    def done(a: ModscopeApp) -> bool:
        try:
            every, shown, more = fitted(a)
        except AssertionError:
            return False  # not laid out as fitted yet
        return bool(shown) and more == cut and (len(shown) < len(every)) == cut
    await settle(pilot, app, done)
    await pilot.pause(0.2)
    every, shown, more = fitted(app)
    assert shown == every[:len(shown)]  # from the start, in order: the last ones are left out
    line = footer_line(app)
    if cut:
        assert line.endswith(f"? {MORE}") and f"? {MORE}" not in line[:-len(MORE) - 2], line
    assert every[len(shown) - 1] in line and all(k not in line for k in every[len(shown):] if k not in shown), line
    return shown


@pytest.mark.asyncio
@pytest.mark.parametrize("size,cut", [((80, 24), True), ((100, 30), True), ((200, 55), False)],
                         ids=["80x24", "100x30", "200x55"])
async def test_the_footer_fits_or_says_more(events, size, cut):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        shown = await footer_fitted(pilot, app, cut)
        assert shown[:4] == MAIN_KEYS[:4]  # the keys a user needs first are always there
        if not cut:
            assert shown == MAIN_KEYS and screen_lines(app)[-1].rstrip().endswith("▏^p palette")


@pytest.mark.asyncio
async def test_the_footer_is_fitted_again_after_a_resize_and_with_a_views_keys(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(200, 55)) as pilot:
        await ready(pilot, app)
        assert await footer_fitted(pilot, app, cut=False) == MAIN_KEYS
        await pilot.resize_terminal(80, 24)
        assert len(await footer_fitted(pilot, app, cut=True)) < len(MAIN_KEYS)
        await pilot.resize_terminal(200, 55)
        assert await footer_fitted(pilot, app, cut=False) == MAIN_KEYS
        await pilot.resize_terminal(160, 45)
        app.query_one(AutogradGraphView).focus()  # its own keys too: more than 160 columns hold
        await settle(pilot, app, lambda a: "zoom in" in footer_keys(a))
        shown = await footer_fitted(pilot, app, cut=True)
        assert "zoom in" in shown and "export" not in shown
