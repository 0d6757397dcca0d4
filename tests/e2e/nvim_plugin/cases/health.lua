-- :checkhealth openvaala with a server and a model: where the server is, its version and
-- protocol, the models, what this server does not support, the sandbox.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({})

vim.cmd("checkhealth openvaala")
local report = H.text(0)
local path = vim.fn.exepath("openvaala-lsp")
H.check("the server is found, with its path", report:find("OK openvaala-lsp found: " .. path, 1, true), report)
H.check("its version and protocol come from initialize", report:find("OK openvaala%-lsp %d+%.%d+%.%d+[^,]*, protocol 0%.3"), report)
H.check("a model is configured", report:find("OK model configured: fake/fake-model", 1, true), report)
H.check("no errors", not report:find("ERROR", 1, true), report)
local server = H.server()
local missing = {}
for method in pairs(require("openvaala.health").OPTIONAL) do
  if not server:supports(method) then
    table.insert(missing, method)
  end
end
for _, method in ipairs(missing) do
  H.check("names the unsupported " .. method, report:find(method, 1, true), report)
end
if #missing == 0 then
  H.check("lists nothing as unsupported", not report:find("not supported by this openvaala-lsp", 1, true), report)
end
local agent_sandbox = vim.iter(H.request("listAgents").agents):any(function(a)
  return type(a.sandbox) == "table"
end)
if type(server.info.sandbox) == "table" or agent_sandbox then
  H.check("reports the sandbox", report:find("sandbox ", 1, true) or report:find("sandbox: ", 1, true), report)
else
  H.check("says the server reports no sandbox", report:find("the server reports no sandbox state", 1, true), report)
end

-- the key check: a model whose key variable is unset is a warning
vim.env.FAKE_API_KEY = nil
vim.cmd("checkhealth openvaala")
report = H.text(0)
H.check("an unset key variable is a warning", report:find("WARNING fake/fake-model reads its key from $FAKE_API_KEY", 1, true), report)
