"""common.bytecode: the set-up's bytecode warm-up compiles what is imported, also where writing is turned off."""
import os
import subprocess
import sys
import uuid

from common import bytecode


def _package(root):
    """A package of its own name (sys.modules keeps what an earlier test imported), with a module that fails."""
    name = f"warmpkg_{uuid.uuid4().hex[:12]}"
    pkg = root / name
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(f"from {name}.a import X\nY = X + 1\n")
    (pkg / "broken.py").write_text("import a_module_that_does_not_exist\n")
    return name, pkg


def test_modules_of_walks_subpackages(tmp_path, monkeypatch):
    name, _ = _package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    names = bytecode.modules_of(name)
    assert set(names) == {name, f"{name}.a", f"{name}.broken", f"{name}.sub", f"{name}.sub.b"}


def test_import_all_skips_what_does_not_import(tmp_path, monkeypatch):
    name, _ = _package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    failed = bytecode.import_all(["json", "no_such_module_here"], [name, "no_such_package_here"])
    assert failed == ["no_such_module_here", f"{name}.broken", "no_such_package_here"]
    assert sys.modules[f"{name}.sub.b"].Y == 2


def test_child_writes_bytecode_even_where_turned_off(tmp_path):
    name, pkg = _package(tmp_path)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    # the parent drops PYTHONDONTWRITEBYTECODE for its children; a child started with it set still writes
    proc = subprocess.run([sys.executable, "-m", "common.bytecode", "--child", "json", "--walk", name],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    cached = {p.name.split(".")[0] for p in pkg.rglob("*.pyc")}
    assert {"__init__", "a", "b"} <= cached


def test_a_warm_up_process_that_dies_is_said_in_one_line_and_never_fails_the_set_up(monkeypatch, capsys):
    monkeypatch.setattr(bytecode, "warm", lambda packages: [0, -11])     # e.g. a C extension crashed at import
    assert bytecode.main(["common"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bytecode: a warm-up process ended with exit code -11; the modules it did not reach compile at "
                   "their first import instead"]
    monkeypatch.setattr(bytecode, "warm", lambda packages: [0, 0])
    assert bytecode.main(["common"]) == 0 and capsys.readouterr().err == ""
