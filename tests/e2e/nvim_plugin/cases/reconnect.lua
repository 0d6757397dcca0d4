-- The server goes away (killed): the plugin starts a new one by itself and reattaches the
-- conversation (items after its last ordinal only), which works on; the buffer says what happened.
-- A server stopped on purpose (:LspStop, a shutdown) is not restarted: the next command does it.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

model:enqueue({ { "text", "before the crash" } })
vim.cmd("Openvaala send one")
H.wait_text("the first turn", buf, H.contains("✓ turn completed"))

local first = vim.lsp.get_clients({ name = "openvaala" })[1]
first:stop(true) -- SIGTERM: not a shutdown
local text = H.wait_text("the reconnection", buf, H.contains("ℹ reconnected (openvaala-lsp exited"))
H.equal("the conversation is live again", conv.status, "ready")
local clients = vim.lsp.get_clients({ name = "openvaala" })
H.check("a new server runs", #clients == 1 and clients[1].id ~= first.id and conv.server.client_id == clients[1].id, vim.inspect(vim.tbl_map(function(c)
  return c.id
end, clients)))
H.equal("the statusline is back", require("openvaala").statusline():match("^openvaala %S+"), "openvaala idle")

model:enqueue({ { "text", "after the crash" } })
vim.cmd("Openvaala send two")
text = H.wait_text("the second turn", buf, H.turns_completed(2))
H.equal("the earlier answer once", H.count(text, "before the crash"), 1)
H.equal("the new answer once", H.count(text, "after the crash"), 1)
H.equal("the notice is gone with the new turn", H.count(text, "openvaala-lsp exited"), 0)

-- stopped on purpose: it says so and waits for a command
local second = vim.lsp.get_clients({ name = "openvaala" })[1]
second:stop()
text = H.wait_text("the disconnection", buf, H.contains("openvaala-lsp exited"))
H.check("the buffer says how to reconnect", text:find(":Openvaala open to reconnect", 1, true), text)
H.equal("the statusline says disconnected", require("openvaala").statusline():match("^openvaala %S+"), "openvaala disconnected")
H.equal("no server was started", #vim.lsp.get_clients({ name = "openvaala" }), 0)
model:enqueue({ { "text", "after the stop" } })
vim.cmd("Openvaala send again")
text = H.wait_text("the turn after the stop", buf, H.turns_completed(3))
H.equal("its answer once", H.count(text, "after the stop"), 1)

-- closed with :bdelete, opened again: the whole history, once, and live again
local id = conv.id
vim.cmd("bdelete " .. buf)
H.wait("the subscriptions to end", function()
  return next(conv.subs) == nil
end)
vim.cmd("Openvaala open " .. id)
H.wait("the conversation shown again", function()
  local view = require("openvaala.view").conversation_of()
  return view and view.id == id and view.status == "ready"
end)
local again = vim.api.nvim_get_current_buf()
text = H.wait_text("the history", again, H.contains("after the stop"))
H.equal("each answer once", { H.count(text, "before the crash"), H.count(text, "after the crash") }, { 1, 1 })
model:enqueue({ { "text", "third time" } })
vim.cmd("Openvaala send three")
text = H.wait_text("the fourth turn", again, H.turns_completed(4))
H.equal("the third answer once", H.count(text, "third time"), 1)
