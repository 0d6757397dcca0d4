import { Replay, loadFixture } from "../test/support/replay";
import { WebviewPage } from "../test/support/webviewPage";
async function main() {
  const replay = new Replay(loadFixture(), [...loadFixture().server.methods, "openvaala/answerApproval", "openvaala/forkConversation", "openvaala/compactContext"]);
  const page = await WebviewPage.open("chat");
  await page.send(...replay.opening());
  let n = 0;
  for (const step of replay.steps()) {
    await page.send(...step.messages);
    n++;
    if (step.events.some(e => e.type === "pendingInputAdded") && n > 5) { await page.screenshot("look-pending"); }
  }
  await page.send(replay.apply([{ type: "approvalRequested", itemId: "item_x", approval: { tool: "shell", arguments: { command: "rm -rf build" }, reason: "The agent wants to run a command", command: "rm -rf build" } } as never]));
  await page.screenshot("look-final");
  console.log(page.errors, page.violations);
  await page.close();
}
main().catch(e => { console.error(e); process.exit(1); });
