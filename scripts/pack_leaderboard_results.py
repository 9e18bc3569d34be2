"""Pack the result store behind docs/leaderboard.md into docs/leaderboard-results.tar.xz.

The leaderboard is generated from the store of a full ``+experiment=suite`` run (hours of
computing). The archive keeps that store in the repository, so tests/test_leaderboard_page.py
can run the page's own command on it and check that the committed page and figures are
exactly what that command writes:

    python scripts/pack_leaderboard_results.py outputs/store

Every file of the store goes into the archive as ``outputs/store/<name>``, unchanged but for
one field: a store record names the run directory whose run.json holds the command that
computed it, and run directories are not archived, so the command is copied from that
run.json into the record's ``run.command`` (the field the report reads first). Records whose
run.json does not exist (a sweep job stopped before writing it) keep no command, and the page
shows them as "not recorded". Damaged files stop the packing, named. The archive is
deterministic (sorted members, no dates, owners or modes from the machine): the same store
gives the same bytes.
"""

from __future__ import annotations

import argparse
import io
import sys
import tarfile
from pathlib import Path

from pmlbench.core.atomic import atomic_write
from pmlbench.errors import PmlbenchError
from pmlbench.runner.format import (
    RUN_RECORD_FILE,
    STORE_ARRAYS_SUFFIX,
    from_json,
    is_temporary,
    to_json,
)
from pmlbench.runner.store import load_damaged

ARCHIVE = Path(__file__).resolve().parents[1] / "docs" / "leaderboard-results.tar.xz"
MEMBER_DIR = "outputs/store"


def with_command(text: str, run_records: dict[Path, str | None]) -> str:
    """A store file's text with ``run.command`` filled in from its run directory's run.json."""
    record = from_json(text)
    run = record.get("run") if isinstance(record, dict) else None
    if not isinstance(run, dict) or run.get("command") or not run.get("run_dir"):
        return text
    run_dir = Path(run["run_dir"])
    if run_dir not in run_records:
        path = run_dir / RUN_RECORD_FILE
        run_record = from_json(path.read_text()) if path.is_file() else {}
        run_records[run_dir] = run_record.get("command")
    if run_records[run_dir] is None:
        return text
    run["command"] = run_records[run_dir]
    return to_json(record)


def pack(store: Path, archive: Path) -> tuple[int, int]:
    """Write ``archive`` from the store at ``store``; (files, files without a command)."""
    damaged = load_damaged(store)
    if len(damaged):
        first = damaged.iloc[0]
        raise PmlbenchError(
            f"{len(damaged)} damaged file(s) in {store}, e.g. {first['path']}: "
            f"{first['problem']}; rerun the sweep to recompute them before packing"
        )
    files = sorted(
        p
        for p in store.iterdir()
        if p.is_file() and not is_temporary(p) and not p.name.endswith(STORE_ARRAYS_SUFFIX)
    )
    if not files:
        raise PmlbenchError(f"{store} holds no store files; pass the suite's results_store")
    run_records: dict[Path, str | None] = {}
    without_command = 0
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9) as tar:
        for path in files:
            text = with_command(path.read_text(encoding="utf-8"), run_records)
            without_command += '"command"' not in text
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{MEMBER_DIR}/{path.name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    atomic_write(archive, lambda tmp: tmp.write_bytes(buffer.getvalue()))
    return len(files), without_command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="the suite's result store (results_store)")
    parser.add_argument("--out", type=Path, default=ARCHIVE, help=f"default: {ARCHIVE}")
    args = parser.parse_args(argv)
    try:
        count, without_command = pack(args.store, args.out)
    except PmlbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    size = args.out.stat().st_size / 1024
    print(f"wrote {args.out} ({count} files, {size:,.0f} KiB; {without_command} without a command)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
