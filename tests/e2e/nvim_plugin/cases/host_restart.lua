-- The runtime host dies (killed): openvaala-lsp starts a new one and closes the subscriptions
-- (runtimeStopped); the buffer opens the conversation again, catches up, and keeps working. The
-- definitions this editor set with setDefinitions survive: the front gives them to the new host
-- (nothing is sent again here), and :checkhealth shows the agents' permissions and sandbox.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
H.start_server()
local guarded = { name = "guarded", permissions = { default = "ask" }, sandbox = { mode = "read-only", network = false } }
local set = H.request("setDefinitions", {
  models = { H.model_definition(model) },
  agents = { { name = "default" }, guarded },
})
H.equal("the definitions were taken", set.busyConversationIds, {})
local function agents()
  return vim.tbl_map(function(a)
    return { a.name, a.permissions, a.sandbox }
  end, H.request("listAgents").agents)
end
local defined = { { "default", nil, nil }, { "guarded", guarded.permissions, guarded.sandbox } }
H.equal("listAgents gives permissions and sandbox as defined", agents(), defined)
local buf, conv = H.new_conversation("default")

model:enqueue({ { "text", "before the restart" } })
vim.cmd("Openvaala send one")
H.wait_text("the first turn", buf, H.contains("✓ turn completed"))

local pid = tonumber(vim.fn.readfile(H.home .. "/run/host.pid")[1])
H.check("the host's pid", pid, H.home .. "/run/host.pid")
vim.uv.kill(pid, "sigkill")
H.wait("the buffer to catch up", function()
  return (conv.resyncs or 0) >= 1 and conv.status == "ready"
end, 30000, function()
  return vim.inspect({ status = conv.status, resyncs = conv.resyncs, why = conv.last_resync, notices = conv.notices })
end)
H.check("it noticed the closed subscriptions", conv.last_resync:find("runtimeStopped", 1, true), conv.last_resync)
H.check("a new host runs", tonumber(vim.fn.readfile(H.home .. "/run/host.pid")[1]) ~= pid)
H.equal("the new host has the definitions this editor set (not the config file's)", agents(), defined)
vim.cmd("checkhealth openvaala")
local report = H.text(0)
H.check(":checkhealth shows the agent's permissions and sandbox",
  report:find("agent guarded: permissions default: ask; sandbox read-only", 1, true), report)
H.check("and the defaults of an agent that defines none",
  report:find("agent default: permissions the defaults (the shell runs in the sandbox; leaving it asks); sandbox workspace-write, no network (the default)", 1, true), report)
vim.cmd("close")

model:enqueue({ { "text", "after the restart" } })
vim.cmd("Openvaala send two")
local text = H.wait_text("the second turn", buf, H.turns_completed(2), 30000)
H.equal("each answer once", { H.count(text, "before the restart"), H.count(text, "after the restart") }, { 1, 1 })
H.equal("the same server", #vim.lsp.get_clients({ name = "openvaala" }), 1)
