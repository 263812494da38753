"""The ``.regulator/`` files: paths, append-only logs, incremental readers, whole-file records.

Every other module reads and writes instance state through this package only.
"""

from __future__ import annotations

from regulator.store.errors import (
    CorruptRecord,
    InvalidPathComponent,
    InvalidUnitId,
    NotUnderInstance,
    RecordExists,
    RecordNotFound,
    StoreError,
    StoreIOError,
    SymlinkRefused,
)
from regulator.store.layout import (
    OUTBOX_ENV,
    Layout,
    check_unit_id,
    find_instance,
    is_valid_unit_id,
)
from regulator.store.ndjson import (
    RESTART_MESSAGE,
    LogAppender,
    Problem,
    TailBatch,
    TailReader,
    append_lines,
    append_records,
    dumps_line,
    locked_log,
    parse_object,
)
from regulator.store.records import (
    create_bytes_exclusive,
    create_json_exclusive,
    dumps_pretty,
    ensure_dir,
    list_dir,
    locked_directory,
    read_bytes,
    read_each,
    read_json,
    read_text,
    remove_file,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)

__all__ = [
    "OUTBOX_ENV",
    "RESTART_MESSAGE",
    "CorruptRecord",
    "InvalidPathComponent",
    "InvalidUnitId",
    "Layout",
    "LogAppender",
    "NotUnderInstance",
    "Problem",
    "RecordExists",
    "RecordNotFound",
    "StoreError",
    "StoreIOError",
    "SymlinkRefused",
    "TailBatch",
    "TailReader",
    "append_lines",
    "append_records",
    "check_unit_id",
    "create_bytes_exclusive",
    "create_json_exclusive",
    "dumps_line",
    "dumps_pretty",
    "ensure_dir",
    "find_instance",
    "is_valid_unit_id",
    "list_dir",
    "locked_directory",
    "locked_log",
    "parse_object",
    "read_bytes",
    "read_each",
    "read_json",
    "read_text",
    "remove_file",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]
