"""Run parameters: `-p key=value` read, checked and written back, before anything runs.

A name must be a parameter of one of the paper's notebooks (their `parameters` cells), a value must
suit the paper's profiles (`config.PROFILES`, `common.profiles.check_overrides`) or the type of the
notebooks' literal default, a seed must be a reported one (below `common.devseeds.FIRST`), a device
one this machine has; and the paper's own `preflight` (missing data, ...) runs on the configuration
the run will use. Every failure is a one-line `UserError`. `rerun_command` writes the settings back
as the command that reruns them.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

from . import registry
from ..devseeds import require_development, require_reported
from ..errors import UserError
from ..profiles import check_overrides, coerce

RESERVED = ("profile", "run_dir")   # set by the runner itself (--profile, --results)
OVERRIDES = "overrides"             # the notebooks' dict of profile keys to change (common/study.py), filled from -p


def code_cells(nb: Path) -> list[tuple[str, list]]:
    """(source, tags) of each code cell of a notebook, read as the JSON it is (nbformat 4; `source` joined as nbformat
    joins it). No notebook stack: a run that is refused, or only checks its parameters, imports neither papermill nor
    nbformat (whose jsonschema format checkers take ~2 s to import); an older format is converted by nbformat."""
    data = json.loads(Path(nb).read_text(encoding="utf-8"))
    if data.get("nbformat") != 4:
        import nbformat

        data = nbformat.read(str(nb), as_version=4)
    return [("".join(c.get("source", "")), c.get("metadata", {}).get("tags", []))
            for c in data["cells"] if c.get("cell_type") == "code"]


def parameter_assignments(nb: Path) -> dict:
    """Name -> (value node, annotation node or None) of each top-level assignment to a name in the notebook's
    `parameters` cell: the names papermill finds there (tests/common/test_runner_robustness.py compares them)."""
    out = {}
    for src, tags in code_cells(nb):
        if "parameters" in tags:
            for node in ast.parse(src).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    out[node.targets[0].id] = (node.value, None)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    out[node.target.id] = (node.value, node.annotation)
    return out


def notebook_parameters(nb: Path) -> dict:
    """Parameter names of a notebook's `parameters` cell with the type papermill infers (the annotation, else "None")."""
    return {name: "None" if note is None else ast.unparse(note).strip("'\"")
            for name, (_, note) in parameter_assignments(nb).items()}


def notebook_defaults(nb: Path) -> dict:
    """Literal default values of a notebook's `parameters` cell (names whose default is not a literal are left out)."""
    out = {}
    for name, (value, _) in parameter_assignments(nb).items():
        try:
            out[name] = ast.literal_eval(value)
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
    """`["k=v", ...]` as {k: typed v}; a pair that is not `identifier=value` is a UserError."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise UserError(f"parameter {pair!r} is not of the form key=value")
        params[key.strip()] = parse_value(value)
    return params


def check_seeds(params: dict, seeds: list[int] | None, development: bool = False) -> None:
    """`--seeds` and `-p seed`: not both, no seed twice, none negative, none a development seed (>= 100) unless
    `development` (then only development seeds)."""
    if seeds and "seed" in params:
        raise UserError("pass the seed either as -p seed=... or as --seeds, not both")
    if seeds and len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds lists a seed twice: {seeds}")
    if seeds and any(k < 0 for k in seeds):
        raise UserError(f"--seeds must be integers >= 0, got {seeds}")
    seed = params.get("seed")
    integer = isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0   # other values: check_values says why
    (require_development if development else require_reported)(list(seeds or []) + ([seed] if integer else []))


def check_params(papers: list[str], params: dict) -> dict[str, dict[Path, dict]]:
    """Per paper, each notebook's parameters; a name no notebook accepts is a UserError. A notebook whose
    parameters cell has `overrides` (the study template) accepts every key of the paper's profiles."""
    declared = {p: {nb: notebook_parameters(nb) for nb in registry.notebooks(p)} for p in papers}
    names = set().union(*(accepted_names(p, per_nb) for p, per_nb in declared.items()))
    for key in params:
        if key in RESERVED:
            raise UserError(f"parameter {key!r} is set by the runner; use {'--profile' if key == 'profile' else '--results DIR'} instead")
        if key not in names:
            raise UserError(f"unknown parameter {key!r} for {', '.join(papers)}; valid: {', '.join(sorted(names - set(RESERVED)))}")
    return declared


def accepted_names(paper: str, declared: dict[Path, dict]) -> set[str]:
    """The `-p` names `paper` takes: its notebooks' parameters (`declared`: notebook -> its parameters), and every
    key of its profiles where a notebook has an `overrides` dict (the study template)."""
    names = set().union(*(set(nbp) for nbp in declared.values()))
    if OVERRIDES in names:
        names |= registry.profile_keys(paper)
    return names - {OVERRIDES}


def check_values(paper: str, profile: str, params: dict, declared: dict[Path, dict]) -> None:
    """Each value's type (and a count's sign) before anything runs; a bad one is a UserError naming it.

    `seed` must be an int >= 0 and `device` a device this machine has. A key of the paper's profiles
    (`config.PROFILES`) follows `common.profiles.check_overrides`; any other key must convert to the
    type of its literal default in the notebooks' parameters cells.
    """
    if "seed" in params and (isinstance(params["seed"], bool) or not isinstance(params["seed"], int) or params["seed"] < 0):
        raise UserError(f"parameter 'seed' must be an integer >= 0, got {params['seed']!r}")
    if params.get("device") is not None:
        from ..device import select_device

        select_device(str(params["device"]))
    profiles = registry.config(paper).PROFILES
    own = {k: v for k, v in params.items() if k not in ("seed", "device")}
    if profile in profiles:
        check_overrides(profiles, profile, own)
        own = {k: v for k, v in own.items() if k not in profiles[profile]}
    defaults = {}
    for nb in declared:
        defaults.update({k: v for k, v in notebook_defaults(nb).items() if k in own})
    for key, like in defaults.items():
        if own[key] is not None and isinstance(like, (bool, int, float, list, tuple)):
            coerce(key, own[key], like)


def preflight(paper: str, profile: str, params: dict) -> None:
    """The paper's `config.preflight(cfg)` on the configuration the run will use (`registry.resolved`):
    missing data and the like, as one line, before anything is written."""
    registry.config(paper).preflight(registry.resolved(paper, profile, params))


def param_text(v) -> str:
    """A parameter value as `-p key=<text>` reads it back: lists and dicts as compact JSON (no spaces)."""
    return json.dumps(v, separators=(",", ":")) if isinstance(v, (list, tuple, dict)) else str(v)


def shell_text(v) -> str:
    """`param_text`, quoted for a shell."""
    import shlex

    return shlex.quote(param_text(v))


def rerun_command(paper: str, profile: str, params: dict, device: str | None, seeds: list[int] | None = None) -> str:
    """The command that reruns this paper with these settings."""
    parts = ["python -m common.reproduce", paper, "--profile", profile]
    parts += [f"-p {k}={shell_text(v)}" for k, v in params.items()]
    if device is not None:
        parts += ["--device", device]
    if seeds:
        parts += ["--seeds", *map(str, seeds)]
    return " ".join(parts)
