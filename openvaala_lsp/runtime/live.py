"""What runs live: connected clients, their subscriptions, and the events that reach them. Session
subscriptions hang on their session runner; conversation and running-conversations subscriptions,
and the clients by id, are kept here.

The subscribe methods take a snapshot and register the subscription in one step with no await in
between, so the snapshot plus the events after it are exact.
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Callable, Iterable

from openvaala_lsp.model import ConversationId, ErrorInfo, Session, SessionRuntimeInfo
from openvaala_lsp.protocol import api, events
from openvaala_lsp.protocol.errors import ConversationReconfigured, NotFound
from openvaala_lsp.runtime import subscriptions
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.conversation import OpenConversation
from openvaala_lsp.runtime.session import SessionRunner
from openvaala_lsp.runtime.snapshots import Snapshot, paged
from openvaala_lsp.runtime.subscriptions import Subscription

UNSUBSCRIBED = "unsubscribed"


class Live:
    def __init__(self, open_conversations: dict[ConversationId, OpenConversation]) -> None:
        self._open = open_conversations  # the runtime's, read to tell which conversations run
        self.clients: dict[str, Client] = {}
        self._conversation_subs: dict[ConversationId, set[Subscription]] = collections.defaultdict(set)
        self._running_subs: set[Subscription] = set()
        self.running: frozenset[ConversationId] = frozenset()

    # Clients

    def connect(self, client: Client) -> None:
        """Makes the client reachable by its clientId (client tools run through it)."""
        self.clients[client.client_id] = client

    def disconnect(self, client: Client) -> None:
        """The client went away: its subscriptions end without notice, its tools are withdrawn."""
        if self.clients.get(client.client_id) is client:
            del self.clients[client.client_id]
        for opened in self._open.values():
            entry = opened.client_servers.get(client.client_id)
            if entry is not None and entry[0] is client:
                del opened.client_servers[client.client_id]
            if opened.file_client is client:
                opened.file_client = None
        close(client.subscriptions.values(), ErrorInfo(kind=UNSUBSCRIBED, message="client disconnected"))

    # Subscribing

    def subscribe_conversation(
        self, client: Client, conversation_id: ConversationId, title: str, sessions: list[SessionRuntimeInfo]
    ) -> api.SubscribeConversationResult:
        subs = self._conversation_subs[conversation_id]
        sub = self._subscription(client, subscriptions.CONVERSATION, subs, key=conversation_id)
        return api.SubscribeConversationResult(subscription_id=sub.id, title=title, sessions=sessions)

    def subscribe_session(
        self, client: Client, opened: OpenConversation, runner: SessionRunner, budget: int
    ) -> api.SubscribeSessionResult:
        """`budget`: the bytes one answer's snapshot may take; the rest waits as pages (`snapshots`)."""
        key = (opened.id, runner.session.id)
        sub = self._subscription(
            client, subscriptions.SESSION, runner.subscribers, key=key, left=opened.subscribers_changed
        )
        whole = Snapshot(
            pending_inputs=copy.deepcopy(runner.pending_infos()),
            streaming_items=copy.deepcopy(runner.streaming_items()),
            pending_approvals=copy.deepcopy(opened.pending_approvals(runner.session)),
        )
        first, *rest = paged(whole, budget)
        return api.SubscribeSessionResult(
            subscription_id=sub.id,
            last_saved_ordinal=opened.last_ordinal,
            pending_inputs=first.pending_inputs,
            streaming_items=first.streaming_items,
            pending_approvals=first.pending_approvals,
            snapshot_cursor=sub.keep_pages(rest),
        )

    def snapshot_page(self, client: Client, subscription_id: str, cursor: str) -> api.GetSessionSnapshotResult:
        sub = client.subscriptions.get(subscription_id)
        if sub is None or sub.kind != subscriptions.SESSION:
            raise NotFound(f"session subscription not found: {subscription_id}")
        page, next_cursor = sub.next_page(cursor)
        return api.GetSessionSnapshotResult(
            pending_inputs=page.pending_inputs,
            streaming_items=page.streaming_items,
            pending_approvals=page.pending_approvals,
            snapshot_cursor=next_cursor,
        )

    def subscribe_running(self, client: Client) -> api.SubscribeRunningConversationsResult:
        sub = self._subscription(client, subscriptions.RUNNING, self._running_subs)
        initial = api.RunningConversations(conversation_ids=sorted(self.running))
        return api.SubscribeRunningConversationsResult(subscription_id=sub.id, initial=initial)

    def unsubscribe(self, client: Client, subscription_id: str) -> None:
        sub = client.subscriptions.get(subscription_id)
        if sub is None:
            raise NotFound(f"subscription not found: {subscription_id}")
        sub.close(ErrorInfo(kind=UNSUBSCRIBED, message="unsubscribed"))

    def _subscription(
        self,
        client: Client,
        kind: str,
        registry: set[Subscription],
        *,
        key: object = None,
        left: Callable[[], None] | None = None,
    ) -> Subscription:
        def forget(sub: Subscription) -> None:
            registry.discard(sub)
            client.subscriptions.pop(sub.id, None)
            if left is not None:
                left()

        sub = Subscription(
            kind,
            client.client_id,
            capacity=client.max_buffered_events,
            key=key,
            on_close=forget,
            answers_approvals=client.approvals,
        )
        registry.add(sub)
        client.subscriptions[sub.id] = sub
        client.attach(sub)
        return sub

    def watched(self, opened: OpenConversation) -> bool:
        """Whether anyone subscribes to the conversation or one of its sessions."""
        return bool(self._conversation_subs.get(opened.id)) or bool(opened.subscriptions())

    # Publishing

    def publish_conversation(self, conversation_id: ConversationId, event: events.ConversationEvent) -> None:
        for sub in list(self._conversation_subs.get(conversation_id, ())):
            sub.publish(event)

    def session_added(self, session: Session) -> None:
        if self._conversation_subs.get(session.conversation_id):  # the copy is for them: none, no copy
            self.publish_conversation(session.conversation_id, events.SessionAdded(session=copy.deepcopy(session)))

    def session_changed(self, conversation_id: ConversationId, info: SessionRuntimeInfo) -> None:
        # three times a turn, on the way to the model and to turnCompleted: deepcopy was 1% of a
        # streaming host's time (py-spy) with no one subscribed to the conversation
        if self._conversation_subs.get(conversation_id):
            self.publish_conversation(conversation_id, events.SessionUpdated(info=copy.deepcopy(info)))
        self.update_running()

    def turn_ended(self, conversation_id: ConversationId) -> None:
        opened = self._open.get(conversation_id)
        if opened is not None and opened.reconfigured and not opened.running:
            opened.reconfigured = False
            reason = ErrorInfo(kind=ConversationReconfigured.kind, message=ConversationReconfigured.default_message)
            self.close_conversation(opened.id, reason, opened)

    def update_running(self) -> None:
        running = frozenset(cid for cid, opened in self._open.items() if opened.running)
        if running != self.running:
            self.running = running
            for sub in list(self._running_subs):
                sub.publish(api.RunningConversations(conversation_ids=sorted(running)))

    # Closing

    def close_conversation(
        self, conversation_id: ConversationId, reason: ErrorInfo, opened: OpenConversation | None = None
    ) -> None:
        """Closes the conversation's subscriptions and, when it is open, those of its sessions."""
        subs = list(self._conversation_subs.get(conversation_id, ()))
        close([*subs, *(opened.subscriptions() if opened else ())], reason)

    def close_all(self, reason: ErrorInfo) -> None:
        subs = [sub for registry in self._conversation_subs.values() for sub in registry]
        subs += [sub for opened in self._open.values() for sub in opened.subscriptions()]
        close([*subs, *self._running_subs], reason)


def close(subs: Iterable[Subscription], reason: ErrorInfo) -> None:
    for sub in list(subs):
        sub.close(reason)
