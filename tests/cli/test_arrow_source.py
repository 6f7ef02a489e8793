"""`paths.arrow_source`: the readers of user files hand Arrow a copy it owns, never the Python
file object (a `PyReadableFile` released by an Arrow worker while the interpreter exits aborts
the process: `terminate called without an active exception`, exit -6 on an exit-2 error path)."""

import gc
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from qoelab.paths import arrow_source, open_regular


def test_the_reader_is_a_copy_that_outlives_the_file(tmp_path):
    t = pa.table({"a": list(range(1000)), "b": [str(i) for i in range(1000)]})
    f = tmp_path / "t.parquet"
    pq.write_table(t, f)
    with open_regular(f, "table") as fh:
        before = sys.getrefcount(fh)
        src = arrow_source(fh)
        assert sys.getrefcount(fh) == before  # nothing of Arrow's refers to the Python file
    gc.collect()
    assert fh.closed
    assert isinstance(src, pa.BufferReader)
    assert pq.read_table(src).equals(t)


def test_an_empty_file_gives_an_empty_reader_and_arrows_own_error(tmp_path):
    f = tmp_path / "empty.parquet"
    f.write_bytes(b"")
    with open_regular(f, "table") as fh:
        src = arrow_source(fh)
    assert src.size() == 0
    try:
        pq.read_table(src)
    except pa.ArrowException:
        pass
    else:
        raise AssertionError("an empty file read as a table")


def test_a_csv_reads_through_the_copy(tmp_path):
    import pyarrow.csv as pcsv

    f = tmp_path / "m.csv"
    f.write_text("flow,end,tag\nv,dst,1\nv,dst,2\n")
    with open_regular(f, "table") as fh:
        t = pcsv.read_csv(arrow_source(fh))
    assert t.column("tag").to_pylist() == [1, 2]
