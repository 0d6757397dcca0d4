-- No model configured: checkhealth, `:Openvaala new` and the answer to `submitInput`
-- (noModelConfigured, -32013) all point at `openvaala setup`.
local H = require("openvaala_test.harness")
require("openvaala").setup({ open = "current" })

vim.cmd("checkhealth openvaala")
local report = H.text(0)
H.check("checkhealth finds the server", report:find("OK openvaala-lsp found: ", 1, true), report)
H.check("checkhealth reports no model as an error", report:find("ERROR no model configured", 1, true), report)
H.check("checkhealth advises openvaala setup", report:find("Run `openvaala setup` in a terminal", 1, true), report)

local buf, conv = H.new_conversation()
H.check("creating warns that no model is configured", H.notified("no model is configured: run `openvaala setup`", vim.log.levels.WARN))
local before = #H.results.notifications
vim.cmd("Openvaala send hello")
H.wait("the answer to submitInput", function()
  return #H.results.notifications > before
end)
local n = H.results.notifications[before + 1]
H.equal("sending without a model is an error", n.level, vim.log.levels.ERROR)
H.equal("the message points at openvaala setup", n.message, "openvaala: no model is configured: run `openvaala setup` in a terminal (or `openvaala` for a guided setup), then try again")
H.equal("nothing was added to the conversation", #conv.log + #conv.pending, 0)
H.check("the buffer is still there", vim.api.nvim_buf_is_valid(buf))
