"""Class 1 of docs/safety.md: an output never destroys an input or anything leapp_lab did not write.

Each refused case exits 2 with one line naming the output (and the input it would destroy) and
leaves every file of the tree byte-identical; the replace-its-own cases show the rule still lets a
user re-run a command onto what that command wrote before.
"""
from __future__ import annotations

import json
import os

import pytest

from safety_helpers import assert_refused, cli, cli_many, copy_prepared, refused_many, tree


@pytest.fixture
def w(tmp_path_factory, tmp_path):
    return copy_prepared(tmp_path_factory, tmp_path / "w")


def _refused(w, args, *names, cwd=None):
    before = tree(w["dir"])
    r = cli(*args, cwd=cwd or w["dir"])
    line = assert_refused(r, *names)
    assert tree(w["dir"]) == before, "a refused command changed the tree"
    return line


def test_compile_out_never_replaces_an_input_or_a_foreign_path(w):
    notes = w["dir"] / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep me\n")
    refused_many(w["dir"], [(["compile", "build/model.onnx", "--quiet", "--out", out], names) for out, names in [
        ("build", ("--out build", "contains the input build/model.onnx")),    # the folder of every input
        ("build/model.reference.npz", ("--out build/model.reference.npz", "not a build")),
        ("build/model.onnx", ("--out build/model.onnx", "is the input")),
        ("build/model.npz", ("--out build/model.npz", "is the input")),
        ("build/model.prepare", ("--out build/model.prepare", "not a build")),  # leapp_lab's, not a build
        ("notes", ("--out notes", "not a build")),                              # the user's own folder
        ("model.py", ("--out model.py",)),
    ]], cwd=w["dir"])


def test_verify_outputs_never_replace_an_input_or_a_foreign_file(w):
    (w["dir"] / "mine.json").write_text(json.dumps({"kind": "my-notes", "x": 1}))
    os.symlink("build/model.reference.npz", w["dir"] / "link.json")
    v = ["verify", "build/model.reference.npz", "build/model.ort"]
    refused_many(w["dir"], [(v + args, names) for args, names in [
        (["--no-save", "--json", "build/model.reference.npz"], ("--json build/model.reference.npz",
                                                                "is the input")),
        (["--no-save", "--json", "build/model.ort"], ("--json build/model.ort", "is the input")),
        (["--no-save", "--json", "build/model.onnx"], ("--json build/model.onnx",
                                                       "not a `leapp-lab verify --json` file")),
        (["--no-save", "--json", "mine.json"], ("--json mine.json",)),          # the user's own JSON
        (["--no-save", "--json", "link.json"], ("--json link.json", "is the input")),  # a link to it
        (["--no-save", "--html", "build/model.npz"], ("--html build/model.npz",)),
        (["--no-save", "--html", "build/model.ort/report.html"], ("--html build/model.ort/report.html",
                                                                  "lies inside")),
        (["--out", "build/model.ort"], ("--out build/model.ort", "lies inside the input")),
    ]], cwd=w["dir"])


def test_verify_json_onto_a_fifo_is_refused_and_the_fifo_stays(w):
    os.mkfifo(w["dir"] / "pipe.json")
    _refused(w, ["verify", "build/model.reference.npz", "build/model.ort", "--no-save",
                 "--json", "pipe.json"], "pipe.json", "FIFO")


def test_report_never_writes_onto_the_run_it_renders(w):
    r = cli("verify", "build/model.reference.npz", "build/model.ort", cwd=w["dir"])
    assert r.returncode == 0, r.stderr
    run = next((w["build_dir"] / "leapp_lab" / "runs").iterdir())
    rel = run.relative_to(w["dir"])
    refused_many(w["dir"], [
        (["report", rel, "-o", rel / "report.json"], (f"{rel / 'report.json'}", "is the input")),
        (["report", rel, "-o", rel / "histograms.npz"], (f"{rel / 'histograms.npz'}",)),
        (["report", rel, "-o", "build/model.reference.npz"], ("build/model.reference.npz", "is the input")),
        (["report", rel, "-o", "build/model.onnx"], ("build/model.onnx",)),
        (["report", "build/leapp_lab", "-o", "build/leapp_lab/latest"], ("build/leapp_lab/latest",)),
    ], cwd=w["dir"])


def test_prepare_never_replaces_the_source_or_foreign_files(w):
    base = ["prepare", "model.py", "--quiet"]
    (w["dir"] / "data.npz").write_bytes((w["npz"]).read_bytes())      # the user's own data
    (w["dir"] / "README.txt").write_text("mine\n")
    (w["dir"] / "notes").mkdir()
    refused_many(w["dir"], [
        (base + ["--onnx-out", "model.py", "--npz-out", "o/a.npz", "--reference-out", "o/r.npz"],
         ("--onnx-out model.py", "is the input")),
        (base + ["--onnx-out", "o/a.onnx", "--npz-out", "data.npz", "--reference-out", "o/r.npz"],
         ("--npz-out data.npz",)),
        (base + ["--onnx-out", "o/a.onnx", "--npz-out", "o/a.npz", "--reference-out", "README.txt"],
         ("--reference-out README.txt",)),
        (base + ["--onnx-out", "o/a.onnx", "--npz-out", "notes", "--reference-out", "o/r.npz"],
         ("--npz-out notes", "is a folder")),
    ], cwd=w["dir"])


def test_run_json_never_replaces_the_script(w):
    (w["dir"] / "script.py").write_text("print('no LEAPP graph here')\n")
    _refused(w, ["run", "script.py", "--json", "script.py"], "--json script.py", "is the input")


def test_each_command_replaces_what_it_wrote_and_nothing_else(w):
    """Re-running a command onto its own outputs replaces them; the same command onto a file of the
    same name that leapp_lab did not write is refused."""
    d = w["dir"]
    steps = [
        # from another folder, with absolute paths: still recognised as prepare's own files
        ["prepare", d / "model.py", "--onnx-out", d / "build/model.onnx", "--npz-out", d / "build/model.npz",
         "--reference-out", d / "build/model.reference.npz", "--debug-taps", "all", "--quiet"],
        ["compile", d / "build/model.onnx", "--quiet"],
        ["compile", d / "build/model.onnx", "--quiet", "--archive"],
        ["compile", d / "build/model.onnx", "--quiet", "--archive"],
        ["verify", d / "build/model.reference.npz", d / "build/model.ort.tgz", "--json", d / "v.json",
         "--html", d / "v.html"],
        ["verify", d / "build/model.reference.npz", d / "build/model.ort", "--json", d / "v.json", "--no-save"],
        ["report", d / "build/leapp_lab", "-o", d / "v.html"],
    ]
    for r in cli_many(steps, cwd=d / "build"):
        assert r.returncode == 0, (r.args, r.stderr[-2000:])
    assert json.loads((d / "v.json").read_text())["kind"] == "verify-rows"
    assert (w["build"] / "build.json").is_file()
    (d / "other.html").write_text("<!doctype html><p>my own page</p>\n")
    (d / "other.json").write_text(json.dumps({"kind": "trace", "mine": True}))
    (d / "other.ort.tgz").write_bytes((d / "build/model.onnx").read_bytes())
    v = ["verify", "build/model.reference.npz", "build/model.ort", "--no-save"]
    refused_many(d, [
        (v + ["--html", "other.html"], ("--html other.html", "not an HTML report written by leapp_lab")),
        (v + ["--json", "other.json"], ("--json other.json", "not a `leapp-lab verify --json` file")),
        (["compile", "build/model.onnx", "--quiet", "--archive", "--out", "other.ort.tgz"],
         ("--out other.ort.tgz", "not a build")),
        (["report", "build/leapp_lab", "-o", "other.html"], ("other.html",)),
    ], cwd=d)


def test_the_python_api_applies_the_same_rule(w, monkeypatch):
    import leapp_lab
    from leapp_lab.model.errors import UnsafeOutput

    monkeypatch.chdir(w["dir"])
    before = tree(w["dir"])
    with pytest.raises(UnsafeOutput, match="contains the input"):
        leapp_lab.compile("build/model.onnx", out="build")
    with pytest.raises(ValueError, match="is the input"):
        leapp_lab.verify("build/model.reference.npz", "build/model.ort", json_path="build/model.reference.npz",
                         save=False)
    v = leapp_lab.verify("build/model.reference.npz", "build/model.ort", save=False)
    with pytest.raises(ValueError, match="not an HTML report written by leapp_lab"):
        v.to_html("model.py")
    assert tree(w["dir"]) == before
