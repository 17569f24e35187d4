"""Expand and find on the 10,001-module model (issue 21): the tree's lines are Textual's own,
built faster; a big model's tree keeps its scrollbar (one layout per expand); the find dialog
lists, finds and picks any module. Behaviour only: ``bench/bench_tui_scale.py`` times the keys."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, OptionList, Tree

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.screens import FindScreen
from modscope.views.tui.state import ModuleInfo
from modscope.views.tui.widgets.module_tree import AUTO_EXPAND_LIMIT, ModuleTree
from tests.tui.test_app import settle
from tests.tui.test_scale import DirectSource, forward, wide_model_event


def info(path: str, cls: str, children: list[str], aliases: list[str] | None = None) -> ModuleInfo:
    return ModuleInfo(path=path, cls=cls, extra_repr="", training=True, children=children, aliases=aliases or [])


def nested_model() -> tuple[dict[str, ModuleInfo], list[str]]:
    """A root with a block of three layers, a shared layer named twice (``block.tied`` is
    ``head``) and a loss called outside the model."""
    modules = [
        info("", "Net", ["block", "head", "wide"]),
        info("block", "Block", ["a", "b", "tied"]),
        info("block.a", "Linear", []), info("block.b", "ReLU", []),
        info("head", "Linear", [], aliases=["block.tied"]),
        info("wide", "Sequential", [str(i) for i in range(30)]),
        *[info(f"wide.{i}", "Linear", []) for i in range(30)],
        info("loss", "MSELoss", []),
    ]
    return {m.path: m for m in modules}, [m.path for m in modules]


class TreeApp(App):
    def compose(self) -> ComposeResult:
        yield ModuleTree()


def lines_of(tree: ModuleTree) -> tuple[list[tuple[list[int], bool]], list[int], object]:
    """The lines as (ids of the nodes on each line's path, last), each node's line, the
    virtual size."""
    lines = tree._tree_lines_cached or []
    return ([([id(n) for n in line.path], line.last) for line in lines], [line.node._line for line in lines],
            tree.virtual_size)


@pytest.mark.asyncio
@pytest.mark.parametrize("show_root", [True, False])
async def test_the_tree_builds_the_lines_textuals_tree_builds(show_root):
    app = TreeApp()
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.query_one(ModuleTree)
        modules, order = nested_model()
        tree.set_model(modules, order, "Net")
        tree.show_root = show_root
        for path in ("block", "wide"):
            tree.select_path(f"{path}.a" if path == "block" else "wide.29")
        tree.set_badges({"wide.3": tree._name_label(modules["wide.3"])})  # a wider line
        await pilot.pause()
        for collapse in ("", "wide", "block"):
            if collapse:
                tree._node_by_path[collapse].collapse()
            tree._build()
            mine = lines_of(tree)
            Tree._build(tree)
            assert lines_of(tree) == mine
            assert len(mine[0]) > 1


@pytest.mark.asyncio
async def test_a_big_models_tree_keeps_its_scrollbar_and_expands_with_one_layout():
    app = ModscopeApp(DirectSource([wide_model_event(100)]))  # 401 modules: opened collapsed below the root
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 400 and a.selected)
        assert len(tree.modules) > AUTO_EXPAND_LIMIT and tree.has_class("-large")
        tree.focus()
        tree.move_cursor(tree.root)
        await pilot.press("enter")  # collapse: one line, the scrollbar stays
        await settle(pilot, app, lambda a: not tree.root.is_expanded and tree.last_line == 0)
        await pilot.pause(0.2)
        assert tree.show_vertical_scrollbar
        screen, layouts = app.screen, []
        original = screen._refresh_layout

        def counted(*args, **kwargs):
            layouts.append(tree.root.is_expanded)
            return original(*args, **kwargs)

        screen._refresh_layout = counted
        await pilot.press("enter")
        await settle(pilot, app, lambda a: tree.root.is_expanded and tree.last_line == 400)
        await pilot.pause(0.3)
        assert tree.show_vertical_scrollbar
        assert layouts == [True]  # not a second one for a scrollbar that appeared


@pytest.mark.asyncio
async def test_a_small_models_tree_shows_its_scrollbar_only_when_needed():
    app = ModscopeApp(DirectSource([wide_model_event(5)]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 20 and a.selected)
        await pilot.pause(0.2)
        assert not tree.has_class("-large") and not tree.show_vertical_scrollbar


@pytest.mark.asyncio
async def test_an_expanded_big_tree_finds_selects_and_labels_any_module():
    app = ModscopeApp(DirectSource([wide_model_event()]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 10_000 and a.selected)
        app._select("9998")
        await settle(pilot, app, lambda a: tree.cursor_node is not None and tree.cursor_node.data == "9998")
        assert tree.cursor_line == 9999 and tree._tree_lines[tree.cursor_line].node.data == "9998"
        with app.state.lock:  # its statistics arrive: the line on screen shows them
            app.state.apply(forward("9998", 1, 7_000_000))
        await settle(pilot, app, lambda a: "7.00ms" in str(tree.cursor_node.label))


# --- find ---------------------------------------------------------------------------------------

def matches(app) -> list[str]:
    options = app.screen.query_one("#matches", OptionList)
    return [options.get_option_at_index(i).id[2:] for i in range(options.option_count)]


@pytest.mark.asyncio
async def test_find_opened_again_starts_empty_and_picks_any_module_of_the_big_model():
    app = ModscopeApp(DirectSource([wide_model_event()]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 10_000 and a.selected)
        await pilot.press("slash")
        await settle(pilot, app, lambda a: isinstance(a.screen, FindScreen))
        dialog = app.screen
        assert matches(app)[:3] == ["", "0", "1"] and len(matches(app)) == 200
        await pilot.press(*"9998", "enter")
        await settle(pilot, app, lambda a: a.selected == "9998" and not isinstance(a.screen, FindScreen))
        assert tree.cursor_node.data == "9998" and dialog.backdrop is None  # closed: its copy freed
        await pilot.press("slash")
        await settle(pilot, app, lambda a: a.screen is dialog)  # the same dialog, opened again
        query = dialog.query_one("#query", Input)
        options = dialog.query_one("#matches", OptionList)
        assert query.value == "" and matches(app)[:3] == ["", "0", "1"] and options.highlighted == 0
        assert app.focused is query
        await pilot.press(*"2499", "enter")
        await settle(pilot, app, lambda a: a.selected == "2499" and tree.cursor_node.data == "2499")


@pytest.mark.asyncio
async def test_find_lists_the_modules_of_a_model_that_came_after_it_was_opened():
    app = ModscopeApp(DirectSource([wide_model_event(2)]))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: len(a.state.modules) == 9 and a.selected)
        first = app._find_modules()
        assert app._find_modules() is first  # kept while no model event comes
        await pilot.press("slash")
        await settle(pilot, app, lambda a: isinstance(a.screen, FindScreen))
        assert matches(app) == ["", *map(str, range(8))]
        await pilot.press("escape")
        await settle(pilot, app, lambda a: not isinstance(a.screen, FindScreen))
        with app.state.lock:  # the program sends a bigger model (same name)
            app.state.apply(wide_model_event(3))
        assert app._find_modules() is not first and len(app._find_modules()) == 13
        await pilot.press("slash")
        await settle(pilot, app, lambda a: isinstance(a.screen, FindScreen))
        assert matches(app) == ["", *map(str, range(12))]
        await pilot.press(*"11", "enter")
        await settle(pilot, app, lambda a: a.selected == "11")


@pytest.mark.asyncio
async def test_a_label_that_grows_widens_the_tree_and_its_column_at_once():
    """Timings arriving after the column was sized make a label wider: the scroll range and the
    modules column follow at that refresh, not at the next expand or collapse."""
    app = ModscopeApp(DirectSource([wide_model_event(blocks=2)]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 8 and a.selected)
        before, column = tree.virtual_size.width, app.query_one("#left").region.width
        with app.state.lock:  # a long forward time on a line on screen: its label grows
            app.state.apply(forward("2", 1, 123_456_000_000))
        await settle(pilot, app, lambda a: any("123456" in str(n.label) for n in tree.root.children))
        label_width = tree._widths["2"]
        assert tree.virtual_size.width >= label_width + tree.guide_depth > before
        await settle(pilot, app, lambda a: a.query_one("#left").region.width > column)


@pytest.mark.asyncio
async def test_a_label_that_grew_unseen_widens_the_column_when_it_is_drawn():
    """A label dropped (scrolled away, or a step chosen) is built anew when its line is drawn:
    if it grew meanwhile, the scroll range and the modules column follow then too (they stayed a
    cell short of the widest label, or not, by which came first: a snapshot test's flake)."""
    app = ModscopeApp(DirectSource([wide_model_event(blocks=2)]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 8 and a.selected)
        before, column = tree.virtual_size.width, app.query_one("#left").region.width
        tree._labels.pop("2")  # as refresh_labels drops a line's label off screen
        tree._node_by_path["2"].refresh()
        with app.state.lock:  # then its module's forward time grows: no old label to compare with
            app.state.apply(forward("2", 1, 123_456_000_000))
        await settle(pilot, app, lambda a: "123456" in str(tree._labels.get("2", "")))
        assert tree.virtual_size.width >= tree._widths["2"] + tree.guide_depth > before
        await settle(pilot, app, lambda a: a.query_one("#left").region.width > column)
