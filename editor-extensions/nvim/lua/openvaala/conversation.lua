--- A conversation as this editor knows it: its saved log (items and turn footers, append-only),
--- the live part (streaming items, pending inputs, approvals, notices) and the session's state,
--- kept exact by the snapshot + stream of its subscriptions. A seq gap or a closed subscription
--- re-lists the items after the last known ordinal and subscribes again: nothing lost or doubled.
local async = require("openvaala.async")
local config = require("openvaala.config")
local util = require("openvaala.util")

local M = {}

---@class openvaala.Entry
---@field kind "item"|"turn"|"more"
---@field ordinal integer?
---@field item table?
---@field turn table?

---@class openvaala.Conversation
---@field server openvaala.Server
---@field id string
---@field record table? the Conversation
---@field title string
---@field session_id string? the main session
---@field session table? its Session
---@field state string idle | running | compacting | closed
---@field context table ContextUsage {source, tokens, window}
---@field usage table? TokenUsage of the session
---@field log openvaala.Entry[] saved items and turn footers, in order; only appended to
---@field last_ordinal integer the last saved ordinal in `log`
---@field turn table? the running or last turn
---@field streaming table[] {itemIndex, item} of the running turn
---@field pending table[] {item, mode, turnId?} inputs not yet taken
---@field approvals table[] {itemId, approval} waiting for an answer
---@field notices table[] {level, text} errors and news of the current turn
---@field status "loading"|"ready"|"resyncing"|"disconnected"|"deleted"
local Conversation = {}
Conversation.__index = Conversation

---@type table<string, openvaala.Conversation>
local registry = {}
---@type openvaala.Conversation?
local last_active

local MAX_NOTICES = 5

function M.get(id)
  return registry[id]
end

function M.all()
  return vim.tbl_values(registry)
end

--- The conversation the user works with: the last one shown or used.
function M.last()
  if last_active and registry[last_active.id] == last_active then
    return last_active
  end
end

function M.touch(conv)
  last_active = conv
end

--- The conversation of this id (one object per id in this Neovim), bound to `server`.
---@param server openvaala.Server
---@param id string
---@param record table? its Conversation, when known
---@return openvaala.Conversation
function M.of(server, id, record)
  local conv = registry[id]
  if not conv then
    conv = setmetatable({
      id = id,
      title = "",
      state = "idle",
      context = { source = "unknown", tokens = 0, window = 0 },
      log = {},
      last_ordinal = 0,
      turns = {},
      footers = {},
      streaming = {},
      pending = {},
      approvals = {},
      notices = {},
      status = "loading",
      listeners = {},
      subs = {},
      queue = {},
    }, Conversation)
    registry[id] = conv
  end
  if conv.server ~= server then
    conv.server = server
    server:on_exit(function(reason)
      if conv.server == server then
        conv:_disconnected(reason)
      end
    end)
  end
  if record then
    conv:_set_record(record)
  end
  return conv
end

-- Change notification: the view re-renders once per batch of changes.

function Conversation:on_change(fn)
  table.insert(self.listeners, fn)
end

function Conversation:changed()
  for _, fn in ipairs(self.listeners) do
    fn(self)
  end
end

function Conversation:notice(level, text)
  table.insert(self.notices, { level = level, text = text })
  if #self.notices > MAX_NOTICES then
    table.remove(self.notices, 1)
  end
end

function Conversation:_set_record(record)
  self.record = record
  self.title = record.title or self.title
end

function Conversation:_set_info(info)
  self.info = info
  self.session = info.session
  self.state = info.state or self.state
  if info.context and (info.context.source ~= "unknown" or (info.context.window or 0) > 0) then
    self.context = info.context
  end
  self.usage = info.usage
end

function Conversation:_disconnected(reason)
  self.subs = {}
  self.status = "disconnected"
  self:notice("error", reason .. ": :Openvaala open to reconnect")
  self:changed()
end

-- The saved log

--- Appends saved items (ascending ordinals above `last_ordinal`), with a footer after the last
--- item of each finished turn. `turns` maps turn ids to what is known of them.
function Conversation:_append_items(logged, turns)
  for index, entry in ipairs(logged) do
    if entry.ordinal > self.last_ordinal then
      table.insert(self.log, { kind = "item", ordinal = entry.ordinal, item = entry.item })
      self.last_ordinal = entry.ordinal
    end
    local turn_id = entry.item.turnId
    local next_entry = logged[index + 1]
    if turn_id and (not next_entry or next_entry.item.turnId ~= turn_id) then
      local turn = turns[turn_id]
      if turn and turn.status ~= "running" then
        self:_footer(turn)
      end
    end
  end
end

function Conversation:_footer(turn)
  if not self.footers[turn.id] then
    self.footers[turn.id] = true
    table.insert(self.log, { kind = "turn", turn = turn })
  end
end

local function index_of(list, pred)
  for i, value in ipairs(list) do
    if pred(value) then
      return i
    end
  end
end

local function remove_where(list, pred)
  local i = index_of(list, pred)
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

function session_handlers.itemStarted(self, e)
  remove_where(self.streaming, function(s)
    return s.item.id == e.item.id
  end)
  table.insert(self.streaming, { itemIndex = e.itemIndex, item = e.item })
  table.sort(self.streaming, function(a, b)
    return a.itemIndex < b.itemIndex
  end)
end

function session_handlers.itemDelta(self, e)
  local streaming = self.streaming[index_of(self.streaming, function(s)
    return s.item.id == e.itemId
  end) or 0]
  if streaming then
    append_delta(streaming.item, e.delta)
  end
end

function session_handlers.itemCompleted(self, e)
  remove_where(self.streaming, function(s)
    return s.item.id == e.item.id
  end)
  self:_append_items({ { ordinal = e.ordinal, item = e.item } }, {})
end

function session_handlers.pendingInputAdded(self, e)
  remove_where(self.pending, function(p)
    return p.item.id == e.item.id
  end)
  table.insert(self.pending, { item = e.item, mode = e.mode or "queue" })
end

function session_handlers.pendingInputRemoved(self, e)
  remove_where(self.pending, function(p)
    return p.item.id == e.itemId
  end)
end

function session_handlers.turnStarted(self, e)
  self.turn = e.turn
  self.turns[e.turn.id] = e.turn
  self.notices = {}
end

function session_handlers.turnCompleted(self, e)
  self.turn = e.turn
  self.turns[e.turn.id] = e.turn
  for i = #self.streaming, 1, -1 do
    if self.streaming[i].item.turnId == e.turn.id then
      table.remove(self.streaming, i)
    end
  end
  self:_footer(e.turn)
end

function session_handlers.stateChanged(self, e)
  self.state = e.state
end

function session_handlers.contextUsageUpdated(self, e)
  self.context = e.context
end

function session_handlers.usageUpdated(self, e)
  self.usage = e.usage
end

session_handlers["error"] = function(self, e)
  local err = e.error or {}
  self:notice("error", ("%s: %s"):format(err.kind or "error", err.message or ""))
  if err.kind == "noModelConfigured" then
    util.error(util.NO_MODEL)
  end
end

function session_handlers.approvalRequested(self, e)
  remove_where(self.approvals, function(a)
    return a.itemId == e.itemId
  end)
  table.insert(self.approvals, { itemId = e.itemId, approval = e.approval or {} })
  local approval = e.approval or {}
  util.warn(
    ("%s wants to run %s%s: :Openvaala approve, or :Openvaala deny"):format(
      self.title ~= "" and self.title or "the agent",
      approval.tool or "a tool",
      approval.command and (" `" .. approval.command .. "`") or ""
    )
  )
end

function session_handlers.approvalResolved(self, e)
  remove_where(self.approvals, function(a)
    return a.itemId == e.itemId
  end)
  local by = e.by and (e.by.name or e.by.kind) or "?"
  self:notice("info", ("approval %s (%s)"):format(e.decision or "?", by))
end

function session_handlers.compactionStarted(self)
  self:notice("info", "compacting the context…")
end

function session_handlers.compactionCompleted(self, e)
  local before, after = e.before or {}, e.after or {}
  self:notice("info", ("context compacted: %s → %s tokens"):format(util.tokens(before.tokens), util.tokens(after.tokens)))
  if e.after then
    self.context = e.after
  end
end

function Conversation:_apply_session(events)
  for _, event in ipairs(events or {}) do
    local handler = session_handlers[event.type]
    if handler then -- unknown event types are ignored: newer servers may send more
      handler(self, event)
    end
  end
end

local conversation_handlers = {
  titleChanged = function(self, e)
    self.title = e.title
  end,
  sessionUpdated = function(self, e)
    if e.info and e.info.session and e.info.session.id == self.session_id then
      self:_set_info(e.info)
    end
  end,
  conversationUpdated = function(self, e)
    self:_set_record(e.conversation)
  end,
}

-- Subscriptions

--- Routes one notification of the subscription `name` ("conversation" or "session").
function Conversation:_notification(name, method, params)
  local sub = self.subs[name]
  if not sub or sub.id ~= params.subscriptionId then
    return
  end
  if method == "openvaala/subscriptionClosed" then
    local reason = params.reason or {}
    self.server:release(sub.id, false)
    self.subs[name] = nil
    if reason.kind == "conversationNotFound" then
      return self:_deleted()
    end
    return self:resync(name, ("subscription closed (%s)"):format(reason.kind or "?"))
  end
  if sub.loading then -- the snapshot is still being completed: apply in order afterwards
    table.insert(sub.queue, { method, params })
    return
  end
  if params.seq ~= sub.seq + 1 then
    return self:resync(name, ("missed events (seq %s after %s)"):format(params.seq, sub.seq))
  end
  sub.seq = params.seq
  if method == "openvaala/sessionEvent" then
    self:_apply_session(params.events)
  elseif method == "openvaala/conversationEvent" then
    local handler = params.event and conversation_handlers[params.event.type]
    if handler then
      handler(self, params.event)
    end
  end
  self:changed()
end

function Conversation:_subscribe_local(name, id)
  local sub = { id = id, seq = 0, loading = true, queue = {} }
  self.subs[name] = sub
  self.server:subscribe(id, function(method, params)
    self:_notification(name, method, params)
  end)
  return sub
end

--- Applies what arrived while the snapshot was completed.
function Conversation:_loaded(name, sub)
  sub.loading = false
  local queued = sub.queue
  sub.queue = {}
  for _, message in ipairs(queued) do
    if self.subs[name] ~= sub then
      return
    end
    self:_notification(name, message[1], message[2])
  end
end

function Conversation:_deleted()
  for name, sub in pairs(self.subs) do
    self.server:release(sub.id, false)
    self.subs[name] = nil
  end
  self.status = "deleted"
  self:changed()
end

--- Inside a task: subscribes to the conversation (title, sessions).
function Conversation:_sync_conversation()
  local old = self.subs.conversation
  if old then
    self.server:release(old.id, true)
    self.subs.conversation = nil
  end
  local snap, err = self.server:call("subscribeConversation", { conversationId = self.id })
  if err then
    return nil, err
  end
  local sub = self:_subscribe_local("conversation", snap.subscriptionId)
  self.title = snap.title or self.title
  local main
  for _, info in ipairs(snap.sessions or {}) do
    if info.session.id == self.session_id or (not self.session_id and not info.session.parentSessionId) then
      main = main or info
    end
  end
  main = main or (snap.sessions or {})[1]
  if main then
    self.session_id = main.session.id
    self:_set_info(main)
  end
  self:_loaded("conversation", sub)
  return true
end

--- Inside a task: the saved items in (after, upto], with their turns' footers.
function Conversation:_list_after(after, upto)
  local logged = {}
  local cursor = after
  while cursor < upto do
    local page, err = self.server:call("listItems", {
      conversationId = self.id,
      sessionId = self.session_id,
      cursor = cursor,
      limit = 500,
      order = "asc",
    })
    if err then
      return nil, err
    end
    for _, entry in ipairs(page.items) do
      if entry.ordinal <= upto then
        table.insert(logged, entry)
      end
    end
    if not page.nextCursor or #page.items == 0 then
      break
    end
    cursor = page.nextCursor
  end
  return logged
end

--- Inside a task: the last `config.history` saved items up to `upto` (the first load).
function Conversation:_list_recent(upto)
  local page, err = self.server:call("listItems", {
    conversationId = self.id,
    sessionId = self.session_id,
    cursor = upto + 1,
    limit = math.max(1, math.min(500, config.options.history)),
    order = "desc",
  })
  if err then
    return nil, err
  end
  local logged = {}
  for i = #page.items, 1, -1 do
    table.insert(logged, page.items[i])
  end
  if page.nextCursor then
    table.insert(self.log, { kind = "more" })
  end
  return logged
end

--- Inside a task: what is known of these turns (by id).
function Conversation:_turns(ids)
  local turns = {}
  if #ids == 0 then
    return turns
  end
  local result = self.server:call("getTurns", { conversationId = self.id, turnIds = ids })
  for _, turn in ipairs(result and result.turns or {}) do
    turns[turn.id] = turn
    self.turns[turn.id] = turn
  end
  return turns
end

--- Inside a task: (re)subscribes to the main session and completes its snapshot.
function Conversation:_sync_session()
  local old = self.subs.session
  if old then
    self.server:release(old.id, true)
    self.subs.session = nil
  end
  local params = { conversationId = self.id, sessionId = self.session_id }
  local snap, err = self.server:call("subscribeSession", params)
  if err and err.kind == "conversationNotOpen" then -- e.g. the runtime restarted
    local record, open_err = self.server:call("openConversation", { conversationId = self.id })
    if open_err then
      return nil, open_err
    end
    self:_set_record(record)
    snap, err = self.server:call("subscribeSession", params)
  end
  if err then
    return nil, err
  end
  local sub = self:_subscribe_local("session", snap.subscriptionId)
  local logged, list_err
  if not self.loaded_once then
    logged, list_err = self:_list_recent(snap.lastSavedOrdinal)
  else
    logged, list_err = self:_list_after(self.last_ordinal, snap.lastSavedOrdinal)
  end
  if not logged then
    return nil, list_err
  end
  self.loaded_once = true
  -- footers: the turns of these items, and the turn that ran before a resync
  local ids, seen = {}, {}
  local previous = self.turn and self.turn.id
  local function want(id)
    if id and not seen[id] then
      seen[id] = true
      table.insert(ids, id)
    end
  end
  want(previous)
  for _, entry in ipairs(logged) do
    want(entry.item.turnId)
  end
  local turns = self:_turns(ids)
  if previous and turns[previous] and turns[previous].status ~= "running" then
    local has_items = index_of(logged, function(e)
      return e.item.turnId == previous
    end)
    if not has_items then
      self:_footer(turns[previous])
    end
  end
  self:_append_items(logged, turns)
  local last_turn = logged[#logged] and turns[logged[#logged].item.turnId or ""]
  if last_turn then
    self.turn = last_turn
  elseif previous and turns[previous] then
    self.turn = turns[previous]
  end
  self.streaming = {}
  for _, streaming in ipairs(snap.streamingItems or {}) do
    table.insert(self.streaming, streaming)
  end
  self.pending = {}
  for _, pending in ipairs(snap.pendingInputs or {}) do
    table.insert(self.pending, pending)
  end
  -- the state and context now (events queued since the subscription bring them forward)
  local details = self.server:call("getSessionDetails", params)
  if details and details.info then
    self:_set_info(details.info)
  end
  local usage = self.server:call("getSessionContextUsage", params)
  if usage and usage.nextRequest and self.context.source == "unknown" then
    self.context = usage.nextRequest
  end
  self:_loaded("session", sub)
  return true
end

--- Inside a task: subscribes and loads everything; reports failures.
function Conversation:sync()
  self.syncing = true
  local ok, err
  repeat
    self.again = nil
    ok, err = true, nil
    if not self.subs.conversation then
      ok, err = self:_sync_conversation()
    end
    if ok and (not self.subs.session or self.again_session) then
      self.again_session = nil
      ok, err = self:_sync_session()
    end
  until not self.again or not ok
  self.syncing = false
  if ok then
    self.status = "ready"
  elseif err.kind == "conversationNotFound" then
    self:_deleted()
    return false
  else
    self.status = "disconnected"
    self:notice("error", util.describe("loading the conversation", err))
    util.request_error("loading the conversation", err)
  end
  self:changed()
  return ok
end

--- Starts a resync of subscription `name` (after a gap or a close); one at a time.
function Conversation:resync(name, why)
  if name == "session" then
    local sub = self.subs.session
    if sub then
      self.server:release(sub.id, true)
      self.subs.session = nil
    end
    self.again_session = true
  else
    local sub = self.subs.conversation
    if sub then
      self.server:release(sub.id, true)
      self.subs.conversation = nil
    end
  end
  self.resyncs = (self.resyncs or 0) + 1
  self.last_resync = why
  if self.syncing then
    self.again = true
    return
  end
  self.status = "resyncing"
  self:changed()
  async.run(function()
    self:sync()
  end)
end

--- Inside a task: (re)attaches to `server` and loads the conversation.
function Conversation:attach(server)
  if server then
    M.of(server, self.id)
  end
  if self.status == "disconnected" then
    self.subs = {}
    self.notices = {}
  end
  if self.subs.session and self.subs.conversation then
    return true
  end
  self.status = self.status == "ready" and "resyncing" or self.status
  self:changed()
  return self:sync()
end

--- Stops both subscriptions (the buffer was closed).
function Conversation:detach()
  for name, sub in pairs(self.subs) do
    self.server:release(sub.id, true)
    self.subs[name] = nil
  end
  self.listeners = {}
  if registry[self.id] == self then
    registry[self.id] = nil
  end
end

--- The running turn's id, if a turn runs.
function Conversation:active_turn_id()
  if self.info and self.info.activeTurnId and self.state ~= "idle" then
    return self.info.activeTurnId
  end
  if self.turn and self.turn.status == "running" then
    return self.turn.id
  end
end

--- The model of the main session as `provider/name`.
function Conversation:model_name()
  local selection = self.session and self.session.model
  local ref = selection and selection.model
  if ref then
    return ref.provider .. "/" .. ref.name
  end
end

function Conversation:forget()
  self:detach()
  if last_active == self then
    last_active = nil
  end
end

return M
