-- Opening a conversation while a sub-agent's tool call waits for approval: the buffer shows the
-- request from the `subscribeSession` snapshot's `pendingApprovals` (with the reason the runtime
-- gave, and which sub-agent asks), and Neovim answers it. A second editor (approvals: true,
-- watching the main session only) keeps the question open while no Neovim buffer watches, and
-- sees Neovim's answer with the sub-agent's sessionId.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model, table.concat({
  "[[agents]]",
  'name = "lead"',
  'subAgents = ["helper"]',
  "titles = false", -- no title call to take a scripted response
  "[agents.permissions]",
  'default = "allow"',
  "",
  "[[agents]]",
  'name = "helper"',
  "[agents.permissions]",
  'default = "allow"',
  "[agents.permissions.tools]",
  'shell = "ask"',
}, "\n"))
require("openvaala").setup({ open = "current" })
local server = H.start_server()
local peer = H.peer({ approvals = true, clientName = "peer editor", eventBatchMs = 2 })
local buf, conv = H.new_conversation("lead")
local main = conv.session_id
peer:call("subscribeSession", { conversationId = conv.id, sessionId = main })

-- no Neovim buffer watches while the sub-agent asks
vim.cmd("bwipeout " .. buf)
model:enqueue({ { "tool_call", "c1", "subagent", { '{"agent": "helper", "task": "make the file"}' } } })
model:enqueue({ { "tool_call", "c2", "shell", { '{"command": "touch while-away"}' } } })
model:enqueue({ { "text", "made it" } })
model:enqueue({ { "text", "Done while you were away." } })
peer:call("submitInput", { conversationId = conv.id, content = { { type = "text", text = "delegate" } } })
local requested = peer:wait("approvalRequested")
H.check("the second editor, on the main session, is asked for the sub-agent", requested.sessionId ~= main, vim.inspect(requested))
H.equal("what is asked", requested.approval.command, "touch while-away")

-- Neovim opens the conversation mid-wait
vim.cmd("Openvaala open " .. conv.id)
H.wait("the conversation shown again", function()
  local shown = require("openvaala.view").conversation_of()
  return shown and shown.id == conv.id and shown.status == "ready"
end)
buf = vim.api.nvim_get_current_buf()
conv = require("openvaala.view").conversation_of(buf)
local text = H.wait_text("the sub-agent named", buf, H.contains("⚠ approval needed (sub-agent helper): shell touch while-away"))
H.check("the reason from pendingApprovals", text:find("⚠ approval needed (sub-agent helper): shell touch while-away\n  " .. requested.approval.reason .. "\n", 1, true), text)
H.equal("the runtime's reason", requested.approval.reason, "the agent's rule for shell: ask")
H.equal("the request as the runtime sent it", conv.approvals, {
  { itemId = requested.itemId, sessionId = requested.sessionId, approval = requested.approval },
})
H.check("the main session's subagent call is streaming", text:find("⚙ subagent", 1, true), text)
H.check("the statusline says an approval is needed", require("openvaala").statusline():find("approval needed", 1, true), require("openvaala").statusline())
H.equal("Neovim watches the main session only", conv.session_id, main)

vim.cmd("Openvaala approve")
local resolved = peer:wait("approvalResolved", { itemId = requested.itemId })
H.equal("the second editor sees Neovim's answer for the sub-agent's session",
  { resolved.sessionId, resolved.decision, resolved.by.name, resolved.by.clientId },
  { requested.sessionId, "allowOnce", "Neovim", server.openvaala_id })
text = H.wait_text("the turn", buf, H.contains("✓ turn completed"))
H.check("the lead answered", text:find("Done while you were away.", 1, true), text)
H.equal("the sub-agent's command ran", vim.fn.filereadable("while-away"), 1)
H.check("the buffer says who allowed it", text:find("ℹ shell `touch while-away` (sub-agent helper): allowed once by Neovim", 1, true), text)
H.equal("no approval is waiting", #conv.approvals, 0)
