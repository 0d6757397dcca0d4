-- Approvals (protocol 0.3): a tool call the agent's permissions say to `ask` about waits for
-- `openvaala/answerApproval`. Allow always, then deny with a message. Runs once the server
-- advertises answerApproval.
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

local function turn(n)
  return function(t)
    return H.count(t, "✓ turn completed") == n
  end
end

-- 1. allow always
model:enqueue({ { "tool_call", "c1", "shell", { '{"command": "echo approved-run"}' } } })
model:enqueue({ { "text", "It ran." } })
vim.cmd("Openvaala send run it")
local text = H.wait_text("the approval request", buf, H.contains("⚠ approval needed: shell echo approved-run"))
H.check("the buffer says how to answer", text:find(":Openvaala approve [once|always]", 1, true), text)
H.check("the statusline says an approval is needed", require("openvaala").statusline():find("approval needed", 1, true), require("openvaala").statusline())
H.check("the user was told", H.notified("wants to run shell `echo approved-run`"))
H.on_select(H.label("shell"))
vim.cmd("Openvaala approve always")
text = H.wait_text("the first turn", buf, turn(1))
H.check("the command ran", text:find("    approved-run", 1, true), text)
H.equal("no approval is waiting", #conv.approvals, 0)
H.check("the statusline no longer asks", not require("openvaala").statusline():find("approval", 1, true), require("openvaala").statusline())

-- the same command again runs without asking
model:enqueue({ { "tool_call", "c2", "shell", { '{"command": "echo approved-run"}' } } })
model:enqueue({ { "text", "Ran again." } })
vim.cmd("Openvaala send again")
text = H.wait_text("the second turn", buf, turn(2))
H.equal("it ran twice", H.count(text, "    approved-run"), 2)
H.equal("asked only once", H.count(text, "⚠ approval needed"), 0)

-- 2. deny, with a message the model reads
model:enqueue({ { "tool_call", "c3", "shell", { '{"command": "touch never-created"}' } } })
model:enqueue({ { "text", "Understood." } })
vim.cmd("Openvaala send make a file")
H.wait_text("the second approval request", buf, H.contains("⚠ approval needed: shell touch never-created"))
H.on_select(H.label("shell"))
vim.cmd("Openvaala deny not in this project")
text = H.wait_text("the third turn", buf, turn(3))
H.equal("the command did not run", vim.fn.filereadable("never-created"), 0)
local requests = model:requests()
local last = requests[#requests].json.messages
H.check("the model read the reason", vim.json.encode(last[#last]):find("not in this project", 1, true), vim.inspect(last[#last]))

-- answering again: nothing is pending
local before = #H.results.notifications
vim.cmd("Openvaala approve")
H.wait("the answer", function()
  return #H.results.notifications > before
end)
H.equal("nothing to approve", H.results.notifications[before + 1].message, "openvaala: no approval is pending")
