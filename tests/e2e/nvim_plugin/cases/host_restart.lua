-- The runtime host dies (killed): openvaala-lsp starts a new one and closes the subscriptions
-- (runtimeStopped); the buffer opens the conversation again, catches up, and keeps working.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

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

model:enqueue({ { "text", "after the restart" } })
vim.cmd("Openvaala send two")
local text = H.wait_text("the second turn", buf, function(t)
  return H.count(t, "✓ turn completed") == 2
end, 30000)
H.equal("each answer once", { H.count(text, "before the restart"), H.count(text, "after the restart") }, { 1, 1 })
H.equal("the same server", #vim.lsp.get_clients({ name = "openvaala" }), 1)
