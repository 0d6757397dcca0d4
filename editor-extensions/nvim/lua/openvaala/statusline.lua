--- A statusline component: the state of the conversation in use and its context usage.
---   vim.o.statusline = "%f %= %{v:lua.require'openvaala'.statusline()}"
local conversation = require("openvaala.conversation")
local render = require("openvaala.render")

local M = {}

local last_text

--- The conversation of the current buffer, else the last one used.
local function current()
  return require("openvaala.view").conversation_of() or conversation.last()
end

--- e.g. `openvaala running · ctx ~1.2k/8k (15%)`; empty when no conversation is in use.
---@param conv openvaala.Conversation?
function M.text(conv)
  conv = conv or current()
  if not conv then
    return ""
  end
  local parts = { "openvaala" }
  if conv.status == "disconnected" or conv.status == "deleted" then
    parts[#parts + 1] = conv.status
  else
    parts[#parts + 1] = conv.state
  end
  local context = render.context(conv.context)
  if context then
    parts[#parts + 1] = "· ctx " .. context
  end
  if #conv.approvals > 0 then
    parts[#parts + 1] = "· approval needed"
  end
  if #conv.pending > 0 then
    parts[#parts + 1] = ("· %d queued"):format(#conv.pending)
  end
  local attached = package.loaded["openvaala.context"] and package.loaded["openvaala.context"].attached or {}
  if #attached > 0 then
    parts[#parts + 1] = ("· %d attached"):format(#attached)
  end
  return table.concat(parts, " ")
end

--- After events: redraws statuslines when the text changed, and fires `User OpenvaalaStatus`
--- for statusline plugins that cache.
function M.changed()
  local text = M.text()
  if text ~= last_text then
    last_text = text
    vim.cmd("redrawstatus!")
    vim.api.nvim_exec_autocmds("User", { pattern = "OpenvaalaStatus", modeline = false })
  end
end

return M
