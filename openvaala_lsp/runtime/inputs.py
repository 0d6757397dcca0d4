"""What clients send into a conversation: inputs (queued, steering or interrupting), steering and
withdrawing them, interrupts, and compaction. The session runner does the work; this checks and routes."""

from __future__ import annotations

import base64

from openvaala_lsp.model import (
    Address,
    AddressKind,
    Content,
    Item,
    ItemStatus,
    ItemType,
    PendingInput,
    encoded_size,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import InvalidParams, InvalidState, NotFound
from openvaala_lsp.runtime.approvals import Answer
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.model_clients import resolve_model
from openvaala_lsp.runtime.session import SessionRunner
from openvaala_lsp.runtime.state import RuntimeState


class Inputs:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state

    async def _main_runner(self, conversation_id: str) -> SessionRunner:
        return (await self.state.opened(conversation_id)).main_runner()

    async def submit(self, client: Client, params: api.SubmitInputParams) -> api.SubmitInputResult:
        opened = await self.state.opened(params.conversation_id)
        check_content(params.content, self.state.options.max_image_bytes)
        runner = opened.main_runner()
        queue = runner.queue
        if params.input_id:
            known = queue.input_ids.get(params.input_id)
            known = known or await self.state.storage.find_input(params.conversation_id, params.input_id)
            # checked again after the await: a concurrent submit of the same inputId may have won
            known = queue.input_ids.get(params.input_id) or known
            if known is not None:
                return api.SubmitInputResult(item_id=known)
        resolve_model(opened.definitions(), runner.session.model, runner.session.agent_name)  # noModelConfigured
        item = Item(
            id=new_id("item"),
            conversation_id=params.conversation_id,
            session_id=runner.session.id,
            type=ItemType.USER_MESSAGE,
            status=ItemStatus.PENDING,
            created_at=utcnow(),
            content=params.content,
            from_=params.from_ or Address(kind=AddressKind.USER),
        )
        if (size := encoded_size(item)) > self.state.answer_bytes():  # it could never be sent back
            room = self.state.answer_bytes()
            raise InvalidParams(f"content of about {size} bytes leaves no room in a message of {room} @ $.content")
        if params.input_id:
            queue.input_ids[params.input_id] = item.id  # before any await: the key is taken now
        # the file tools go through the editor of the latest input when it offers its files, else the disk
        opened.file_client = client if client.read_text is not None or client.write_text is not None else None
        await runner.add_input(PendingInput(item=item, mode=params.mode, input_id=params.input_id))
        return api.SubmitInputResult(item_id=item.id)

    async def steer(self, client: Client, params: api.SteerInputParams) -> api.EmptyResult:
        await (await self._main_runner(params.conversation_id)).steer(params.item_id, params.turn_id)
        return api.EmptyResult()

    async def withdraw(self, client: Client, params: api.WithdrawInputParams) -> api.WithdrawInputResult:
        runner = await self._main_runner(params.conversation_id)
        return api.WithdrawInputResult(items=[await runner.withdraw(params.item_id)])

    async def interrupt(self, client: Client, params: api.InterruptTurnParams) -> api.InterruptTurnResult:
        opened = await self.state.opened(params.conversation_id)
        running = [runner for runner in opened.runners.values() if runner.active is not None]
        if not running:
            raise InvalidState("no turn is running")
        turn_ids = [runner.interrupt() for runner in running]
        return api.InterruptTurnResult(turn_id=turn_ids[0])

    async def compact(self, client: Client, params: api.CompactContextParams) -> api.CompactContextResult:
        runner = await self._main_runner(params.conversation_id)
        return api.CompactContextResult(turn_id=runner.start_compaction())

    async def interrupt_with(self, client: Client, params: api.InterruptTurnWithInputParams) -> api.EmptyResult:
        await (await self._main_runner(params.conversation_id)).interrupt_with(params.item_id, params.turn_id)
        return api.EmptyResult()

    async def answer_approval(self, client: Client, params: api.AnswerApprovalParams) -> api.EmptyResult:
        """The first answer to a tool call's approval wins; only a client that declared `approvals`
        may give it (the others are not counted as able to answer, so none may answer either)."""
        if not client.approvals:
            raise InvalidState(
                "this client did not declare that it answers approvals (initializationOptions.openvaala.approvals "
                "is false or absent), so it cannot answer one"
            )
        opened = self.state.open.get(params.conversation_id)
        if opened is None:
            await self.state.conversation(params.conversation_id)  # notFound for a conversation that is not
            raise NotFound(f"no approval is pending for item {params.item_id}")
        asked = next((r for r in opened.runners.values() if r.approvals.has(params.item_id)), None)
        if asked is None:
            raise NotFound(f"no approval is pending for item {params.item_id}")
        by = Address(kind=AddressKind.CLIENT, name=client.name or client.client_id, client_id=client.client_id)
        asked.approvals.answer(params.item_id, Answer(params.decision, by, params.message))
        return api.EmptyResult()


def check_content(content: list[Content], max_image_bytes: int) -> None:
    if not content:
        raise InvalidParams("must hold at least one part @ $.content")
    for index, part in enumerate(content):
        path = f"$.content[{index}]"
        if part.type == "text":
            if part.text is None:
                raise InvalidParams(f"required for text content @ {path}.text")
        elif part.type == "image":
            if not part.mime_type or not part.mime_type.startswith("image/"):
                raise InvalidParams(f"an image MIME type is required @ {path}.mimeType")
            if part.data is None:
                raise InvalidParams(f"base64 image data is required @ {path}.data")
            try:
                size = len(base64.b64decode(part.data, validate=True))
            except ValueError:
                raise InvalidParams(f"not valid base64 @ {path}.data") from None
            if size > max_image_bytes:
                raise InvalidParams(f"image of {size} bytes is larger than {max_image_bytes} @ {path}.data")
        else:
            raise InvalidParams(f"expected 'text' or 'image', got {part.type[:200]!r} @ {path}.type")
