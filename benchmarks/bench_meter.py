"""ck.CalibrationMeter beside torchmetrics' calibration errors, fed the same batches in one run.

    python benchmarks/bench_meter.py                    # 1e7 predictions, CPU
    python benchmarks/bench_meter.py --n 1e6 --repeat 1 # a quick look
    python benchmarks/bench_meter.py --device cuda      # on a GPU (tensors and sums stay there)

Cases: 1e7 binary predictions (p ~ U(0, 1), outcome ~ Bernoulli(p^1.2)) and 1e7 10-class
predictions (softmax of float32 logits 2 N(0, 1) + 2 one_hot(label)), float32 tensors on the
device, fed in batches of 4096 to ``ck.CalibrationMeter`` (15 uniform bins) and to
``torchmetrics.classification.BinaryCalibrationError`` / ``MulticlassCalibrationError``
(15 bins, l1). For each: the update time per batch (mean over the batches of one pass), the
``compute()`` time, the state size in bytes after all the batches, the ECE, and its difference
from calibkit's exact in-memory ECE in float64 (``ck.ece`` of the float64 widening of the same
confidences). The two meters take turns, round after round (interleaved, so drifting load
falls on both); the medians over ``--repeat`` rounds are printed, with ratios.

Then torchmetrics' known issues, each shown with numbers:

- a confidence of exactly 1.0: torchmetrics bins with ``torch.bucketize(conf, linspace(0, 1,
  M + 1), right=True) - 1`` into M + 1 slots, so 1.0 lands in an extra slot [1, 1] of its own
  (not dropped, not in the last bin), and the gaps of the two top slots add where calibkit's
  last bin (closed on the right) nets them out;
- float32 accumulation: its sums are in the input's dtype (float32 here);
- O(N) state: it keeps every confidence and accuracy (``dist_reduce_fx="cat"``).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
import warnings
from typing import Any

# torch's OpenMP threads spin while they wait; on a shared machine passive waiting keeps each
# library's time its own (set before torch is imported).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

import calibkit as ck  # noqa: E402

BINS = 15


def make_binary(n: int, device: str, seed: int = 0) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(n, generator=g)
    y = (torch.rand(n, generator=g) < p.double() ** 1.2).to(torch.int64)
    return p.to(device), y.to(device)


def make_multiclass(n: int, classes: int, device: str, seed: int = 0) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    probs = torch.empty(n, classes)
    step = 1 << 20
    for i in range(0, n, step):  # float32 softmax in chunks: no (N, C) temporary beyond one
        z = 2.0 * torch.randn(min(step, n - i), classes, generator=g)
        z += 2.0 * torch.nn.functional.one_hot(y[i : i + step], classes)
        probs[i : i + step] = torch.softmax(z, dim=1)
    return probs.to(device), y.to(device)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_calibkit(p: Any, y: Any, batch: int, device: str) -> dict[str, Any]:
    meter = ck.CalibrationMeter(n_bins=BINS)
    gc.collect()
    sync(device)
    t0 = time.perf_counter()
    for i in range(0, y.shape[0], batch):
        meter.update(p[i : i + batch], y[i : i + batch])
    sync(device)
    update = time.perf_counter() - t0
    t0 = time.perf_counter()
    audit = meter.compute()  # the full audit: table, intervals, scores, tests
    done = time.perf_counter() - t0
    state = sum(a.nbytes for a in meter.state.values())
    return {"update": update, "compute": done, "state": state, "ece": audit.ece}


def run_torchmetrics(metric: Any, p: Any, y: Any, batch: int, device: str) -> dict[str, Any]:
    metric.reset()
    gc.collect()
    sync(device)
    t0 = time.perf_counter()
    for i in range(0, y.shape[0], batch):
        metric.update(p[i : i + batch], y[i : i + batch])
    sync(device)
    update = time.perf_counter() - t0
    state = sum(
        t.numel() * t.element_size()
        for name in metric._defaults
        for t in (getattr(metric, name) if isinstance(getattr(metric, name), list) else [])
    )
    t0 = time.perf_counter()
    value = float(metric.compute())
    sync(device)
    done = time.perf_counter() - t0
    return {"update": update, "compute": done, "state": state, "ece": value}


def exact_ece(p: Any, y: Any) -> float:
    """calibkit's in-memory ECE in float64 of the same confidences (host arrays)."""
    if p.ndim == 1:
        return ck.ece(p.cpu().double().numpy(), y.cpu().numpy(), n_bins=BINS)
    f = ck.top_label(p.cpu().double().numpy(), y.cpu().numpy())
    return ck.ece(f.confidence, f.outcome, n_bins=BINS)


def case(name: str, p: Any, y: Any, metric: Any, args: argparse.Namespace) -> None:
    batches = -(-y.shape[0] // args.batch)
    exact = exact_ece(p, y)
    rounds: dict[str, list[dict[str, Any]]] = {"calibkit": [], "torchmetrics": []}
    run_calibkit(p[: args.batch * 4], y[: args.batch * 4], args.batch, args.device)  # warm-up
    run_torchmetrics(metric, p[: args.batch * 4], y[: args.batch * 4], args.batch, args.device)
    for _ in range(args.repeat):
        rounds["calibkit"].append(run_calibkit(p, y, args.batch, args.device))
        rounds["torchmetrics"].append(run_torchmetrics(metric, p, y, args.batch, args.device))
    med = {
        who: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for who, rs in rounds.items()
    }
    print(f"\n{name}: N = {y.shape[0]:,}, batches of {args.batch} ({batches:,}), {args.device}")
    print(f"  exact in-memory ECE (calibkit, float64): {exact:.12f}")
    head = (
        f"  {'':14}{'update/batch':>14}{'compute':>11}{'state':>14}{'ECE':>16}{'ECE - exact':>13}"
    )
    print(head)
    for who, m in med.items():
        print(
            f"  {who:14}{m['update'] / batches * 1e6:>11.1f} us{m['compute'] * 1e3:>8.1f} ms"
            f"{m['state']:>14,}{m['ece']:>16.12f}{m['ece'] - exact:>13.2e}"
        )
    c, t = med["calibkit"], med["torchmetrics"]
    print(
        f"  ratio calibkit / torchmetrics: update {c['update'] / t['update']:.2f}x, "
        f"compute {c['compute'] / t['compute']:.2f}x, state {c['state'] / t['state']:.3f}x"
    )
    # what torchmetrics' difference is made of: its sums in the input's dtype (float32), or
    # confidences of exactly 1.0 (in a slot of their own)
    conf = p if p.ndim == 1 else p.max(dim=1).values
    print(f"  confidences exactly 1.0: {int((conf == 1.0).sum()):,}")
    metric.reset()
    wide = p.double()
    for i in range(0, y.shape[0], args.batch):
        metric.update(wide[i : i + args.batch], y[i : i + args.batch])
    widened = float(metric.compute()) - exact
    print(f"  torchmetrics fed the float64 widening: ECE - exact {widened:.2e}")
    metric.reset()
    del wide


def one_point_zero(device: str) -> None:
    """40 forecasts at 0.95 whose events all happen and 40 at exactly 1.0 with 38 events:
    calibkit's last bin (14/15, 1] holds all 80 (mean confidence 0.975, frequency 78/80 =
    0.975: ECE 0); torchmetrics puts the 1.0s in a slot of their own, so the gaps 0.05 (under-
    confident at 0.95) and 0.05 (over-confident at 1.0) add: 0.5 * 0.05 + 0.5 * 0.05 = 0.05."""
    from torchmetrics.classification import BinaryCalibrationError

    p = torch.tensor([0.95] * 40 + [1.0] * 40, device=device, dtype=torch.float64)
    y = torch.tensor([1] * 40 + [1] * 38 + [0] * 2, device=device)
    tm = BinaryCalibrationError(n_bins=BINS).to(device)
    tm.update(p, y)
    meter = ck.CalibrationMeter(n_bins=BINS)
    with warnings.catch_warnings():  # two wrong forecasts of 1.0: an infinite log loss
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        meter.update(p, y)
    edges = torch.linspace(0, 1, BINS + 1, device=device, dtype=torch.float64)
    index = torch.bucketize(p, edges, right=True) - 1
    print("\nconfidence exactly 1.0 (40 at 0.95 with 40 events, 40 at 1.0 with 38 events):")
    print(f"  torchmetrics' slot of 0.95: {int(index[0])}, of 1.0: {int(index[-1])} (of 0..{BINS})")
    print(f"  torchmetrics ECE {float(tm.compute()):.6f}, calibkit ECE {meter.compute().ece:.6f}")
    print("  by hand: calibkit 0 (one bin: 0.975 vs 0.975); torchmetrics 0.05 (two slots)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    from torchmetrics.classification import BinaryCalibrationError, MulticlassCalibrationError

    n = int(args.n)
    print(
        f"torch {torch.__version__}, calibkit {ck.__version__}, {args.device}, {args.repeat} rounds"
    )
    p, y = make_binary(n, args.device)
    case("binary", p, y, BinaryCalibrationError(n_bins=BINS).to(args.device), args)
    del p, y
    p, y = make_multiclass(n, args.classes, args.device)
    metric = MulticlassCalibrationError(num_classes=args.classes, n_bins=BINS).to(args.device)
    case(f"{args.classes}-class top-label", p, y, metric, args)
    del p, y
    one_point_zero(args.device)


if __name__ == "__main__":
    main()
