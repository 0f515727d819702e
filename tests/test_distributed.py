"""Two processes of torch.distributed (gloo, CPU): each meters its half of the data, sync()
all-reduces, and both ranks' audits equal the single-process audit of all of it; the same for
calibkit.torch.CalibrationError through torchmetrics' own sync."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import calibkit as ck

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():  # pragma: no cover - depends on the build of torch
    pytest.skip("this build of torch has no torch.distributed", allow_module_level=True)

N, CLASSES, BATCH = 6000, 4, 512
HAS_TORCHMETRICS = importlib.util.find_spec("torchmetrics") is not None


def _data():
    g = torch.Generator().manual_seed(11)
    y = torch.randint(0, CLASSES, (N,), generator=g)
    z = torch.randn(N, CLASSES, generator=g) + 1.5 * torch.nn.functional.one_hot(y, CLASSES)
    return z, y


def _worker(rank: int, world: int, rendezvous: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=rendezvous, rank=rank, world_size=world)
    try:
        z, y = _data()
        half = slice(rank * N // world, (rank + 1) * N // world)
        zs, ys = z[half], y[half]
        meter = ck.CalibrationMeter(n_bins=15)
        for i in range(0, zs.shape[0], BATCH):
            meter.update(zs[i : i + BATCH], ys[i : i + BATCH], from_logits=True)
        local_n = meter.n
        a = meter.sync().compute(n_boot=20, n_sims=20)
        result = {
            "local_n": local_n,
            "n": a.n,
            "ece": a.ece,
            "brier": a.brier,
            "nll": a.nll,
            "count": a.table.count.tolist(),
            "classwise_ece": a.classwise_ece,
        }
        if HAS_TORCHMETRICS:
            from calibkit.torch import CalibrationError

            metric = CalibrationError(n_bins=15, num_classes=CLASSES, from_logits=True)
            for i in range(0, zs.shape[0], BATCH):
                metric.update(zs[i : i + BATCH], ys[i : i + BATCH])
            result["metric_ece"] = float(metric.compute())
            result["metric_count"] = metric.audit().table.count.tolist()
            result["metric_local"] = int(metric.table_count.sum())  # unsynced again after
        Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


def test_two_processes_sync_to_the_audit_of_all_the_data(tmp_path):
    rendezvous = f"file://{tmp_path / 'rendezvous'}"
    torch.multiprocessing.spawn(_worker, args=(2, rendezvous, str(tmp_path)), nprocs=2, join=True)
    z, y = _data()
    whole = ck.audit(z.numpy(), y.numpy(), from_logits=True, n_bins=15, n_boot=20, n_sims=20)
    for rank in (0, 1):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert got["local_n"] == N // 2 and got["n"] == N
        assert got["count"] == whole.table.count.tolist()
        assert got["ece"] == pytest.approx(whole.ece, rel=1e-12)
        assert got["brier"] == pytest.approx(whole.brier, rel=1e-12)
        assert got["nll"] == pytest.approx(whole.nll, rel=1e-12)
        assert got["classwise_ece"] == pytest.approx(whole.classwise_ece, rel=1e-12)
        if HAS_TORCHMETRICS:
            assert got["metric_ece"] == pytest.approx(whole.ece, rel=1e-12)
            assert got["metric_count"] == whole.table.count.tolist()
            assert got["metric_local"] == N // 2
