--- Context from the editor for the next message: `:Openvaala add` (a buffer or lines of it), and
--- `@file` mentions (completed in the compose buffer, the file's text sent with the message).
local util = require("openvaala.util")

local M = {}

M.MAX_BYTES = 256 * 1024 -- a file or range larger than this is not attached

---@class openvaala.Attachment
---@field label string `src/a.py:1-2`
---@field text string what the model reads

---@type openvaala.Attachment[] added with :Openvaala add, sent with the next message
M.attached = {}

--- The path of `buf` as the agent sees it: relative to its project root when inside it.
local function where(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" then
    return "buffer " .. buf
  end
  return util.relative(name, require("openvaala.client").root(buf))
end

--- Lines `line1`–`line2` of `buf` (nil: the whole buffer) as context: the path, the line range and
--- the text in a code fence. Returns the text and a short label.
---@return string text, string label
function M.block(buf, line1, line2)
  local count = vim.api.nvim_buf_line_count(buf)
  local whole = line1 == nil
  line1, line2 = line1 or 1, line2 or count
  local lines = vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  local path = where(buf)
  local range
  if whole then
    range = ("the whole file, %s"):format(util.plural(#lines, "line"))
  else
    range = line1 == line2 and ("line " .. line1) or ("lines %d-%d"):format(line1, line2)
  end
  local text = ("From `%s`, %s:\n```%s\n%s\n```"):format(path, range, vim.bo[buf].filetype, table.concat(lines, "\n"))
  local label = whole and path or (line1 == line2 and ("%s:%d"):format(path, line1) or ("%s:%d-%d"):format(path, line1, line2))
  return text, label
end

--- `:Openvaala add`: attaches the buffer (or its lines `line1`–`line2`) to the next message.
function M.add(buf, line1, line2)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  if vim.bo[buf].buftype ~= "" and vim.bo[buf].buftype ~= "acwrite" then
    return util.error("add needs a file's buffer (this one is " .. vim.bo[buf].buftype .. ")")
  end
  local text, label = M.block(buf, line1, line2)
  if #text > M.MAX_BYTES then
    return util.error(("%s is over %d KiB: add a range of it (:'<,'>Openvaala add)"):format(label, M.MAX_BYTES / 1024))
  end
  for i, attachment in ipairs(M.attached) do
    if attachment.label == label then -- added again: the text as it is now
      M.attached[i] = { label = label, text = text }
      return util.info(("%s updated; %s for the next message"):format(label, M.summary()))
    end
  end
  table.insert(M.attached, { label = label, text = text })
  require("openvaala.statusline").changed()
  util.info(("added %s to the next message (%s; :Openvaala add! clears)"):format(label, M.summary()))
end

--- `:Openvaala add!`: nothing attached any more.
function M.clear()
  local n = #M.attached
  M.attached = {}
  require("openvaala.statusline").changed()
  util.info(n > 0 and ("removed %s from the next message"):format(util.plural(n, "attachment")) or "nothing was attached")
end

--- `src/a.py:1-2, b.lua`.
function M.summary()
  return table.concat(
    vim.tbl_map(function(a)
      return a.label
    end, M.attached),
    ", "
  )
end

-- @file mentions

local SKIP = { [".git"] = true, node_modules = true, [".venv"] = true, __pycache__ = true }
local MAX_FILES = 20000

--- The workspace's files, relative to `root`: git's list (tracked and untracked, not ignored) in a
--- git work tree, else a walk that skips hidden directories and dependencies.
function M.files(root)
  local done = vim.system({ "git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard" }, { text = true }):wait(3000)
  if done.code == 0 and done.stdout and done.stdout ~= "" then
    local files = vim.split(vim.trim(done.stdout), "\n", { plain = true })
    if #files > MAX_FILES then
      files = vim.list_slice(files, 1, MAX_FILES)
    end
    return files
  end
  local files = {}
  for name, kind in vim.fs.dir(root, {
    depth = 12,
    skip = function(dir)
      local base = vim.fs.basename(dir)
      return not SKIP[base] and base:sub(1, 1) ~= "."
    end,
  }) do
    if kind == "file" then
      table.insert(files, name)
      if #files >= MAX_FILES then
        break
      end
    end
  end
  table.sort(files)
  return files
end

--- Completion candidates for `@base`: the files whose path starts with it, then those whose name
--- does, then those containing it.
function M.candidates(files, base)
  local first, second, third = {}, {}, {}
  local lower = base:lower()
  for _, file in ipairs(files) do
    local low = file:lower()
    if vim.startswith(low, lower) then
      table.insert(first, file)
    elseif vim.startswith(vim.fs.basename(low), lower) then
      table.insert(second, file)
    elseif lower ~= "" and low:find(lower, 1, true) then
      table.insert(third, file)
    end
  end
  local items = {}
  for _, list in ipairs({ first, second, third }) do
    for _, file in ipairs(list) do
      table.insert(items, { word = file, abbr = "@" .. file, menu = "[file]" })
      if #items >= 200 then
        return items
      end
    end
  end
  return items
end

local file_cache = {} -- by buffer

--- 'omnifunc' of the compose buffer: `@` then part of a path completes workspace files.
function M.omnifunc(findstart, base)
  local buf = vim.api.nvim_get_current_buf()
  if findstart == 1 then
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local before = vim.api.nvim_get_current_line():sub(1, col)
    local at = before:match("()@[^%s@]*$")
    if not at or (at > 1 and not before:sub(at - 1, at - 1):match("%s")) then
      return -3 -- no mention here: no completion, no message
    end
    return at -- 0-based column of the path after `@`
  end
  local root = vim.b[buf].openvaala_root or vim.fn.getcwd()
  if not file_cache[buf] then -- listed once per compose buffer
    file_cache[buf] = M.files(root)
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = buf,
      once = true,
      callback = function()
        file_cache[buf] = nil
      end,
    })
  end
  return M.candidates(file_cache[buf], base)
end

--- The `@path` mentions in `text` that name readable files under `root`, each as context (the
--- file's text), in the order they appear, each once.
function M.mentions(text, root)
  local blocks, seen = {}, {}
  for path in (" " .. text):gmatch("%s@([^%s@`]+)") do
    path = path:gsub("[%.,;:!?%)]+$", "")
    local full = vim.fs.normalize(vim.fs.joinpath(root, path))
    if not seen[path] and vim.fn.filereadable(full) == 1 then
      seen[path] = true
      local size = vim.fn.getfsize(full)
      if size >= 0 and size <= M.MAX_BYTES then
        local lines = vim.fn.readfile(full)
        local filetype = vim.filetype.match({ filename = full }) or ""
        table.insert(blocks, ("From `%s`, the whole file, %s:\n```%s\n%s\n```"):format(path, util.plural(#lines, "line"), filetype, table.concat(lines, "\n")))
      end
    end
  end
  return blocks
end

--- The message the model reads: `text`, then the attached context, then the mentioned files.
--- Returns it, and a function that clears the attachments it took (call it once sent).
function M.message(text, root)
  local parts = { text }
  local taken = M.attached
  for _, attachment in ipairs(taken) do
    table.insert(parts, attachment.text)
  end
  vim.list_extend(parts, M.mentions(text, root or vim.fn.getcwd()))
  return table.concat(parts, "\n\n"), function()
    if M.attached == taken then
      M.attached = {}
    else
      M.attached = vim.tbl_filter(function(a)
        return not vim.tbl_contains(taken, a)
      end, M.attached)
    end
    require("openvaala.statusline").changed()
  end
end

return M
