-- An older openvaala-lsp that does not advertise answerApproval, forkConversation or
-- compactContext: the commands that need them say so, naming the method, and send nothing;
-- :checkhealth lists them. (This server advertises all of them: the case first checks that, then
-- takes them out of what the plugin read from `initialize`, as an older server's answer would.)
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
for _, entry in ipairs(commands) do
  H.check("this server advertises " .. entry[2], server:supports(entry[2]))
end
for _, entry in ipairs(commands) do
  server.methods[entry[2]] = nil
end
for _, entry in ipairs(commands) do
  local command, method = entry[1], entry[2]
  local before = #H.results.notifications
  vim.cmd(command)
  H.wait(command .. " to answer", function()
    return #H.results.notifications > before
  end)
  H.equal(command .. " says it is not supported", H.results.notifications[before + 1].message,
    ("openvaala: %s is not supported by this openvaala-lsp; update openvaala"):format(method))
end
H.check("the conversation buffer is unharmed", vim.api.nvim_buf_is_valid(buf))

vim.cmd("checkhealth openvaala")
local report = H.text(0)
for _, method in ipairs({ "openvaala/forkConversation", "openvaala/compactContext", "openvaala/answerApproval" }) do
  H.check(":checkhealth names the unsupported " .. method, report:find(method, 1, true), report)
end
