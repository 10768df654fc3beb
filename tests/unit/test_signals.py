"""leapp_lab.signals.signals_deferred: a Ctrl-C or SIGTERM that lands inside the block is delivered
after it, to the handler in place before, so a temporary folder is always made *and* recorded."""
import os
import signal

import pytest

from leapp_lab.signals import Terminated, signals_deferred, terminate_as_interrupt


def test_a_ctrl_c_inside_the_block_is_raised_after_it_and_the_block_completes():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            signal.raise_signal(signal.SIGINT)
            done.append("after the signal")     # still runs: the signal is held, not raised here
    assert done == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_sigterm_inside_the_block_reaches_the_cli_handler_after_it():
    with terminate_as_interrupt():
        recorded = None
        with pytest.raises(Terminated):
            with signals_deferred():
                signal.raise_signal(signal.SIGTERM)
                recorded = "the folder's name"
        assert recorded == "the folder's name"


def test_without_a_signal_the_block_raises_nothing_and_handlers_are_put_back():
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    with signals_deferred():
        pass
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


@pytest.mark.parametrize("sig, exc", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_a_signal_right_after_the_extraction_folder_is_made_leaves_no_folder(tmp_path, monkeypatch, sig, exc):
    """The window verify's Ctrl-C test hit once in a full run: the signal lands after mkdtemp's
    mkdir, before the name reaches OpenBuild. Here it lands there every time."""
    import os
    import tarfile
    import tempfile

    from leapp_lab.compare.buildio import OpenBuild

    archive = tmp_path / "build.ort.tgz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(__file__, arcname="build.json")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    real_mkdir = os.mkdir

    def mkdir_then_signal(path, *a, **kw):
        real_mkdir(path, *a, **kw)
        if os.path.basename(path).startswith("leapp-lab-build-"):
            signal.raise_signal(sig)

    monkeypatch.setattr(os, "mkdir", mkdir_then_signal)
    with terminate_as_interrupt(), pytest.raises(exc):
        OpenBuild(archive)
    assert list(scratch.iterdir()) == []


def test_a_ctrl_c_during_a_commit_waits_until_every_rename_is_done(tmp_path):
    """``staged``: the renames that commit several outputs. A Ctrl-C after the first one used to
    leave the first output new and the others old."""
    from leapp_lab.model.safepaths import staged
    finals = [tmp_path / n for n in ("a", "b", "c")]
    for f in finals:
        f.write_text("old")
    real = os.replace

    def replace_then_signal(src, dst, *a, **kw):
        real(src, dst, *a, **kw)
        if str(dst).endswith("/a"):
            signal.raise_signal(signal.SIGINT)

    with terminate_as_interrupt(), pytest.raises(KeyboardInterrupt):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(os, "replace", replace_then_signal)
            with staged(finals) as tmps:
                for t in tmps:
                    t.write_text("new")
    assert [f.read_text() for f in finals] == ["new", "new", "new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]


def test_a_run_folder_committed_inside_staged_holds_ctrl_c_until_the_files_are_renamed(tmp_path):
    """save_run_with: the run commits inside the block whose --json is renamed at its end. A Ctrl-C
    as the run committed left the run and 'latest' without the --json."""
    from leapp_lab.model.runs import RunFolder
    from leapp_lab.model.safepaths import staged
    js = tmp_path / "out.json"
    with terminate_as_interrupt(), pytest.raises(KeyboardInterrupt):
        with staged([js]) as (tmp,):
            with RunFolder(tmp_path / "lab", label="t") as run:
                (run.path / "report.json").write_text("{}")
                tmp.write_text("{}")
                run.commit()
                signal.raise_signal(signal.SIGINT)      # the run has committed: the rest must too
    assert js.read_text() == "{}"
    assert (tmp_path / "lab" / "latest").is_file()


def test_a_signal_swallowed_by_a_library_still_stops_the_next_commit(tmp_path):
    """onnxruntime's native initialiser turns a Ctrl-C into an ImportError; code that catches that
    and goes on must not commit anything afterwards."""
    from leapp_lab.model.safepaths import staged
    from leapp_lab.signals import received
    final = tmp_path / "out"
    with terminate_as_interrupt():
        try:
            signal.raise_signal(signal.SIGTERM)
        except Terminated:
            pass                                  # what a library that swallows it does
        assert received() == signal.SIGTERM
        with pytest.raises(Terminated):
            with staged([final]) as (tmp,):
                tmp.write_text("new")
    assert not final.exists() and list(tmp_path.iterdir()) == []
    assert received() is None                     # the next command in this process starts afresh
