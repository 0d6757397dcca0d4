-- A turn that fails (the provider answers 404): the buffer shows the error and the failed turn;
-- the conversation stays usable.
local H = require("openvaala_test.harness")
local model = H.fake_model()
local good = model.info.baseUrl
model.info.baseUrl = model.info.url .. "/no-such-api/v1"
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

vim.cmd("Openvaala send hello")
local text = H.wait_text("the failed turn", buf, H.contains("✗ turn failed: "))
H.check("the error is shown", text:find("no route", 1, true), text)
H.equal("the failed turn is shown once", H.count(text, "✗ turn failed"), 1)
H.check("the prompt stays", text:find("## You\nhello", 1, true), text)
H.wait("idle", function()
  return conv.state == "idle"
end)
H.check("the statusline says idle", require("openvaala").statusline():find("^openvaala idle"), require("openvaala").statusline())

-- fix the model: the same conversation works
model.info.baseUrl = good
H.write_config(model)
H.wait("the fixed config to load", function()
  local models = H.request("listModels").models
  return models[1] and models[1].baseUrl == good
end)
model:enqueue({ { "text", "now it works" } })
vim.cmd("Openvaala send again")
text = H.wait_text("the answer", buf, H.contains("✓ turn completed"))
H.check("the answer came", text:find("now it works", 1, true), text)
H.equal("the old failure is shown once", H.count(text, "✗ turn failed"), 1)
