-- A sub-agent's tool call that asks: a real `subagent` call whose shell command the sub-agent's
-- permissions say to ask about. The sub-agent asks within milliseconds of starting, before any
-- editor could subscribe to its session; Neovim watches only the conversation's main session,
-- gets `approvalRequested` with the sub-agent's `sessionId`, shows which sub-agent asks, and
-- answers with the buffer's `a` key (allowed, the command runs) and with `:Openvaala deny` (the
-- sub-agent's model reads the message); an interrupt withdraws the question. The agent picker
-- shows each agent's permissions and sandbox.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model, table.concat({
  "[[agents]]",
  'name = "lead"',
  'description = "hands tasks to helper"',
  'subAgents = ["helper"]',
  "titles = false", -- no title call to take a scripted response
  "[agents.permissions]",
  'default = "allow"',
  "",
  "[[agents]]",
  'name = "helper"',
  'description = "makes files"',
  "[agents.permissions]",
  'default = "allow"',
  "[agents.permissions.tools]",
  'shell = "ask"',
  "[agents.sandbox]",
  'mode = "workspace-write"',
  "network = false",
}, "\n"))
require("openvaala").setup({ open = "current" })
local server = H.start_server()
H.require_method("openvaala/answerApproval")

-- every session event this Neovim gets, as the server sent it
local seen = {}
local handlers = vim.lsp.get_clients({ name = "openvaala" })[1].handlers
local deliver = handlers["openvaala/sessionEvent"]
handlers["openvaala/sessionEvent"] = function(err, params, ctx)
  for _, event in ipairs(params.events or {}) do
    table.insert(seen, event)
  end
  return deliver(err, params, ctx)
end
local function events_of(kind)
  return vim.tbl_filter(function(e)
    return e.type == kind
  end, seen)
end

-- every request the plugin sends
local asked = {}
local request = server.request
server.request = function(self, method, params, callback)
  table.insert(asked, { method = method, params = params })
  return request(self, method, params, callback)
end

-- the agent picker shows what each agent may do, as defined
H.on_select(H.label("lead"))
local buf, conv = H.new_conversation()
local picker = H.picker("new conversation")
H.check("the picker shows the permissions and sandbox of helper",
  vim.tbl_contains(picker.labels, "helper — makes files  [shell: ask, default: allow · sandbox workspace-write]"), vim.inspect(picker.labels))
H.check("and lead's permissions (no sandbox defined)",
  vim.tbl_contains(picker.labels, "lead — hands tasks to helper  [default: allow]"), vim.inspect(picker.labels))
H.equal("the conversation is lead's", conv.session.agentName, "lead")

local function statusline()
  return require("openvaala").statusline()
end

-- 1. the sub-agent asks; Neovim (watching only the main session) allows it with `a`
model:enqueue({ { "tool_call", "c1", "subagent", { '{"agent": "helper", "task": "make the file"}' } } })
model:enqueue({ { "tool_call", "c2", "shell", { '{"command": "touch from-helper.txt"}' } } })
model:enqueue({ { "text", "made it" } })
model:enqueue({ { "text", "The helper made it." } })
vim.cmd("Openvaala send delegate")
local text = H.wait_text("the sub-agent's approval request", buf, H.contains("⚠ approval needed (sub-agent helper): shell touch from-helper.txt"))
H.check("with the reason the runtime gave", text:find("⚠ approval needed (sub-agent helper): shell touch from-helper.txt\n  the agent's rule for shell: ask\n  :Openvaala approve (a)", 1, true), text)
H.check("the main session's subagent call runs meanwhile", text:find("⚙ subagent", 1, true), text)
H.check("the statusline says an approval is needed", statusline():find("approval needed", 1, true), statusline())
H.check("the user was told which sub-agent asks", H.notified("sub-agent helper wants to run shell `touch from-helper.txt`"))
H.equal("one approval is waiting", #conv.approvals, 1)
local waiting = conv.approvals[1]
local sub_session = conv.sessions[waiting.sessionId]
H.check("it is the sub-agent's session's", waiting.sessionId ~= conv.session_id and sub_session ~= nil, vim.inspect(waiting))
H.equal("a session of helper under the main session", { sub_session.agentName, sub_session.parentSessionId }, { "helper", conv.session_id })
local requested = events_of("approvalRequested")
H.equal("approvalRequested carries the sub-agent's sessionId", vim.tbl_map(function(e)
  return { e.itemId, e.sessionId, e.approval.command }
end, requested), { { waiting.itemId, waiting.sessionId, "touch from-helper.txt" } })
local subscribed = vim.tbl_keys(server.subs)
table.sort(subscribed)
local mine = { conv.subs.conversation.id, conv.subs.session.id }
table.sort(mine)
H.equal("Neovim subscribes to the conversation and its main session only", subscribed, mine)
H.equal("it never asked for the sub-agent's session", vim.tbl_filter(function(r)
  return r.method:find("subscribeSession", 1, true) and r.params.sessionId ~= conv.session_id
end, asked), {})

vim.api.nvim_set_current_buf(buf)
vim.cmd("normal a")
text = H.wait_text("the delegated turn", buf, H.turns_completed(1))
H.equal("the sub-agent's command ran", vim.fn.filereadable("from-helper.txt"), 1)
H.check("the lead answered", text:find("The helper made it.", 1, true), text)
H.check("the buffer says who allowed it", text:find("ℹ shell `touch from-helper.txt` (sub-agent helper): allowed once by Neovim", 1, true), text)
local resolved = events_of("approvalResolved")
H.equal("approvalResolved carries the sub-agent's sessionId", vim.tbl_map(function(e)
  return { e.itemId, e.sessionId, e.decision, e.by.name, e.by.clientId }
end, resolved), { { waiting.itemId, waiting.sessionId, "allowOnce", "Neovim", server.openvaala_id } })
H.equal("no approval is waiting", #conv.approvals, 0)
H.check("the statusline no longer asks", not statusline():find("approval", 1, true), statusline())
H.check("this editor's own answer is not announced again", not H.notified("allowed once by Neovim"))

-- 2. a second sub-agent (a new session) asks; :Openvaala deny with a message
model:enqueue({ { "tool_call", "c3", "subagent", { '{"agent": "helper", "task": "make another"}' } } })
model:enqueue({ { "tool_call", "c4", "shell", { '{"command": "touch denied-by-neovim"}' } } })
model:enqueue({ { "text", "could not" } })
model:enqueue({ { "text", "The helper was stopped." } })
vim.cmd("Openvaala send again")
H.wait_text("the second sub-agent's request", buf, H.contains("⚠ approval needed (sub-agent helper): shell touch denied-by-neovim"))
H.check("another sub-agent session", conv.approvals[1].sessionId ~= waiting.sessionId and conv.approvals[1].sessionId ~= conv.session_id, vim.inspect(conv.approvals))
vim.cmd("Openvaala deny not from a sub-agent")
text = H.wait_text("the second turn", buf, H.turns_completed(2))
H.equal("the command did not run", vim.fn.filereadable("denied-by-neovim"), 0)
H.check("denied by Neovim, said with the sub-agent", text:find("ℹ shell `touch denied-by-neovim` (sub-agent helper): denied by Neovim", 1, true), text)
local requests = model:requests()
local helper_request = requests[#requests - 1].json.messages -- the sub-agent's call after the denial
H.check("the sub-agent's model read the message", vim.json.encode(helper_request[#helper_request]):find("not from a sub-agent", 1, true), vim.inspect(helper_request[#helper_request]))
H.equal("two approvals asked, two resolved", { #events_of("approvalRequested"), #events_of("approvalResolved") }, { 2, 2 })

-- 3. interrupting the turn while a sub-agent's call waits withdraws the question (denied)
model:enqueue({ { "tool_call", "c5", "subagent", { '{"agent": "helper", "task": "one more"}' } } })
model:enqueue({ { "tool_call", "c6", "shell", { '{"command": "touch interrupted-helper"}' } } })
vim.cmd("Openvaala send one more")
H.wait_text("the third sub-agent's request", buf, H.contains("⚠ approval needed (sub-agent helper): shell touch interrupted-helper"))
vim.cmd("Openvaala interrupt")
text = H.wait_text("the interrupted turn", buf, H.contains("⏹ turn interrupted"))
H.wait_text("the withdrawn question", buf, H.contains("ℹ shell `touch interrupted-helper` (sub-agent helper): denied: the turn was interrupted"))
H.equal("the command did not run", vim.fn.filereadable("interrupted-helper"), 0)
H.equal("no approval is waiting", #conv.approvals, 0)
H.check("the statusline no longer asks", not statusline():find("approval", 1, true), statusline())
local last = events_of("approvalResolved")[3]
H.equal("resolved for the sub-agent's session, by the interrupt", { last.sessionId ~= conv.session_id, last.decision, last.by.kind }, { true, "deny", "user" })
