"""The QAT grid of a run: float checkpoints and every QAT configuration, trained once per seed and
cached in the run directory.

Paper: "Precision Neural Network Quantization via Learnable Adaptive Modules",
arXiv:2504.17263, https://arxiv.org/abs/2504.17263

A `QATGrid` trains each float model once per training replicate and each QAT configuration once per
replicate, keeps the final weights and accuracy in `<run_dir>/checkpoints/`, and resumes an interrupted
training from its last epoch. Later notebooks of the same run reuse what earlier ones trained; so does
`papers.asq.cli` under torchrun (`ckpt_dir`).

Replicate r of a run (`cfg.seeds` lists them) draws every random number from the run's stream ("train", r)
(`common.seed.Streams.child`): the float model's initial weights ("init"), the data order of each epoch
("fp-order" / "qat-order", epoch), the augmentation ("augment", epoch), the adapters' initial weights
("adapters") and the step-size batch ("init-batch"); so LSQ, ASQ and the nulls of one replicate start from
the same float model and see the same batches (paired comparisons). The training subset is the run's stream
("data"). Checkpoints are named by the run's seed and the replicate (`fp-s<seed>r<r>`), so runs of different
seeds can share one `ckpt_dir`.

The grid (README "Claims and their controls"): the float model; LSQ and ASQ (uniform weights) at
every width of `bits`; the trained null of ASQ's adaptivity (`sbeta`, one trained scalar beta per layer)
at `sbeta_bits`; the weight-grid ablation at
`ablation_bits` with ASQ activations; and, as diagnostics measured on the same models, ASQ W4A4 before
QAT (`ptq_accuracy`) and ASQ with each layer's beta frozen at its mean (`frozen_accuracy`,
`betas.frozen_beta_model`; also the control of `asq-vs-sbeta-w2` at full).

Models live on the grid's device; batches are moved there, and what comes back (accuracies,
beta tables) is on the CPU. On the CPU without torchrun every QAT model (and its frozen-beta diagnostic) is
trained in a spawned worker process with one thread (`common.spawned`; `train_missing` hands a whole grid to
the pool at once). Why spawned (issue 43): on a 2-core machine two one-thread processes train quick's small QAT
models about twice as fast as one process with two threads, and a model's bits depend on the torch thread count
(`torch.set_num_threads(1)` after two-thread work gives other bits than a fresh one-thread process). Each model
draws only from its replicate's keyed streams, so its numbers are the same whatever the machine's core count,
the number of workers and whichever worker trains it (tests/asq/test_asq_qat_pool.py: one worker and two give
the same bits); the float models are trained in the calling process, as before.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from .analysis import tag
from .betas import frozen_beta_model
from .data import load
from .models import build_model
from .train import accuracy, fit, make_qat


class QATGrid:
    """The float models and QAT models of one run (or of a shared checkpoint folder, `cfg.ckpt_dir`)."""

    def __init__(self, cfg, run_dir, streams, device="cpu", dist=None, in_worker: bool = False):
        self.cfg, self.device, self.dist, self.streams = cfg, device, dist, streams
        self.run_dir = Path(run_dir)
        self.in_worker = bool(in_worker)   # a pool worker (`train_task`): trains here, records in `pending`
        self.pending: dict = {}
        self.dir = Path(getattr(cfg, "ckpt_dir", "") or Path(run_dir) / "checkpoints")
        self.dir.mkdir(parents=True, exist_ok=True)
        n_train = cfg.n_train or None
        n_test = cfg.n_test or None
        self.train, self.test, self.info = load(cfg.dataset, n_train, n_test, streams=streams.child("data"),
                                                image_size=int(getattr(cfg, "image_size", 224)))
        self._results_path = self.dir / "results.json"
        self.augment = bool(getattr(cfg, "augment", False))                 # the full profile: crop + flip
        self.eval_each_epoch = bool(getattr(cfg, "eval_each_epoch", False))  # best-of-epochs beside the final
        self.cosine_per = str(getattr(cfg, "cosine_per", "step"))           # full: per epoch, as the release

    @classmethod
    def of_run(cls, cfg, run) -> "QATGrid":
        """The grid of a notebook's run (`common.study.open_run`): its folder, keyed streams and device."""
        return cls(cfg, run.dir, run.streams, device=str(run.device))

    # -- bookkeeping ---------------------------------------------------------------------------
    def replicate(self, r: int):
        """The streams of training replicate `r`: the run's stream ("train", r)."""
        return self.streams.child("train", int(r))

    def name(self, what: str, r: int) -> str:
        """The checkpoint name of `what` (e.g. "fp", "asq-w4a4-post") for replicate `r` of this run's seed."""
        return f"{what}-s{self.streams.seed}r{int(r)}"

    def _results(self) -> dict:
        res = json.loads(self._results_path.read_text()) if self._results_path.exists() else {}
        return res | self.pending

    def _record(self, key: str, value: dict) -> None:
        if self.in_worker:            # the caller writes a worker's records (`train_missing`)
            self.pending[key] = value
        else:
            self.record_many({key: value})

    def record_many(self, records: dict) -> None:
        """Write `records` ({key: record}) into the checkpoint folder's results."""
        from common.io import atomic_write_json

        if not records:
            return
        res = self._results()
        res.update(records)
        if self.dist is None or self.dist.is_main:
            atomic_write_json(self._results_path, res)

    @property
    def pooled(self) -> bool:
        """Whether QAT models are trained in the worker pool (`common.spawned`): on the CPU without torchrun,
        outside a worker."""
        return torch.device(self.device).type == "cpu" and self.dist is None and not self.in_worker

    def _save(self, model: nn.Module, path: Path, resume_ckpt: Path | None = None) -> None:
        """Write the final weights; the resume checkpoint (optimizer, RNG) is then dropped."""
        from common.io import atomic_write_bytes
        import io

        if self.dist is None or self.dist.is_main:
            buf = io.BytesIO()
            torch.save(model.state_dict(), buf)
            atomic_write_bytes(path, buf.getvalue())
            if resume_ckpt is not None:
                resume_ckpt.unlink(missing_ok=True)
        if self.dist is not None:
            self.dist.barrier()

    def _new_float(self, seed: int) -> nn.Module:
        kw = {"width": self.cfg.width} if self.cfg.arch in ("small_resnet", "digits_cnn") else {}
        return build_model(self.cfg.arch, self.info["classes"], self.info["shape"][0], streams=self.replicate(seed),
                           **kw).to(self.device)

    # -- models --------------------------------------------------------------------------------
    def float_model(self, seed: int) -> tuple[nn.Module, float]:
        """The float model of replicate `seed` (trained here once, then loaded): the float pre-training the release starts
        QAT from (it loads torchvision weights; here SGD 0.9, cosine, `fp_lr`, `fp_wd`). With `fp_checkpoint`
        (a torchvision-format state dict of `arch`), the float model is that checkpoint and is not trained."""
        key = self.name("fp", seed)
        c = self.cfg
        model = self._new_float(seed)
        ckpt_file = str(getattr(c, "fp_checkpoint", "") or "")
        if ckpt_file:
            from .models import load_torchvision_state

            load_torchvision_state(model, ckpt_file)
            model.to(self.device)
            res = self._results()
            if key in res and res[key].get("checkpoint") == ckpt_file:
                return model, res[key]["acc"]
            acc = accuracy(model, self.test, c.eval_batch, self.device)
            self._record(key, {"acc": acc, "seed": seed, "config": "fp", "checkpoint": ckpt_file})
            return model, acc
        final = self.dir / f"{key}.pt"
        res = self._results()
        if final.exists() and key in res:
            model.load_state_dict(torch.load(final, map_location=self.device))
            return model, res[key]["acc"]
        fit(model, self.train, epochs=c.fp_epochs, lr=c.fp_lr, weight_decay=c.fp_wd, batch_size=c.batch_size,
            streams=self.replicate(seed), key="fp-order", ckpt=self.dir / f"{key}.ckpt", device=self.device,
            dist=self.dist, desc=f"float {key}", augment=self.augment, cosine_per=self.cosine_per)
        acc = accuracy(model, self.test, c.eval_batch, self.device)
        self._save(model, final, self.dir / f"{key}.ckpt")
        self._record(key, {"acc": acc, "seed": seed, "config": "fp"})
        return model, acc

    def qat_model(self, seed: int, method: str, bits: int, grid: str = "uniform", epochs: int | None = None,
                  order_key: str = "qat-order") -> tuple[nn.Module, float]:
        """The QAT model (method, W=A=bits, grid) fine-tuned from the float model of replicate `seed` with the released QAT
        recipe (official code `default.yaml`, `quant_train.py`; README "Method as implemented"), for `epochs`
        (default: the profile's `qat_epochs`) in the data order `order_key`."""
        c = self.cfg
        epochs = c.qat_epochs if epochs is None else int(epochs)
        name = tag(method, bits, grid)
        key = self.qat_key(seed, method, bits, grid, epochs, order_key)
        if self.pooled and not self.trained(key):
            self.train_missing([dict(seed=seed, method=method, bits=bits, grid=grid, epochs=epochs,
                                     order_key=order_key)])
        fmodel, _ = self.float_model(seed)
        qmodel = make_qat(fmodel, self.train, method=method, w_bits=bits, a_bits=bits, grid=grid,
                          first_last=c.first_last, streams=self.replicate(seed), device=self.device)
        final = self.dir / f"{key}.pt"
        res = self._results()
        if final.exists() and key in res:
            qmodel.load_state_dict(torch.load(final, map_location=self.device))
            return qmodel, res[key]["acc"]
        hist = fit(qmodel, self.train, epochs=epochs, lr=c.qat_lr, weight_decay=c.qat_wd, batch_size=c.batch_size,
                   streams=self.replicate(seed), key=order_key, ckpt=self.dir / f"{key}.ckpt", device=self.device,
                   dist=self.dist,
                   desc=f"{key}", augment=self.augment, eval_data=self.test if self.eval_each_epoch else None,
                   eval_batch=c.eval_batch, cosine_per=self.cosine_per)
        acc = accuracy(qmodel, self.test, c.eval_batch, self.device)
        self._save(qmodel, final, self.dir / f"{key}.ckpt")
        rec = {"acc": acc, "seed": seed, "config": name, "epochs": epochs}
        if hist.get("val_acc"):
            rec["best_acc"] = max(hist["val_acc"])
            rec["val_acc"] = hist["val_acc"]
        self._record(key, rec)
        return qmodel, acc

    def best_accuracy(self, seed: int, method: str, bits: int, grid: str = "uniform") -> float:
        """The best test accuracy over the epochs of a QAT run (the release's `best_acc1`); NaN when the run did
        not evaluate every epoch (`eval_each_epoch` off). Reported beside the final accuracy, never judged."""
        rec = self._results().get(self.name(tag(method, bits, grid), seed), {})
        return float(rec.get("best_acc", float("nan")))

    def ptq_accuracy(self, seed: int, method: str, bits: int, grid: str = "uniform") -> float:
        """Test accuracy of the converted model before QAT (step sizes from one training batch,
        adapters at initialisation, no fine-tuning): the null of the claims about what QAT reaches."""
        key = self.name(f"ptq-{tag(method, bits, grid)}", seed)
        res = self._results()
        if key in res:
            return res[key]["acc"]
        fmodel, _ = self.float_model(seed)
        c = self.cfg
        qmodel = make_qat(fmodel, self.train, method=method, w_bits=bits, a_bits=bits, grid=grid,
                          first_last=c.first_last, streams=self.replicate(seed), device=self.device)
        acc = accuracy(qmodel, self.test, c.eval_batch, self.device)
        self._record(key, {"acc": acc, "seed": seed, "config": f"ptq-{tag(method, bits, grid)}"})
        return acc

    def frozen_accuracy(self, seed: int, bits: int, n: int | None = None) -> float:
        """Test accuracy of the trained ASQ model (uniform weights) with each layer's beta frozen at its
        mean over `n` training images: ASQ without its adaptivity (the control of the ASQ-vs-LSQ claims)."""
        n = int(getattr(self.cfg, "freeze_samples", 2000) if n is None else n)
        key = self.name(f"frozen-{tag('asq', bits, 'uniform')}", seed)
        res = self._results()
        if key in res and res[key].get("n") == n:
            return res[key]["acc"]
        if self.pooled:
            self.train_missing([dict(seed=seed, method="asq", bits=bits, grid="uniform", frozen=n)])
            return self._results()[key]["acc"]
        qmodel, _ = self.qat_model(seed, "asq", bits, "uniform")
        frozen = frozen_beta_model(qmodel, self.train, n=n, batch_size=self.cfg.eval_batch)
        acc = accuracy(frozen, self.test, self.cfg.eval_batch, self.device)
        self._record(key, {"acc": acc, "seed": seed, "config": f"frozen-{tag('asq', bits, 'uniform')}", "n": n})
        return acc

    # -- the worker pool -----------------------------------------------------------------------
    def qat_key(self, seed: int, method: str, bits: int, grid: str = "uniform", epochs: int | None = None,
                order_key: str = "qat-order") -> str:
        """The checkpoint name of a QAT model (`qat_model`'s arguments)."""
        epochs = self.cfg.qat_epochs if epochs is None else int(epochs)
        return self.name(tag(method, bits, grid), seed) + ("" if epochs == self.cfg.qat_epochs else f"-e{epochs}") \
            + ("" if order_key == "qat-order" else f"-{order_key}")

    def trained(self, key: str) -> bool:
        """Whether the model `key` is in the checkpoint folder (its final weights and its record)."""
        return (self.dir / f"{key}.pt").exists() and key in self._results()

    def _frozen_done(self, seed: int, bits: int, n: int) -> bool:
        rec = self._results().get(self.name(f"frozen-{tag('asq', bits, 'uniform')}", seed))
        return rec is not None and rec.get("n") == n

    def train_job(self, seed: int, method: str, bits: int, grid: str = "uniform", epochs: int | None = None,
                  order_key: str = "qat-order", frozen: int | None = None) -> None:
        """Train (or load) one QAT model and, with `frozen` (a number of images), its frozen-beta diagnostic:
        a worker's task (`train_task`)."""
        self.qat_model(seed, method, bits, grid, epochs, order_key)
        if frozen is not None:
            self.frozen_accuracy(seed, bits, frozen)

    def train_missing(self, jobs: list[dict], workers: int | None = None) -> list[dict]:
        """Train the jobs (`train_job`'s keyword arguments) whose model or frozen-beta record the checkpoint folder
        lacks in the worker pool (`common.spawned.run_tasks`, `train_task`), after training (or loading) their float models here.
        The workers' records and stream keys are written here. Only where `pooled`; returns what each job's worker
        returned (`train_task`: its records, stream keys and torch threads), none where nothing was missing."""
        from common import spawned
        from common.parallel import n_workers

        if not self.pooled:
            return []
        by_key: dict[str, dict] = {}        # one job per model (a model asked for twice, e.g. with its diagnostic)
        for job in jobs:
            key = self.qat_key(job["seed"], job["method"], job["bits"], job.get("grid", "uniform"), job.get("epochs"),
                               job.get("order_key", "qat-order"))
            j = by_key.setdefault(key, dict(job, frozen=None))
            if job.get("frozen") is not None and not self._frozen_done(job["seed"], job["bits"], job["frozen"]):
                j["frozen"] = job["frozen"]
        todo = [j for key, j in by_key.items() if j["frozen"] is not None or not self.trained(key)]
        for s in sorted({int(j["seed"]) for j in todo}):
            self.float_model(s)
        tasks = [dict(cfg=self.cfg, run_dir=str(self.run_dir), streams=self.streams, job=j) for j in todo]
        outs = spawned.run_tasks(train_task, tasks, workers or n_workers(len(tasks)), desc="QAT models")
        for out in outs:
            self.record_many(out["records"])
            spawned.record_drawn(self.streams, out["drawn"])
            print(out["log"], end="", file=sys.stderr)
        return outs

    def grid_jobs(self, seeds) -> list[dict]:
        """The jobs (`train_job`) of `run_grid(seeds)` (`grid_jobs`)."""
        return grid_jobs(self.cfg, seeds)

    def _has_frozen(self, m: str, b: int, g: str) -> bool:
        return has_frozen(self.cfg, m, b, g)

    # -- the grid ------------------------------------------------------------------------------
    def configs(self) -> list[tuple[str, int, str]]:
        """(method, bits, grid) of every QAT run (`grid_configs`)."""
        return grid_configs(self.cfg)

    def run_grid(self, seeds=None) -> pd.DataFrame:
        """Train (or load) every configuration for `seeds` (default: all); one row per (seed, config), with the
        trained ASQ model with each layer's beta frozen at its mean measured on the same models (README "Claims
        and their controls"). `best_acc` is the best test accuracy over the epochs (NaN unless
        `eval_each_epoch`); `acc` is the final model's, the one the claims judge."""
        from common.progress import progress

        seeds = self.cfg.seeds if seeds is None else list(seeds)
        self.train_missing(self.grid_jobs(seeds))
        rows = []
        jobs = [(s, None) for s in seeds] + [(s, c) for s in seeds for c in self.configs()]
        nan = float("nan")
        for seed, conf in progress(jobs, desc="QAT grid"):
            if conf is None:
                _, acc = self.float_model(seed)
                rows.append({"seed": seed, "config": "fp", "method": "fp", "bits": 32, "grid": "float", "acc": acc,
                             "best_acc": nan})
                if 4 in grid_sets(self.cfg)["bits"] and getattr(self.cfg, "ptq_diagnostic", False):  # ASQ W4A4 before QAT
                    rows.append({"seed": seed, "config": "ptq-asq-w4a4-uniform", "method": "ptq-asq", "bits": 4,
                                 "grid": "uniform", "acc": self.ptq_accuracy(seed, "asq", 4), "best_acc": nan})
            else:
                m, b, g = conf
                _, acc = self.qat_model(seed, m, b, g)
                rows.append({"seed": seed, "config": tag(m, b, g), "method": m, "bits": b, "grid": g, "acc": acc,
                             "best_acc": self.best_accuracy(seed, m, b, g)})
                if self._has_frozen(m, b, g):
                    # a diagnostic: the same model, beta frozen
                    rows.append({"seed": seed, "config": f"frozen-{tag(m, b, g)}", "method": "frozen-asq", "bits": b,
                                 "grid": g, "acc": self.frozen_accuracy(seed, b), "best_acc": nan})
        return pd.DataFrame(rows, columns=["seed", "config", "method", "bits", "grid", "acc", "best_acc"])


def grid_sets(cfg) -> dict:
    """What a run's QAT grid trains (`QATGrid.configs`): the profile's `bits`, `sbeta_bits`, `frozen_bits` and
    `ablation_grids`, or none of them where its `qat_grid` is off (quick: no comparison claim is judged there, and
    `devtune w2_finding` trains quick's comparison set on development seeds with `qat_grid` on)."""
    on = bool(getattr(cfg, "qat_grid", True))
    return {"bits": list(cfg.bits) if on else [],
            "sbeta_bits": list(getattr(cfg, "sbeta_bits", ())) if on else [],
            "frozen_bits": list(getattr(cfg, "frozen_bits", cfg.bits)) if on else [],
            "ablation_grids": list(cfg.ablation_grids) if on else []}


def grid_configs(cfg) -> list[tuple[str, int, str]]:
    """(method, bits, grid) of every QAT run of a profile: LSQ/ASQ at each width (abstract: ASQ beats LSQ at 2/3/4
    bits), the trained null of ASQ's adaptivity (`sbeta`: one scalar beta per layer) at `sbeta_bits`, the
    weight-grid ablation (POST against POT, APoT and uniform); none where its `qat_grid` is off (quick)."""
    sets = grid_sets(cfg)
    out = [(m, b, "uniform") for b in sets["bits"] for m in ("lsq", "asq")]
    out += [("sbeta", b, "uniform") for b in sets["sbeta_bits"]]
    out += [("asq", cfg.ablation_bits, g) for g in sets["ablation_grids"] if ("asq", cfg.ablation_bits, g) not in out]
    return out


def has_frozen(cfg, m: str, b: int, g: str) -> bool:
    """Whether the grid reports the frozen-beta diagnostic of configuration (m, b, g)."""
    sets = grid_sets(cfg)
    return m == "asq" and g == "uniform" and b in sets["bits"] and b in sets["frozen_bits"]


def grid_jobs(cfg, seeds) -> list[dict]:
    """The jobs (`QATGrid.train_job`) of `QATGrid.run_grid(seeds)`: every configuration of `grid_configs`, with
    the frozen-beta diagnostic where `run_grid` reports it."""
    n = int(getattr(cfg, "freeze_samples", 2000))
    return [dict(seed=s, method=m, bits=b, grid=g, frozen=n if has_frozen(cfg, m, b, g) else None)
            for s in seeds for m, b, g in grid_configs(cfg)]


def train_task(cfg, run_dir: str, streams, job: dict) -> dict:
    """A pool worker's task (`QATGrid.train_missing`): the QAT model of `job` (`QATGrid.train_job`) trained into
    the checkpoint folder; returns its records, the stream keys it drew, the torch threads it ran with and what it
    printed (progress lines, warnings: the caller prints them, so they land in the notebook, not on the runner's
    terminal)."""
    import contextlib
    import io

    grid = QATGrid(cfg, run_dir, streams, in_worker=True)
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        grid.train_job(**job)
    return {"records": grid.pending, "drawn": grid.streams.drawn(), "threads": torch.get_num_threads(),
            "log": log.getvalue()}
