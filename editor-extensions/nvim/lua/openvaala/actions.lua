--- What the commands do. Each function starts a task and returns at once: the editor never waits
--- for the server. Failures are reported with vim.notify.
local async = require("openvaala.async")
local changes = require("openvaala.changes")
local client = require("openvaala.client")
local context = require("openvaala.context")
local conversation = require("openvaala.conversation")
local events = require("openvaala.events")
local ui = require("openvaala.ui")
local util = require("openvaala.util")
local view = require("openvaala.view")

local M = {}

---@type string[] the agents last listed, for completion
M.agent_names = {}

local function task(fn)
  return function(...)
    async.run(fn, ...)
  end
end

local function title_of(record)
  return (record.title and record.title ~= "") and record.title or "(untitled)"
end

local first_line = util.first_line

--- Inside a task: whether the server answers `method`; says so when it does not.
local function supported(server, method)
  if server:supports(method) then
    return true
  end
  util.error(util.not_supported("openvaala/" .. method))
  return false
end

--- Inside a task: a conversation shown and subscribed.
local function show(server, id, record, opts)
  local conv = conversation.of(server, id, record)
  view.show(conv, opts)
  conv:attach()
  return conv
end

--- Inside a task: the conversation to act on (given, the current buffer's, or the last used),
--- reattached when its server went away. Nil (with a message) when there is none.
---@param conv openvaala.Conversation?
---@return openvaala.Conversation?
local function target(conv)
  conv = conv or view.conversation_of() or conversation.last()
  if not conv then
    util.error("no conversation: start one with :Openvaala new, or pick one with :Openvaala list")
    return nil
  end
  if conv.status == "deleted" then
    util.error("this conversation was deleted")
    return nil
  end
  if not conversation.is_current(conv) then -- its buffer was closed (e.g. from a message buffer)
    local server = client.ready()
    if not server then
      return nil
    end
    conv = show(server, conv.id, nil, { focus = false })
    return conv.status == "ready" and conv or nil
  end
  if conv.server.dead or conv.status == "disconnected" then
    local server = client.ready()
    if not server or not conv:attach(server) then
      return nil
    end
  end
  conversation.touch(conv)
  return conv
end

--- Inside a task: a new conversation with the agent named `agent_name`, or one picked.
---@param agent_name string?
---@param opts {focus: boolean?}? how to show it
---@return openvaala.Conversation?
local function create(agent_name, opts)
  local server = client.ready()
  if not server then
    return nil
  end
  local listed, err = server:call("listAgents")
  if err then
    return util.request_error("listing the agents", err)
  end
  local agents = listed.agents or {}
  M.agent_names = vim.tbl_map(function(a)
    return a.name
  end, agents)
  local agent
  if agent_name and agent_name ~= "" then
    for _, candidate in ipairs(agents) do
      if candidate.name == agent_name then
        agent = candidate
      end
    end
    if not agent then
      return util.error(("no agent named %q (agents: %s)"):format(agent_name, table.concat(M.agent_names, ", ")))
    end
  elseif #agents > 1 then
    agent = async.select(agents, {
      prompt = "openvaala: new conversation with",
      format_item = function(a)
        local label = a.description and a.description ~= "" and (a.name .. " — " .. a.description) or a.name
        local policy = util.policy_text(a) -- as defined; none: the runtime's defaults
        return policy and (label .. "  [" .. policy .. "]") or label
      end,
    })
    if not agent then
      return nil
    end
  else
    agent = agents[1]
  end
  local params = agent and { agentName = agent.name } or nil
  local models = server:call("listModels", params)
  if models and #(models.models or {}) == 0 then
    util.warn(util.NO_MODEL)
  end
  local record, create_err = server:call("createConversation", params)
  if create_err then
    return util.request_error("creating a conversation", create_err)
  end
  return show(server, record.id, record, opts)
end

--- Inside a task: submits `text` to `conv` (or the conversation in use, or a new one).
---@param text string
---@param opts {conv: openvaala.Conversation?, mode: string?}?
local function submit(text, opts)
  opts = opts or {}
  local conv = opts.conv
  local created = false
  if not conv and not view.conversation_of() and not conversation.last() then
    conv = create(nil, { focus = false })
    created = conv ~= nil
  else
    conv = target(conv)
  end
  if not conv then
    return
  end
  -- what the model reads: the text, what :Openvaala add attached, the files it @-mentions
  local message, sent = context.message(text, conv.server.root)
  local _, err = conv.server:call("submitInput", {
    conversationId = conv.id,
    content = { { type = "text", text = message } },
    inputId = util.input_id(),
    mode = opts.mode,
  })
  if err then
    if created then -- a conversation made for this message: not left behind empty
      conv.server:call("deleteConversation", { conversationId = conv.id })
      view.close(conv)
      conv:forget()
    end
    if err.kind == "noModelConfigured" or err.code == -32013 then
      return util.error(util.NO_MODEL)
    end
    return util.request_error("sending", err)
  end
  sent()
  if conversation.is_current(conv) then -- unless its buffer was closed while it was sent
    view.show(conv, { focus = false })
  end
  return conv
end

--- Inside a task: pick one of `list` (none when empty: says `empty`).
local function pick(list, prompt, format_item, empty)
  if #list == 0 then
    util.info(empty)
    return nil
  end
  return async.select(list, { prompt = prompt, format_item = format_item })
end

local function pending_label(pending)
  return ("%s: %s"):format(pending.mode or "queue", first_line(util.text_of(pending.item)))
end

-- The actions

M.new = task(function(agent_name)
  create(agent_name)
end)

M.PREVIEW_SQL = [[
SELECT conversation_id, count(*) AS items,
       arg_min(left(json_extract_string(payload, '$.content[0].text'), 200), ordinal)
         FILTER (WHERE type = 'userMessage') AS first_message
FROM items
WHERE conversation_id IN (SELECT unnest(string_split(?, ',')))
GROUP BY conversation_id]]

--- Inside a task: per conversation id, `{items, first}`: how many items it has and its first
--- message (one query on the history); nil when the server cannot say.
local function previews(server, entries)
  if #entries == 0 or not server:supports("query") then
    return nil
  end
  local ids = vim.tbl_map(function(e)
    return e.conversation.id
  end, entries)
  local result = server:call("query", { sql = M.PREVIEW_SQL, parameters = { table.concat(ids, ",") }, limit = #ids })
  if not result then
    return nil
  end
  local found = {}
  for _, row in ipairs(result.rows or {}) do
    found[row[1]] = { items = row[2], first = row[3] ~= vim.NIL and row[3] or nil }
  end
  return found
end

--- A picker line: `● Fix the parser · “fix the parser in src/…” · 5 min ago  [agent]`.
function M.list_label(entry, preview, show_agent)
  local record = entry.conversation
  local title = record.title and record.title ~= "" and record.title or nil
  local first = preview and preview.first and util.first_line(preview.first, 60)
  local parts = { title or (first and ("“" .. first .. "”")) or "(untitled)" }
  if title and first then
    table.insert(parts, "“" .. first .. "”")
  end
  local when = util.relative_time(entry.lastActivityAt or record.updatedAt or record.createdAt)
  if when ~= "" then
    table.insert(parts, when)
  end
  local label = (entry.running and "● " or "  ") .. table.concat(parts, " · ")
  if show_agent and record.agentName then
    label = label .. "  [" .. record.agentName .. "]"
  end
  return label
end

--- Picks a conversation (`archived`: the archived ones) and opens it. Conversations without a
--- single item (a send that failed) are not listed, unless shown here.
M.list = task(function(archived)
  local server = client.ready()
  if not server then
    return
  end
  local page, err = server:call("listConversations", { limit = 200, order = "desc", archived = archived == true })
  if err then
    return util.request_error("listing the conversations", err)
  end
  local found = previews(server, page.items or {})
  local entries, agents, hidden = {}, {}, 0
  for _, entry in ipairs(page.items or {}) do
    local preview = found and (found[entry.conversation.id] or { items = 0 })
    local shown_here = conversation.is_current(conversation.of_id(entry.conversation.id))
    if preview and preview.items == 0 and not entry.running and not shown_here then
      hidden = hidden + 1
    else
      table.insert(entries, entry)
      agents[entry.conversation.agentName or ""] = true
    end
  end
  local show_agent = vim.tbl_count(agents) > 1
  local prompt = archived and "openvaala: archived conversations" or "openvaala: conversations"
  if hidden > 0 then
    prompt = prompt .. (" (%d empty not shown)"):format(hidden)
  end
  local entry = pick(entries, prompt, function(e)
    return M.list_label(e, found and found[e.conversation.id], show_agent)
  end, archived and "no archived conversations" or "no conversations yet: :Openvaala new")
  if entry then
    local record, open_err = server:call("openConversation", { conversationId = entry.conversation.id })
    if open_err then
      return util.request_error("opening the conversation", open_err)
    end
    show(server, record.id, record)
  end
end)

--- Opens the conversation with this id (none: pick one).
M.open = task(function(id)
  if not id or id == "" then
    local conv = view.conversation_of()
    if conv and (conv.status == "disconnected" or conv.server.dead) then
      return target(conv) -- reconnect the conversation in this buffer
    end
    return M.list()
  end
  local server = client.ready()
  if not server then
    return
  end
  local record, err = server:call("openConversation", { conversationId = id })
  if err then
    return util.request_error("opening the conversation", err)
  end
  show(server, record.id, record)
end)

--- Sends `text`; without text, opens a buffer to write it. `context` (e.g. a selection) is
--- appended to the message.
M.send = task(function(text, opts)
  opts = opts or {}
  local message = text
  if opts.context then
    message = (text and text ~= "") and (text .. "\n\n" .. opts.context) or nil
  end
  if message and message ~= "" then
    return submit(message, opts)
  end
  local conv = opts.conv or view.conversation_of() or conversation.last()
  local title = conv and ("message to " .. title_of(conv.record or { title = conv.title })) or "message to a new conversation"
  local root = conv and conv.server and conv.server.root or client.root()
  ui.compose(title, opts.context, function(written)
    M.send(written, { conv = conv, mode = opts.mode })
  end, root)
end)

--- Opens the compose buffer for a conversation.
function M.compose(conv)
  M.send(nil, { conv = conv })
end

--- With text: delivers it into the running turn. Without: picks a queued input to steer with.
M.steer = task(function(text)
  if text and text ~= "" then
    return submit(text, { mode = "steer" })
  end
  local conv = target()
  if not conv then
    return
  end
  local turn_id = conv:active_turn_id()
  if not turn_id then
    return util.info("no turn is running: :Openvaala send queues a message")
  end
  local pending = pick(conv.pending, "openvaala: steer with", pending_label, "no input is waiting")
  if pending then
    local _, err = conv.server:call("steerInput", { conversationId = conv.id, itemId = pending.item.id, turnId = turn_id })
    if err then
      util.request_error("steering", err)
    end
  end
end)

--- Stops the running turn; with text, runs it next.
M.interrupt = task(function(conv, text)
  if type(conv) == "string" then
    conv, text = nil, conv
  end
  if text and text ~= "" then
    return submit(text, { conv = conv, mode = "interrupt" })
  end
  conv = target(conv)
  if not conv then
    return
  end
  local _, err = conv.server:call("interruptTurn", { conversationId = conv.id })
  if err and err.kind == "invalidState" then
    util.info("no turn is running")
  elseif err then
    util.request_error("interrupting", err)
  end
end)

--- Picks a waiting input and withdraws it.
M.withdraw = task(function()
  local conv = target()
  if not conv then
    return
  end
  local pending = pick(conv.pending, "openvaala: withdraw", pending_label, "no input is waiting")
  if pending then
    local _, err = conv.server:call("withdrawInput", { conversationId = conv.id, itemId = pending.item.id })
    if err then
      util.request_error("withdrawing", err)
    end
  end
end)

local DECISIONS = { allowOnce = true, allowAlways = true, deny = true }

--- Answers the tool call waiting for approval (several: pick one): `decision` is allowOnce,
--- allowAlways or deny; `message` goes to the model with it.
M.answer = task(function(decision, message)
  if not DECISIONS[decision] then
    return util.error(("unknown decision %q (allowOnce, allowAlways or deny)"):format(tostring(decision)))
  end
  local conv = target()
  if not conv or not supported(conv.server, "answerApproval") then
    return
  end
  local waiting
  if #conv.approvals == 1 then
    waiting = conv.approvals[1]
  else
    waiting = pick(conv.approvals, "openvaala: answer", function(w)
      return events.approval_label(conv, w)
    end, "no approval is pending")
  end
  if not waiting then
    return
  end
  local params = { conversationId = conv.id, itemId = waiting.itemId, decision = decision }
  if message and message ~= "" then
    params.message = message
  end
  local _, err = conv.server:call("answerApproval", params)
  if err and err.kind == "invalidState" then
    util.info("that tool call was already answered (by another editor, or the turn ended)")
  elseif err and err.kind == "notFound" then
    util.info("that tool call is not waiting for approval")
  elseif err then
    return util.request_error("answering", err, "openvaala/answerApproval")
  end
end)

--- `:Openvaala approve`.
function M.approve(always)
  M.answer(always and "allowAlways" or "allowOnce")
end

--- `:Openvaala deny`.
function M.deny(message)
  M.answer("deny", message)
end

--- Picks a turn and forks the conversation after it.
M.fork = task(function()
  local conv = target()
  if not conv or not supported(conv.server, "forkConversation") then
    return
  end
  local page, err = conv.server:call("listTurns", { conversationId = conv.id, sessionId = conv.session_id, order = "desc", limit = 100 })
  if err then
    return util.request_error("listing the turns", err)
  end
  local prompts = {}
  for _, entry in ipairs(conv.log) do
    if entry.kind == "item" and entry.item.type == "userMessage" and entry.item.turnId and not prompts[entry.item.turnId] then
      prompts[entry.item.turnId] = util.text_of(entry.item)
    end
  end
  local number = {} -- newest first: the newest is turn #count
  for i, t in ipairs(page.items) do
    number[t.id] = #page.items - i + 1
  end
  local turn = pick(page.items, "openvaala: fork after turn", function(t)
    return ("%d. %s  %s"):format(number[t.id], t.status, first_line(prompts[t.id] or t.id))
  end, "no turns to fork from")
  if not turn then
    return
  end
  local record, fork_err = conv.server:call("forkConversation", { conversationId = conv.id, lastTurnId = turn.id })
  if fork_err then
    return util.request_error("forking", fork_err, "openvaala/forkConversation")
  end
  show(conv.server, record.id, record)
end)

--- Compacts the context of the conversation.
M.compact = task(function()
  local conv = target()
  if not conv or not supported(conv.server, "compactContext") then
    return
  end
  local _, err = conv.server:call("compactContext", { conversationId = conv.id })
  if err then
    return util.request_error("compacting", err, "openvaala/compactContext")
  end
end)

--- Sets the title (asks for one when not given).
M.rename = task(function(title)
  local conv = target()
  if not conv then
    return
  end
  if not title or title == "" then
    title = async.input({ prompt = "Title: ", default = conv.title })
    if not title or title == "" then
      return
    end
  end
  local _, err = conv.server:call("setConversationTitle", { conversationId = conv.id, title = title })
  if err then
    return util.request_error("renaming", err)
  end
  conv.title = title
  conv:changed()
end)

--- Archives the conversation (`unarchive`: brings it back).
M.archive = task(function(unarchive)
  local conv = target()
  if not conv then
    return
  end
  local record, err = conv.server:call("setConversationArchived", { conversationId = conv.id, archived = not unarchive })
  if err then
    return util.request_error("archiving", err)
  end
  conv:set_record(record)
  conv:changed()
  util.info(("%s %s"):format(unarchive and "unarchived" or "archived", title_of(record)))
end)

--- Deletes the conversation after a confirmation (`force`: without one).
M.delete = task(function(force)
  local conv = target()
  if not conv then
    return
  end
  local name = title_of(conv.record or { title = conv.title })
  if not force then
    local answer = async.select({ "Delete", "Keep" }, { prompt = ("Delete %q for good?"):format(name) })
    if answer ~= "Delete" then
      return
    end
  end
  local _, err = conv.server:call("deleteConversation", { conversationId = conv.id })
  if err then
    return util.request_error("deleting", err)
  end
  view.close(conv)
  conv:forget()
  util.info("deleted " .. name)
end)

--- Picks the model of the conversation's main session.
M.model = task(function()
  local conv = target()
  if not conv then
    return
  end
  local agent = conv.session and conv.session.agentName or (conv.record or {}).agentName
  local listed, err = conv.server:call("listModels", agent and { agentName = agent } or nil)
  if err then
    return util.request_error("listing the models", err)
  end
  if #(listed.models or {}) == 0 then
    return util.error(util.NO_MODEL)
  end
  local current = conv:model_name()
  local model = async.select(listed.models, {
    prompt = "openvaala: model",
    format_item = function(m)
      local name = m.ref.provider .. "/" .. m.ref.name
      local label = m.displayName and (m.displayName .. " (" .. name .. ")") or name
      return label .. (name == current and "  (current)" or "")
    end,
  })
  if not model then
    return
  end
  local session, set_err = conv.server:call("setSessionModel", {
    conversationId = conv.id,
    sessionId = conv.session_id,
    model = { model = model.ref },
  })
  if set_err then
    return util.request_error("setting the model", set_err)
  end
  conv.session = session
  conv:changed()
end)

--- Shows token usage by day and model.
M.usage = task(function()
  local server = client.ready()
  if server then
    require("openvaala.usage").show(server)
  end
end)

--- The text of lines `line1`–`line2` of `buf`, as context for a message (its path relative to
--- the project root, as the agent's tools take it).
function M.selection_context(buf, line1, line2)
  return (context.block(buf, line1, line2))
end

--- `:[range]Openvaala add`: the buffer, or those lines, go with the next message.
function M.add(buf, line1, line2)
  context.add(buf, line1, line2)
end

--- `:Openvaala add!`.
function M.clear_context()
  context.clear()
end

--- The conversation to act on, and whether the server answers `method` (said when not).
local function target_supporting(method)
  local conv = target()
  if conv and supported(conv.server, method) then
    return conv
  end
end

--- `:Openvaala changes [turn]`: the turn's changed files in the quickfix list.
M.changes = task(function(turn)
  local conv = target_supporting("getTurnDiff")
  if conv then
    changes.changes(conv, turn)
  end
end)

--- `:Openvaala diff [turn]`: a file before and after the turn, in diff mode.
M.diff = task(function(turn)
  local conv = target_supporting("getTurnDiff")
  if conv then
    changes.diff(conv, turn)
  end
end)

--- `:Openvaala undo[!]`: the files as before the last turn that changed them.
M.undo = task(function(force)
  local conv = target_supporting("revertTurn")
  if conv then
    changes.undo(conv, force)
  end
end)

--- `:Openvaala redo[!]`: the last undo, undone.
M.redo = task(function(force)
  local conv = target_supporting("revertTurn")
  if conv then
    changes.redo(conv, force)
  end
end)

return M
