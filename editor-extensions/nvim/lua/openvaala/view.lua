--- Conversation buffers: the header, the saved log (only ever appended to) and the live part
--- (rewritten as events arrive), one render per batch of events.
local config = require("openvaala.config")
local conversation = require("openvaala.conversation")
local render = require("openvaala.render")

local M = {}

local ns = vim.api.nvim_create_namespace("openvaala")
local group = vim.api.nvim_create_augroup("openvaala.view", { clear = true })

---@class openvaala.View
---@field buf integer
---@field conv openvaala.Conversation
---@field entries integer log entries rendered
---@field saved_end integer 0-based line where the live part starts
---@field header string[]? the header's lines as last rendered
---@field live string[]? the live part's lines as last rendered
---@field folds (string|integer)[] fold levels by line
---@field scheduled boolean

---@type table<integer, openvaala.View>
local views = {}

local HIGHLIGHTS = {
  OpenvaalaTitle = "Title",
  OpenvaalaUser = "Title",
  OpenvaalaPending = "DiagnosticHint",
  OpenvaalaAssistant = "Function",
  OpenvaalaReasoning = "Comment",
  OpenvaalaTool = "Special",
  OpenvaalaToolResult = "Comment",
  OpenvaalaApproval = "DiagnosticWarn",
  OpenvaalaError = "DiagnosticError",
  OpenvaalaStatus = "Comment",
}
for name, link in pairs(HIGHLIGHTS) do
  vim.api.nvim_set_hl(0, name, { link = link, default = true })
end

--- 'foldexpr' of conversation windows: reasoning, long tool results and arguments fold.
function M.foldexpr()
  local view = views[vim.api.nvim_get_current_buf()]
  return view and view.folds[vim.v.lnum] or 0
end

local function set_window_options(win)
  local function set(name, value)
    vim.api.nvim_set_option_value(name, value, { scope = "local", win = win })
  end
  set("foldmethod", "expr")
  set("foldexpr", "v:lua.require'openvaala.view'.foldexpr()")
  set("foldtext", "")
  set("foldlevel", 0)
  set("foldenable", true)
  set("wrap", true)
  set("linebreak", true)
  set("number", false)
  set("relativenumber", false)
  set("signcolumn", "no")
  set("spell", false)
end

local function with_modifiable(buf, fn)
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err)
  end
end

local function highlight(buf, first, lines)
  for row, group_name in pairs(lines.hl) do
    local text = lines.lines[row]
    if group_name and text ~= "" then
      vim.api.nvim_buf_set_extmark(buf, ns, first + row - 1, 0, { end_col = #text, hl_group = group_name })
    end
  end
end

--- Puts `values` into `list` from index `from`; `truncate` drops what followed.
local function put(list, from, values, truncate)
  if truncate then
    for i = #list, from, -1 do
      list[i] = nil
    end
  end
  for i, value in ipairs(values) do
    list[from + i - 1] = value
  end
end

--- The lines of `lines` from `first` on.
local function tail_of(lines, first)
  local tail = { lines = {}, hl = {}, folds = {} }
  for i = first, #lines.lines do
    local j = i - first + 1
    tail.lines[j], tail.hl[j], tail.folds[j] = lines.lines[i], lines.hl[i], lines.folds[i]
  end
  return tail
end

--- Windows showing the buffer whose cursor is on the last line follow what is appended.
local function followers(buf)
  local windows = {}
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count then
      table.insert(windows, win)
    end
  end
  return windows
end

---@param view openvaala.View
local function draw(view)
  view.scheduled = false
  local buf, conv = view.buf, view.conv
  if views[buf] ~= view or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local follow = followers(buf)
  with_modifiable(buf, function()
    -- fold levels first: Neovim evaluates 'foldexpr' as soon as lines change
    local header = render.header(conv)
    if not vim.deep_equal(header.lines, view.header) then
      put(view.folds, 1, header.folds, false)
      vim.api.nvim_buf_clear_namespace(buf, ns, 0, render.HEADER_LINES)
      vim.api.nvim_buf_set_lines(buf, 0, render.HEADER_LINES, false, header.lines)
      highlight(buf, 0, header)
      view.header = header.lines
    end

    if view.entries < #conv.log then
      local saved = render.lines()
      for i = view.entries + 1, #conv.log do
        render.entry(saved, conv.log[i], conv.server and conv.server.root)
      end
      view.entries = #conv.log
      -- the live part moves down: its fold levels are rewritten below
      put(view.folds, view.saved_end + 1, saved.folds, true)
      vim.api.nvim_buf_set_lines(buf, view.saved_end, view.saved_end, false, saved.lines)
      highlight(buf, view.saved_end, saved)
      view.saved_end = view.saved_end + #saved.lines
      view.live = nil
    end

    -- the live part is rewritten from its first changed line: a streaming answer only grows
    local live = render.live(conv)
    -- (nil after saved lines went in above it: then all of it, including what was there before)
    local old = view.live
    local first = 1
    while old and first <= #old and old[first] == live.lines[first] do
      first = first + 1
    end
    if not old or first <= #old or first <= #live.lines then
      local tail = tail_of(live, first)
      local start = view.saved_end + first - 1
      put(view.folds, start + 1, tail.folds, true)
      vim.api.nvim_buf_clear_namespace(buf, ns, start, -1)
      vim.api.nvim_buf_set_lines(buf, start, -1, false, tail.lines)
      highlight(buf, start, tail)
      view.live = live.lines
    end
  end)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

--- Schedules one render of the view (many events in a row make one).
---@param view openvaala.View
function M.refresh(view)
  if not view.scheduled then
    view.scheduled = true
    vim.schedule(function()
      draw(view)
      require("openvaala.statusline").changed()
    end)
  end
end

function M.find(conv)
  for _, view in pairs(views) do
    if view.conv == conv then
      return view
    end
  end
end

--- The conversation shown in `buf` (default: the current buffer).
---@return openvaala.Conversation?
function M.conversation_of(buf)
  local view = views[buf == nil and vim.api.nvim_get_current_buf() or buf]
  return view and view.conv
end

--- The buffer of a conversation, created on first use.
---@param conv openvaala.Conversation
function M.buffer(conv)
  local view = M.find(conv)
  if view then
    return view.buf
  end
  local name = "openvaala://conversation/" .. conv.id
  local buf = vim.fn.bufnr(name)
  local stale = buf ~= -1 and views[buf]
  if stale then -- an object of this conversation that is no longer in use: take over its buffer
    views[buf] = nil
    vim.api.nvim_clear_autocmds({ group = group, buffer = buf })
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    stale.conv:detach()
  end
  if buf == -1 then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
  else
    vim.fn.bufload(buf) -- shown before, then :bdelete'd
    vim.bo[buf].buflisted = true
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "openvaala"
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "", "", "" })
  vim.bo[buf].modifiable = false
  view = { buf = buf, conv = conv, entries = 0, saved_end = render.HEADER_LINES, folds = {}, scheduled = false }
  views[buf] = view
  if config.options.markdown then
    pcall(vim.treesitter.start, buf, "markdown")
  end
  conv:on_change(function()
    M.refresh(view)
  end)
  vim.api.nvim_create_autocmd("BufWinEnter", {
    group = group,
    buffer = buf,
    callback = function()
      set_window_options(vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    buffer = buf,
    callback = function()
      conversation.touch(conv)
    end,
  })
  vim.api.nvim_create_autocmd("BufUnload", { -- :bdelete and :bwipeout: stop listening
    group = group,
    buffer = buf,
    callback = function()
      views[buf] = nil
      conv:detach()
    end,
  })
  local function map(lhs, rhs, desc)
    vim.keymap.set("n", lhs, rhs, { buffer = buf, desc = desc, nowait = true })
  end
  map("i", function()
    require("openvaala.actions").compose(conv)
  end, "openvaala: write a message")
  map("<C-c>", function()
    require("openvaala.actions").interrupt(conv)
  end, "openvaala: interrupt the turn")
  map("a", function()
    require("openvaala.actions").approve(false)
  end, "openvaala: allow the tool call waiting for approval, once")
  map("A", function()
    require("openvaala.actions").approve(true)
  end, "openvaala: allow the tool call waiting for approval, for the conversation")
  map("D", function()
    require("openvaala.actions").deny()
  end, "openvaala: deny the tool call waiting for approval")
  draw(view)
  return buf
end

--- Shows the conversation in a window (`config.open` says where), unless one shows it already.
---@param conv openvaala.Conversation
---@param opts {focus: boolean?}?
function M.show(conv, opts)
  opts = opts or {}
  local buf = M.buffer(conv)
  conversation.touch(conv)
  local win = vim.fn.win_findbuf(buf)[1]
  if not win then
    local current = vim.api.nvim_get_current_win()
    local how = config.options.open
    -- a window of this tab that shows a conversation already shows this one instead
    local reuse
    for _, candidate in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if views[vim.api.nvim_win_get_buf(candidate)] and vim.api.nvim_win_get_config(candidate).relative == "" then
        reuse = reuse or candidate
      end
    end
    if reuse then
      vim.api.nvim_set_current_win(reuse)
      vim.api.nvim_win_set_buf(reuse, buf)
    elseif how == "current" then
      vim.api.nvim_win_set_buf(0, buf)
    else
      vim.cmd(({ split = "split", tab = "tabnew", vsplit = "vsplit" })[how] or "vsplit")
      vim.api.nvim_win_set_buf(0, buf)
    end
    win = vim.api.nvim_get_current_win()
    set_window_options(win)
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
    if opts.focus == false and vim.api.nvim_win_is_valid(current) then
      vim.api.nvim_set_current_win(current)
    end
  elseif opts.focus ~= false then
    vim.api.nvim_set_current_win(win)
  end
  return buf, win
end

--- Closes the conversation's buffer (after it was deleted).
function M.close(conv)
  local view = M.find(conv)
  if view and vim.api.nvim_buf_is_valid(view.buf) then
    vim.api.nvim_buf_delete(view.buf, { force = true })
  end
end

return M
