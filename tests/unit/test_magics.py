"""The IPython extension in a real InteractiveShell with real LEAPP (no kernel, no browser)."""
import io
import linecache
import re
from contextlib import redirect_stdout

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from leapp_lab.magics import cell_filename, trace_options, trace_parser
from viewfixtures import trace_report, verify_report

BODY = """for step in range(3):
    x = annotate.input_tensors("scale", {"obs": torch.randn(2, 3) * (step + 1)})
    y = annotate.output_tensors("scale", {"y": x * x.abs().max().item()}, export_with="jit")
"""


@pytest.fixture(scope="module")
def shell():
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    with redirect_stdout(io.StringIO()):
        assert sh.run_cell("%load_ext leapp_lab").error_in_exec is None
        assert sh.run_cell("import torch\nfrom leapp import annotate\ntorch.manual_seed(0)").error_in_exec is None
    yield sh
    InteractiveShell.clear_instance()


def run(sh, cell):
    buf = io.StringIO()
    with redirect_stdout(buf):
        res = sh.run_cell(cell)
    return res, re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())


def test_trace_options_map_flags_to_the_api():
    ns = trace_parser().parse_args(["g", "--save-path", "d", "--max-cached-io", "3", "--no-validate", "--rtol", "0.1",
                                    "--atol", "0.2", "--strict", "--dry-run", "--non-traced", "a, b",
                                    "--no-global-patching", "--patching", "P", "--verbose", "--visualize", "--out", "r"])
    opts = trace_options(ns, {"P": ["patch"]})
    assert opts == {"save_path": "d", "max_cached_io": 3, "validate": False, "rtol": 0.1, "atol": 0.2, "strict": True,
                    "dry_run": True, "non_traced": ("a", "b"), "global_patching": False, "patching": ["patch"],
                    "verbose": True, "visualize": True}
    assert trace_options(trace_parser().parse_args(["g"]), {}) == {}        # API defaults apply
    with pytest.raises(UsageError, match="no variable 'Q'"):
        trace_options(trace_parser().parse_args(["g", "--patching", "Q"]), {})
    with pytest.raises(UsageError, match="not a valid Python variable"):
        trace_options(trace_parser().parse_args(["g", "--out", "1x"]), {})


def test_trace_cell_reruns_edits_and_failures(shell, tmp_path):
    cell = f"%%leapp_trace mg --save-path {tmp_path} --max-cached-io 3 --out rep\n" + BODY
    res, out = run(shell, cell)
    assert res.error_in_exec is None, res.error_in_exec
    rep = shell.user_ns["rep"]
    assert rep.kind == "trace" and rep.graph.node("scale").verdict == "fail"
    assert [c.passed for c in rep.graph.checks] == [True, False, False]        # the frozen constant
    assert "frozen-constant" in out                                           # displayed (text/plain here)
    first_run = rep.path
    for _ in range(20):                                                       # re-run the same cell
        res, _ = run(shell, cell)
        assert res.error_in_exec is None, res.error_in_exec
    assert shell.user_ns["rep"].path != first_run
    edited = cell.replace("for step", "offset = 0\nfor step")                # lines move: LEAPP anchors move
    res, _ = run(shell, edited)
    assert res.error_in_exec is None and shell.user_ns["offset"] == 0
    broken = cell + '    if step == 1:\n        raise ValueError("half-way")\n'
    res, out = run(shell, broken)
    assert isinstance(res.error_in_exec, ValueError)
    # the traceback shows the cell's own line (linecache), and the partial report is kept
    assert 'raise ValueError("half-way")' in out and cell_filename("mg") in out
    assert linecache.getline(cell_filename("mg"), 4).strip() == "if step == 1:"
    assert shell.user_ns["rep"].graph.status == "error"
    res, _ = run(shell, cell)                                                 # and the next run works again
    assert res.error_in_exec is None and shell.user_ns["rep"].graph.status == "compiled"


def test_trace_magic_default_var_and_bad_flags(shell, tmp_path):
    res, out = run(shell, f"%%leapp_trace g2 --save-path {tmp_path} --quiet\n" + BODY)
    assert res.error_in_exec is None and shell.user_ns["_leapp"].graph.name == "g2"
    # the progress line's text (terminal IPython, jupyter console, a viewer without HTML) is its words
    assert "leapp_lab trace g2: done: 1 graph" in out and "IPython.core.display.HTML object" not in out
    with pytest.raises(UsageError, match="--max-cached-io"):
        shell.run_cell_magic("leapp_trace", "g --max-cached-io many", BODY)
    with pytest.raises(UsageError, match="NAME|name"):
        shell.run_cell_magic("leapp_trace", "", BODY)


def test_help_prints_the_usage_and_is_no_error(shell):
    for cell in ("%leapp_verify --help", "%leapp_compile -h", "%%leapp_trace --help\nraise SystemExit('ran')"):
        res, out = run(shell, cell)
        assert res.error_in_exec is None and res.error_before_exec is None, (cell, res)
        assert "usage:" in out and "exited" not in out and "UsageError" not in out, (cell, out)


def test_cli_magics_parse_like_the_cli(shell, tmp_path):
    with pytest.raises(UsageError, match="leapp_verify"):
        shell.run_line_magic("leapp_verify", "")                 # missing positionals: no SystemExit
    with pytest.raises(UsageError, match="no such file|not found|no report"):
        shell.run_line_magic("leapp_report", f"{tmp_path / 'nothing'} -o {tmp_path / 'x.html'}")


def test_report_magic_writes_html_and_returns_the_report(shell, tmp_path):
    run_dir = verify_report().save(tmp_path / "run")
    with redirect_stdout(io.StringIO()):
        rep = shell.run_line_magic("leapp_report", f"{run_dir} -o {tmp_path / 'r.html'}")
    assert rep.kind == "verify" and shell.user_ns["_leapp"] is rep
    assert 'data-leapp-row="tap_b"' in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_prepare_cell_needs_model_and_args(shell, tmp_path):
    with pytest.raises(UsageError, match="must define `model`"):
        shell.run_cell_magic("leapp_prepare", f"--onnx-out {tmp_path}/m.onnx --npz-out {tmp_path}/m.npz "
                                              f"--reference-out {tmp_path}/m.reference.npz", "x = 1\n")


def test_prepare_cell_that_raises_keeps_its_names_and_shows_only_its_lines(shell, tmp_path):
    cell = (f"%%leapp_prepare --onnx-out {tmp_path}/m.onnx --npz-out {tmp_path}/m.npz "
            f"--reference-out {tmp_path}/m.reference.npz\nbefore_error = 41 + 1\nraise ValueError('half-way')\n")
    res, out = run(shell, cell)
    assert isinstance(res.error_in_exec, ValueError)
    assert shell.user_ns["before_error"] == 42            # as a normal cell that raised half-way
    assert "raise ValueError('half-way')" in out and "magics.py" not in out, out


def test_prepare_cell_names_itself_in_the_report():
    import torch
    from leapp_lab.taps.loader import model_source
    ns = {"model": torch.nn.Identity(), "args": (torch.zeros(1),)}
    assert model_source({**ns, "__name__": "the %%leapp_prepare cell"}).label == "the %%leapp_prepare cell"
    assert model_source(ns).label == "<namespace>"


def test_unload_removes_the_magics(shell):
    shell.run_line_magic("unload_ext", "leapp_lab")
    assert "leapp_trace" not in shell.magics_manager.magics["cell"]
    shell.run_line_magic("load_ext", "leapp_lab")
    assert "leapp_trace" in shell.magics_manager.magics["cell"]
    assert "leapp_verify" in shell.magics_manager.magics["line"]


def test_progress_summary_of_prepare_and_compile_says_what_was_made():
    from types import SimpleNamespace as NS

    from leapp_lab.views.progress import report_summary
    assert report_summary(NS(kind="build", engine="ort-int8", taps=[1], samples=3)) == "ort-int8 build, 1 tap, 3 samples"
    assert report_summary(NS(kind="prepare", outputs=[1], taps=[], samples=1)) == "1 output, 0 taps, 1 sample"


def test_unknown_option_names_the_command_and_its_closest_option(shell):
    with pytest.raises(UsageError, match=r"leapp-lab verify: unrecognized arguments: --max-mpe 3 \(did you mean --max-mape\?\)"):
        shell.run_line_magic("leapp_verify", "a.npz b --max-mpe 3")


def test_an_unquoted_path_with_a_space_gets_a_hint(shell):
    with pytest.raises(UsageError, match=r"unrecognized arguments: dir/run .*quote it, e\.g\. \"\{v\.path\}\""):
        shell.run_line_magic("leapp_report", "build dir/run -o r.html")


def test_text_fallback_escapes_what_a_terminal_acts_on():
    # a name with ESC (clear screen, colours) is printed escaped, as the CLI prints it
    from leapp_lab.views.widget import text_plain
    r = verify_report()
    r.rows[0].name = "tap\x1b[2Jx"
    text = text_plain(r)
    assert "\x1b" not in text and "tap\\x1b[2Jx" in text
    assert text.startswith(r.finding.split(" ")[0])          # still leads with the finding


def test_a_cell_interrupted_or_raising_without_a_message_is_named_cleanly(shell, tmp_path):
    res, out = run(shell, f"%%leapp_trace bare --save-path {tmp_path} --out bare\n" + BODY.replace(
        "for step in range(3):\n", "for step in range(3):\n    if step == 1:\n        raise RuntimeError()\n"))
    assert isinstance(res.error_in_exec, RuntimeError)
    rep = shell.user_ns["bare"]
    assert rep.graph.error == "RuntimeError" and "the traced code raised: RuntimeError. " in rep.finding, rep.finding
