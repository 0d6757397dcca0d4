--- Small buffers: the compose buffer of a message and read-only scratch buffers.
local M = {}

--- Opens a buffer to write a message; `:w` or <C-s> sends it (`on_send(text)`), `q` cancels.
---@param title string what the message is for
---@param initial string? text to start with (e.g. a selection as context)
---@param on_send fun(text: string)
---@param root string? the project root: `@` completes its files (<C-x><C-o>)
function M.compose(title, initial, on_send, root)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, ("openvaala://compose/%d"):format(buf))
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.b[buf].openvaala_root = root
  vim.bo[buf].omnifunc = "v:lua.require'openvaala.context'.omnifunc"
  vim.bo[buf].completefunc = "v:lua.require'openvaala.context'.omnifunc"
  local lines = { "" } -- the message is written on the first line, above the context
  if initial then
    table.insert(lines, "")
    vim.list_extend(lines, vim.split(initial, "\n", { plain = true }))
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modified = false
  vim.cmd("botright " .. math.min(12, math.max(5, #lines + 2)) .. "split")
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  local attached = require("openvaala.context").summary()
  vim.wo[win].winbar = " "
    .. title:gsub("%%", "%%%%")
    .. (attached ~= "" and ("  + " .. attached:gsub("%%", "%%%%")) or "")
    .. "  —  :w or <C-s> sends, q cancels, @ <C-x><C-o> a file"

  local function send()
    local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
    vim.bo[buf].modified = false
    vim.schedule(function() -- not from inside its own BufWriteCmd
      if vim.api.nvim_buf_is_valid(buf) then
        vim.api.nvim_buf_delete(buf, { force = true })
      end
    end)
    if text ~= "" then
      on_send(text)
    end
  end
  vim.api.nvim_create_autocmd("BufWriteCmd", { buffer = buf, callback = send })
  vim.keymap.set({ "n", "i" }, "<C-s>", function()
    vim.cmd("stopinsert")
    send()
  end, { buffer = buf, desc = "openvaala: send" })
  vim.keymap.set("n", "q", function()
    vim.api.nvim_buf_delete(buf, { force = true })
  end, { buffer = buf, desc = "openvaala: cancel" })
  return buf
end

--- Shows `lines` in a read-only scratch buffer named `name` (reused when shown again).
---@param name string
---@param lines string[]
---@param filetype string?
function M.scratch(name, lines, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].swapfile = false
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  local win = vim.fn.win_findbuf(buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
  end
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, desc = "close" })
  return buf
end

--- Lines of a table with aligned columns (numbers right-aligned).
---@param header string[]
---@param rows any[][]
function M.table(header, rows)
  local widths = {}
  local cells = { header }
  for _, row in ipairs(rows) do
    local line = {}
    for i = 1, #header do
      local value = row[i]
      line[i] = (value == nil or value == vim.NIL) and "" or tostring(value)
    end
    table.insert(cells, line)
  end
  for _, line in ipairs(cells) do
    for i, cell in ipairs(line) do
      widths[i] = math.max(widths[i] or 0, vim.fn.strdisplaywidth(cell))
    end
  end
  local out = {}
  for r, line in ipairs(cells) do
    local parts = {}
    for i, cell in ipairs(line) do
      local pad = string.rep(" ", widths[i] - vim.fn.strdisplaywidth(cell))
      local numeric = r > 1 and type(rows[r - 1][i]) == "number"
      parts[i] = numeric and (pad .. cell) or (cell .. pad)
    end
    table.insert(out, (table.concat(parts, "  "):gsub("%s+$", "")))
    if r == 1 then
      local rule = {}
      for i = 1, #header do
        rule[i] = string.rep("-", widths[i])
      end
      table.insert(out, table.concat(rule, "  "))
    end
  end
  return out
end

return M
