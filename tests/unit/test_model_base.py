import json
import math
import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from leapp_lab.model import RunFolder, latest_run, list_runs, load, load_npz, register, save_npz
from leapp_lab.model.base import Report
from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.jsonio import dumps, write_json


@register
@dataclass
class _Toy(Report):
    kind = "toy-test"
    values: list = field(default_factory=list)

    def to_dict(self):
        return {"values": self.values}

    @classmethod
    def from_dict(cls, d, path=None):
        return cls(values=d["values"])


def test_json_has_no_nan_and_counts_them(tmp_path):
    text, n = dumps({"a": [1.0, float("nan"), float("inf"), -float("inf")], "b": np.float32(2)})
    assert n == 3
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"a": [1.0, None, None, None], "b": 2.0}
    assert write_json(tmp_path / "x.json", {"v": math.nan}) == 1


def test_save_load_dispatches_on_kind(tmp_path):
    r = _Toy(values=[1, 2.5, float("nan")])
    r.save(tmp_path / "run")
    d = json.loads((tmp_path / "run" / "report.json").read_text())
    assert d["kind"] == "toy-test" and d["schema_version"] == 1 and d["values"][2] is None
    back = load(tmp_path / "run")
    assert isinstance(back, _Toy) and back.values == [1, 2.5, None]


def test_load_names_unknown_kind_and_newer_schema(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "report.json").write_text('{"kind": "nope", "schema_version": 1}')
    with pytest.raises(ValueError, match="unknown report kind 'nope'"):
        load(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "report.json").write_text('{"kind": "toy-test", "schema_version": 99}')
    with pytest.raises(ValueError, match="newer than this"):
        load(tmp_path / "b")
    with pytest.raises(FileNotFoundError, match="no such file"):
        load(tmp_path / "missing")


def test_npz_roundtrip_uncompressed_and_never_unpickles(tmp_path):
    p = save_npz(tmp_path / "a.npz", {"x/y": np.arange(6, dtype=np.float32).reshape(2, 3)})
    import zipfile
    with zipfile.ZipFile(p) as z:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    assert load_npz(p)["x/y"].tolist() == [[0, 1, 2], [3, 4, 5]]
    np.savez(tmp_path / "evil.npz", o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="evil.npz"):
        load_npz(tmp_path / "evil.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz"):
        load_npz(tmp_path / "junk.npz")


def test_run_folders_never_overwrite_and_latest_moves(tmp_path):
    with RunFolder(tmp_path, "one") as a:
        _Toy(values=[1]).save(a.path)
    with RunFolder(tmp_path, "two") as b:
        _Toy(values=[2]).save(b.path)
    runs = list_runs(tmp_path)
    assert len(runs) == 2
    assert latest_run(tmp_path) == b.final_path
    assert load(tmp_path).values == [2]
    assert load(a.final_path).values == [1]


def test_failed_empty_run_leaves_previous_latest(tmp_path):
    with RunFolder(tmp_path, "good") as good:
        _Toy(values=[1]).save(good.path)
    with pytest.raises(RuntimeError):
        with RunFolder(tmp_path, "bad"):
            raise RuntimeError("boom")
    assert latest_run(tmp_path) == good.final_path
    assert list_runs(tmp_path) == [good.final_path]


def test_written_files_are_shareable(tmp_path):
    import os
    import stat
    mask = os.umask(0o022)
    try:
        write_json(tmp_path / "r.json", {"a": 1})
        save_npz(tmp_path / "a.npz", {"x": np.zeros(2)})
    finally:
        os.umask(mask)
    for name in ("r.json", "a.npz"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name


def test_lists_of_numbers_to_json_keep_values_and_count_non_finite():
    """Lists of plain finite numbers go through whole (a fast path); anything else element by
    element: non-finite floats become null and are counted, numpy scalars become Python numbers."""
    from leapp_lab.model.jsonio import dumps, to_jsonable
    plain = [0, 3, -1.5, 1e-300, True]
    got = to_jsonable(plain)
    assert got == plain and got is not plain and [type(v) for v in got] == [type(v) for v in plain]
    counter = [0]
    assert to_jsonable([1.0, float("nan"), 2, float("-inf")], counter) == [1.0, None, 2, None]
    assert counter == [2]
    mixed = to_jsonable((np.float64(2.5), np.int64(3), [np.float32("inf"), 4]))
    assert mixed == [2.5, 3, [None, 4]] and type(mixed[0]) is float and type(mixed[1]) is int
    assert dumps({"a": [1.5, float("inf")]}, indent=None) == ('{"a": [1.5, null]}', 1)


def test_load_npz_gives_what_np_load_gives(tmp_path):
    """Uncompressed members are read through headers parsed in place (numpy's usual layout) or by
    numpy's parser (others); compressed files take numpy's path: the same arrays either way, and
    nothing loaded keeps the file open or mapped."""
    import os
    arrays = {"f32": np.arange(12, dtype=np.float32).reshape(3, 4), "be": np.arange(5, dtype=">i8"),
              "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "scalar": np.array(2.5),
              "empty": np.zeros((0, 4)), "s": np.array(["ab", "c"]), "b": np.array([True, False]),
              "rec": np.zeros(3, dtype=[("x", "<f4"), ("y", "<i2")]), "row/with/slash": np.ones((2, 2), np.int16)}
    for name, writer in (("plain.npz", np.savez), ("zipped.npz", np.savez_compressed)):
        p = tmp_path / name
        writer(p, **arrays)
        got = load_npz(p)
        with np.load(p, allow_pickle=False) as z:
            want = {k: z[k] for k in z.files}
        assert got.keys() == want.keys()
        for k in want:
            assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
            assert got[k].flags.f_contiguous == want[k].flags.f_contiguous, k
            np.testing.assert_array_equal(got[k], want[k])
            root = got[k]
            while isinstance(root, np.ndarray) and root.base is not None:
                root = root.base
            assert got[k].flags.writeable and isinstance(root, np.ndarray), k   # a copy, not a view of a map
        os.replace(p, tmp_path / "moved.npz")          # nothing holds the file
        (tmp_path / "moved.npz").unlink()


def test_load_npz_refuses_a_stored_object_array_and_a_truncated_member(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, ok=np.ones(3), o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(UnusableInput, match=r"obj\.npz: array 'o' has dtype object"):
        load_npz(p)
    t = tmp_path / "cut.npz"
    np.savez(t, x=np.ones(1000))
    data = t.read_bytes()
    t.write_bytes(data[:600] + data[-200:])           # the directory kept, the member's data cut
    with pytest.raises(UnusableInput, match=r"cut\.npz"):
        load_npz(t)


def test_field_checks_and_conversion_keep_their_rules_on_the_fast_paths():
    """Scalars and lists of scalars are checked by the exact JSON types they take: a bool is not an
    integer, an int is a number (and becomes a float), a string is neither; the first wrong field
    is named."""
    from leapp_lab.model.dc import Plain
    from leapp_lab.model.fieldcheck import check_fields

    @dataclass
    class Rec(Plain):
        count: int = 0
        ratio: float | None = None
        flag: bool = False
        name: str | None = None
        counts: list[int] = field(default_factory=list)
        xs: list[float] = field(default_factory=list)
        either: int | float | None = None

    good = {"count": 3, "ratio": 2, "flag": True, "name": "n", "counts": [1, 2], "xs": [1, 2.5], "either": 4}
    check_fields(Rec, good, "f.json")
    r = Rec.from_dict(good)
    assert type(r.ratio) is float and r.ratio == 2.0 and [type(x) for x in r.xs] == [float, float]
    assert r.counts == [1, 2] and type(r.either) is int
    for bad, says in (({"count": True}, "field 'count': expected an integer, got bool"),
                      ({"ratio": "1"}, "field 'ratio': expected a number, got str"),
                      ({"flag": 1}, "field 'flag': expected true/false, got int"),
                      ({"name": 5}, "field 'name': expected a string, got int"),
                      ({"counts": [1, True]}, "field 'counts': item 1: expected an integer, got bool"),
                      ({"xs": [1.0, "2"]}, "field 'xs': item 1: expected a number, got str"),
                      ({"counts": {"a": 1}}, "field 'counts': expected a list, got dict")):
        with pytest.raises(UnusableInput, match=re.escape(says)):
            check_fields(Rec, {**good, **bad}, "f.json")


def _corruptions(tmp_path):
    """npz files broken the ways a fuzzer broke them: a header cut inside its dict (numpy's parser
    then raised tokenize.TokenError), a corrupt 'version needed' (NotImplementedError), the
    encrypted flag set (RuntimeError), corrupt deflate data (zlib.error); then random bytes."""
    import io
    import random
    import struct as st
    plain, zipped = io.BytesIO(), io.BytesIO()
    arrays = dict(a=np.arange(20, dtype=np.float32).reshape(4, 5), b=np.ones((3, 2), ">f8"), c=np.array(["x", "yy"]))
    np.savez(plain, **arrays)
    np.savez_compressed(zipped, **arrays)
    out = []
    p = bytearray(plain.getvalue())
    i = p.index(b"\x93NUMPY")
    cut = bytearray(p)
    cut[i + 8:i + 10] = st.pack("<H", 12)               # the header length: inside {'descr'
    out.append(("cut-header", cut))
    for name, data in (("plain", plain.getvalue()), ("zipped", zipped.getvalue())):
        cd = data.rindex(b"PK\x01\x02")                 # the last member's central directory entry
        ver = bytearray(data)
        ver[cd + 6:cd + 8] = st.pack("<H", 0x0917)      # version needed to extract: 23.3
        out.append((f"{name}-version", ver))
        enc = bytearray(data)
        enc[cd + 8] |= 1                                # general purpose flag: encrypted
        out.append((f"{name}-encrypted", enc))
    z = bytearray(zipped.getvalue())
    j = z.index(b"PK\x03\x04") + 30 + len("a.npy") + 5
    z[j:j + 8] = b"\xff" * 8                            # inside the first member's deflate stream
    out.append(("deflate", z))
    rng = random.Random(5)
    for k in range(150):
        for src in (plain.getvalue(), zipped.getvalue()):
            d = bytearray(src)
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(d))
                if rng.random() < 0.2:
                    d[at:at + rng.randint(1, 30)] = b""
                else:
                    d[at] = rng.randrange(256)
            out.append((f"random-{k}", d))
    return out


def test_a_corrupt_npz_is_refused_naming_it_never_with_another_error(tmp_path):
    from leapp_lab.compare.npzio import NpzArrays
    p = tmp_path / "broken.npz"
    for label, data in _corruptions(tmp_path):
        p.write_bytes(bytes(data))
        for read in (lambda: load_npz(p), lambda: [np.asarray(v).tobytes() for v in NpzArrays(p).values()]):
            try:
                read()
            except UnusableInput as exc:
                assert "broken.npz" in str(exc), (label, str(exc))


def test_a_kind_that_is_not_a_name_and_a_null_record_in_a_list_are_refused(tmp_path):
    """Found by fuzzing a trace run folder: both used to escape as TypeError / AttributeError."""
    from leapp_lab.model.fieldcheck import check_fields

    @dataclass
    class Item:
        node: str = ""

    @dataclass
    class Holder:
        items: list[Item] = field(default_factory=list)
        values: list[float] = field(default_factory=list)

    check_fields(Holder, {"items": [{"node": "a"}], "values": [1.0, None]}, "h.json")   # null number: fine
    with pytest.raises(UnusableInput, match=r"h\.json: .*field 'items': item 1: expected an object \(Item\), got null"):
        check_fields(Holder, {"items": [{"node": "a"}, None]}, "h.json")
    (tmp_path / "report.json").write_text(json.dumps({"kind": ["trace"], "schema_version": 1}))
    with pytest.raises(UnusableInput, match=r"'kind' is list, not a name"):
        load(tmp_path)
