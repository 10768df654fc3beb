"""``leapp-lab diff`` and ``%leapp_diff`` on saved hand-built verify runs: exit codes, --json, --html,
--out, and ``leapp-lab report`` of a compare run."""
import io
import json
import subprocess
import sys
from contextlib import redirect_stdout

import pytest

import leapp_lab
from viewfixtures import verify_report, verify_report_after


def cli(*args):
    return subprocess.run([sys.executable, "-m", "leapp_lab.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def runs(tmp_path):
    return verify_report().save(tmp_path / "a"), verify_report_after().save(tmp_path / "b")


def test_diff_cli_exit_codes_json_html_and_out(runs, tmp_path):
    a, b = runs
    p = cli("diff", a, b, "--json", tmp_path / "d.json", "--html", tmp_path / "d.html", "--out", tmp_path / "o")
    assert p.returncode == 0, p.stderr
    assert "B vs A: 1 flipped to fail (tap_a), 1 flipped to pass (tap_b)" in p.stdout
    doc = json.loads((tmp_path / "d.json").read_text())
    ra, rb = leapp_lab.load(a).row("output_0"), leapp_lab.load(b).row("output_0")
    row = next(r for r in doc["rows"] if r["name"] == "output_0")
    assert row["B.nrmse.delta"] == pytest.approx(rb.nrmse - ra.nrmse, rel=1e-15)
    assert row["B.max_abs.ratio"] == pytest.approx(rb.max_abs / ra.max_abs, rel=1e-15)
    assert doc["to_fail"] == ["tap_a"] and doc["exit_code"] == 0
    page = (tmp_path / "d.html").read_text(encoding="utf-8")
    assert 'data-leapp-kind="compare"' in page and 'data-leapp-flip="to-fail"' in page
    # --out saved a run folder that load() and `leapp-lab report` open
    saved = leapp_lab.load(tmp_path / "o")
    assert saved.kind == "compare" and saved.to_fail == ["tap_a"] and f"run folder: {saved.path}" in p.stdout
    r = cli("report", tmp_path / "o", "-o", tmp_path / "again.html")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again.html").read_text(encoding="utf-8").count('data-leapp-flip="to-pass"') == 1
    # --fail-on-flip: 1 when a row flips to fail, 0 when none does
    f = cli("diff", a, b, "--fail-on-flip")
    assert f.returncode == 1 and "FAIL: rows flipped to fail (--fail-on-flip): tap_a" in f.stdout
    same = verify_report().save(tmp_path / "a_again")      # the same records, another run: no flip
    assert cli("diff", a, same, "--fail-on-flip").returncode == 0
    # one run given twice is refused: every change 0 would read as "nothing changed"
    twice = cli("diff", a, a)
    assert twice.returncode == 2 and "the same verify run" in twice.stderr and "given twice" in twice.stderr


def test_diff_cli_refuses_what_is_not_a_verify_run(runs, tmp_path):
    a, _ = runs
    missing = cli("diff", a, tmp_path / "nowhere")
    assert missing.returncode == 2 and "nowhere" in missing.stderr and "Traceback" not in missing.stderr
    from viewfixtures import trace_report
    t = trace_report().save(tmp_path / "trace")
    other = cli("diff", t, a)
    assert other.returncode == 2 and "a trace report, not a verify run" in other.stderr
    usage = cli("diff", a)
    assert usage.returncode == 2


def test_diff_magic_returns_and_stores_the_compare(runs, tmp_path):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell
    a, b = runs
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    try:
        with redirect_stdout(io.StringIO()):
            sh.run_cell("%load_ext leapp_lab")
            rep = sh.run_line_magic("leapp_diff", f"{a} {b} --fail-on-flip")
        assert rep.kind == "compare" and rep.exit_code == 1 and sh.user_ns["_leapp"] is rep
        with pytest.raises(UsageError, match="leapp_diff"):
            sh.run_line_magic("leapp_diff", f"{a}")
        with pytest.raises(UsageError, match="not a verify run|no such"):
            sh.run_line_magic("leapp_diff", f"{a} {tmp_path / 'nothing'}")
    finally:
        InteractiveShell.clear_instance()


def test_diff_of_a_verify_json_summary_says_what_it_is(runs, tmp_path, capsys):
    """The CLI's output check read RUN first and called any .json not named report.json 'a file, not
    a run folder or a report .json'; load() names a `verify --json` summary and what to pass."""
    from leapp_lab.cli import main
    from leapp_lab.model.jsonio import write_json
    a, b = runs
    summary = tmp_path / "v.json"
    write_json(summary, verify_report().json_rows())
    assert main(["diff", str(summary), str(b)]) == 2
    err = capsys.readouterr().err
    assert "v.json: this is the summary `leapp-lab verify --json` writes" in err and "is a file" not in err
