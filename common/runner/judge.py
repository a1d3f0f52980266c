"""Verdicts of run folders: the claims table and manifest of an executed run, the seeds of a `--seeds`
run combined, a complete run re-judged from its metrics, and the verdict table as the terminal shows it.

The judging itself is `common.claims` (`evaluate`, `combine_seeds`); this module applies it to the
folders the runner writes and records with each the claims file's sha256, the rerun command and
where the folder will live once swapped in (never the staging path).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..claims import combine_seeds, evaluate, format_measured, headline, load_paper, summary, write_claims_table, write_seed_table
from ..errors import UserError
from ..io import atomic_write_json, read_json, sha256_file
from ..runs import Run, git_state, now
from .lock import run_lock
from .params import rerun_command


@dataclass
class Judge:
    """What every folder of one run is judged with: the paper's claims (and their file's sha256) and the run's settings."""

    paper: str
    profile: str
    claims: list
    meta: dict
    claims_sha: str
    rerun: str
    device: str | None

    @classmethod
    def load(cls, paper: str, profile: str, params: dict, device: str | None, seeds: list[int] | None) -> "Judge":
        """The current `papers/<paper>/claims.yaml`, for a run with these settings."""
        claims_file = paths.PAPERS / paper / "claims.yaml"
        claims_sha = sha256_file(claims_file)
        meta, claims = load_paper(claims_file)
        return cls(paper, profile, claims, meta, claims_sha, rerun_command(paper, profile, params, device, seeds), device)

    def run(self, out: Path, params: dict, executed: list[dict], started: str, wall: float, status: str,
            final_out: Path, usage: dict | None = None) -> "pandas.DataFrame":
        """Claims table and manifest of one executed run folder `out`; returns the table.

        `final_out` is where the folder will live once swapped in (or kept as failed): the manifest
        records that, never the staging path. `usage` (`local.Usage.now`) gives the manifest's `cpu_s` and
        `cores_used` (the kernel's and its workers' CPU seconds, and over the wall seconds: how much of the machine
        the run kept busy), `load_average_before`, and `other_cores`: the machine's busy CPU seconds less the
        run's own, over the wall seconds, the cores other work took beside the run (at most that: `cpu_s` is a
        lower bound). A run beside other work is not a timing.
        """
        usage = usage or {}
        cpu, busy = usage.get("cpu"), usage.get("busy")
        metrics = read_json(out / "metrics.json", default={}) or {}
        table = evaluate(self.claims, metrics, self.profile)
        write_claims_table(table, out)
        for item in executed:
            item["parameters"] = dict(item["parameters"], run_dir=str(final_out))
        Run(self.paper, self.profile, out).update_manifest(
            paper_meta=self.meta, claims_sha256=self.claims_sha, run_dir=str(final_out),
            runner={"command": self.rerun, "invoked_as": " ".join(sys.argv), "profile": self.profile, "parameters": params,
                    "device": self.device},
            notebooks=executed, started=started, finished=now(), wall_s=round(wall, 2), status=status,
            cpu_s=None if cpu is None else round(cpu, 2),
            cores_used=None if cpu is None or wall <= 0 else round(cpu / wall, 2),
            load_average_before=usage.get("load_before"),
            other_cores=None if cpu is None or busy is None or wall <= 0 else round(max(0.0, busy - cpu) / wall, 2),
        )
        return table

    def seeds(self, staging: Path, tables: dict, params: dict, wall: float, ok: bool, final_dir: Path) -> "pandas.DataFrame":
        """The seed table of a `--seeds` run (each seed's verdict and the overall one, `combine_seeds`) and its
        top manifest, written into `staging`, which will live at `final_dir`; returns the table."""
        table = combine_seeds(tables, self.claims, {k: read_json(staging / f"seed-{k}" / "metrics.json", default={}) or {}
                                                    for k in tables}, self.profile)
        write_seed_table(table, sorted(tables), staging)
        atomic_write_json(staging / "manifest.json", {
            "paper": self.paper, "profile": self.profile, "seeds": sorted(tables), "wall_s": round(wall, 2), "finished": now(),
            "runs": [f"seed-{s}" for s in sorted(tables)], "status": "ok" if ok else "failed",
            "claims_sha256": self.claims_sha,
            "run_dir": str(final_dir), "runner": {"command": self.rerun, "parameters": params}})
        return table


def rejudge(paper: str, profile: str) -> dict:
    """Judge the complete run of `paper` at `profile` again with the current `claims.yaml`, from the metrics it
    logged (every seed of a `--seeds` run), without running a notebook. The run's provenance is kept; its
    manifest records the claims file's new sha256 and when (and at which revision) it was re-judged."""
    final = paths.run_dir(paper, profile)
    top = read_json(final / "manifest.json", default=None)
    if not (final / "claims.csv").exists() or not top or top.get("status", "ok") != "ok":
        raise UserError(f"no complete {profile} run of {paper} under {final.parent} to re-judge; "
                        f"run `make reproduce-{paper} PROFILE={profile}` first")
    with run_lock(paper, profile):
        claims_sha = sha256_file(paths.PAPERS / paper / "claims.yaml")
        _, claims = load_paper(paths.PAPERS / paper / "claims.yaml")
        stamp = {"at": now(), "git": git_state().get("sha")}
        seeds = top.get("seeds")
        tables, metrics = {}, {}
        for seed in seeds or [None]:
            out = final if seed is None else final / f"seed-{seed}"
            metrics[seed] = read_json(out / "metrics.json", default={}) or {}
            tables[seed] = evaluate(claims, metrics[seed], profile)
            write_claims_table(tables[seed], out)
            if seed is not None:
                man = read_json(out / "manifest.json", default={}) or {}
                atomic_write_json(out / "manifest.json", dict(man, claims_sha256=claims_sha, rejudged=stamp))
        table = tables[None] if not seeds else combine_seeds(tables, claims, metrics, profile)
        if seeds:
            write_seed_table(table, sorted(tables), final)
        atomic_write_json(final / "manifest.json", dict(top, claims_sha256=claims_sha, rejudged=stamp))
    return {"paper": paper, "ok": True, "summary": summary(table), "wall_s": 0.0, "dir": final, "table": table}


def print_table(result: dict) -> None:
    """A judged run on stdout: its headline, then one line per claim (its verdict at each seed of a `--seeds` run)."""
    table, s = result["table"], result["summary"]
    print(f"\n{result['paper']}: {headline(s)}  ({result['wall_s']:.0f}s, {result['dir']})")
    seeds = [c[len("verdict_seed_"):] for c in table.columns if c.startswith("verdict_seed_")]
    for _, row in table.iterrows():
        if seeds:
            per_seed = "  ".join(f"s{k}:{row[f'verdict_seed_{k}'][:14]}" for k in seeds)
            print(f"  {row['verdict']:<27} {row['id']:<28} {per_seed}")
        else:
            print(f"  {row['verdict']:<27} {row['id']:<28} {format_measured(row):>22}  {row['criterion']}")
        decide = row.get("decide")
        if isinstance(decide, str) and decide:
            print(f"  {'':<27} what would decide it: {decide}")
