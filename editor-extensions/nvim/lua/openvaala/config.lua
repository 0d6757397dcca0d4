--- Options of the plugin: the defaults, merged with what `require("openvaala").setup()` gets.
local M = {}

---@class openvaala.Options
---@field cmd string[] the server command (default: `openvaala-lsp` on PATH)
---@field cmd_env table<string, string>? extra environment for the server
---@field root_markers string[] a buffer's project root is the nearest directory with one of these
---@field client_name string sent as `initializationOptions.openvaala.clientName`: how other editors see who answered an approval
---@field approvals boolean whether this editor answers approval requests
---@field event_batch_ms integer? how long the server gathers session events before sending them
---@field history integer saved items shown when a conversation buffer opens
---@field open "vsplit"|"split"|"tab"|"current" where `:Openvaala new/open` show the conversation
---@field fold_results integer tool results longer than this many lines are folded
---@field markdown boolean highlight conversation buffers with the markdown tree-sitter parser
---@field quickfix boolean a turn that changed files puts them in the quickfix list when it ends
M.defaults = {
  cmd = { "openvaala-lsp" },
  cmd_env = nil,
  root_markers = { ".openvaala", ".git" },
  client_name = "Neovim",
  approvals = true,
  event_batch_ms = nil,
  history = 200,
  open = "vsplit",
  fold_results = 4,
  markdown = true,
  quickfix = true,
}

---@type openvaala.Options
M.options = vim.deepcopy(M.defaults)

---@param opts table?
function M.set(opts)
  opts = opts or {}
  vim.validate("opts", opts, "table")
  local merged = vim.deepcopy(M.defaults)
  for key, value in pairs(opts) do
    if M.defaults[key] == nil and key ~= "cmd_env" and key ~= "event_batch_ms" then
      vim.notify(("openvaala: unknown option %q"):format(key), vim.log.levels.WARN, { title = "openvaala" })
    end
    merged[key] = value -- lists (cmd, root_markers) are replaced, not merged
  end
  if type(merged.cmd) == "string" then
    merged.cmd = { merged.cmd }
  end
  vim.validate("cmd", merged.cmd, "table")
  vim.validate("root_markers", merged.root_markers, "table")
  vim.validate("history", merged.history, "number")
  vim.validate("fold_results", merged.fold_results, "number")
  M.options = merged
end

return M
