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
end

function session_handlers.turnCompleted(conv, e)
  conv.turn = e.turn
  for i = #conv.streaming, 1, -1 do
    if conv.streaming[i].item.turnId == e.turn.id then
      table.remove(conv.streaming, i)
    end
  end
  conv:add_footer(e.turn)
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

function session_handlers.approvalRequested(conv, e)
  remove_where(conv.approvals, function(a)
    return a.itemId == e.itemId
  end)
  table.insert(conv.approvals, { itemId = e.itemId, approval = e.approval or {} })
  local approval = e.approval or {}
  util.warn(
    ("%s wants to run %s%s: :Openvaala approve, or :Openvaala deny"):format(
      conv.title ~= "" and conv.title or "the agent",
      approval.tool or "a tool",
      approval.command and (" `" .. approval.command .. "`") or ""
    )
  )
end

function session_handlers.approvalResolved(conv, e)
  remove_where(conv.approvals, function(a)
    return a.itemId == e.itemId
  end)
  local by = e.by and (e.by.name or e.by.kind) or "?"
  conv:notice("info", ("approval %s (%s)"):format(e.decision or "?", by))
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
      conv:set_info(e.info)
    end
  end,
  sessionAdded = function(conv, e)
    local session = e.session or {}
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
