"""`serc_dspy.core.io`: one strict JSON-lines reader, atomic JSON and JSON-lines writers."""

import json
import logging

import pytest

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import read_json, read_jsonl, read_jsonl_rows, write_json, write_jsonl


class DataFileError(UserError):
    pass


@pytest.mark.parametrize("bad, problem", [
    (b"{oops", "invalid JSON"),
    (b'["a list"]', "expected an object, got list"),
    (b'{"text": "caf\xe9"}', "not UTF-8 text"),
])
def test_the_strict_reader_names_the_file_and_the_bad_line(tmp_path, bad, problem):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n\n' + bad + b'\n{"a": 2}\n')
    with pytest.raises(DataFileError, match=rf"rows.jsonl, line 3: {problem}"):
        read_jsonl(path, error=DataFileError)
    path.write_bytes(b'{"a": 1}\n' * 2 + bad)  # the last line is no exception
    with pytest.raises(UserError, match=rf"rows.jsonl, line 3: {problem}"):
        read_jsonl_rows(path)
    with pytest.raises(UserError, match="data file not found: .*missing.jsonl"):
        read_jsonl(tmp_path / "missing.jsonl", what="data file")


def test_only_a_torn_last_line_is_skipped_and_only_when_asked(tmp_path, caplog):
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": 1}\n\n{"id": 2}\n{"id": 3, "ans', encoding="utf-8")
    torn = []
    with caplog.at_level(logging.WARNING, logger="serc_dspy"):
        rows = read_jsonl_rows(path, torn_last_line="skip",
                               on_torn=lambda number, text: torn.append((number, text)))
    assert rows == [(1, {"id": 1}), (3, {"id": 2})]
    assert torn == [(4, '{"id": 3, "ans')] and "line 4: a torn last line" in caplog.text
    with pytest.raises(UserError, match="line 4"):
        read_jsonl(path)
    path.write_text('{"id": 1, "ans\n{"id": 2}\n', encoding="utf-8")
    with pytest.raises(UserError, match="line 1"):
        read_jsonl(path, torn_last_line="skip")


def test_writers_replace_the_file_whole_and_leave_nothing_beside_it(tmp_path):
    rows = [{"id": "é", "n": 1}, {"id": "x\u2028y", "n": 2}]  # a line separator inside a value
    assert read_jsonl(write_jsonl(tmp_path / "out" / "rows.jsonl", rows)) == rows
    write_json(tmp_path / "out" / "meta.json", {"a": [1, 2]})
    assert read_json(tmp_path / "out" / "meta.json") == {"a": [1, 2]}
    assert json.loads((tmp_path / "out" / "meta.json").read_text()) == {"a": [1, 2]}
    with pytest.raises(TypeError):
        write_json(tmp_path / "out" / "meta.json", {"a": object()})
    assert read_json(tmp_path / "out" / "meta.json") == {"a": [1, 2]}  # the old file stands
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["meta.json", "rows.jsonl"]
