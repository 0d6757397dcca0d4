-- openvaala-lsp not on PATH (the plugin installed on 'runtimepath', as lazy.nvim does): every
-- command says what is wrong and how to fix it, nothing crashes, checkhealth gives the advice.
local H = require("openvaala_test.harness")
vim.env.PATH = "/usr/bin:/bin"
H.equal("precondition: openvaala-lsp is not on PATH", vim.fn.exepath("openvaala-lsp"), "")
require("openvaala").setup({})

local function error_once(command)
  local before = #H.results.notifications
  local ok, err = pcall(vim.cmd, command)
  H.check(command .. " raises no Lua error", ok, err)
  H.wait(command .. " to report", function()
    return #H.results.notifications > before
  end, 5000)
  local n = H.results.notifications[before + 1]
  H.equal(command .. " reports an error", n.level, vim.log.levels.ERROR)
  H.check(command .. " names the missing server and the fix", n.message:find("`openvaala-lsp` was not found on PATH", 1, true) and n.message:find("Install openvaala from a checkout", 1, true) and n.message:find("setup({ cmd =", 1, true), n.message)
  H.check(command .. " shows no traceback", not n.message:find("traceback", 1, true), n.message)
end

error_once("Openvaala new")
error_once("Openvaala list")
error_once("Openvaala send hello")
error_once("Openvaala usage")
H.equal("no client was started", #vim.lsp.get_clients({ name = "openvaala" }), 0)
H.equal("the statusline is empty", require("openvaala").statusline(), "")

local ok, err = pcall(vim.cmd, "checkhealth openvaala")
H.check(":checkhealth openvaala runs", ok, err)
local report = H.text(0)
H.check("checkhealth reports the missing server as an error", report:find("ERROR openvaala-lsp not found", 1, true), report)
H.check("checkhealth gives the fix", report:find("Install openvaala from a checkout", 1, true), report)
