"""leapp_lab.signals.signals_deferred: a Ctrl-C or SIGTERM that lands inside the block is delivered
after it, to the handler in place before, so a temporary folder is always made *and* recorded."""
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
