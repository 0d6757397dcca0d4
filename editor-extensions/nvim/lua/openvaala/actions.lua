--- What the commands do. Each function starts a task and returns at once: the editor never waits
--- for the server. Failures are reported with vim.notify.
local async = require("openvaala.async")
local client = require("openvaala.client")
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

local function first_line(text, max)
  text = (text or ""):gsub("%s+", " ")
  max = max or 60
  return #text > max and (text:sub(1, max - 1) .. "…") or text
end

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
  if not conv and not view.conversation_of() and not conversation.last() then
    conv = create(nil, { focus = false })
  else
    conv = target(conv)
  end
  if not conv then
    return
  end
  local _, err = conv.server:call("submitInput", {
    conversationId = conv.id,
    content = { { type = "text", text = text } },
    inputId = util.input_id(),
    mode = opts.mode,
  })
  if err then
    if err.kind == "noModelConfigured" or err.code == -32013 then
      return util.error(util.NO_MODEL)
    end
    return util.request_error("sending", err)
  end
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

--- Picks a conversation (`archived`: the archived ones) and opens it.
M.list = task(function(archived)
  local server = client.ready()
  if not server then
    return
  end
  local page, err = server:call("listConversations", { limit = 200, order = "desc", archived = archived == true })
  if err then
    return util.request_error("listing the conversations", err)
  end
  local entry = pick(page.items or {}, archived and "openvaala: archived conversations" or "openvaala: conversations", function(e)
    local record = e.conversation
    return ("%s %s  [%s]"):format(e.running and "●" or " ", title_of(record), record.agentName or "")
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
  ui.compose(title, opts.context, function(written)
    M.send(written, { conv = conv, mode = opts.mode })
  end)
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

--- The text of lines `line1`–`line2` of `buf`, as context for a message.
function M.selection_context(buf, line1, line2)
  local lines = vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  local name = vim.api.nvim_buf_get_name(buf)
  local where = name ~= "" and vim.fn.fnamemodify(name, ":.") or ("buffer " .. buf)
  local range = line1 == line2 and ("line " .. line1) or ("lines %d-%d"):format(line1, line2)
  return ("From `%s`, %s:\n```%s\n%s\n```"):format(where, range, vim.bo[buf].filetype, table.concat(lines, "\n"))
end

return M
