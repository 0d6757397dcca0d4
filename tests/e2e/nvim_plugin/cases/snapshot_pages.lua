-- A snapshot too big for one message (this case lowers the server's limit to 256 KiB) comes in
-- pages: a conversation opened while four long inputs wait shows all of them, the last page's too.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()
local id = conv.id

model:enqueue({ { "text", "working" }, { "pause", 4.0 }, { "text", " done" } })
model:enqueue({ { "text", "ok" } }) -- the next turn takes the four inputs
vim.cmd("Openvaala send start")
H.wait_text("the first answer", buf, H.contains("working"))
local long = string.rep("x", 60000) -- four of them pass what one message of 256 KiB may carry
for n = 1, 4 do
  vim.cmd(("Openvaala send waiting %d %s"):format(n, long))
end
H.wait_text("four inputs queued", buf, function(text)
  return H.count(text, "(queued)") == 4
end)

vim.cmd("bwipeout " .. buf)
vim.cmd("Openvaala open " .. id)
H.wait("the conversation shown again", function()
  local shown = require("openvaala.view").conversation_of()
  return shown and shown.id == id and shown.status == "ready"
end)
local again = vim.api.nvim_get_current_buf()
local text = H.text(again)
for n = 1, 4 do
  H.check(("queued input %d, from the snapshot's pages"):format(n), text:find(("waiting %d x"):format(n), 1, true))
end
H.equal("each shown once", H.count(text, "(queued)"), 4)
H.wait_text("the queued inputs taken by the next turn", again, function(shown)
  return not shown:find("(queued)", 1, true)
end)
