-- Approvals: a tool call the agent's permissions say to `ask` about waits for
-- `openvaala/answerApproval`; this Neovim answers (it says `approvals: true` at initialize).
-- Allow always (`approve!`), allow once (the `a` key), deny with a message, and an interrupt that
-- denies; the buffer says who decided each.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
H.start_server()
H.require_method("openvaala/answerApproval")

-- an agent that asks before running shell commands (the config file is reloaded on change)
H.write_config(model, table.concat({
  "[[agents]]",
  'name = "careful"',
  'description = "asks before running commands"',
  "[agents.permissions]",
  'default = "allow"',
  "[agents.permissions.tools]",
  'shell = "ask"',
}, "\n"))
H.wait("the agent to load", function()
  local agents = H.request("listAgents").agents
  return vim.iter(agents):any(function(a)
    return a.name == "careful"
  end)
end, 20000)
local buf, conv = H.new_conversation("careful")

local function statusline()
  return require("openvaala").statusline()
end

-- 1. allow always
model:enqueue({ { "tool_call", "c1", "shell", { '{"command": "echo approved-run"}' } } })
model:enqueue({ { "text", "It ran." } })
vim.cmd("Openvaala send run it")
local text = H.wait_text("the approval request", buf, H.contains("⚠ approval needed: shell echo approved-run"))
H.check("the buffer says how to answer", text:find(":Openvaala approve (a) · approve! for the conversation (A) · deny [message] (D)", 1, true), text)
H.check("the tool call says it waits", text:find("⚙ shell echo approved-run …\n  ⏸ waiting for approval", 1, true), text)
H.check("the statusline says an approval is needed", statusline():find("approval needed", 1, true), statusline())
H.check("the user was told", H.notified("wants to run shell `echo approved-run`"))
H.equal("one approval is waiting", #conv.approvals, 1)
H.equal("of the main session (approvalRequested.sessionId)", conv.approvals[1].sessionId, conv.session_id)
H.check("with the reason the runtime gave", text:find("⚠ approval needed: shell echo approved-run\n  the agent's rule for shell: ask\n", 1, true), text)
vim.cmd("Openvaala approve!")
text = H.wait_text("the first turn", buf, H.turns_completed(1))
H.check("the command ran", text:find("    approved-run", 1, true), text)
H.check("the buffer says who allowed it", text:find("ℹ shell `echo approved-run`: allowed always by Neovim", 1, true), text)
H.equal("no approval is waiting", #conv.approvals, 0)
H.check("the statusline no longer asks", not statusline():find("approval", 1, true), statusline())
H.check("this editor's own answer is not announced again", not H.notified("allowed always by Neovim"))
H.wait("the conversation to remember it", function()
  return conv.record and conv.record.alwaysAllowed and #conv.record.alwaysAllowed == 1
end)

-- the same command again runs without asking
model:enqueue({ { "tool_call", "c2", "shell", { '{"command": "echo approved-run"}' } } })
model:enqueue({ { "text", "Ran again." } })
vim.cmd("Openvaala send again")
text = H.wait_text("the second turn", buf, H.turns_completed(2))
H.equal("it ran twice", H.count(text, "    approved-run"), 2)
H.equal("asked only once", H.count(text, "⚠ approval needed"), 0)

-- 2. allow once, with the key in the conversation buffer
model:enqueue({ { "tool_call", "c3", "shell", { '{"command": "echo once-only"}' } } })
model:enqueue({ { "text", "Once." } })
vim.cmd("Openvaala send another")
H.wait_text("the third approval request", buf, H.contains("⚠ approval needed: shell echo once-only"))
vim.api.nvim_set_current_buf(buf)
vim.cmd("normal a")
text = H.wait_text("the third turn", buf, H.turns_completed(3))
H.check("allowed once by Neovim", text:find("ℹ shell `echo once-only`: allowed once by Neovim", 1, true), text)
H.check("it ran", text:find("    once-only", 1, true), text)

-- 3. deny, with a message the model reads
model:enqueue({ { "tool_call", "c4", "shell", { '{"command": "touch never-created"}' } } })
model:enqueue({ { "text", "Understood." } })
vim.cmd("Openvaala send make a file")
H.wait_text("the fourth approval request", buf, H.contains("⚠ approval needed: shell touch never-created"))
vim.cmd("Openvaala deny not in this project")
text = H.wait_text("the fourth turn", buf, H.turns_completed(4))
H.equal("the command did not run", vim.fn.filereadable("never-created"), 0)
H.check("denied by Neovim", text:find("ℹ shell `touch never-created`: denied by Neovim", 1, true), text)
local requests = model:requests()
local last = requests[#requests].json.messages
H.check("the model read the reason", vim.json.encode(last[#last]):find("not in this project", 1, true), vim.inspect(last[#last]))

-- 4. an interrupt while a call waits denies it
model:enqueue({ { "tool_call", "c5", "shell", { '{"command": "touch interrupted-file"}' } } })
vim.cmd("Openvaala send one more")
H.wait_text("the fifth approval request", buf, H.contains("⚠ approval needed: shell touch interrupted-file"))
vim.cmd("Openvaala interrupt")
text = H.wait_text("the interrupted turn", buf, H.contains("⏹ turn interrupted"))
H.wait_text("the denial", buf, H.contains("ℹ shell `touch interrupted-file`: denied: the turn was interrupted"))
H.equal("the command did not run", vim.fn.filereadable("interrupted-file"), 0)
H.equal("no approval is waiting", #conv.approvals, 0)

-- answering again: nothing is pending
local before = #H.results.notifications
vim.cmd("Openvaala approve")
H.wait("the answer", function()
  return #H.results.notifications > before
end)
H.equal("nothing to approve", H.results.notifications[before + 1].message, "openvaala: no approval is pending")
