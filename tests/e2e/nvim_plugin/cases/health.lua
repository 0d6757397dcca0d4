-- :checkhealth openvaala with a server and a model: where the server is, its version and
-- protocol, the models, the sandbox (from the server's capabilities), the agents' permissions and
-- sandbox (from listAgents), approvals.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model, table.concat({
  "[[agents]]",
  'name = "careful"',
  "[agents.permissions]",
  'default = "allow"',
  "[agents.permissions.tools]",
  'shell = "ask"',
  'write_file = "deny"',
  "[agents.sandbox]",
  'mode = "read-only"',
  "network = true",
  "",
  "[[agents]]",
  'name = "loose"',
  "[agents.sandbox]",
  'mode = "off"',
}, "\n"))
require("openvaala").setup({})

vim.cmd("checkhealth openvaala")
local report = H.text(0)
local path = vim.fn.exepath("openvaala-lsp")
H.check("the server is found, with its path", report:find("OK openvaala-lsp found: " .. path, 1, true), report)
H.check("its version and protocol come from initialize", report:find("OK openvaala%-lsp %d+%.%d+%.%d+[^,]*, protocol 0%.3"), report)
H.check("a model is configured", report:find("OK model configured: fake/fake-model", 1, true), report)
H.check("no errors", not report:find("ERROR", 1, true), report)
local server = H.server()
for method in pairs(require("openvaala.health").OPTIONAL) do
  H.check("the server advertises " .. method, server:supports(method))
end
H.check("lists nothing as unsupported", not report:find("not supported by this openvaala-lsp", 1, true), report)
local sandbox = server.info.sandbox
H.check("the server reports its sandbox in its capabilities", type(sandbox) == "table" and type(sandbox.usable) == "boolean", vim.inspect(sandbox))
local expected = (sandbox.usable and "OK sandbox usable" or "WARNING sandbox not usable") .. (sandbox.reason and sandbox.reason ~= "" and (": " .. sandbox.reason) or "")
H.check("reports the sandbox from the capabilities", report:find(expected, 1, true), report)
H.check("says this editor answers approvals", report:find('OK approvals: this Neovim answers them (as "Neovim")', 1, true), report)
H.check("each agent's permissions and sandbox as defined",
  report:find("agent careful: permissions shell: ask, write_file: deny, default: allow; sandbox read-only, network", 1, true), report)
H.check("an agent without permissions: the defaults",
  report:find("agent loose: permissions the defaults (every call runs); no sandbox", 1, true), report)
H.check("an agent without a sandbox is a warning",
  report:find('WARNING agent loose runs shell commands without a sandbox (sandbox.mode = "off")', 1, true), report)
H.check("no warning about approvals while this Neovim answers them", not report:find("does not answer approvals", 1, true), report)

-- approvals = false: an agent that asks is a warning
require("openvaala.config").options.approvals = false
vim.cmd("checkhealth openvaala")
report = H.text(0)
H.check("an agent that asks, and nobody here to answer",
  report:find("WARNING agent careful asks before some tool calls, and this Neovim does not answer approvals", 1, true), report)
require("openvaala.config").options.approvals = true

-- the key check: a model whose key variable is unset is a warning
vim.env.FAKE_API_KEY = nil
vim.cmd("checkhealth openvaala")
report = H.text(0)
H.check("an unset key variable is a warning", report:find("WARNING fake/fake-model reads its key from $FAKE_API_KEY", 1, true), report)

-- a server that does not report its sandbox (an older one) is a warning, not an error
server.info.sandbox = nil
vim.cmd("checkhealth openvaala")
report = H.text(0)
H.check("no sandbox state is a warning", report:find("WARNING the server does not say whether its sandbox can start", 1, true), report)
