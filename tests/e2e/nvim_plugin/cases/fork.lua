-- :Openvaala fork: pick a turn, get a new conversation with the history up to it. Runs once
-- the server advertises forkConversation.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
H.start_server()
H.require_method("openvaala/forkConversation")
local buf, conv = H.new_conversation()

model:enqueue({ { "text", "first answer" } })
vim.cmd("Openvaala send first prompt")
H.wait_text("the first turn", buf, H.contains("✓ turn completed"))
model:enqueue({ { "text", "second answer" } })
vim.cmd("Openvaala send second prompt")
H.wait_text("the second turn", buf, H.turns_completed(2))

H.on_select(H.label("first prompt"))
vim.cmd("Openvaala fork")
H.wait("the fork's buffer", function()
  return #H.conversation_buffers() == 2
end)
local picker = H.picker("fork")
H.equal("the turns, newest first, with their prompts", picker.labels, { "2. completed  second prompt", "1. completed  first prompt" })
local fork_buf = H.conversation_buffers()[2]
local fork = require("openvaala.view").conversation_of(fork_buf)
H.wait("the fork to load", function()
  return fork.status == "ready"
end)
H.check("the fork is a new conversation", fork.id ~= conv.id)
H.equal("it names its origin", fork.record.forkedFrom and fork.record.forkedFrom.conversationId, conv.id)
local text = H.wait_text("the fork's history", fork_buf, H.contains("first answer"))
H.check("the header says where it came from", text:find("forked from " .. conv.id, 1, true), text)
H.check("the history stops after the picked turn", not text:find("second", 1, true), text)

model:enqueue({ { "text", "answer in the fork" } })
vim.cmd("Openvaala send in the fork")
text = H.wait_text("the fork's own turn", fork_buf, H.contains("answer in the fork"))
H.check("the original is unchanged", not H.text(buf):find("in the fork", 1, true), H.text(buf))
local messages = model:requests()[3].json.messages
local contents = vim.tbl_map(function(m)
  return type(m.content) == "string" and m.content or vim.json.encode(m.content)
end, messages)
H.check("the model saw the forked history", vim.tbl_contains(contents, "first prompt") and not vim.tbl_contains(contents, "second prompt"), vim.inspect(contents))
