-- Opening a conversation while it works: the buffer starts from the snapshot (saved items,
-- the streaming answer so far, the queued input) and continues with the events after it.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()
local id = conv.id

model:enqueue({ { "text", "first part" }, { "pause", 2.0 }, { "text", ", second part" } })
model:enqueue({ { "text", "the queued one ran" } })
vim.cmd("Openvaala send start")
H.wait_text("the first part", buf, H.contains("first part"))
vim.cmd("Openvaala send queued input")
H.wait_text("the queued input", buf, H.contains("(queued)"))

-- close the buffer and open the conversation again while the answer streams
vim.cmd("bwipeout " .. buf)
vim.cmd("Openvaala open " .. id)
H.wait("the conversation shown again", function()
  local shown = require("openvaala.view").conversation_of()
  return shown and shown.id == id and shown.status == "ready"
end)
local again = vim.api.nvim_get_current_buf()
local text = H.text(again)
H.check("the snapshot's saved prompt", text:find("## You\nstart", 1, true), text)
H.check("the snapshot's streaming answer", text:find("## Assistant …\nfirst part", 1, true), text)
H.check("the snapshot's queued input", text:find("## You (queued)\nqueued input", 1, true), text)
H.check("not finished yet", not text:find("second part", 1, true), text)

text = H.wait_text("both turns", again, H.turns_completed(2))
H.equal("the first answer once, whole", H.count(text, "first part, second part"), 1)
H.equal("the streamed part is not left over", H.count(text, "first part"), 1)
H.check("the queued input ran next", text:find("## You\nqueued input\n\n## Assistant\nthe queued one ran", 1, true), text)
H.check("nothing is queued any more", not text:find("(queued)", 1, true), text)
