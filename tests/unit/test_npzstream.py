"""sample_outputs.npz written sample by sample (model/npzstream.py) reads back as numpy.savez's
npz would: same keys (verbatim, a leading "/" and "//" kept), same arrays, and through leapp_lab's
own memory-mapped reader."""
from __future__ import annotations

import numpy as np
import pytest

from leapp_lab.model.jsonio import load_npz
from leapp_lab.model.npzstream import SampleNpzWriter


def test_streamed_npz_equals_the_stacked_arrays(tmp_path):
    rng = np.random.default_rng(0)
    keys = ["/convs.0/Conv_output_0", "a//b", "plain", "empty", "f16"]
    samples = [{"/convs.0/Conv_output_0": rng.normal(size=(2, 3)).astype(np.float32),
                "a//b": rng.integers(0, 9, size=(4,)).astype(np.int64),
                "plain": rng.normal(size=(1, 5, 2)),
                "empty": np.zeros((0, 3), np.float32),
                "f16": rng.normal(size=(3,)).astype(np.float16)} for _ in range(3)]
    w = SampleNpzWriter(3, tmp_path)
    for i, s in enumerate(samples):
        w.add(i, s)
    w.alias("copy", "plain")
    w.close(tmp_path / "s.npz")
    assert not list(tmp_path.glob(".samples-*"))          # the per-key files are gone
    with np.load(tmp_path / "s.npz") as z:
        assert sorted(z.files) == sorted(keys + ["copy"])
        for k in keys:
            np.testing.assert_array_equal(z[k], np.stack([s[k] for s in samples]))
        np.testing.assert_array_equal(z["copy"], z["plain"])
    ours = load_npz(tmp_path / "s.npz")
    np.testing.assert_array_equal(ours["/convs.0/Conv_output_0"],
                                  np.stack([s["/convs.0/Conv_output_0"] for s in samples]))


def test_a_shape_change_between_samples_names_the_output(tmp_path):
    w = SampleNpzWriter(2, tmp_path)
    w.add(0, {"y": np.zeros((2, 3), np.float32)})
    with pytest.raises(ValueError, match=r"output 'y' changes shape across samples"):
        w.add(1, {"y": np.zeros((2, 4), np.float32)})
    w.discard()
    assert not list(tmp_path.glob(".samples-*"))
