"""Whole-file records: atomic rewrite, exclusive create, reads that name the file, no symlinks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regulator.store import (
    CorruptRecord,
    Layout,
    NotUnderInstance,
    RecordExists,
    RecordNotFound,
    StoreError,
    SymlinkRefused,
    create_json_exclusive,
    ensure_dir,
    read_json,
    read_text,
    remove_file,
    write_json_atomic,
    write_text_atomic,
)


def names(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir())


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / ".regulator").mkdir()
    return Layout(tmp_path, env={})


SAMPLE = {
    "unitId": "u1",
    "attempts": 0,
    "nested": {"list": [1, "two", None], "empty": []},
    "é": "ü",
}


def test_atomic_write_is_pretty_json_with_a_trailing_newline(layout: Layout) -> None:
    path = layout.unit_record("u1")
    write_json_atomic(path, SAMPLE)
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(SAMPLE, indent=2, ensure_ascii=False) + "\n"
    assert read_json(path) == SAMPLE


def test_atomic_write_leaves_no_temp_file_and_replaces_the_old_content(layout: Layout) -> None:
    path = layout.unit_record("u1")
    write_json_atomic(path, {"v": 1})
    old_inode = path.stat().st_ino
    write_json_atomic(path, {"v": 2})
    assert read_json(path) == {"v": 2}
    assert path.stat().st_ino != old_inode  # renamed into place, not rewritten in place
    assert names(path.parent) == ["unit.json"]


def test_a_failed_atomic_write_keeps_the_old_content_and_leaves_no_temp(layout: Layout) -> None:
    path = layout.unit_record("u1")
    write_json_atomic(path, {"v": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"v": object()})
    assert read_json(path) == {"v": 1}
    assert names(path.parent) == ["unit.json"]


def test_text_is_written_atomically(layout: Layout) -> None:
    write_text_atomic(layout.outbox_cursor, "42\n")
    assert read_text(layout.outbox_cursor) == "42\n"
    assert names(layout.state) == ["outbox.cursor"]


def test_exclusive_create_refuses_an_existing_record_and_keeps_it(layout: Layout) -> None:
    path = layout.contract("u1", 1)
    create_json_exclusive(path, {"version": 1})
    before = path.read_bytes()
    with pytest.raises(RecordExists) as caught:
        create_json_exclusive(path, {"version": 1, "changed": True})
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, FileExistsError)
    assert isinstance(caught.value, StoreError)
    assert path.read_bytes() == before
    assert names(path.parent) == ["contract.v1.json"]


def test_reading_bad_json_names_the_file_and_line(layout: Layout) -> None:
    path = layout.unit_record("u1")
    write_json_atomic(path, {"a": 1})
    path.write_text('{\n  "a": 1,\n  oops\n}\n')
    with pytest.raises(CorruptRecord) as caught:
        read_json(path)
    assert str(caught.value).startswith(f"{path}:3: invalid JSON")
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(CorruptRecord, match="invalid UTF-8 at byte 8"):
        read_json(path)
    path.write_bytes(b"")
    with pytest.raises(CorruptRecord, match="empty file"):
        read_json(path)


def test_reading_a_missing_record_names_it(layout: Layout) -> None:
    path = layout.unit_record("ghost")
    with pytest.raises(RecordNotFound) as caught:
        read_json(path)
    assert str(caught.value) == f"{path}: no such file"
    assert isinstance(caught.value, FileNotFoundError)


def test_writing_without_a_regulator_dir_is_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path, env={})
    with pytest.raises(NotUnderInstance, match="not a regulator instance"):
        write_json_atomic(layout.unit_record("u1"), {})
    assert not (tmp_path / ".regulator").exists()


def test_a_symlinked_record_is_refused_and_its_target_untouched(
    layout: Layout, tmp_path: Path
) -> None:
    target = tmp_path / "target.json"
    target.write_text('{"secret": true}\n')
    ensure_dir(layout.leases_dir)
    lease = layout.lease("u1")
    lease.symlink_to(target)
    with pytest.raises(SymlinkRefused, match="symlink"):
        write_json_atomic(lease, {"unitId": "u1"})
    with pytest.raises(SymlinkRefused):
        create_json_exclusive(lease, {"unitId": "u1"})
    with pytest.raises(SymlinkRefused):
        read_json(lease)
    assert target.read_text() == '{"secret": true}\n'
    assert lease.is_symlink()


def test_a_symlinked_directory_under_regulator_is_refused(layout: Layout, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ensure_dir(layout.units_dir)
    layout.unit_dir("u1").symlink_to(outside)
    with pytest.raises(SymlinkRefused) as caught:
        write_json_atomic(layout.unit_record("u1"), {})
    assert str(layout.unit_dir("u1")) in str(caught.value)
    with pytest.raises(SymlinkRefused):
        create_json_exclusive(layout.contract("u1", 1), {})
    with pytest.raises(SymlinkRefused):
        read_json(layout.unit_record("u1"))
    assert list(outside.iterdir()) == []


def test_a_symlinked_regulator_dir_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real-state"
    real.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".regulator").symlink_to(real)
    with pytest.raises(SymlinkRefused):
        write_json_atomic(Layout(root, env={}).manifest, {})
    assert list(real.iterdir()) == []


def test_remove_file_deletes_a_lease_and_tolerates_a_missing_one(layout: Layout) -> None:
    lease = layout.lease("u1")
    write_json_atomic(lease, {"unitId": "u1"})
    assert remove_file(lease) is True
    assert not lease.exists()
    assert remove_file(lease) is False
    with pytest.raises(RecordNotFound):
        remove_file(lease, missing_ok=False)
