"""forkConversation: a new conversation holding a prefix of another's history, under new ids.

Where the prefix ends: up to and including `lastTurnId`, strictly before `beforeTurnId`, or every
completed turn when neither is given. The cut is made in the log's order (ordinals), so items of
sub-agent sessions made during an included turn come along with it. A turn still running is never
copied (its items are left out, whatever the cut), nor are pending inputs or model calls (a fork
costs nothing again; what was spent stays with the source). Everything is copied, nothing shared:
changing either conversation afterwards never changes the other. With `restoreFiles`, the source's
files at the cut are checked out into a directory of the user's (`turn_files.TurnFiles`).
"""

from __future__ import annotations

import copy

import attrs

from openvaala_lsp.model import (
    Address,
    Conversation,
    ForkedFrom,
    Item,
    LoggedItem,
    Order,
    Session,
    Turn,
    TurnStatus,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import InvalidParams, InvalidState, NotFound
from openvaala_lsp.runtime import catalog
from openvaala_lsp.runtime.client import Client, environment_of
from openvaala_lsp.runtime.conversation import OpenConversation
from openvaala_lsp.runtime.conversations import resolve_executor_settings
from openvaala_lsp.runtime.folders import real_folders
from openvaala_lsp.runtime.model_clients import effective_selection
from openvaala_lsp.runtime.state import RuntimeState
from openvaala_lsp.runtime.turn_files import TurnFiles
from openvaala_lsp.storage.interfaces import ALL_PAGE_SIZE, all_sessions, every_page


class Forks:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state

    async def fork(self, client: Client, params: api.ForkConversationParams) -> Conversation:
        state, storage = self.state, self.state.storage
        if params.before_turn_id is not None and params.last_turn_id is not None:
            raise InvalidParams("give beforeTurnId or lastTurnId, not both @ $.beforeTurnId")
        source = await state.conversation(params.conversation_id)
        definitions = await state.definitions(client)
        model = catalog.check_model(definitions, params.model, "$.model.model")
        settings = source.executor_settings
        if params.executor_settings is not None:
            settings = await resolve_executor_settings(client, definitions, params.executor_settings, state.executors)
        sessions = await all_sessions(storage, source.id)
        turns = await every_page(
            lambda cursor: storage.list_turns(
                source.id, session_id=None, cursor=cursor, limit=ALL_PAGE_SIZE, order=Order.ASC
            )
        )
        logged = await every_page(
            lambda cursor: storage.list_items(
                source.id, session_id=None, cursor=cursor, limit=ALL_PAGE_SIZE, order=Order.ASC
            )
        )
        main = min(sessions, key=lambda s: (s.created_at, s.id))
        kept_turns, kept_items, last_turn = _prefix(turns, logged, main, params)
        folders = real_folders(await client.workspace_folders())
        if params.restore_files is not None:  # before the fork is made: a refused directory makes none
            kept = {turn.id for turn in kept_turns}
            await TurnFiles(state).check_out_fork(source.id, turns, kept, folders, params.restore_files.directory)

        now = utcnow()
        session_ids = {s.id: new_id("sess") for s in sessions}
        turn_ids = {t.id: new_id("turn") for t in kept_turns}
        conversation = Conversation(
            id=new_id("conv"),
            title=source.title,
            agent_name=source.agent_name,
            ephemeral=source.ephemeral,
            created_at=now,
            updated_at=now,
            executor_settings=attrs.evolve(settings),
            model=model if model is not None else attrs.evolve(source.model) if source.model else None,
            forked_from=ForkedFrom(conversation_id=source.id, turn_id=last_turn),
            # what the user allowed for the rest of the conversation goes on in the fork
            always_allowed=[attrs.evolve(rule) for rule in source.always_allowed],
        )
        copied_sessions = [
            attrs.evolve(
                session,
                id=session_ids[session.id],
                conversation_id=conversation.id,
                parent_session_id=session_ids.get(session.parent_session_id or ""),
                model=effective_selection(definitions, model, session.agent_name)
                if model is not None and session is main
                else attrs.evolve(session.model),
            )
            for session in sessions
        ]
        copied_turns = [
            attrs.evolve(
                turn,
                id=turn_ids[turn.id],
                conversation_id=conversation.id,
                session_id=session_ids[turn.session_id],
                usage=attrs.evolve(turn.usage),
            )
            for turn in kept_turns
        ]
        copied_items = [_copy_item(item, conversation.id, session_ids, turn_ids) for item in kept_items]
        await storage.import_conversation(conversation, copied_sessions, copied_turns, copied_items)
        environment = environment_of(client, params.environment)

        opened = OpenConversation(state, conversation, copied_sessions, environment, folders)
        opened.last_ordinal = len(copied_items)
        state.open[conversation.id] = opened
        if conversation.ephemeral:
            state.watch_ephemeral()
        return conversation


def _prefix(
    turns: list[Turn], logged: list[LoggedItem], main: Session, params: api.ForkConversationParams
) -> tuple[list[Turn], list[Item], str | None]:
    """The turns and items to copy, and the last main-session turn among them."""
    by_id = {turn.id: turn for turn in turns}
    running = {turn.id for turn in turns if turn.status is TurnStatus.RUNNING}
    ordinals: dict[str, list[int]] = {}
    for entry in logged:
        if entry.item.turn_id is not None:
            ordinals.setdefault(entry.item.turn_id, []).append(entry.ordinal)

    def turn_named(turn_id: str, path: str) -> Turn:
        turn = by_id.get(turn_id)
        if turn is None:
            raise NotFound(f"turn not found in conversation: {turn_id} @ {path}")
        return turn

    def before(turn: Turn) -> int:
        """The last ordinal of the items of turns that started before `turn`."""
        earlier = [
            o for t in turns if (t.started_at, t.id) < (turn.started_at, turn.id) for o in ordinals.get(t.id, [])
        ]
        return max(earlier, default=0)

    cut: int | None = None  # the last ordinal copied; None: everything
    if params.last_turn_id is not None:
        turn = turn_named(params.last_turn_id, "$.lastTurnId")
        if turn.id in running:
            raise InvalidState(f"turn {turn.id} is still running: fork before it, or after it ends")
        cut = max(ordinals.get(turn.id, []), default=before(turn))
    elif params.before_turn_id is not None:
        turn = turn_named(params.before_turn_id, "$.beforeTurnId")
        cut = min(ordinals.get(turn.id, []), default=before(turn) + 1) - 1
    items = [
        entry.item
        for entry in logged
        if (cut is None or entry.ordinal <= cut) and (entry.item.turn_id is None or entry.item.turn_id not in running)
    ]
    kept_ids = {item.turn_id for item in items} | ({params.last_turn_id} if params.last_turn_id else set())
    kept = [turn for turn in turns if turn.id in kept_ids and turn.id not in running]
    main_turns = [turn for turn in kept if turn.session_id == main.id]
    last = max(main_turns, key=lambda t: (t.started_at, t.id)).id if main_turns else None
    return kept, items, last


def _copy_item(item: Item, conversation_id: str, sessions: dict[str, str], turns: dict[str, str]) -> Item:
    sender = item.from_
    if sender is not None and sender.session_id in sessions:
        sender = Address(kind=sender.kind, session_id=sessions[sender.session_id], name=sender.name)
    return attrs.evolve(
        copy.deepcopy(item),
        id=new_id("item"),
        conversation_id=conversation_id,
        session_id=sessions[item.session_id],
        turn_id=turns.get(item.turn_id or ""),
        from_=sender,
    )
