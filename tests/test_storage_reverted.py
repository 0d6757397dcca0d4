"""`Turn.reverted_by` (`mark_reverted`): set by a revert alone, kept across the runtime's own saves of
the turn and across a restart, cleared by a redo, in rows and in `turns_v`; memory storage alike."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from openvaala_lsp.model import Conversation, Session, Turn, TurnReason, TurnStatus
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.interfaces import Storage
from openvaala_lsp.storage.memory import MemoryStorage

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


def turn(tid: str, n: int) -> Turn:
    return Turn(id=tid, conversation_id="conv_r", session_id="sess_r", started_at=T0 + dt.timedelta(seconds=n))


async def seeded(storage: Storage) -> list[Turn]:
    session = Session(id="sess_r", conversation_id="conv_r", created_at=T0)
    await storage.create_conversation(Conversation(id="conv_r", created_at=T0, updated_at=T0), session)
    turns = [turn(f"turn_{n}", n) for n in range(3)]
    for t in turns:
        await storage.save_turn(t, new=True)
    return turns


async def reverted_by(storage: Storage) -> list[str | None]:
    found = await storage.get_turns("conv_r", ["turn_0", "turn_1", "turn_2"])
    return [t.reverted_by for t in found]


async def check_marks_survive_saves_and_redo(storage: Storage) -> None:
    turns = await seeded(storage)
    await storage.mark_reverted("conv_r", ["turn_0", "turn_1", "turn_unknown"], "turn_2")
    assert await reverted_by(storage) == ["turn_2", "turn_2", None]
    # the runtime's next save of a turn it holds (reverted_by None in its copy) keeps the mark
    ended = turns[1]
    ended.status, ended.reason, ended.ended_at = TurnStatus.COMPLETED, TurnReason.COMPLETED, T0
    await storage.save_turn(ended, saved=True)
    [saved] = await storage.get_turns("conv_r", ["turn_1"])
    assert (saved.status, saved.reason, saved.reverted_by) == (TurnStatus.COMPLETED, TurnReason.COMPLETED, "turn_2")
    await storage.mark_reverted("conv_r", ["turn_1"], None)  # a redo
    assert await reverted_by(storage) == ["turn_2", None, None]


async def test_database_keeps_reverted_by_across_saves_a_redo_and_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "r.duckdb")
    storage = await DuckDBStorage.open(path)
    try:
        await check_marks_survive_saves_and_redo(storage)
    finally:
        await storage.close()
    storage = await DuckDBStorage.open(path)
    try:
        assert await reverted_by(storage) == ["turn_2", None, None]
        result = await storage.query("SELECT turn_id, reverted_by FROM turns_v ORDER BY started_at", [], 10)
        assert result.rows == [["turn_0", "turn_2"], ["turn_1", None], ["turn_2", None]]
    finally:
        await storage.close()


async def test_memory_keeps_reverted_by_as_the_database_does() -> None:
    await check_marks_survive_saves_and_redo(MemoryStorage())
