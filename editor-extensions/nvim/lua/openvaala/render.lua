--- Turns a conversation into buffer lines, with a highlight group and a fold level per line.
--- Pure functions: no buffers here (see view.lua).
local config = require("openvaala.config")
local events = require("openvaala.events")
local util = require("openvaala.util")

local M = {}

M.HEADER_LINES = 3

---@class openvaala.Lines
---@field lines string[]
---@field hl table<integer, string> highlight group by line (1-based)
---@field folds (string|integer)[] 'foldexpr' value by line: 0, 1 or ">1"
local Lines = {}
Lines.__index = Lines

function M.lines()
  return setmetatable({ lines = {}, hl = {}, folds = {} }, Lines)
end

---@param text string one line (no line break)
---@param hl string?
---@param fold (string|integer)?
function Lines:add(text, hl, fold)
  local n = #self.lines + 1
  self.lines[n] = text
  self.hl[n] = hl
  self.folds[n] = fold or 0
end

--- Adds a text of any number of lines, each with an optional prefix.
function Lines:text(text, hl, fold, prefix)
  text = (text or ""):gsub("\r\n?", "\n")
  for _, line in ipairs(vim.split(text, "\n", { plain = true })) do
    self:add((prefix or "") .. line, hl, fold)
  end
end

--- A fold: `head` shows while it is closed, the body lines are inside it.
function Lines:fold(head, head_hl, body, body_hl, prefix)
  self:add(head, head_hl, ">1")
  self:text(body, body_hl, 1, prefix)
end

local function count_lines(text)
  local _, n = text:gsub("\n", "")
  return n + 1
end

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

--- A one-line summary of a tool call's arguments (the model's JSON text).
function M.tool_summary(arguments)
  local ok, args = pcall(vim.json.decode, arguments or "")
  if ok and type(args) == "table" then
    local first = args.command or args.cmd or args.path or args.pattern or args.query or args.url
    if type(first) == "string" then
      return (first:gsub("\n.*", " …")), true
    end
  end
  local flat = (arguments or ""):gsub("%s+", " ")
  if #flat > 120 then
    flat = flat:sub(1, 117) .. "…"
  end
  return flat, false
end

---@param out openvaala.Lines
---@param item table
---@param opts {streaming: boolean?, pending: string?, root: string?}?
function M.item(out, item, opts)
  opts = opts or {}
  local kind = item.type
  local text = util.text_of(item)
  local flags = {}
  if opts.streaming then
    flags[#flags + 1] = "…"
  end
  if opts.pending then
    flags[#flags + 1] = "(" .. (opts.pending == "queue" and "queued" or opts.pending) .. ")"
  end
  if item.status == "interrupted" then
    flags[#flags + 1] = "(interrupted)"
  elseif item.status == "withdrawn" then
    flags[#flags + 1] = "(withdrawn)"
  end
  local suffix = #flags > 0 and (" " .. table.concat(flags, " ")) or ""
  if kind == "userMessage" then
    local from = item.from and item.from.kind ~= "user" and (item.from.name or item.from.kind) or "You"
    out:add("## " .. from .. suffix, opts.pending and "OpenvaalaPending" or "OpenvaalaUser")
    out:text(text)
  elseif kind == "assistantMessage" then
    out:add("## Assistant" .. suffix, "OpenvaalaAssistant")
    out:text(text)
  elseif kind == "reasoning" then
    out:fold(("▸ reasoning (%s)%s"):format(plural(count_lines(text), "line"), suffix), "OpenvaalaReasoning", text, "OpenvaalaReasoning", "  ")
  elseif kind == "toolCall" then
    local call = item.toolCall or {}
    local summary, complete = M.tool_summary(call.arguments)
    local head = ("⚙ %s %s%s"):format(call.name or "tool", summary, suffix)
    if complete or (call.arguments or "") == "" or (call.arguments or "") == "{}" then
      out:add(head, "OpenvaalaTool")
    else
      out:fold(head, "OpenvaalaTool", call.arguments, "OpenvaalaToolResult", "  ")
    end
    if item.status == "awaitingApproval" then
      out:add("  ⏸ waiting for approval", "OpenvaalaApproval")
    end
    return -- its result follows without a blank line
  elseif kind == "toolResult" then
    local result = item.toolResult or {}
    local hl = result.isError and "OpenvaalaError" or "OpenvaalaToolResult"
    local n = text == "" and 0 or count_lines(text)
    local head = ("  ↳ %s%s (%s)%s"):format(result.name or "result", result.isError and " failed" or "", plural(n, "line"), suffix)
    if n > config.options.fold_results then
      out:fold(head, hl, text, hl, "    ")
    else
      out:add(head, hl)
      if n > 0 then
        out:text(text, hl, 0, "    ")
      end
    end
    for _, change in ipairs(type(result.fileChanges) == "table" and result.fileChanges or {}) do
      out:add("    ✎ " .. M.file_change(change, opts.root), "OpenvaalaTool")
    end
  elseif kind == "compaction" then
    out:fold("── context compacted ──" .. suffix, "OpenvaalaStatus", text, "OpenvaalaReasoning", "  ")
  elseif kind == "error" then
    out:text("✗ " .. text, "OpenvaalaError")
  else
    out:add("[" .. tostring(kind) .. "]" .. suffix, "OpenvaalaStatus")
    out:text(text)
  end
  out:add("")
end

--- Why a turn ended, in words, for the endings worth a word (`Turn.reason`).
M.REASONS = {
  runtimeStopped = "the runtime stopped mid-turn; its answer is kept as far as it was saved",
  maxTokens = "the model reached its output limit",
  limitReached = "a limit was reached",
  modelError = "the model failed",
  toolError = "a tool failed",
  cancelledByHook = "a hook cancelled it",
}

local KIND_MARK = { add = "A", update = "M", delete = "D", move = "R" }

--- `M src/a.py +3 −1`: one file a turn or a tool changed (`FileChange` or its summary).
function M.file_change(change, root)
  local text = ("%s %s"):format(KIND_MARK[change.kind] or "?", util.relative(change.path or "?", root))
  if change.movedFrom then
    text = text .. " (from " .. util.relative(change.movedFrom, root) .. ")"
  end
  if change.binary then
    return text .. " (binary)"
  end
  return ("%s +%d −%d"):format(text, change.additions or 0, change.deletions or 0)
end

--- `2 files changed +12 −4`.
function M.files_summary(files)
  local added, deleted = 0, 0
  for _, change in ipairs(files) do
    added, deleted = added + (change.additions or 0), deleted + (change.deletions or 0)
  end
  return ("%s changed +%d −%d"):format(util.plural(#files, "file"), added, deleted)
end

--- The footer of a finished turn; `files`: what it changed, if known.
function M.turn_footer(out, turn, files, root)
  local usage = turn.usage and turn.usage.totalTokens or 0
  local tokens = usage > 0 and (" · " .. util.tokens(usage) .. " tokens") or ""
  local why = turn.reason and M.REASONS[turn.reason]
  why = why and (": " .. why .. " (" .. turn.reason .. ")") or ""
  if turn.status == "failed" then
    local err = turn.error or {}
    out:add(("✗ turn failed: %s%s"):format(err.message or err.kind or "?", tokens), "OpenvaalaError")
  elseif turn.status == "interrupted" then
    out:add("⏹ turn interrupted" .. why .. tokens, turn.reason == "runtimeStopped" and "OpenvaalaError" or "OpenvaalaStatus")
  else
    out:add("✓ turn " .. (turn.status or "completed") .. why .. tokens, "OpenvaalaStatus")
  end
  if files and #files > 0 then
    out:add(("✎ %s · :Openvaala changes / diff / undo"):format(M.files_summary(files)), "OpenvaalaTool")
    for _, change in ipairs(files) do
      out:add("  " .. M.file_change(change, root), "OpenvaalaTool")
    end
  end
  out:add("")
end

---@param out openvaala.Lines
---@param entry openvaala.Entry
---@param root string? the project root: paths are shown relative to it
function M.entry(out, entry, root)
  if entry.kind == "item" then
    M.item(out, entry.item, { root = root })
  elseif entry.kind == "turn" then
    M.turn_footer(out, entry.turn, entry.files, root)
  elseif entry.kind == "more" then
    out:add(("… earlier items are not shown (the last %d are; `history` in setup)"):format(config.options.history), "OpenvaalaStatus")
    out:add("")
  end
end

--- Context usage as `~1.2k/8k (15%)`, `~` when estimated.
function M.context(context)
  if not context or (context.window or 0) == 0 then
    return nil
  end
  if context.source == "unknown" then
    return "?/" .. util.tokens(context.window)
  end
  return ("%s%s/%s (%d%%)"):format(
    context.source == "estimated" and "~" or "",
    util.tokens(context.tokens),
    util.tokens(context.window),
    math.floor(100 * (context.tokens or 0) / context.window + 0.5)
  )
end

---@param conv openvaala.Conversation
function M.header(conv)
  local out = M.lines()
  local title = conv.title ~= "" and conv.title or "(untitled conversation)"
  out:add("# " .. title, "OpenvaalaTitle")
  local parts = {}
  local record = conv.record or {}
  parts[#parts + 1] = "agent " .. ((conv.session and conv.session.agentName) or record.agentName or "?")
  parts[#parts + 1] = "model " .. (conv:model_name() or "default")
  parts[#parts + 1] = conv.state
  local context = M.context(conv.context)
  if context then
    parts[#parts + 1] = "context " .. context
  end
  if record.archived then
    parts[#parts + 1] = "archived"
  end
  if record.forkedFrom then
    parts[#parts + 1] = "forked from " .. record.forkedFrom.conversationId
  end
  out:add(table.concat(parts, " · "), "OpenvaalaStatus")
  out:add("")
  assert(#out.lines == M.HEADER_LINES)
  return out
end

local STATUS = {
  loading = "⋯ loading",
  resyncing = "⋯ catching up with the session",
  deleted = "✗ this conversation was deleted",
}

--- The live part below the saved log: streaming items, pending inputs, approvals, notices, state.
---@param conv openvaala.Conversation
function M.live(conv)
  local out = M.lines()
  local root = conv.server and conv.server.root
  for _, streaming in ipairs(conv.streaming) do
    M.item(out, streaming.item, { streaming = true, root = root })
  end
  for _, pending in ipairs(conv.pending) do
    M.item(out, pending.item, { pending = pending.mode or "queue" })
  end
  for _, waiting in ipairs(conv.approvals) do
    local approval = waiting.approval
    local what = approval.command or M.tool_summary(type(approval.arguments) == "string" and approval.arguments or vim.json.encode(approval.arguments or vim.empty_dict()))
    local asker = events.asker(conv, waiting)
    local who = asker and (" (" .. asker .. ")") or ""
    out:add(("⚠ approval needed%s: %s %s"):format(who, approval.tool or "tool", what), "OpenvaalaApproval")
    if approval.reason then
      out:add("  " .. approval.reason, "OpenvaalaApproval")
    end
    if approval.paths and #approval.paths > 0 then
      out:add("  paths: " .. table.concat(approval.paths, ", "), "OpenvaalaApproval")
    end
    out:add("  :Openvaala approve (a) · approve! for the conversation (A) · deny [message] (D)", "OpenvaalaApproval")
    out:add("")
  end
  for _, notice in ipairs(conv.notices) do
    out:text((notice.level == "error" and "✗ " or "ℹ ") .. notice.text, notice.level == "error" and "OpenvaalaError" or "OpenvaalaStatus")
  end
  if STATUS[conv.status] then
    out:add(STATUS[conv.status], "OpenvaalaStatus")
  elseif conv.status ~= "disconnected" then
    if conv.state == "running" then
      out:add("⋯ working", "OpenvaalaStatus")
    elseif conv.state == "compacting" then
      out:add("⋯ compacting the context", "OpenvaalaStatus")
    elseif conv.state == "closed" then
      out:add("session closed", "OpenvaalaStatus")
    end
  end
  return out
end

return M
