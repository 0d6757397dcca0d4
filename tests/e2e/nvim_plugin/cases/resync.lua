-- Catching up: a lost notification (a seq gap) and a subscription the server closes
-- (conversationReconfigured, after setDefinitions during a turn) both make the buffer re-list the
-- items after its last ordinal and subscribe again. Nothing is lost, nothing shown twice.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

-- 1. a gap: drop the notification that completes the tool call
local handlers = vim.lsp.get_clients({ name = "openvaala" })[1].handlers
local deliver = handlers["openvaala/sessionEvent"]
local dropped
handlers["openvaala/sessionEvent"] = function(err, params, ctx)
  if not dropped then
    for _, event in ipairs(params.events) do
      if event.type == "itemCompleted" and event.item.type == "toolCall" then
        dropped = params.seq
        return
      end
    end
  end
  return deliver(err, params, ctx)
end

model:enqueue({ { "text", "Looking." }, { "tool_call", "c1", "shell", { '{"command": "echo tool-output"}' } } })
model:enqueue({ { "text", "The tool said" }, { "pause", 0.5 }, { "text", " tool-output." } })
vim.cmd("Openvaala send use the tool")
local text = H.wait_text("the completed turn", buf, H.contains("✓ turn completed"))
handlers["openvaala/sessionEvent"] = deliver
H.check("a notification was dropped", dropped, "none had a tool call's itemCompleted")
H.check("the gap was noticed", conv.resyncs == 1 and conv.last_resync:find("missed events", 1, true), conv.last_resync)
for _, needle in ipairs({ "## You\nuse the tool", "Looking.", "⚙ shell echo tool-output", "    tool-output", "The tool said tool-output.", "✓ turn completed" }) do
  H.check("once: " .. needle, H.count(text, needle) == 1, text)
end
H.equal("the saved log holds each item once", #vim.tbl_filter(function(e)
  return e.kind == "item"
end, conv.log), 5)
H.equal("the last ordinal", conv.last_ordinal, 5)

-- 2. a closed subscription: new definitions while a turn runs close it when the turn ends
model:enqueue({ { "text", "slow" }, { "pause", 1.0 }, { "text", " answer" } })
vim.cmd("Openvaala send second")
H.wait_text("the second turn", buf, H.contains("slow"))
local server = H.server()
local done, result
server:request("setDefinitions", {
  models = { H.model_definition(model) },
}, function(err, r)
  done, result = true, r or err
end)
H.wait("setDefinitions", function()
  return done
end)
H.equal("the conversation was busy", result.busyConversationIds, { conv.id })
H.wait("the resubscription", function()
  return conv.resyncs >= 2 and conv.status == "ready"
end)
H.check("the close was noticed", conv.last_resync:find("conversationReconfigured", 1, true), conv.last_resync)
text = H.wait_text("the second turn's end", buf, H.turns_completed(2))
H.equal("the second answer once", H.count(text, "slow answer"), 1)

-- the new subscriptions stream
model:enqueue({ { "text", "third", " answer" } })
vim.cmd("Openvaala send third")
text = H.wait_text("the third turn", buf, H.turns_completed(3))
H.equal("the third answer once", H.count(text, "third answer"), 1)
H.equal("every prompt once", { H.count(text, "## You\n"), H.count(text, "## Assistant\n") }, { 3, 4 })
