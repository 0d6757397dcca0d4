--- What each event of a subscription does to a conversation (see conversation.lua).
local util = require("openvaala.util")

local M = {}

function M.index_of(list, pred)
  for i, value in ipairs(list) do
    if pred(value) then
      return i
    end
  end
end

local function remove_where(list, pred)
  local i = M.index_of(list, pred)
  if i then
    return table.remove(list, i)
  end
end

local function append_delta(item, delta)
  if item.type == "toolCall" then
    item.toolCall = item.toolCall or {}
    item.toolCall.arguments = (item.toolCall.arguments or "") .. delta
    return
  end
  item.content = item.content or {}
  local last = item.content[#item.content]
  if not last or last.type ~= "text" then
    last = { type = "text", text = "" }
    table.insert(item.content, last)
  end
  last.text = (last.text or "") .. delta
end

-- Approvals

--- `shell `echo hi`` or `write_file src/a.py`: what an approval is about.
function M.approval_summary(approval)
  local what = approval.command
  if not what and approval.paths and #approval.paths > 0 then
    what = table.concat(approval.paths, ", ")
  end
  return ("%s%s"):format(approval.tool or "a tool", what and (" `" .. what .. "`") or "")
end

--- `sub-agent helper` for an approval a sub-agent's session asks for; nil for the main session's.
function M.asker(conv, waiting)
  local session = conv:sub_agent(waiting.sessionId)
  if session then
    return session.agentName and ("sub-agent " .. session.agentName) or ("a sub-agent (" .. session.id .. ")")
  end
end

--- `shell `echo hi`` or `shell `echo hi` (sub-agent helper)`: an approval and who asks.
function M.approval_label(conv, waiting)
  local asker = M.asker(conv, waiting)
  return M.approval_summary(waiting.approval or {}) .. (asker and (" (" .. asker .. ")") or "")
end

--- Whether `by` (an Address) is this editor's connection.
function M.is_me(conv, by)
  return type(by) == "table" and by.kind == "client" and conv.server ~= nil and by.clientId == conv.server.openvaala_id
end

local DECIDED = { allowOnce = "allowed once", allowAlways = "allowed always", deny = "denied" }

--- `allowed once by Neovim`, `denied: the turn was interrupted`, ...
function M.resolution(decision, by)
  local verb = DECIDED[decision] or tostring(decision)
  by = type(by) == "table" and by or {}
  if by.kind == "client" then
    return ("%s by %s"):format(verb, by.name or by.clientId or "another editor")
  elseif by.kind == "user" then
    return verb .. ": the turn was interrupted"
  elseif by.kind == "session" then
    return verb .. ": no editor that can answer approvals is watching"
  end
  return ("%s by %s"):format(verb, by.name or by.kind or "?")
end

--- Records an approval request (again: replaced), oldest first. `session_id`: the session whose
--- tool call waits (the main session's, or a sub-agent's).
function M.add_approval(conv, item_id, session_id, approval)
  local waiting = { itemId = item_id, sessionId = session_id, approval = approval or {} }
  local i = M.index_of(conv.approvals, function(a)
    return a.itemId == item_id
  end)
  if i then
    conv.approvals[i] = waiting
  else
    table.insert(conv.approvals, waiting)
  end
end

-- Session events

local session_handlers = {}

function session_handlers.itemStarted(conv, e)
  remove_where(conv.streaming, function(s)
    return s.item.id == e.item.id
  end)
  table.insert(conv.streaming, { itemIndex = e.itemIndex, item = e.item })
  table.sort(conv.streaming, function(a, b)
    return a.itemIndex < b.itemIndex
  end)
end

function session_handlers.itemDelta(conv, e)
  local streaming = conv.streaming[M.index_of(conv.streaming, function(s)
    return s.item.id == e.itemId
  end) or 0]
  if streaming then
    append_delta(streaming.item, e.delta)
  end
end

function session_handlers.itemCompleted(conv, e)
  remove_where(conv.streaming, function(s)
    return s.item.id == e.item.id
  end)
  conv:append_saved({ { ordinal = e.ordinal, item = e.item } }, {})
end

function session_handlers.pendingInputAdded(conv, e)
  remove_where(conv.pending, function(p)
    return p.item.id == e.item.id
  end)
  table.insert(conv.pending, { item = e.item, mode = e.mode or "queue" })
end

function session_handlers.pendingInputRemoved(conv, e)
  remove_where(conv.pending, function(p)
    return p.item.id == e.itemId
  end)
end

function session_handlers.turnStarted(conv, e)
  conv.turn = e.turn
  conv.notices = {}
  conv.redo = {} -- a redo now would undo this turn too
end

function session_handlers.turnDiffUpdated(conv, e)
  conv.turn_files[e.turnId] = e.files or {}
  conv.turn_diff_known[e.turnId] = true
end

function session_handlers.turnCompleted(conv, e)
  conv.turn = e.turn
  for i = #conv.streaming, 1, -1 do
    if conv.streaming[i].item.turnId == e.turn.id then
      table.remove(conv.streaming, i)
    end
  end
  conv:add_footer(e.turn)
  local files = conv.turn_files[e.turn.id]
  if files and #files > 0 then
    require("openvaala.changes").turn_ended(conv, e.turn)
  end
  -- an approval of a call that is no longer streaming was decided (its approvalResolved came
  -- first); a sub-agent's ran inside this turn, so it was decided too
  for i = #conv.approvals, 1, -1 do
    local waiting = conv.approvals[i]
    if conv:sub_agent(waiting.sessionId) or not M.index_of(conv.streaming, function(s)
      return s.item.id == waiting.itemId
    end) then
      table.remove(conv.approvals, i)
    end
  end
end

function session_handlers.stateChanged(conv, e)
  conv.state = e.state
end

function session_handlers.contextUsageUpdated(conv, e)
  conv.context = e.context
end

function session_handlers.usageUpdated(conv, e)
  conv.usage = e.usage
end

session_handlers["error"] = function(conv, e)
  local err = e.error or {}
  conv:notice("error", ("%s: %s"):format(err.kind or "error", err.message or ""))
  if err.kind == "noModelConfigured" then
    util.error(util.NO_MODEL)
  end
end

--- Sets the status of the streaming item `id` (a tool call waits for approval, or goes on).
local function set_streaming_status(conv, id, status)
  for _, streaming in ipairs(conv.streaming) do
    if streaming.item.id == id then
      streaming.item.status = status
    end
  end
end

function session_handlers.approvalRequested(conv, e)
  local approval = e.approval or {}
  if not conv:sub_agent(e.sessionId) then -- a sub-agent's item is not among this session's
    set_streaming_status(conv, e.itemId, "awaitingApproval")
  end
  M.add_approval(conv, e.itemId, e.sessionId, approval)
  local who = conv.title ~= "" and conv.title or "the agent"
  local asker = M.asker(conv, { sessionId = e.sessionId })
  if asker then
    who = conv.title ~= "" and ("%s of %s"):format(asker, conv.title) or asker
  end
  util.warn(("%s wants to run %s: :Openvaala approve, or :Openvaala deny"):format(who, M.approval_summary(approval)))
end

function session_handlers.approvalResolved(conv, e)
  local waiting = remove_where(conv.approvals, function(a)
    return a.itemId == e.itemId
  end)
  if not conv:sub_agent(e.sessionId) then
    set_streaming_status(conv, e.itemId, "streaming")
  end
  local what = waiting and M.approval_label(conv, waiting) or "the tool call"
  local text = ("%s: %s"):format(what, M.resolution(e.decision, e.by))
  conv:notice("info", text)
  local by = type(e.by) == "table" and e.by or {}
  if waiting and ((by.kind == "client" and not M.is_me(conv, by)) or by.kind == "session") then
    util.info(text) -- another editor (or the runtime) decided what this one showed
  end
end

function session_handlers.compactionStarted(conv)
  conv:notice("info", "compacting the context…")
end

function session_handlers.compactionCompleted(conv, e)
  local before, after = e.before or {}, e.after or {}
  conv:notice("info", ("context compacted: %s → %s tokens"):format(util.tokens(before.tokens), util.tokens(after.tokens)))
  if e.after then
    conv.context = e.after
  end
end

--- Applies the events of one `openvaala/sessionEvent`, in order.
---@param conv openvaala.Conversation
function M.session(conv, events)
  for _, event in ipairs(events or {}) do
    local handler = session_handlers[event.type]
    if handler then -- unknown event types are ignored: newer servers may send more
      handler(conv, event)
    end
  end
end

local conversation_handlers = {
  titleChanged = function(conv, e)
    conv.title = e.title
  end,
  sessionUpdated = function(conv, e)
    if e.info and e.info.session and e.info.session.id == conv.session_id then
      conv:set_info(e.info, conv.subs.session ~= nil)
    elseif e.info then
      conv:add_session(e.info.session)
    end
  end,
  sessionAdded = function(conv, e)
    local session = e.session or {}
    conv:add_session(session)
    if session.parentSessionId then
      conv:notice("info", ("sub-agent %s started"):format(session.agentName or "?"))
    end
  end,
  conversationUpdated = function(conv, e)
    conv:set_record(e.conversation)
  end,
}

--- Applies one `openvaala/conversationEvent`.
---@param conv openvaala.Conversation
function M.conversation(conv, event)
  local handler = event and conversation_handlers[event.type]
  if handler then
    handler(conv, event)
  end
end

return M
