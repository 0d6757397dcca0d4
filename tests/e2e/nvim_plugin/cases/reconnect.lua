-- The server goes away: the buffer and the statusline say so; the next command starts a new
-- server, reattaches the conversation (items after its last ordinal only) and works.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

model:enqueue({ { "text", "before the crash" } })
vim.cmd("Openvaala send one")
H.wait_text("the first turn", buf, H.contains("✓ turn completed"))

local first = vim.lsp.get_clients({ name = "openvaala" })[1]
first:stop(true)
local text = H.wait_text("the disconnection", buf, H.contains("openvaala-lsp exited"))
H.check("the buffer says how to reconnect", text:find(":Openvaala open to reconnect", 1, true), text)
H.equal("the statusline says disconnected", require("openvaala").statusline():match("^openvaala %S+"), "openvaala disconnected")

model:enqueue({ { "text", "after the crash" } })
vim.cmd("Openvaala send two")
text = H.wait_text("the second turn", buf, H.turns_completed(2))
local clients = vim.lsp.get_clients({ name = "openvaala" })
H.check("a new server runs", #clients == 1 and clients[1].id ~= first.id, vim.inspect(vim.tbl_map(function(c)
  return c.id
end, clients)))
H.equal("the earlier answer once", H.count(text, "before the crash"), 1)
H.equal("the new answer once", H.count(text, "after the crash"), 1)
H.equal("the notice is gone", H.count(text, "openvaala-lsp exited"), 0)
H.equal("the statusline is back", require("openvaala").statusline():match("^openvaala %S+"), "openvaala idle")

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
text = H.wait_text("the history", again, H.contains("after the crash"))
H.equal("each answer once", { H.count(text, "before the crash"), H.count(text, "after the crash") }, { 1, 1 })
model:enqueue({ { "text", "third time" } })
vim.cmd("Openvaala send three")
text = H.wait_text("the third turn", again, H.turns_completed(3))
H.equal("the third answer once", H.count(text, "third time"), 1)
