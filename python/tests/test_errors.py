"""Bad input exits with code 2 and one stderr line naming what was wrong; the output file
is never created (or, if it existed, never touched)."""

import textwrap

import pytest

from helpers import EXAMPLES, run_module
from pipescope_torch.cli import main

MODELS = textwrap.dedent("""
    import torch.nn as nn

    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:          # data-dependent control flow: torch.fx cannot trace it
                return self.fc(x)
            return x

    def untraceable():
        return Branchy()

    def not_a_module():
        return 42
""")


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return path


def run_in_process(capsys, tmp_path, model, *extra):
    out = tmp_path / "out.json"
    rc = main(["profile", model, "--input-shape", "4", "-o", str(out), "--repeats", "1",
               *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert not out.exists(), "a failed run must not write the output"
    return rc, err[-1] if err else ""


@pytest.mark.parametrize("spec, extra, message", [
    ("{dir}/missing.py:build_model", [], "model file '{dir}/missing.py' does not exist"),
    ("{dir}/models.py:nothing_here", [], "has no callable 'nothing_here'"),
    ("{dir}/models.py:not_a_module", [], "returned int, expected a torch.nn.Module"),
    ("{dir}/models.py", [], "must look like path/to/model.py:build_model"),
    ("no_such_pkg.models:build", [], "cannot import model module 'no_such_pkg.models'"),
    ("{dir}/models.py:untraceable", [],
     "torch.fx cannot trace module Branchy: TraceError: symbolically traced variables"),
    ("{dir}/models.py:untraceable", ["--batch-sizes", "4,2"],
     "--batch-sizes '4,2' must be strictly increasing"),
    ("{dir}/models.py:untraceable", ["--batch-sizes", "1,x"],
     "--batch-sizes '1,x' must be comma-separated positive integers"),
])
def test_bad_input_exits_2_with_one_clear_line(capsys, tmp_path, model_file, spec, extra,
                                               message):
    rc, line = run_in_process(capsys, tmp_path, spec.format(dir=tmp_path), *extra)
    assert rc == 2
    assert line.startswith("pipescope_torch: error: ")
    assert message.format(dir=tmp_path) in line


@pytest.mark.parametrize("shape", ["", "3,,4", "3,-1", "0", "a,b"])
def test_bad_input_shape_exits_2(capsys, tmp_path, shape):
    out = tmp_path / "out.json"
    rc = main(["profile", f"{EXAMPLES}/mlp.py:build_model", f"--input-shape={shape}",
               "-o", str(out)])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 2 and f"--input-shape '{shape}'" in line and not out.exists()


def test_wrong_input_shape_names_the_failing_layer(capsys, tmp_path):
    rc, line = run_in_process(capsys, tmp_path, f"{EXAMPLES}/mlp.py:build_model")
    assert rc == 2
    assert "layer '0' failed on model input of shape [1, 4]" in line


def test_untraceable_module_via_python_m_exits_2_and_keeps_old_output(tmp_path, model_file):
    out = tmp_path / "out.json"
    out.write_text("old")
    r = run_module("profile", f"{model_file}:untraceable", "--input-shape", "4", "-o", str(out))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "pipescope_torch: error: torch.fx cannot trace module Branchy: TraceError: "
        "symbolically traced variables cannot be used as inputs to control flow"]
    assert out.read_text() == "old"



def test_run_input_files_exit_2_naming_file_and_field(capsys, tmp_path):
    # Issue 56: every bridge command exits 2 naming the file and the field, never a traceback.
    # A plan is read as pipescope reads it (no NaN, no key twice) before `pipescope export` runs.
    plan = tmp_path / "plan.json"
    plan.write_text('{"format": "pipescope.plan", "version": 1, "batch_size": NaN}')
    rc = main(["run", "--plan", str(plan), "--model", f"{EXAMPLES}/mlp.py:build_model", "-o", str(tmp_path / "m.json")])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 2
    assert line == (f"pipescope_torch: error: {plan}: batch_size: NaN is not a JSON number (NaN and Infinity are not "
                    "JSON numbers)"), line
    plan.write_text('{"format": "pipescope.plan", "format": "pipescope.plan"}')
    rc = main(["run", "--plan", str(plan), "--model", f"{EXAMPLES}/mlp.py:build_model", "-o", str(tmp_path / "m.json")])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 2 and line == (f"pipescope_torch: error: {plan}: format: key given twice in one object (each key may "
                                "appear once)"), line
    # an exported setup file whose constant is not of its type: named, not a ValueError
    setup = tmp_path / "setup.py"
    setup.write_text('SCHEDULE_CLASS = "Schedule1F1B"\nN_MICROBATCHES = "four"\nMICROBATCH_SIZE = 1\n'
                     'SPLIT_POINTS = ["1"]\nSTAGE_RANKS = [0, 1]\nPIPELINE_SIZE = 2\n')
    rc = main(["run", "--setup", str(setup), "--model", f"{EXAMPLES}/mlp.py:build_model", "-o", str(tmp_path / "m.json")])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 2 and line == f"pipescope_torch: error: {setup}: N_MICROBATCHES: 'four' is not an integer", line
    assert not (tmp_path / "m.json").exists()
