-- Two editors on one project share the user's runtime host (both run `openvaala-lsp` in its
-- default mode, front + shared host, same OPENVAALA_HOME): this Neovim and a second editor (the
-- tests' Python LspClient, answering approvals as "peer editor"). The second editor's turn
-- streams into Neovim's buffer; an approval raised by its turn shows in Neovim, is answered from
-- Neovim, and the second editor sees `approvalResolved` by Neovim; one it answers shows in Neovim
-- as its decision; one raised while no Neovim buffer watches shows once the conversation opens.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local server = H.start_server()
local peer = H.peer({ approvals = true, clientName = "peer editor", eventBatchMs = 2 })
H.check("Neovim's server is the front of the shared host, not --standalone",
  not vim.tbl_contains(require("openvaala.config").options.cmd, "--standalone") and vim.env.OPENVAALA_STANDALONE == nil)
H.equal("both editors talk to the same openvaala", peer.initialized.capabilities.experimental.openvaala.serverVersion, server.info.serverVersion)

-- the second editor sets the definitions of the runtime both share: the shell asks first
peer:call("setDefinitions", {
  models = { H.model_definition(model) },
  agents = { { name = "default", permissions = { default = "allow", tools = { shell = "ask" } } } },
})

local buf, conv = H.new_conversation()
H.check("the conversation Neovim created is open for the second editor too (one runtime)",
  peer:call("isConversationOpen", { conversationId = conv.id }).open == true)
local sub = peer:call("subscribeSession", { conversationId = conv.id, sessionId = conv.session_id })
H.check("the second editor subscribed", type(sub.subscriptionId) == "string")

local function submit(text)
  return peer:call("submitInput", { conversationId = conv.id, content = { { type = "text", text = text } } })
end

-- 1. the second editor's turn streams into Neovim's buffer
model:enqueue({ { "text", "Streamed ", "from the other editor" }, { "pause", 1.5 }, { "text", ", all of it." } })
submit("hello from the peer")
local mid = H.wait_text("the other editor's deltas", buf, H.contains("Streamed from the other editor"))
H.check("mid-stream in Neovim: partial", mid:find("## Assistant …\nStreamed from the other editor", 1, true), mid)
H.check("mid-stream in Neovim: not finished", not mid:find("all of it.", 1, true), mid)
H.check("the other editor's prompt is shown", mid:find("hello from the peer", 1, true), mid)
H.check("the statusline follows the other editor's turn", require("openvaala").statusline():find("^openvaala running"), require("openvaala").statusline())
local text = H.wait_text("the other editor's turn", buf, H.turns_completed(1))
H.equal("the answer once, whole", H.count(text, "Streamed from the other editor, all of it."), 1)
peer:wait("turnCompleted")

-- 2. an approval raised by the other editor's turn, answered from Neovim
model:enqueue({ { "tool_call", "c1", "shell", { '{"command": "echo from-neovim-approval"}' } } })
model:enqueue({ { "text", "Ran it." } })
submit("run something")
local requested = peer:wait("approvalRequested")
H.equal("the second editor is asked", requested.approval.command, "echo from-neovim-approval")
H.equal("for the main session", requested.sessionId, conv.session_id)
H.wait_text("the approval in Neovim", buf, H.contains("⚠ approval needed: shell echo from-neovim-approval"))
H.check("Neovim's user was told", H.notified("wants to run shell `echo from-neovim-approval`"))
vim.cmd("Openvaala approve")
local resolved = peer:wait("approvalResolved", { itemId = requested.itemId })
H.equal("the second editor sees Neovim's decision", { resolved.decision, resolved.sessionId }, { "allowOnce", conv.session_id })
H.equal("decided by Neovim", { resolved.by.kind, resolved.by.name, resolved.by.clientId }, { "client", "Neovim", server.openvaala_id })
text = H.wait_text("the approved turn", buf, H.turns_completed(2))
H.check("the command ran (in the sandbox; the workspace under /tmp is visible)", text:find("    from-neovim-approval", 1, true), text)
H.check("Neovim shows who allowed it", text:find("ℹ shell `echo from-neovim-approval`: allowed once by Neovim", 1, true), text)
local again = peer:call_error("answerApproval", { conversationId = conv.id, itemId = requested.itemId, decision = "deny" })
H.equal("a later answer from the other editor is too late", again.kind, "invalidState")
peer:wait("turnCompleted")

-- 3. an approval the other editor answers first: Neovim shows its decision and who made it
model:enqueue({ { "tool_call", "c2", "shell", { '{"command": "touch peer-denied"}' } } })
model:enqueue({ { "text", "Not run." } })
submit("make a file")
requested = peer:wait("approvalRequested")
H.wait_text("the second approval in Neovim", buf, H.contains("⚠ approval needed: shell touch peer-denied"))
peer:call("answerApproval", { conversationId = conv.id, itemId = requested.itemId, decision = "deny", message = "no files" })
text = H.wait_text("the denied turn", buf, H.turns_completed(3))
H.check("Neovim shows the other editor's decision", text:find("ℹ shell `touch peer-denied`: denied by peer editor", 1, true), text)
H.check("and says so", H.notified("shell `touch peer-denied`: denied by peer editor"))
H.equal("no approval is waiting in Neovim", #conv.approvals, 0)
H.equal("the command did not run", vim.fn.filereadable("peer-denied"), 0)
-- Neovim answering it now: too late, said so
table.insert(conv.approvals, { itemId = requested.itemId, sessionId = requested.sessionId, approval = requested.approval })
local before = #H.results.notifications
vim.cmd("Openvaala approve")
H.wait("Neovim's late answer", function()
  return #H.results.notifications > before
end)
H.equal("a late answer from Neovim", H.results.notifications[before + 1].message,
  "openvaala: that tool call was already answered (by another editor, or the turn ended)")
conv.approvals = {}
peer:wait("turnCompleted")

-- 4. raised while no Neovim buffer watches: opening the conversation shows it (from the
-- subscribeSession snapshot), and Neovim denies it
vim.cmd("bwipeout " .. buf)
model:enqueue({ { "tool_call", "c3", "shell", { '{"command": "touch while-away"}' } } })
model:enqueue({ { "text", "Fine." } })
submit("while you were away")
requested = peer:wait("approvalRequested")
vim.cmd("Openvaala open " .. conv.id)
H.wait("the conversation shown again", function()
  local shown = require("openvaala.view").conversation_of()
  return shown and shown.id == conv.id and shown.status == "ready"
end)
buf = vim.api.nvim_get_current_buf()
conv = require("openvaala.view").conversation_of(buf)
text = H.text(buf)
H.check("the pending approval from the snapshot, with its reason (pendingApprovals)",
  text:find("⚠ approval needed: shell touch while-away\n  " .. requested.approval.reason .. "\n", 1, true), text)
H.equal("as the runtime sent it", conv.approvals, { { itemId = requested.itemId, sessionId = conv.session_id, approval = requested.approval } })
H.check("the waiting call from the snapshot", text:find("⚙ shell touch while-away …\n  ⏸ waiting for approval", 1, true), text)
H.check("the statusline says an approval is needed", require("openvaala").statusline():find("approval needed", 1, true), require("openvaala").statusline())
vim.cmd("Openvaala deny not while I am away")
resolved = peer:wait("approvalResolved", { itemId = requested.itemId })
H.equal("the second editor sees Neovim's denial", { resolved.decision, resolved.by.name }, { "deny", "Neovim" })
text = H.wait_text("the last turn", buf, H.turns_completed(4))
H.equal("the command did not run", vim.fn.filereadable("while-away"), 0)
local requests = model:requests()
local last = requests[#requests].json.messages
H.check("the model read Neovim's message", vim.json.encode(last[#last]):find("not while I am away", 1, true), vim.inspect(last[#last]))
