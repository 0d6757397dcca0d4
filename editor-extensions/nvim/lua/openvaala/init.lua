--- openvaala for Neovim: conversations with openvaala's coding agents, hosted by the built-in
--- LSP client. `require("openvaala").setup({...})` (optional), then `:Openvaala`.
local M = {}

--- Sets the options (see `openvaala.config`); calling it is optional.
---@param opts openvaala.Options|table|nil
function M.setup(opts)
  require("openvaala.config").set(opts)
end

--- The statusline component: `openvaala running · ctx ~1.2k/8k (15%)`, or "".
function M.statusline()
  return require("openvaala.statusline").text()
end

--- The conversation in use (the current buffer's, else the last one used), if any.
function M.current()
  return require("openvaala.view").conversation_of() or require("openvaala.conversation").last()
end

--- Lua versions of the commands: `require("openvaala").send("text")` and so on.
setmetatable(M, {
  __index = function(_, key)
    local action = require("openvaala.actions")[key]
    if type(action) == "function" then
      return action
    end
  end,
})

return M
