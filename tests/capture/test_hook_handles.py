"""``HookHandles``: a trace's hooks kept without their handle objects, removed as handles would be."""

from __future__ import annotations

from modscope.capture.hook_handles import HookHandles
from modscope.testing import assert_no_hooks


def test_remove_all_removes_every_hook_and_its_marks_as_the_handles_would(lib):
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
    user = model[0].register_forward_hook(lambda m, a, o: None)  # not ours: stays
    handles = HookHandles()
    for mod in model.modules():
        handles.add(mod.register_forward_pre_hook(lambda m, a: None, prepend=True))
        handles.add(mod.register_forward_hook(lambda m, a, o: None, always_call=True))  # an extra dict
        handles.add(mod.register_forward_hook(lambda m, a, kw, o: None, with_kwargs=True))  # a kwargs mark
    # per module: a pre-hook's dict and its kwargs dict; each forward hook's dict, kwargs dict and
    # always_call dict (torch gives every forward handle both extras)
    assert len(handles) == 3 * (2 + 3 + 3)
    handles.remove_all()
    user.remove()
    assert len(handles) == 0
    assert_no_hooks(model)
    handles.remove_all()  # twice is a no-op, as for handles


def test_a_hook_already_removed_by_its_handle_is_skipped(lib):
    layer = lib.nn.Linear(2, 2)
    handles = HookHandles()
    handle = layer.register_forward_hook(lambda m, a, o: None, always_call=True)
    handles.add(handle)
    handle.remove()
    handles.remove_all()
    assert_no_hooks(layer)
