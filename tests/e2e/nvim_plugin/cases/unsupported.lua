-- Commands for methods this openvaala-lsp does not advertise say so, naming the method (this
-- case skips itself once the server advertises all of them).
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf = H.new_conversation()
local server = H.server()

local commands = {
  { "Openvaala fork", "openvaala/forkConversation" },
  { "Openvaala compact", "openvaala/compactContext" },
  { "Openvaala approve", "openvaala/answerApproval" },
  { "Openvaala deny", "openvaala/answerApproval" },
}
local tried = 0
for _, entry in ipairs(commands) do
  local command, method = entry[1], entry[2]
  if not server:supports(method) then
    tried = tried + 1
    local before = #H.results.notifications
    vim.cmd(command)
    H.wait(command .. " to answer", function()
      return #H.results.notifications > before
    end)
    H.equal(command .. " says it is not supported", H.results.notifications[before + 1].message,
      ("openvaala: %s is not supported by this openvaala-lsp; update openvaala"):format(method))
  end
end
if tried == 0 then
  H.skip("this openvaala-lsp advertises every optional method")
end
H.check("the conversation buffer is unharmed", vim.api.nvim_buf_is_valid(buf))
