--- What turns changed in the files: a turn's changed files in the quickfix list, a vimdiff of one
--- file before and after a turn, and undo / redo of turns (`getTurnDiff`, `revertTurn`).
local async = require("openvaala.async")
local config = require("openvaala.config")
local render = require("openvaala.render")
local util = require("openvaala.util")

local M = {}

-- Unified diffs (a FileChange's `diff`: hunks from the first `@@`, no file headers)

---@class openvaala.Hunk
---@field old_start integer
---@field old_count integer
---@field new_start integer
---@field new_count integer
---@field old string[] the hunk's lines before (context and `-`)
---@field new string[] the hunk's lines after (context and `+`)
---@field first_change integer? the line (after) of its first added or removed line

--- The hunks of a unified diff; nil and why when it cannot be used whole (cut at its limit).
---@param diff string
---@return openvaala.Hunk[]?, string?
function M.parse(diff)
  local hunks, hunk = {}, nil
  for _, line in ipairs(vim.split(diff or "", "\n", { plain = true })) do
    local os_, oc, ns_, nc = line:match("^@@ %-(%d+),?(%d*) %+(%d+),?(%d*) @@")
    if os_ then
      hunk = {
        old_start = tonumber(os_),
        old_count = oc == "" and 1 or tonumber(oc),
        new_start = tonumber(ns_),
        new_count = nc == "" and 1 or tonumber(nc),
        old = {},
        new = {},
      }
      table.insert(hunks, hunk)
    elseif vim.startswith(line, "[diff cut:") then
      return nil, "its diff was cut at the size limit"
    elseif hunk and (#hunk.old < hunk.old_count or #hunk.new < hunk.new_count) then
      local op, text = line:sub(1, 1), line:sub(2)
      if (op == "-" or op == "+") and not hunk.first_change then
        hunk.first_change = hunk.new_start + #hunk.new -- the new side's line where it starts
      end
      if op == "-" then
        table.insert(hunk.old, text)
      elseif op == "+" then
        table.insert(hunk.new, text)
      elseif op == " " or line == "" then
        table.insert(hunk.old, text)
        table.insert(hunk.new, text)
      end -- `\ No newline at end of file`
    end
  end
  return hunks
end

--- Where `needle` (lines) starts in `lines`, nearest to `expected`, not before `from`.
local function find(lines, needle, expected, from)
  local last = #lines - #needle + 1
  if #needle == 0 then
    return math.max(from, math.min(expected, #lines + 1))
  end
  local function matches(at)
    for i = 1, #needle do
      if lines[at + i - 1] ~= needle[i] then
        return false
      end
    end
    return true
  end
  for distance = 0, math.max(last, 0) do
    for _, at in ipairs({ expected - distance, expected + distance }) do
      if at >= from and at <= last and matches(at) then
        return at
      end
    end
    if expected - distance < from and expected + distance > last then
      break
    end
  end
end

--- The text before a change, from the text after it: the diff's hunks applied in reverse (each
--- found where the diff says, or nearest to it when lines were added or removed above it since).
---@param lines string[] the file now
---@param hunks openvaala.Hunk[]
---@return string[]?, string? the lines before, or nil and why
function M.reverse(lines, hunks)
  local out, pos, shift = {}, 1, 0
  for _, hunk in ipairs(hunks) do
    local expected = (#hunk.new == 0 and hunk.new_start + 1 or hunk.new_start) + shift
    local at = find(lines, hunk.new, expected, pos)
    if not at then
      return nil, ("the change at line %d no longer matches the file"):format(hunk.first_change or hunk.new_start)
    end
    shift = at - (#hunk.new == 0 and hunk.new_start + 1 or hunk.new_start)
    for i = pos, at - 1 do
      out[#out + 1] = lines[i]
    end
    vim.list_extend(out, hunk.old)
    pos = at + #hunk.new
  end
  for i = pos, #lines do
    out[#out + 1] = lines[i]
  end
  return out
end

-- Turns

--- Inside a task: the main session's turns that ran (a revert is a turn too, with no model: left
--- out), oldest first, each with its number (`turn.number`, 1 = the first).
---@return table[]?, openvaala.Error?
local function list_turns(conv)
  local turns, cursor = {}, nil
  for _ = 1, 50 do
    local params = { conversationId = conv.id, sessionId = conv.session_id, order = "asc", limit = 500, cursor = cursor }
    local page, err = conv.server:call("listTurns", params)
    if err then
      return nil, err
    end
    for _, turn in ipairs(page.items or {}) do
      if turn.model ~= nil and turn.model ~= vim.NIL then
        table.insert(turns, turn)
        turn.number = #turns
      end
    end
    cursor = page.nextCursor
    if cursor == nil or cursor == vim.NIL or #(page.items or {}) == 0 then
      break
    end
  end
  return turns
end

--- Inside a task: `getTurnDiff` of a turn; reports a failure.
local function turn_diff(conv, turn)
  local diff, err = conv.server:call("getTurnDiff", { conversationId = conv.id, turnId = turn.id })
  if err then
    util.request_error("reading turn " .. turn.number .. "'s changes", err, "openvaala/getTurnDiff")
    return nil
  end
  return diff
end

--- Inside a task: the turn `arg` names (its number, or its id), else the last turn that changed
--- files (and, with `skip_undone`, was not undone here), with its diff. Nil (reported) when none.
---@return table?, table?
local function pick_turn(conv, arg, skip_undone)
  local turns, err = list_turns(conv)
  if not turns then
    util.request_error("listing the turns", err)
    return nil
  end
  if #turns == 0 then
    util.info("no turns yet")
    return nil
  end
  arg = vim.trim(arg or "")
  if arg ~= "" then
    local number = tonumber(arg)
    for _, turn in ipairs(turns) do
      if (number and turn.number == number) or turn.id == arg then
        return turn, turn_diff(conv, turn)
      end
    end
    util.error(("no turn %s in this conversation (turns 1-%d)"):format(arg, #turns))
    return nil
  end
  for i = #turns, math.max(1, #turns - 50), -1 do
    local turn = turns[i]
    local known = conv.turn_files[turn.id]
    if not (skip_undone and conv.undone[turn.id]) and (known == nil or #known > 0) then
      local diff = turn_diff(conv, turn)
      if not diff then
        return nil
      end
      if #diff.files > 0 then
        return turn, diff
      end
    end
  end
  util.info(skip_undone and "no turn of this conversation changed files (that is not undone)" or "no turn of this conversation changed files")
end

M.pick_turn = pick_turn

-- The quickfix list

local TITLE = "openvaala: "

--- The quickfix items of a turn's files: each at its first changed line.
function M.quickfix_items(files, root)
  local items = {}
  for _, change in ipairs(files) do
    local hunks = change.diff and M.parse(change.diff)
    local first = hunks and hunks[1]
    local lnum = first and math.max(1, first.first_change or first.new_start) or 1
    local text = change.binary and "(binary)" or ("+%d −%d"):format(change.additions or 0, change.deletions or 0)
    if change.movedFrom then
      text = "from " .. util.relative(change.movedFrom, root) .. " " .. text
    end
    local word = ({ add = "added", update = "changed", delete = "deleted", move = "moved" })[change.kind] or change.kind
    local skipped = change.skipped and #change.skipped > 0 and (" (left out: " .. #change.skipped .. ")") or ""
    table.insert(items, {
      filename = change.path,
      lnum = change.kind == "delete" and 0 or lnum,
      col = 0,
      text = ("%s %s%s"):format(word, text, skipped),
      valid = change.kind ~= "delete",
    })
  end
  return items
end

--- Sets the quickfix list to a turn's files: replaces this plugin's list when it is the current
--- one, else adds a list (the user's stay in the stack, `:colder`).
function M.set_quickfix(conv, turn, diff)
  local root = conv.server and conv.server.root
  local title = ("%sturn %d of %s: %s%s"):format(
    TITLE,
    turn.number or 0,
    conv.title ~= "" and conv.title or conv.id,
    render.files_summary(diff.files),
    diff.complete == false and " (incomplete: files were left out)" or ""
  )
  local current = vim.fn.getqflist({ title = 0, id = 0 })
  local ours = type(current.title) == "string" and vim.startswith(current.title, TITLE)
  vim.fn.setqflist({}, ours and "r" or " ", {
    id = ours and current.id or nil,
    title = title,
    items = M.quickfix_items(diff.files, root),
    context = { openvaala = { conversationId = conv.id, turnId = turn.id } },
  })
  return title
end

--- At the end of a turn that changed files: its files in the quickfix list (`quickfix` option).
function M.turn_ended(conv, turn)
  if not config.options.quickfix or not conv.server or not conv.server:supports("getTurnDiff") then
    return
  end
  async.run(function()
    local turns = list_turns(conv)
    local number
    for _, t in ipairs(turns or {}) do
      if t.id == turn.id then
        number = t.number
      end
    end
    local diff = conv.server:call("getTurnDiff", { conversationId = conv.id, turnId = turn.id })
    if diff and #diff.files > 0 then
      M.set_quickfix(conv, vim.tbl_extend("force", turn, { number = number }), diff)
    end
  end)
end

--- Inside a task: `:Openvaala changes [turn]`: the turn's files in the quickfix list, opened.
function M.changes(conv, arg)
  local turn, diff = pick_turn(conv, arg)
  if not turn or not diff then
    return
  end
  if #diff.files == 0 then
    return util.info(("turn %d changed no files%s"):format(turn.number, diff.complete and "" or " (or none could be seen: no checkpoints)"))
  end
  M.set_quickfix(conv, turn, diff)
  vim.cmd("botright copen")
end

-- The diff

local function scratch(name, lines, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if filetype and filetype ~= "" then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

--- The lines of `path` as Neovim has them (a loaded buffer's, unsaved changes included), else on disk.
local function current_lines(path)
  local buf = vim.fn.bufnr(path)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  if vim.fn.filereadable(path) == 1 then
    return vim.fn.readfile(path)
  end
  return {}
end

--- Shows one file's change in a new tab: the text before the turn (a scratch buffer, built from
--- the file by undoing the turn's hunks) beside the file itself, in diff mode. When the before
--- text cannot be built (a binary file, a cut diff, a file changed where the turn changed it), the
--- diff itself is shown.
function M.show_diff(conv, turn, change)
  local root = conv.server and conv.server.root
  local rel = util.relative(change.path, root)
  local before_name = ("openvaala://turn/%d/before/%s"):format(turn.number, util.relative(change.movedFrom or change.path, root))
  if change.binary then
    return util.info(rel .. " is a binary file: no diff to show")
  end
  local hunks, why = M.parse(change.diff or "")
  local now = change.kind == "delete" and {} or current_lines(change.path)
  local before
  if hunks then
    before, why = M.reverse(now, hunks)
  end
  local filetype = vim.filetype.match({ filename = change.path }) or ""
  vim.cmd("tabnew")
  if not before then
    scratch(("openvaala://turn/%d/diff/%s"):format(turn.number, rel), vim.split(change.diff or "", "\n", { plain = true }), "diff")
    vim.api.nvim_win_set_buf(0, vim.fn.bufnr(("openvaala://turn/%d/diff/%s"):format(turn.number, rel)))
    return util.warn(("turn %d's change of %s shown as a diff: %s"):format(turn.number, rel, why or "?"))
  end
  local before_buf = scratch(before_name, before, filetype)
  vim.api.nvim_win_set_buf(0, before_buf)
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit")
  if change.kind == "delete" then
    vim.api.nvim_win_set_buf(0, scratch(("openvaala://turn/%d/deleted/%s"):format(turn.number, rel), {}, filetype))
  else
    vim.cmd("edit " .. vim.fn.fnameescape(change.path))
  end
  vim.cmd("diffthis")
  vim.keymap.set("n", "q", "<cmd>tabclose<cr>", { buffer = before_buf, desc = "openvaala: close the diff" })
  return before_buf
end

--- Inside a task: `:Openvaala diff [turn]`: picks one of the turn's files (the current buffer's
--- when the turn changed it) and shows it before and after.
function M.diff(conv, arg)
  local current = vim.api.nvim_buf_get_name(0)
  local turn, diff = pick_turn(conv, arg)
  if not turn or not diff then
    return
  end
  local files = vim.tbl_filter(function(f)
    return not f.skipped or f.diff or f.binary
  end, diff.files)
  if #files == 0 then
    return util.info(("turn %d changed no files"):format(turn.number))
  end
  local change
  for _, f in ipairs(files) do
    if current ~= "" and vim.fs.normalize(f.path) == vim.fs.normalize(current) then
      change = f
    end
  end
  if not change and #files == 1 then
    change = files[1]
  elseif not change then
    local root = conv.server and conv.server.root
    change = async.select(files, {
      prompt = ("openvaala: turn %d changed"):format(turn.number),
      format_item = function(f)
        return render.file_change(f, root)
      end,
    })
    if not change then
      return
    end
  end
  return M.show_diff(conv, turn, change)
end

-- Undo and redo

--- The files of a conflict (`data.files`) as lines: `M src/a.py +1 −0`.
local function conflict_lines(err, root)
  local lines = {}
  local data = type(err.data) == "table" and err.data or {}
  for _, change in ipairs(type(data.files) == "table" and data.files or {}) do
    table.insert(lines, "  " .. render.file_change(change, root))
  end
  return lines
end

--- Inside a task: revertTurn of `turn_id`; a conflict is shown as the runtime words it, and the
--- user may force it (`force`: at once). Returns the result, or nil.
local function revert(conv, turn_id, what, force)
  local params = { conversationId = conv.id, turnId = turn_id, force = force or nil }
  local result, err = conv.server:call("revertTurn", params)
  if err and err.kind == "conflict" then
    local root = conv.server.root
    local files = conflict_lines(err, root)
    local text = ("%s refused: %s"):format(what, err.message)
    conv:notice("error", text .. (#files > 0 and ("\n" .. table.concat(files, "\n")) or ""))
    conv:changed()
    util.error(text)
    local answer = async.select({ "overwrite", "keep" }, {
      prompt = ("%s would overwrite changes made since the agent's (%s). Overwrite them?"):format(what, util.plural(math.max(#files, 1), "file")),
      format_item = function(choice)
        return choice == "overwrite" and (what .. " anyway: overwrite those changes") or "Keep them (do nothing)"
      end,
    })
    if answer ~= "overwrite" then
      return nil
    end
    params.force = true
    result, err = conv.server:call("revertTurn", params)
  end
  if err then
    util.request_error(what, err, "openvaala/revertTurn")
    return nil
  end
  vim.cmd("checktime") -- buffers of the files it wrote read them again
  return result
end

local function restored(result, root)
  local names = vim.tbl_map(function(f)
    return util.relative(f.path, root)
  end, result.files or {})
  return #names > 0 and table.concat(names, ", ") or "no files"
end

--- Inside a task: `:Openvaala undo[!]`: the files go back to before the last turn that changed
--- them (`force`: overwriting changes made since without asking).
function M.undo(conv, force)
  local turn = pick_turn(conv, nil, true)
  if not turn then
    return
  end
  local what = ("undoing turn %d"):format(turn.number)
  local result = revert(conv, turn.id, what, force)
  if not result then
    return
  end
  if #(result.revertedTurnIds or {}) == 0 or not result.revertedBy then
    conv.undone[turn.id] = true
    return util.info(("turn %d's changes are undone already"):format(turn.number))
  end
  for _, id in ipairs(result.revertedTurnIds) do
    conv.undone[id] = true
  end
  table.insert(conv.redo, { turnId = turn.id, revertedBy = result.revertedBy, number = turn.number, reverted = result.revertedTurnIds })
  local text = ("↶ undid turn %d: %s restored · :Openvaala redo brings them back"):format(turn.number, restored(result, conv.server.root))
  conv:notice("info", text)
  conv:changed()
  util.info(text)
end

--- Inside a task: `:Openvaala redo[!]`: the last undo made here, undone.
function M.redo(conv, force)
  local last = conv.redo[#conv.redo]
  if not last then
    return util.info("nothing to redo: :Openvaala undo first")
  end
  local result = revert(conv, last.revertedBy, ("redoing turn %d"):format(last.number), force)
  if not result then
    return
  end
  table.remove(conv.redo)
  for _, id in ipairs(last.reverted or { last.turnId }) do
    conv.undone[id] = nil
  end
  local text = ("↷ redid turn %d: %s written again"):format(last.number, restored(result, conv.server.root))
  conv:notice("info", text)
  conv:changed()
  util.info(text)
end

return M
