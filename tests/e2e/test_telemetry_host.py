"""Telemetry from the real runtime host: the user config's [telemetry] table and OTEL_SERVICE_NAME
from the environment of the editor that started it; a turn's spans reach an OTLP/HTTP receiver, the
last ones when the host exits after its editor left."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient
from otlp_receiver import OtlpReceiver, attributes
from turn_helpers import API_KEY, USAGE, Session, definitions


async def test_the_host_exports_a_turn_as_the_user_config_says(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    with OtlpReceiver() as receiver:
        (home / "config.toml").write_text(f'[telemetry]\nendpoint = "{receiver.url}"\n')
        environment = {"FAKE_API_KEY": API_KEY, "OTEL_SERVICE_NAME": "team-openvaala"}
        lsp = await LspClient.spawn(home, cwd=workspace, env=environment)
        try:
            await lsp.initialize([workspace])
            await lsp.call("setDefinitions", definitions(provider))
            provider.enqueue("openai-chat", ChatStream().text("Hello.").finish(usage=USAGE).response())
            session = await Session.open(lsp)
            await session.submit("hi")
            assert (await session.turn_completed())["status"] == "completed"
        finally:
            await lsp.shutdown()
        async with asyncio.timeout(30):  # the host exits a second after its last editor, sending what is left
            while not any(span.name == "invoke_agent default" for _, span in receiver.spans()):
                await asyncio.sleep(0.1)
        received = receiver.spans()
    resource = received[0][0]
    assert resource["service.name"] == "team-openvaala"
    spans = [span for _, span in received]
    (turn,) = [s for s in spans if s.name == "invoke_agent default"]
    calls = [s for s in spans if s.parent_span_id == turn.span_id]
    assert [s.name for s in calls] == ["chat fake-model"]
    assert attributes(calls[0])["gen_ai.usage.output_tokens"] == 30
