"""``nn.parallel``, ``distributed``, ``onnx`` and ``multiprocessing`` as a CPU-only torch answers:
imported for the optional paths of public scripts, each behaving as torch does with no GPU and
no process group (checked against torch where torch can run the same call)."""

from __future__ import annotations

import multiprocessing
import pickle

import pytest

import engine
import engine.distributed as dist
import engine.multiprocessing as mp
import engine.nn.parallel
import engine.onnx

torch = pytest.importorskip("torch")

NO_GROUP = "Default process group has not been initialized, please make sure to call init_process_group."


def test_data_parallel_runs_the_module_as_torch_does_without_gpus():
    e_lin = engine.nn.Linear(3, 2)
    t_lin = torch.nn.Linear(3, 2)
    t_lin.load_state_dict({k: torch.tensor(v.numpy()) for k, v in e_lin.state_dict().items()})
    e_dp, t_dp = engine.nn.DataParallel(e_lin), torch.nn.DataParallel(t_lin)
    assert e_dp.device_ids == t_dp.device_ids == []
    assert list(e_dp.state_dict()) == list(t_dp.state_dict()) == ["module.weight", "module.bias"]
    assert repr(e_dp) == repr(t_dp)
    x = [[1.0, 2.0, 3.0]]
    out = e_dp(engine.tensor(x))
    assert out.tolist()[0] == pytest.approx(t_dp(torch.tensor(x)).tolist()[0], rel=1e-6)
    out.sum().backward()
    assert e_lin.weight.grad is not None
    assert e_dp.module is e_lin and engine.nn.parallel.DataParallel is engine.nn.DataParallel
    for dp in (e_dp, t_dp):  # torch returns before setting dim when there is no device
        with pytest.raises(AttributeError):
            dp.dim  # noqa: B018


def test_data_parallel_function_needs_a_device_type():
    for lib in (engine, torch):
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(lib.nn.Linear(2, 2), lib.ones(1, 2))


def test_ddp_without_a_process_group_raises_torchs_error():
    for lib in (engine, torch):
        for module in (lib.nn.Linear(2, 2), lib.nn.ReLU()):
            with pytest.raises(ValueError, match=NO_GROUP):
                lib.nn.parallel.DistributedDataParallel(module)


def test_distributed_answers():
    """is_available() is False (no backend); the query functions answer as torch's do before
    init_process_group."""
    assert dist.is_available() is False and dist.is_initialized() is torch.distributed.is_initialized() is False
    assert not dist.is_nccl_available() and not dist.is_gloo_available() and not dist.is_mpi_available()
    for name in ("get_rank", "get_world_size", "get_backend", "barrier"):
        for lib in (dist, torch.distributed):
            with pytest.raises(ValueError, match=NO_GROUP):
                getattr(lib, name)()
    for lib, t in ((dist, engine.ones(1)), (torch.distributed, torch.ones(1))):
        with pytest.raises(ValueError, match=NO_GROUP):
            lib.all_reduce(t, op=lib.ReduceOp.SUM)
    with pytest.raises(RuntimeError, match="no communication backend"):
        dist.init_process_group("gloo", rank=0, world_size=1)
    for lib in (dist, torch.distributed):
        with pytest.raises(AssertionError, match="Process group cannot be None"):
            lib.destroy_process_group()


def test_torchelastic_launch_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert dist.is_torchelastic_launched() is torch.distributed.is_torchelastic_launched() is False
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")
    assert dist.is_torchelastic_launched() is torch.distributed.is_torchelastic_launched() is True


def test_nanogpt_ddp_guard_runs():
    """nanoGPT's and many scripts' guard: ``dist.is_available() and dist.is_initialized()``."""
    rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
    assert rank == 0


def test_onnx_export_is_a_clear_not_implemented(tmp_path):
    with pytest.raises(NotImplementedError, match="cannot export to ONNX"):
        engine.onnx.export(engine.nn.Linear(2, 2), (engine.ones(1, 2),), str(tmp_path / "m.onnx"))
    assert engine.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False


def test_multiprocessing_wraps_pythons():
    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name)
        assert hasattr(torch.multiprocessing, name)
    assert set(torch.multiprocessing.__all__) <= set(mp.__all__)
    assert mp.get_sharing_strategy() == torch.multiprocessing.get_sharing_strategy()
    assert mp.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()


def test_sharing_strategy_is_kept_and_checked():
    before = mp.get_sharing_strategy()
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy(before)
    for lib in (mp, torch.multiprocessing):
        with pytest.raises(AssertionError):
            lib.set_sharing_strategy("bogus")


def _write_rank(i, path):
    with open(f"{path}/{i}", "w") as fh:
        fh.write(str(i * 10))


def _fail_on_one(i):
    if i == 1:
        raise ValueError("rank one fails")


def _exit_three(i):
    raise SystemExit(3)


def test_spawn_runs_each_rank(tmp_path):
    assert mp.spawn(_write_rank, args=(str(tmp_path),), nprocs=2) is None
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["0", "10"]


def test_spawn_raises_the_childs_error_as_torch_does():
    with pytest.raises(mp.ProcessRaisedException, match="rank one fails") as info:
        mp.spawn(_fail_on_one, nprocs=2)
    assert "-- Process 1 terminated with the following error:" in str(info.value)
    assert info.value.error_index == 1
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as exited:
        mp.spawn(_exit_three, nprocs=1)
    assert exited.value.exit_code == 3
    assert pickle.loads(pickle.dumps(exited.value)).exit_code == 3


def test_start_processes_without_join_returns_the_context():
    context = mp.start_processes(_fail_on_one, nprocs=1, join=False, start_method="spawn")
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 1
    while not context.join():
        pass
