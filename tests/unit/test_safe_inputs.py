"""The checked open of ``leapp_lab.model.safepaths`` (docs/safety.md, "Every file is checked before it
is opened"): what is at a path is looked at before it is opened, and again on the open descriptor."""
from __future__ import annotations

import os
import time

import pytest

from leapp_lab.model.errors import NotAFile, UnusableInput
from leapp_lab.model.safepaths import (check_input_file, open_input, optional_input, present, read_input_bytes,
                                       read_input_text)


def test_each_kind_of_path_is_named_as_what_it_is(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    os.symlink("/dev/zero", tmp_path / "zero")
    os.symlink("gone.bin", tmp_path / "dangling")
    (tmp_path / "folder").mkdir()
    for name, said in (("fifo", "is a FIFO (named pipe), not a thing"), ("zero", "is a character device"),
                       ("dangling", "is a link to gone.bin, which does not exist (a dangling link)"),
                       ("folder", "is a folder, not a thing")):
        t = time.perf_counter()
        for check in (check_input_file, open_input, read_input_bytes, optional_input):
            with pytest.raises(NotAFile, match=f"{name}: {said}".replace("(", r"\(").replace(")", r"\)")):
                check(tmp_path / name, "a thing")
        assert time.perf_counter() - t < 1.0
    with pytest.raises(UnusableInput, match="no such file") as got:
        check_input_file(tmp_path / "nothing", "a thing")
    assert not isinstance(got.value, NotAFile)      # a missing file may only make a check unavailable


def test_a_missing_file_is_absent_but_a_dangling_link_is_present(tmp_path):
    os.symlink("gone", tmp_path / "dangling")
    assert optional_input(tmp_path / "nothing") is None and not present(tmp_path / "nothing")
    assert present(tmp_path / "dangling")


def test_a_size_bound_refuses_before_reading_and_a_file_within_it_is_read(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("héllo")
    assert read_input_text(p, "a text", limit=6) == "héllo"
    with pytest.raises(NotAFile, match=r"f\.txt: 0\.0 MiB, more than the 0\.0 MiB leapp_lab reads as a text"):
        read_input_bytes(p, "a text", limit=5)
    p.write_bytes(b"\xff\xfe")
    with pytest.raises(UnusableInput, match=r"f\.txt: not UTF-8 text"):
        read_input_text(p, "a text")


def test_the_open_descriptor_is_checked_again(tmp_path, monkeypatch):
    """A FIFO swapped in between the check and the open is refused on the descriptor, never read:
    the open does not block (O_NONBLOCK) and fstat says what was opened."""
    import leapp_lab.model.safepaths.inputs as inputs
    p = tmp_path / "swapped"
    p.write_bytes(b"data")
    real = inputs.check_input_file

    def then_swap(path, *a, **kw):
        got = real(path, *a, **kw)
        os.unlink(path)
        os.mkfifo(path)
        return got
    monkeypatch.setattr(inputs, "check_input_file", then_swap)
    t = time.perf_counter()
    with pytest.raises(NotAFile, match="is a FIFO"):
        inputs.open_input(p, "a thing")
    assert time.perf_counter() - t < 1.0
