"""The key footer is rebuilt only when the keys it shows change (``widgets/footer.py``), and the
module tree draws each line once when maximised (``ModuleTree._on_resize``): two costs of ``z``
and ``?`` while training (issue 30). Behaviour only; the timings are ``bench/bench_tui_dialogs.py``'s."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.screens import HelpScreen
from modscope.views.tui.sources import EventListSource
from modscope.views.tui.widgets.footer import KeyFooter
from modscope.views.tui.widgets.graph_view import AutogradGraphView
from modscope.views.tui.widgets.module_tree import ModuleTree
from tests.tui.test_app import ready, settle


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
