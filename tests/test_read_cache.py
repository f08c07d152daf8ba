"""The remembered rows of a query are dropped as soon as anything writes."""

import sqlite3

from coop_tui import read_cache


def test_rows_are_reread_after_a_write_by_this_or_another_connection(tmp_path):
    path = tmp_path / "c.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("create table t (x)")
    writer.execute("insert into t values (1)")
    reader = sqlite3.connect(path, isolation_level=None)
    sql = "select sum(x) from t"
    assert read_cache.rows(reader, sql) == [(1,)]
    assert read_cache.rows(reader, sql) is read_cache.rows(reader, sql)  # remembered
    writer.execute("insert into t values (2)")  # another connection commits
    assert read_cache.rows(reader, sql) == [(3,)]
    reader.execute("insert into t values (4)")  # this connection writes
    assert read_cache.rows(reader, sql) == [(7,)]
    assert read_cache.rows(writer, sql) == [(7,)]  # another connection asks its own
    assert read_cache.rows(reader, "select x from t where x > ?", [1]) == [(2,), (4,)]
    assert read_cache.rows(reader, "select x from t where x > ?", [3]) == [(4,)]


def test_two_threads_never_see_each_others_rows(tmp_path):
    import threading

    results = {}

    def read(name, value):
        conn = sqlite3.connect(tmp_path / f"{name}.db", isolation_level=None)
        conn.execute("create table t (x)")
        conn.execute("insert into t values (?)", [value])
        results[name] = [read_cache.rows(conn, "select x from t") for _ in range(50)]

    threads = [threading.Thread(target=read, args=(f"db{i}", i)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {f"db{i}": [[(i,)]] * 50 for i in range(4)}
    read_cache.forget()
