"""Run a paper's notebooks headlessly and judge its claims.

    python -m common.reproduce <id|all> --profile smoke|quick|full [-p key=value ...] [--device ...]

Each notebook in `notebooks/<id>/` runs in name order under papermill (kernel python3, a per-cell
timeout, injected parameters) into a staging directory. Only when all succeed does the staging
directory replace `results/<id>/<profile>/`; a failed or interrupted run (Ctrl-C, SIGTERM) is kept
as `<profile>-failed/` and the last complete run is untouched. A lock lets one run of a paper and
profile at a time (a second refuses with one line), and each run first sweeps staging folders left
by a killed one. Parameter values are checked against the notebooks' defaults and the paper's
profiles before anything runs. The exit status is non-zero only when something failed to run:
a claim that does not reproduce is reported, not a crash.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from . import paths
from .claims import (REPRODUCED, combine_seeds, evaluate, format_measured, headline, load_paper, summary,
                     write_claims_table, write_seed_table)
from .errors import UserError, user_errors_exit
from .io import atomic_write_json, read_json, sha256_file
from .profiles import PROFILE_NAMES, coerce, check_overrides
from .runs import Run, now

RESERVED = ("profile", "run_dir")
DEFAULT_CELL_TIMEOUT = {"smoke": 600, "quick": 1800, "full": 24 * 3600}


def registered_papers() -> list[str]:
    """Papers with a `claims.yaml` and at least one notebook."""
    out = []
    for d in sorted(paths.PAPERS.iterdir()):
        if (d / "claims.yaml").exists() and sorted((paths.NOTEBOOKS / d.name).glob("*.ipynb")):
            out.append(d.name)
    return out


def notebooks(paper: str) -> list[Path]:
    return sorted((paths.NOTEBOOKS / paper).glob("[0-9]*.ipynb"))


def notebook_parameters(nb: Path) -> dict:
    """Parameter names of a notebook's `parameters` cell with their inferred types."""
    import papermill as pm

    return {name: p["inferred_type_name"] for name, p in pm.inspect_notebook(str(nb)).items()}


def notebook_defaults(nb: Path) -> dict:
    """Literal default values of a notebook's `parameters` cell (names whose default is not a literal are left out)."""
    import nbformat

    out = {}
    for cell in nbformat.read(nb, as_version=4).cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    try:
                        out[node.targets[0].id] = ast.literal_eval(node.value)
                    except ValueError:
                        continue
    return out


def parse_value(text: str):
    """Typed value of `-p key=value`: int, float, bool, None, a list in YAML/JSON syntax, else str."""
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.strip().startswith(("[", "{")):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError:
            pass
    return text


def parse_params(pairs: list[str]) -> dict:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise UserError(f"parameter {pair!r} is not of the form key=value")
        params[key.strip()] = parse_value(value)
    return params


def check_params(papers: list[str], params: dict) -> dict[str, dict[Path, dict]]:
    """Per paper, each notebook's parameters; a name no notebook accepts is a UserError."""
    declared = {p: {nb: notebook_parameters(nb) for nb in notebooks(p)} for p in papers}
    names = set().union(*(set(nbp) for per_nb in declared.values() for nbp in per_nb.values()))
    for key in params:
        if key in RESERVED:
            raise UserError(f"parameter {key!r} is set by the runner; use {'--profile' if key == 'profile' else '--results DIR'} instead")
        if key not in names:
            raise UserError(f"unknown parameter {key!r} for {', '.join(papers)}; valid: {', '.join(sorted(names - set(RESERVED)))}")
    return declared


def _config(paper: str):
    """The paper's `config` module, or None."""
    try:
        return importlib.import_module(f"papers.{paper}.config")
    except ModuleNotFoundError as err:
        if err.name in ("papers", f"papers.{paper}", f"papers.{paper}.config"):
            return None
        raise


def check_values(paper: str, profile: str, params: dict, declared: dict[Path, dict]) -> None:
    """Each value's type (and a count's sign) before anything runs; a bad one is a UserError naming it.

    `seed` must be an int >= 0 and `device` a device this machine has. A key of the paper's profiles
    (`config.PROFILES`) follows `common.profiles.check_overrides`; any other key must convert to the
    type of its literal default in the notebooks' parameters cells.
    """
    if "seed" in params and (isinstance(params["seed"], bool) or not isinstance(params["seed"], int) or params["seed"] < 0):
        raise UserError(f"parameter 'seed' must be an integer >= 0, got {params['seed']!r}")
    if params.get("device") is not None:
        from .device import select_device

        select_device(str(params["device"]))
    config = _config(paper)
    profiles = getattr(config, "PROFILES", None) or {}
    own = {k: v for k, v in params.items() if k not in ("seed", "device")}
    if isinstance(profiles, dict) and profile in profiles:
        check_overrides(profiles, profile, own)
        own = {k: v for k, v in own.items() if k not in profiles[profile]}
    defaults = {}
    for nb in declared:
        defaults.update({k: v for k, v in notebook_defaults(nb).items() if k in own})
    for key, like in defaults.items():
        if own[key] is not None and isinstance(like, (bool, int, float, list, tuple)):
            coerce(key, own[key], like)


def preflight(paper: str, profile: str, params: dict) -> None:
    """A paper may define `config.preflight(profile, params)` to check data before anything runs."""
    check = getattr(_config(paper), "preflight", None)
    if check is not None:
        check(profile, params)


class NotebookFailed(Exception):
    def __init__(self, notebook: Path, ename: str, evalue: str):
        super().__init__(f"{notebook.name}: {ename}: {evalue}")
        self.notebook, self.ename, self.evalue = notebook, ename, evalue


# A kernel that never came up: no cell ran, so starting another is safe. Kernels started at the same time
# (seeds fanned out to threads or workers) can draw the same free port and one dies binding it
# ("Address already in use"); jupyter_client then reports one of these.
KERNEL_START_FAILURES = ("Kernel didn't respond", "Kernel died before replying to kernel_info")


def execute(nb: Path, out: Path, parameters: dict, timeout: int, quiet: bool, attempts: int = 2) -> float:
    import papermill as pm

    start = time.perf_counter()
    for attempt in range(1, attempts + 1):
        try:
            pm.execute_notebook(
                str(nb), str(out), parameters=parameters, kernel_name="python3", language="python",
                cwd=str(paths.REPO), execution_timeout=timeout, progress_bar=not quiet and sys.stderr.isatty(),
                log_output=False, report_mode=False,
                extra_arguments=["--IPKernelApp.log_level=CRITICAL"],  # no kernel log chatter: start-up, and "KeyboardInterrupt caught in kernel" from the SIGINT that jupyter_client sends on every shutdown
            )
            break
        except pm.PapermillExecutionError as err:
            raise NotebookFailed(nb, err.ename, str(err.evalue).strip().splitlines()[-1] if str(err.evalue).strip() else "") from None
        except Exception as err:  # dead kernel, timeout, ...
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            if attempt < attempts and isinstance(err, RuntimeError) and first.startswith(KERNEL_START_FAILURES):
                print(f"{nb.name}: the kernel did not start ({first}); starting another", file=sys.stderr, flush=True)
                continue
            raise NotebookFailed(nb, type(err).__name__, first) from None
    return time.perf_counter() - start


def check_writable(root: Path) -> None:
    """One line, not a traceback, when the results folder cannot be written."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with __import__("tempfile").NamedTemporaryFile(dir=root, prefix=".write-test-"):
            pass
    except OSError as err:
        raise UserError(f"cannot write results to {root} ({err.strerror or err}); fix its permissions or choose "
                        f"another folder with --results DIR (or REPRO_RESULTS)") from None


@contextlib.contextmanager
def run_lock(paper: str, profile: str):
    """One run of a paper at a profile at a time: a second one refuses with one line."""
    import fcntl

    path = paths.run_dir(paper, profile).with_name(f".{profile}.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            raise UserError(f"another run of {paper} at profile {profile} is in progress (pid {holder}); "
                            f"wait for it to finish, or use another --results DIR") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        yield
    finally:
        fh.close()  # releases the lock


def sweep_stale(paper: str, profile: str) -> list[Path]:
    """Remove staging and swap leftovers of runs that were killed (call under `run_lock`)."""
    parent = paths.run_dir(paper, profile).parent
    stale = sorted(parent.glob(f".{profile}.staging-*")) + sorted(parent.glob(f".{profile}.old-*"))
    for d in stale:
        shutil.rmtree(d, ignore_errors=True)
    return stale


class Interrupted(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that the run is put away before the process ends."""


def _sigterm(signum, frame):
    raise Interrupted()


def _swap_in(staging: Path, final: Path) -> None:
    """Replace `final` by `staging` with renames only; the old run survives until the new is in place."""
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        os.replace(final, old)
    os.replace(staging, final)
    shutil.rmtree(old, ignore_errors=True)


def _execute_notebooks(paper: str, profile: str, params: dict, declared: dict[Path, dict], device: str | None,
                       timeout: int, quiet: bool, out: Path, label: str = "",
                       executed: list | None = None) -> tuple[list[dict], NotebookFailed | None]:
    """Run every notebook of `declared` into `out`, appending to `executed`; stops at the first failure."""
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    executed = [] if executed is None else executed
    for nb, own in declared.items():
        injected = {k: v for k, v in params.items() if k in own}
        injected.update(profile=profile, run_dir=str(out))
        if device is not None and "device" in own:
            injected["device"] = device
        print(f"[{paper}/{profile}{label}] {nb.name} ...", file=sys.stderr, flush=True)
        try:
            secs = execute(nb, out / "notebooks" / nb.name, injected, timeout, quiet)
            executed.append({"notebook": nb.name, "seconds": round(secs, 2), "parameters": injected, "status": "ok"})
        except NotebookFailed as err:
            executed.append({"notebook": nb.name, "parameters": injected, "status": "failed", "error": f"{err.ename}: {err.evalue}"})
            return executed, err
        except KeyboardInterrupt:
            executed.append({"notebook": nb.name, "parameters": injected, "status": "interrupted"})
            raise
    return executed, None


def rerun_command(paper: str, profile: str, params: dict, device: str | None, seeds: list[int] | None = None) -> str:
    """The command that reruns this paper with these settings."""
    parts = ["python -m common.reproduce", paper, "--profile", profile]
    parts += [f"-p {k}={_show(v)}" for k, v in params.items()]
    if device is not None:
        parts += ["--device", device]
    if seeds:
        parts += ["--seeds", *map(str, seeds)]
    return " ".join(parts)


def param_text(v) -> str:
    """A parameter value as `-p key=<text>` reads it back: lists and dicts as compact JSON (no spaces)."""
    import json

    return json.dumps(v, separators=(",", ":")) if isinstance(v, (list, tuple, dict)) else str(v)


def _show(v) -> str:
    import shlex

    return shlex.quote(param_text(v))


def _judge_run(paper: str, profile: str, out: Path, claims, meta: dict, params: dict, device, executed, started, wall,
               status: str, final_out: Path, rerun: str, claims_sha: str) -> "pandas.DataFrame":
    """Claims table and manifest of one executed run directory; returns the table.

    `claims_sha`: sha256 of the claims file the verdicts come from (the report flags a run whose
    claims file has changed since).

    `final_out` is where the directory will live once swapped in (or kept as failed): the manifest
    records that, never the staging path.
    """
    metrics = read_json(out / "metrics.json", default={}) or {}
    table = evaluate(claims, metrics, profile)
    write_claims_table(table, out)
    for item in executed:
        item["parameters"] = dict(item["parameters"], run_dir=str(final_out))
    Run(paper, profile, out)._update_manifest(
        paper_meta=meta, claims_sha256=claims_sha, run_dir=str(final_out),
        runner={"command": rerun, "invoked_as": " ".join(sys.argv), "profile": profile, "parameters": params, "device": device},
        notebooks=executed, started=started, finished=now(), wall_s=round(wall, 2), status=status,
    )
    return table


def run_paper(paper: str, profile: str, params: dict, declared: dict[Path, dict], device: str | None, timeout: int | None,
              quiet: bool = False, seeds: list[int] | None = None) -> dict:
    """Execute the notebooks in `declared` (notebook -> its parameters); returns {'paper', 'ok', 'summary', 'wall_s', 'dir', 'table'}.

    With `seeds`, the paper runs once per seed into `<profile>/seed-<k>/`, and `<profile>/claims.csv`
    holds each seed's verdict and the overall verdict (`combine_seeds`). Holds the paper/profile lock
    throughout; an interruption (Ctrl-C, SIGTERM) keeps what ran as `<profile>-failed/` and re-raises.
    """
    parent = paths.run_dir(paper, profile).parent
    fresh = not parent.exists()
    try:
        with run_lock(paper, profile):
            sweep_stale(paper, profile)
            return _run_paper_locked(paper, profile, params, declared, device, timeout, quiet, seeds)
    except UserError:
        if fresh:
            _remove_fresh(parent, profile)
        raise


def _remove_fresh(parent: Path, profile: str) -> None:
    """A user error found by a notebook writes nothing: the lock file and the paper folder this run created go."""
    with contextlib.suppress(OSError):
        (parent / f".{profile}.lock").unlink()
    with contextlib.suppress(OSError):
        parent.rmdir()  # only when empty


def _run_paper_locked(paper, profile, params, declared, device, timeout, quiet, seeds) -> dict:
    final = paths.run_dir(paper, profile)
    failed = final.with_name(f"{profile}-failed")
    staging = final.with_name(f".{profile}.staging-{os.getpid()}")
    staging.mkdir(parents=True)
    claims_sha = sha256_file(paths.PAPERS / paper / "claims.yaml")
    meta, claims = load_paper(paths.PAPERS / paper / "claims.yaml")
    timeout = timeout or DEFAULT_CELL_TIMEOUT[profile]
    rerun = rerun_command(paper, profile, params, device, seeds)
    t_all = time.perf_counter()
    failure, tables = None, {}
    executed: list = []
    try:
        for seed in (seeds if seeds else [None]):
            out = staging if seed is None else staging / f"seed-{seed}"
            run_params = dict(params) if seed is None else dict(params, seed=seed)
            started, t0 = now(), time.perf_counter()
            executed = []
            try:
                executed, failure = _execute_notebooks(paper, profile, run_params, declared, device, timeout, quiet, out,
                                                       "" if seed is None else f" seed {seed}", executed)
            except KeyboardInterrupt:
                _judge_run(paper, profile, out, claims, meta, run_params, device, executed, started,
                           time.perf_counter() - t0, "interrupted", failed / out.relative_to(staging), rerun, claims_sha)
                raise
            if failure is not None and failure.ename == "UserError":
                shutil.rmtree(staging, ignore_errors=True)  # a user error writes nothing
                raise UserError(failure.evalue)
            dest = final if failure is None else failed
            tables[seed] = _judge_run(paper, profile, out, claims, meta, run_params, device, executed, started,
                                      time.perf_counter() - t0, "ok" if failure is None else "failed",
                                      dest / out.relative_to(staging), rerun, claims_sha)
            if failure is not None:
                break
    except BaseException:  # Ctrl-C, SIGTERM, anything unexpected: keep what ran as <profile>-failed, leave no staging
        if staging.exists():
            _keep_failed(staging, failed)
            print(f"error: {paper} interrupted; partial run kept in {failed}; the last complete run in {final} is untouched",
                  file=sys.stderr)
        raise
    return _conclude(paper, profile, params, seeds, staging, tables, claims, claims_sha, rerun, failure,
                     time.perf_counter() - t_all)


def _conclude(paper, profile, params, seeds, staging: Path, tables: dict, claims, claims_sha: str, rerun: str,
              failure, wall: float) -> dict:
    """The judged seeds of a staged run: the seed table (with `seeds`), then swapped in, or kept as failed."""
    final = paths.run_dir(paper, profile)
    failed = final.with_name(f"{profile}-failed")
    if seeds:
        table = combine_seeds(tables, claims, {k: read_json(staging / f"seed-{k}" / "metrics.json", default={}) or {}
                                               for k in tables}, profile)
        write_seed_table(table, sorted(tables), staging)
        atomic_write_json(staging / "manifest.json", {
            "paper": paper, "profile": profile, "seeds": sorted(tables), "wall_s": round(wall, 2), "finished": now(),
            "runs": [f"seed-{s}" for s in sorted(tables)], "status": "ok" if failure is None else "failed",
            "claims_sha256": claims_sha,
            "run_dir": str(final if failure is None else failed), "runner": {"command": rerun, "parameters": params}})
    else:
        table = tables[None]
    if failure is None:
        _swap_in(staging, final)
        out_dir = final
    else:
        _keep_failed(staging, failed)
        out_dir = failed
        print(f"error: {paper} failed in {failure}; executed notebook kept in {failed}; "
              f"the last complete run in {final} is untouched", file=sys.stderr)
    return {"paper": paper, "ok": failure is None, "summary": summary(table), "wall_s": wall, "dir": out_dir, "table": table}


# ---------------------------------------------------------------------------------------------
# with a cluster: every (paper, profile, seed) run is one task
# ---------------------------------------------------------------------------------------------
def _forwarded_env() -> dict:
    """The environment a local kernel would get, as far as results can depend on it: REPRO_* (less the
    cluster: a run's own tasks use its worker's local pool) and the BLAS thread variables, None = unset."""
    keys = {k for k in os.environ if k.startswith("REPRO_")} | {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}
    return {k: os.environ.get(k) for k in sorted(keys - {"REPRO_CLUSTER"})}


def run_notebooks_task(paper: str, profile: str, params: dict, declared: dict, device: str | None, timeout: int,
                       attempt_prefix: str, label: str, env: dict, forget: list | None = None) -> dict:
    """On a worker: one run's notebooks into a folder of this attempt's own (`<attempt_prefix>.attempt-<id>`).

    A worker that dies mid-run leaves its folder behind and the rerun writes a fresh one, so two
    attempts never share files. The environment is the submitting runner's (`env`, `_forwarded_env`).
    Returns {'dir', 'executed', 'failure': None | [notebook, ename, evalue], 'started', 'wall_s'}.
    """
    import uuid

    from .cluster import _task_lock

    attempt = Path(f"{attempt_prefix}.attempt-{uuid.uuid4().hex[:8]}")
    with _task_lock:
        old = dict(os.environ)
        try:
            for k in list(forget or []) + ["REPRO_CLUSTER"]:
                os.environ.pop(k, None)
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + old.get("PATH", "")
            started, t0 = now(), time.perf_counter()
            executed, failure = _execute_notebooks(paper, profile, params, declared, device, timeout, True, attempt, label)
        finally:
            os.environ.clear()
            os.environ.update(old)
    return {"dir": str(attempt), "executed": executed, "started": started, "wall_s": time.perf_counter() - t0,
            "failure": None if failure is None else [failure.notebook.name, failure.ename, failure.evalue]}


class _StagedRun:
    """One paper at one profile under its lock: its staging folder and the seeds it waits for."""

    def __init__(self, paper, profile, params, declared, device, timeout, seeds):
        self.paper, self.profile, self.params, self.declared, self.device, self.seeds = paper, profile, params, declared, device, seeds
        self.final = paths.run_dir(paper, profile)
        self.failed = self.final.with_name(f"{profile}-failed")
        self.staging = self.final.with_name(f".{profile}.staging-{os.getpid()}")
        self.staging.mkdir(parents=True)
        self.claims_sha = sha256_file(paths.PAPERS / paper / "claims.yaml")
        self.meta, self.claims = load_paper(paths.PAPERS / paper / "claims.yaml")
        self.timeout = timeout or DEFAULT_CELL_TIMEOUT[profile]
        self.rerun = rerun_command(paper, profile, params, device, seeds)
        self.t_all = time.perf_counter()
        self.waiting = list(seeds) if seeds else [None]
        self.tables, self.failure, self.user_error, self.result = {}, None, None, None

    def out(self, seed) -> Path:
        return self.staging if seed is None else self.staging / f"seed-{seed}"

    def prefix(self, seed) -> Path:
        return self.staging if seed is None else self.staging / f".seed-{seed}"

    def task(self, seed) -> dict:
        run_params = dict(self.params) if seed is None else dict(self.params, seed=seed)
        return dict(paper=self.paper, profile=self.profile, params=run_params, declared=self.declared, device=self.device,
                    timeout=self.timeout, attempt_prefix=str(self.prefix(seed)), label="" if seed is None else f" seed {seed}",
                    env=_forwarded_env())

    def _place(self, seed, attempt: Path | None) -> Path:
        out = self.out(seed)
        if attempt is not None and attempt.exists():
            if out.exists():
                shutil.rmtree(out) if any(out.iterdir()) else out.rmdir()
            os.replace(attempt, out)
        out.mkdir(parents=True, exist_ok=True)
        return out

    def finish(self, seed, value: dict | None, error: BaseException | None) -> None:
        """A task came back: move its folder into place and judge it."""
        self.waiting.remove(seed)
        run_params = self.task(seed)["params"]
        if error is not None or value is None:
            out = self._place(seed, None)
            executed, started, wall = [], now(), 0.0
            self.failure = self.failure or NotebookFailed(Path("(cluster task)"), type(error).__name__, str(error).strip()[:300])
            status = "failed"
        else:
            out = self._place(seed, Path(value["dir"]))
            executed, started, wall = value["executed"], value["started"], value["wall_s"]
            status = "ok"
            if value["failure"] is not None:
                name, ename, evalue = value["failure"]
                status = "failed"
                if ename == "UserError":
                    self.user_error = self.user_error or evalue
                self.failure = self.failure or NotebookFailed(Path(name), ename, evalue)
        dest = self.failed if status != "ok" else self.final
        self.tables[seed] = _judge_run(self.paper, self.profile, out, self.claims, self.meta, run_params, self.device,
                                       executed, started, wall, status, dest / out.relative_to(self.staging),
                                       self.rerun, self.claims_sha)
        if not self.waiting:
            self._close()

    def _strays(self) -> list[Path]:
        return sorted(self.staging.glob(".seed-*.attempt-*")) + sorted(self.staging.parent.glob(f"{self.staging.name}.attempt-*"))

    def _close(self) -> None:
        for d in self._strays():  # folders of attempts whose worker died
            shutil.rmtree(d, ignore_errors=True)
        if self.user_error is not None:
            shutil.rmtree(self.staging, ignore_errors=True)  # a user error writes nothing
            self.result = UserError(self.user_error)
            return
        self.result = _conclude(self.paper, self.profile, self.params, self.seeds, self.staging, self.tables, self.claims,
                                self.claims_sha, self.rerun, self.failure, time.perf_counter() - self.t_all)

    def interrupt(self) -> None:
        """Ctrl-C: what ran of the unfinished seeds is judged as interrupted and the run kept as `<profile>-failed`."""
        if self.result is not None or not self.staging.exists():
            return
        for seed in list(self.waiting):
            attempts = sorted(self.staging.parent.glob(f"{self.staging.name}.attempt-*") if seed is None
                              else self.staging.glob(f".seed-{seed}.attempt-*"), key=lambda d: d.stat().st_mtime)
            if not attempts:
                continue  # never started: nothing to keep
            out = self._place(seed, attempts[-1])
            _judge_run(self.paper, self.profile, out, self.claims, self.meta, self.task(seed)["params"], self.device, [],
                       now(), time.perf_counter() - self.t_all, "interrupted", self.failed / out.relative_to(self.staging),
                       self.rerun, self.claims_sha)
        for d in self._strays():
            shutil.rmtree(d, ignore_errors=True)
        _keep_failed(self.staging, self.failed)
        print(f"error: {self.paper} interrupted; partial run kept in {self.failed}; the last complete run in "
              f"{self.final} is untouched", file=sys.stderr)


def _run_fanout(client, chosen: list[str], args, params: dict, declared: dict) -> int:
    """With a cluster: every (paper, profile, seed) run is a task; each paper is judged, swapped in and printed
    when its last seed is back. Locks, staging and the interrupted-run rules are those of a local run."""
    from . import cluster

    ok = True
    runs: list[_StagedRun] = []
    with contextlib.ExitStack() as locks:
        for paper in chosen:
            try:
                if len(chosen) > 1:
                    check_values(paper, args.profile, params, declared[paper])
                    preflight(paper, args.profile, params)
                locks.enter_context(run_lock(paper, args.profile))
            except UserError as err:
                if len(chosen) == 1:
                    raise
                print(f"error: {paper}: {err}", file=sys.stderr)
                ok = False
                continue
            sweep_stale(paper, args.profile)
            runs.append(_StagedRun(paper, args.profile, params, declared[paper], args.device, args.timeout, args.seeds))
        owners = [(run, seed) for run in runs for seed in list(run.waiting)]
        if not owners:
            return 0 if ok else 1
        cluster._check_workers(client)
        print(f"cluster: {len(owners)} runs of {', '.join(r.paper for r in runs)} at {args.profile} "
              f"submitted to {client.scheduler.address}", file=sys.stderr)
        futures = cluster.submit_all(client, run_notebooks_task, [r.task(s) for r, s in owners], desc="runs", wrap=False)
        state = {"ok": ok}

        def on_result(i, value, error):
            run, seed = owners[i]
            run.finish(seed, value, error)
            if run.result is None:
                return
            if isinstance(run.result, UserError):
                if len(chosen) == 1:
                    raise run.result
                print(f"error: {run.paper}: {run.result}", file=sys.stderr)
                state["ok"] = False
                return
            print_table(run.result)
            state["ok"] = state["ok"] and run.result["ok"]

        try:
            cluster.gather(client, futures, desc=f"{len(owners)} runs", on_result=on_result, fail_fast=False)
        except UserError:
            for run in runs:
                if run.result is None and run.staging.exists():
                    shutil.rmtree(run.staging, ignore_errors=True)
            raise
        except BaseException:  # Ctrl-C, SIGTERM: the futures are cancelled; partial runs are kept as failed
            for run in runs:
                run.interrupt()
            raise
    return 0 if state["ok"] else 1


def rejudge(paper: str, profile: str) -> dict:
    """Judge the complete run of `paper` at `profile` again with the current `claims.yaml`, from the metrics it
    logged (every seed of a `--seeds` run), without running a notebook. The run's provenance is kept; its
    manifest records the claims file's new sha256 and when (and at which revision) it was re-judged."""
    from .runs import git_state

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


def _keep_failed(staging: Path, failed: Path) -> None:
    shutil.rmtree(failed, ignore_errors=True)
    os.replace(staging, failed)


def print_table(result: dict) -> None:
    table, s = result["table"], result["summary"]
    print(f"\n{result['paper']}: {headline(s)}  ({result['wall_s']:.0f}s, {result['dir']})")
    seeds = [c[len("verdict_seed_"):] for c in table.columns if c.startswith("verdict_seed_")]
    for _, row in table.iterrows():
        if seeds:
            per_seed = "  ".join(f"s{k}:{row[f'verdict_seed_{k}'][:14]}" for k in seeds)
            print(f"  {row['verdict']:<27} {row['id']:<28} {per_seed}")
        else:
            print(f"  {row['verdict']:<27} {row['id']:<28} {format_measured(row):>22}  {row['criterion']}")


def main(argv: list[str] | None = None) -> int:
    papers = registered_papers()
    ap = argparse.ArgumentParser(prog="python -m common.reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("paper", help=f"one of: {', '.join(papers + ['all'])}")
    ap.add_argument("--profile", default="quick", help="smoke | quick | full (default quick)")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE", help="notebook parameter override")
    ap.add_argument("--device", default=None, help="auto | cpu | cuda[:i] | rocm | xpu | mps")
    ap.add_argument("--timeout", type=int, default=None, help="per-cell timeout in seconds")
    ap.add_argument("--quiet", action="store_true", help="no papermill progress bar")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, metavar="K",
                    help="run once per seed into <profile>/seed-<k>/ and judge every claim at each seed")
    ap.add_argument("--results", default=None, metavar="DIR", help="results folder (default $REPRO_RESULTS, else results/)")
    ap.add_argument("--cluster", default=None, metavar="ADDRESS",
                    help="a Dask scheduler (e.g. tcp://scheduler:8786; default $REPRO_CLUSTER): independent runs "
                         "(all, --seeds) become its tasks, a single run's parallel tasks go to it")
    ap.add_argument("--rejudge", action="store_true",
                    help="judge the complete run again with the current claims.yaml, from its metrics; runs no notebook")
    args = ap.parse_args(argv)
    with user_errors_exit():
        if args.results:
            os.environ["REPRO_RESULTS"] = str(Path(args.results).resolve())  # the kernels inherit it
        if args.rejudge:
            if args.paper != "all" and args.paper not in papers:
                raise UserError(f"unknown paper {args.paper!r}; choose one of {', '.join(papers + ['all'])}")
            if args.profile not in PROFILE_NAMES:
                raise UserError(f"unknown profile {args.profile!r}; choose one of {', '.join(PROFILE_NAMES)}")
            if args.param or args.seeds or args.device or args.cluster:
                raise UserError("--rejudge runs no notebook: it takes no -p, --seeds, --device or --cluster")
            for paper in (papers if args.paper == "all" else [args.paper]):
                if args.paper == "all" and not (paths.run_dir(paper, args.profile) / "claims.csv").exists():
                    continue
                print_table(rejudge(paper, args.profile))
            return 0
        if args.paper != "all" and args.paper not in papers:
            raise UserError(f"unknown paper {args.paper!r}; choose one of {', '.join(papers + ['all'])}")
        if args.profile not in PROFILE_NAMES:
            raise UserError(f"unknown profile {args.profile!r}; choose one of {', '.join(PROFILE_NAMES)}")
        chosen = papers if args.paper == "all" else [args.paper]
        if args.device is not None or os.environ.get("REPRO_DEVICE", "").strip():
            from .device import select_device

            select_device(args.device)  # fail before anything is written (also for $REPRO_DEVICE)
        params = parse_params(args.param)
        if args.seeds and "seed" in params:
            raise UserError("pass the seed either as -p seed=... or as --seeds, not both")
        if args.seeds and len(set(args.seeds)) != len(args.seeds):
            raise UserError(f"--seeds lists a seed twice: {args.seeds}")
        if args.seeds and any(k < 0 for k in args.seeds):
            raise UserError(f"--seeds must be integers >= 0, got {args.seeds}")
        declared = check_params(chosen, params)
        if len(chosen) == 1:
            check_values(chosen[0], args.profile, params, declared[chosen[0]])
            preflight(chosen[0], args.profile, params)
        from .cluster import address

        client, addr = None, address(args.cluster)
        if addr is not None:  # reachable before anything is written
            from .cluster import connect

            client = connect(addr)
            os.environ["REPRO_CLUSTER"] = addr  # a single run's kernels send their pmap tasks there
        check_writable(paths.results_root())
        with _sigterm_as_interrupt(), _closing(client):
            if client is not None and (len(chosen) > 1 or len(args.seeds or []) > 1):
                _set_kernel_env(args)
                return _run_fanout(client, chosen, args, params, declared)
            return _run_all(chosen, args, params, declared)


@contextlib.contextmanager
def _closing(client):
    try:
        yield
    finally:
        if client is not None:
            from .cluster import close_all

            close_all()


def _set_kernel_env(args) -> None:
    bindir = str(Path(sys.executable).parent)  # the kernel must see this interpreter first
    os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    os.environ["REPRO_PROFILE"] = args.profile


def _run_all(chosen, args, params, declared) -> int:
    """Run each chosen paper; 0 when all ran, 1 when one failed."""
    _set_kernel_env(args)
    ok = True
    for paper in chosen:
        if len(chosen) == 1:
            result = run_paper(paper, args.profile, params, declared[paper], args.device, args.timeout, args.quiet, args.seeds)
        else:  # `all`: one paper's user error must not stop the others
            try:
                check_values(paper, args.profile, params, declared[paper])
                preflight(paper, args.profile, params)
                result = run_paper(paper, args.profile, params, declared[paper], args.device, args.timeout, args.quiet, args.seeds)
            except UserError as err:
                print(f"error: {paper}: {err}", file=sys.stderr)
                ok = False
                continue
        print_table(result)
        ok = ok and result["ok"]
    return 0 if ok else 1


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While running, SIGTERM (a `kill`) unwinds like Ctrl-C, so the run is put away as failed."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":
    raise SystemExit(main())
