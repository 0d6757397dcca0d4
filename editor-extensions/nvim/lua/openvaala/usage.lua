--- `:Openvaala usage`: token usage by day and model, from the history database (`openvaala/query`
--- on the view `usage_by_model_day`), in a scratch buffer.
local ui = require("openvaala.ui")
local util = require("openvaala.util")

local M = {}

M.SQL = [[
SELECT day, provider || '/' || model AS model, calls, input_tokens, cached_input_tokens,
       output_tokens, reasoning_tokens, total_tokens, estimated_calls, failed_calls
FROM usage_by_model_day
ORDER BY day DESC, total_tokens DESC]]

local HEADER = { "day", "model", "calls", "input", "cached", "output", "reasoning", "total", "estimated", "failed" }

--- The report's lines for a query result `{columns, rows, truncated}`.
function M.lines(result)
  local rows = result.rows or {}
  local lines = { "Token usage by day and model (UTC days; `estimated` calls had no usage from the provider)", "" }
  if #rows == 0 then
    table.insert(lines, "No model calls yet.")
    return lines
  end
  local totals = { "total", "", 0, 0, 0, 0, 0, 0, 0, 0 }
  for _, row in ipairs(rows) do
    for i = 3, #HEADER do
      totals[i] = totals[i] + (tonumber(row[i]) or 0)
    end
  end
  local all = vim.list_extend(vim.deepcopy(rows), { totals })
  vim.list_extend(lines, ui.table(HEADER, all))
  if result.truncated then
    table.insert(lines, "(truncated)")
  end
  return lines
end

--- Inside a task: queries and shows the report.
---@param server openvaala.Server
function M.show(server)
  local result, err = server:call("query", { sql = M.SQL })
  if err then
    return util.request_error("reading the token usage", err, "openvaala/query")
  end
  return ui.scratch("openvaala://usage", M.lines(result))
end

return M
