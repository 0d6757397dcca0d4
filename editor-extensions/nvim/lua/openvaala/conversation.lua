--- A conversation as this editor knows it: its saved log (items and turn footers, append-only),
--- the live part (streaming items, pending inputs, approvals, notices) and the session's state,
--- kept exact by the snapshot + stream of its subscriptions. A seq gap or a closed subscription
--- re-lists the items after the last known ordinal and subscribes again: nothing lost or doubled.
local async = require("openvaala.async")
local config = require("openvaala.config")
local events = require("openvaala.events")
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
---@field sessions table<string, table> every Session of the conversation known here, by id
---@field state string idle | running | compacting | closed
---@field context table ContextUsage {source, tokens, window}
---@field usage table? TokenUsage of the session
---@field log openvaala.Entry[] saved items and turn footers, in order; only appended to
---@field last_ordinal integer the last saved ordinal in `log`
---@field turn table? the running or last turn
---@field streaming table[] {itemIndex, item} of the running turn
---@field pending table[] {item, mode, turnId?} inputs not yet taken
---@field approvals table[] {itemId, sessionId, approval} waiting for an answer: the main
---session's and its sub-agents' (their approvals reach the main session's subscribers too)
---@field notices table[] {level, text} errors and news of the current turn
---@field status "loading"|"ready"|"resyncing"|"disconnected"|"deleted"
local Conversation = {}
Conversation.__index = Conversation

---@type table<string, openvaala.Conversation>
local registry = {}
---@type openvaala.Conversation?
local last_active

local MAX_NOTICES = 5

--- The conversation the user works with: the last one shown or used.
function M.last()
  if last_active and registry[last_active.id] == last_active then
    return last_active
  end
end

--- Whether `conv` is the one object of its id in use (not closed with its buffer).
function M.is_current(conv)
  return conv ~= nil and registry[conv.id] == conv
end

--- The conversation object of this id in use here, if any.
function M.of_id(id)
  return registry[id]
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
      sessions = {},
      last_ordinal = 0,
      footers = {},
      turn_files = {}, -- by turn id: what the turn changed (turnDiffUpdated, else its tool results)
      turn_diff_known = {}, -- turn ids whose turn_files came from turnDiffUpdated
      redo = {}, -- {turnId, revertedBy, label} of the undos made here, newest last
      undone = {}, -- turn ids undone here (not redone)
      streaming = {},
      pending = {},
      approvals = {},
      notices = {},
      status = "loading",
      listeners = {},
      subs = {}, -- conversation / session: {id, seq, loading, queue}
    }, Conversation)
    registry[id] = conv
  end
  if conv.server ~= server then
    conv.server = server
    server:on_exit(function(reason, crashed)
      if conv.server == server then
        conv:_disconnected(reason, crashed)
        if crashed then
          M.reconnect(server.root, reason)
        end
      end
    end)
  end
  if record then
    conv:set_record(record)
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

function Conversation:set_record(record)
  self.record = record
  self.title = record.title or self.title
end

--- Remembers a Session of the conversation (the main one or a sub-agent's).
function Conversation:add_session(session)
  if type(session) == "table" and type(session.id) == "string" then
    self.sessions[session.id] = session
  end
end

--- The sub-agent session `session_id` names (nil for the main session), as far as it is known:
--- its Session, or `{id}` while it is looked up (`getSessionById`; shown once found).
function Conversation:sub_agent(session_id)
  if not session_id or session_id == self.session_id then
    return nil
  end
  local session = self.sessions[session_id]
  if session then
    return session
  end
  self.looked_up = self.looked_up or {}
  if not self.looked_up[session_id] and self.server and not self.server.dead then
    self.looked_up[session_id] = true -- once: a session the server does not know stays unnamed
    async.run(function()
      local found = self.server:call("getSessionById", { sessionId = session_id })
      if found and found.id == session_id then
        self:add_session(found)
        self:changed()
      end
    end)
  end
  return { id = session_id }
end

--- `live`: the session's own subscription runs, and its events (stateChanged, contextUsageUpdated)
--- come in order with the items; the conversation subscription's sessionUpdated, a stream of its
--- own, may then be behind them and must not set state or context back.
function Conversation:set_info(info, live)
  self.info = info
  self.session = info.session
  self:add_session(info.session)
  if not live then
    self.state = info.state or self.state
    if info.context and (info.context.source ~= "unknown" or (info.context.window or 0) > 0) then
      self.context = info.context
    end
    self.usage = info.usage
  end
end

function Conversation:_disconnected(reason, crashed)
  self.subs = {}
  self.approvals = {} -- nobody can answer them through this server; reconnecting shows what waits
  self.status = "disconnected"
  self:notice("error", reason .. (crashed and ": reconnecting…" or ": :Openvaala open to reconnect"))
  self:changed()
end

local reconnecting = {} -- project roots with a reconnect scheduled
local MAX_RECONNECTS = 4

--- After the server of `root` died: a new one, and the conversations shown here that used it
--- attached again (they catch up from their last item). Tries a few times, waiting longer each.
function M.reconnect(root, reason, attempt)
  attempt = attempt or 0
  if reconnecting[root] then
    return
  end
  reconnecting[root] = true
  vim.defer_fn(function()
    reconnecting[root] = nil
    async.run(function()
      local waiting = {}
      for _, conv in pairs(registry) do
        if conv.status == "disconnected" and conv.server and conv.server.dead and conv.server.root == root then
          table.insert(waiting, conv)
        end
      end
      if #waiting == 0 or require("openvaala.client").leaving then
        return
      end
      local server = require("openvaala.client").get(nil, root)
      if not server or not server:wait_ready() then
        if attempt + 1 < MAX_RECONNECTS then
          return M.reconnect(root, reason, attempt + 1)
        end
        for _, conv in ipairs(waiting) do
          conv:notice("error", "could not reconnect: :Openvaala open to try again")
          conv:changed()
        end
        return
      end
      for _, conv in ipairs(waiting) do
        if registry[conv.id] == conv and conv.status == "disconnected" and conv:attach(server) then
          conv:notice("info", ("reconnected (%s)"):format(reason))
          conv:changed()
        end
      end
    end)
  end, 200 * 2 ^ attempt)
end

-- The saved log

--- Appends saved items (ascending ordinals above `last_ordinal`), with a footer after the last
--- item of each finished turn. `turns` maps turn ids to what is known of them.
function Conversation:append_saved(logged, turns)
  for index, entry in ipairs(logged) do
    if entry.ordinal > self.last_ordinal then
      table.insert(self.log, { kind = "item", ordinal = entry.ordinal, item = entry.item })
      self.last_ordinal = entry.ordinal
      self:_note_file_changes(entry.item)
    end
    local turn_id = entry.item.turnId
    local next_entry = logged[index + 1]
    if turn_id and (not next_entry or next_entry.item.turnId ~= turn_id) then
      local turn = turns[turn_id]
      if turn and turn.status ~= "running" then
        self:add_footer(turn)
      end
    end
  end
end

function Conversation:add_footer(turn)
  if not self.footers[turn.id] then
    self.footers[turn.id] = true
    table.insert(self.log, { kind = "turn", turn = turn, files = self.turn_files[turn.id] })
  end
end

--- A tool result's `fileChanges`, summed per path into its turn's files (unless the turn's own
--- diff, from turnDiffUpdated, is known).
function Conversation:_note_file_changes(item)
  local changes = item.type == "toolResult" and item.toolResult and item.toolResult.fileChanges
  local turn_id = item.turnId
  if type(changes) ~= "table" or #changes == 0 or not turn_id or self.turn_diff_known[turn_id] then
    return
  end
  local files = self.turn_files[turn_id] or {}
  self.turn_files[turn_id] = files
  for _, change in ipairs(changes) do
    local known
    for _, file in ipairs(files) do
      if file.path == change.path then
        known = file
      end
    end
    if known then
      known.additions = (known.additions or 0) + (change.additions or 0)
      known.deletions = (known.deletions or 0) + (change.deletions or 0)
      known.kind = known.kind == "add" and change.kind ~= "delete" and "add" or change.kind
    else
      table.insert(files, {
        path = change.path,
        kind = change.kind,
        movedFrom = change.movedFrom,
        additions = change.additions or 0,
        deletions = change.deletions or 0,
        binary = change.binary,
      })
    end
  end
end

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
    events.session(self, params.events)
  elseif method == "openvaala/conversationEvent" then
    events.conversation(self, params.event)
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
    self:add_session(info.session)
    if info.session.id == self.session_id or (not self.session_id and not info.session.parentSessionId) then
      main = main or info
    end
  end
  main = main or (snap.sessions or {})[1]
  if main then
    self.session_id = main.session.id
    self:set_info(main)
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
  if upto == 0 then
    return {}
  end
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
  end
  return turns
end

--- A snapshot too big for one message comes in pages (`snapshotCursor`), all of the one taken at
--- the subscription: the rest is added to `snap` before any event after it applies.
function Conversation:_whole_snapshot(snap)
  local cursor = snap.snapshotCursor
  while type(cursor) == "string" do
    local page, err = self.server:call("getSessionSnapshot", { subscriptionId = snap.subscriptionId, cursor = cursor })
    if err then
      return nil, err
    end
    for _, key in ipairs({ "pendingApprovals", "pendingInputs", "streamingItems" }) do
      snap[key] = vim.list_extend(snap[key] or {}, page[key] or {})
    end
    cursor = page.snapshotCursor
  end
  return true
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
    self:set_record(record)
    snap, err = self.server:call("subscribeSession", params)
  end
  if err then
    return nil, err
  end
  local sub = self:_subscribe_local("session", snap.subscriptionId)
  local paged, page_err = self:_whole_snapshot(snap)
  if not paged then
    self.server:release(sub.id, true)
    self.subs.session = nil
    return nil, page_err
  end
  local logged, list_err
  if not self.loaded_once then
    logged, list_err = self:_list_recent(snap.lastSavedOrdinal)
  else
    logged, list_err = self:_list_after(self.last_ordinal, snap.lastSavedOrdinal)
  end
  if not logged then
    self.server:release(sub.id, true)
    self.subs.session = nil
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
    local has_items = events.index_of(logged, function(e)
      return e.item.turnId == previous
    end)
    if not has_items then
      self:add_footer(turns[previous])
    end
  end
  self:append_saved(logged, turns)
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
  -- what waits now, in the main session and its sub-agents' (events after the snapshot follow)
  self.approvals = {}
  for _, waiting in ipairs(snap.pendingApprovals or {}) do
    events.add_approval(self, waiting.itemId, waiting.sessionId, waiting.approval)
  end
  self.pending = {}
  for _, pending in ipairs(snap.pendingInputs or {}) do
    table.insert(self.pending, pending)
  end
  -- the state and context now (events queued since the subscription bring them forward)
  local details = self.server:call("getSessionDetails", params)
  if details and details.info then
    self:set_info(details.info)
  end
  local usage = self.server:call("getSessionContextUsage", params)
  if usage and usage.nextRequest and self.context.source == "unknown" then
    self.context = usage.nextRequest
  end
  self:_loaded("session", sub)
  return true
end

local RETRIES = 5 -- while the runtime host restarts (its front answers runtimeStopped meanwhile)

--- Inside a task: subscribes and loads everything; reports failures.
function Conversation:sync()
  self.syncing = true
  local ok, err
  local attempt = 0
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
    if not ok and err.kind == "runtimeStopped" and not self.server.dead and attempt < RETRIES then
      attempt = attempt + 1
      async.sleep(200 * attempt)
      self.again = true
    end
  until not self.again or (not ok and err.kind ~= "runtimeStopped")
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
