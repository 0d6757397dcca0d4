--- One `openvaala-lsp` per project root, hosted by Neovim's LSP client: asynchronous requests,
--- the methods the server advertises, and notifications routed by subscription id.
local async = require("openvaala.async")
local config = require("openvaala.config")
local util = require("openvaala.util")

local M = {}

M.PROTOCOL_VERSION = "0.3" -- and the parts of 0.4 the server lists in `methods`
M.leaving = false -- Neovim is quitting: servers that exit are not reconnected

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("openvaala.client", { clear = true }),
  callback = function()
    M.leaving = true
  end,
})
local PREFIX = "openvaala/"
local MAX_HELD = 1000 -- notifications held for subscriptions whose subscribe answer is still on its way

---@class openvaala.Error
---@field message string
---@field code integer?
---@field kind string? `data.kind` of the JSON-RPC error

---@class openvaala.Server
---@field root string
---@field client_id integer?
---@field ready boolean initialized
---@field dead boolean the process exited
---@field info table `capabilities.experimental.openvaala` of the initialize result
---@field methods table<string, true>
---@field path string where the server command was found
---@field openvaala_id string this connection's `clientId` (sent in initializationOptions)
local Server = {}
Server.__index = Server

---@type table<string, openvaala.Server> by root directory
local by_root = {}
---@type table<integer, openvaala.Server> by LSP client id
local by_client = {}

---@param err table?
---@return openvaala.Error?
local function normalize(err)
  if err == nil then
    return nil
  end
  local data = type(err.data) == "table" and err.data or {}
  return { message = err.message or tostring(err), code = err.code, kind = data.kind, data = data }
end

--- Routes a notification to the handler of its subscription.
function Server:_route(method, params)
  local id = type(params) == "table" and params.subscriptionId
  if not id then
    return
  end
  local handler = self.subs[id]
  if handler then
    handler(method, params)
  elseif not self.released[id] then
    -- the subscribe answer is still being handled: keep it for the subscriber
    if self.held_count >= MAX_HELD then
      self.held, self.held_count = {}, 0
    end
    self.held[id] = self.held[id] or {}
    table.insert(self.held[id], { method, params })
    self.held_count = self.held_count + 1
  end
end

local function route(_, params, ctx)
  local server = by_client[ctx.client_id]
  if server then
    server:_route(ctx.method, params)
  end
end

local handlers = {
  ["openvaala/conversationEvent"] = route,
  ["openvaala/sessionEvent"] = route,
  ["openvaala/runningConversations"] = route,
  ["openvaala/subscriptionClosed"] = route,
  ["openvaala/callClientTool"] = function()
    return nil, vim.lsp.rpc_response_error(-32601, "this Neovim serves no client tools")
  end,
}

function Server:_on_init(client, result)
  local experimental = result.capabilities and result.capabilities.experimental or {}
  self.info = type(experimental) == "table" and experimental.openvaala or {}
  self.methods = {}
  for _, method in ipairs(self.info.methods or {}) do
    self.methods[method] = true
  end
  self.ready = true
  self.client_id = client.id
  local waiting = self.waiting
  self.waiting = {}
  for _, fn in ipairs(waiting) do
    fn(true)
  end
end

function Server:_on_exit(code, signal)
  local was_ready = self.ready
  self.dead, self.ready = true, false
  if by_root[self.root] == self then
    by_root[self.root] = nil
  end
  if self.client_id then
    by_client[self.client_id] = nil
  end
  local waiting = self.waiting
  self.waiting = {}
  for _, fn in ipairs(waiting) do
    fn(false)
  end
  local reason = ("openvaala-lsp exited (code %s%s)"):format(code, signal ~= 0 and (", signal " .. signal) or "")
  -- a clean exit follows a shutdown request (:LspStop, Neovim quitting): nothing to reconnect
  local crashed = was_ready and (code ~= 0 or (signal or 0) ~= 0) and not M.leaving
  for _, fn in ipairs(self.exit_listeners) do
    fn(reason, crashed)
  end
  if not was_ready then
    util.error(reason .. " before it answered `initialize`: run `openvaala doctor` in a terminal, or see :LspLog")
  end
end

--- Calls `fn(ok)` once the server is initialized (ok = true) or gone (ok = false).
function Server:when_ready(fn)
  if self.ready then
    fn(true)
  elseif self.dead then
    fn(false)
  else
    table.insert(self.waiting, fn)
  end
end

function Server:stopped_error()
  return { message = "openvaala-lsp is not running", kind = "runtimeStopped" }
end

--- Sends a request; `callback(err, result)` gets an `openvaala.Error` or the result.
---@param method string `openvaala/…`, or without the prefix
---@param params table?
---@param callback fun(err: openvaala.Error?, result: any)
function Server:request(method, params, callback)
  if not method:find("/", 1, true) then
    method = PREFIX .. method
  end
  if params == nil or (type(params) == "table" and next(params) == nil) then
    params = vim.empty_dict()
  end
  self:when_ready(function(ok)
    local client = ok and vim.lsp.get_client_by_id(self.client_id)
    if not client then
      return callback(self:stopped_error())
    end
    local sent = client:request(method, params, function(err, result)
      callback(normalize(err), result)
    end)
    if not sent then
      callback(self:stopped_error())
    end
  end)
end

--- `request` inside a task: returns `result, err`.
function Server:call(method, params)
  local err, result = async.await(function(cb)
    self:request(method, params, cb)
  end)
  return result, err
end

--- Inside a task: waits for initialize; false when the server is gone.
function Server:wait_ready()
  return async.await(function(cb)
    self:when_ready(cb)
  end)
end

--- Whether the server advertises `method` (`openvaala/…` or without the prefix).
function Server:supports(method)
  if not method:find("/", 1, true) then
    method = PREFIX .. method
  end
  return self.methods ~= nil and self.methods[method] == true
end

--- Routes the notifications of subscription `id` to `handler(method, params)`, starting with
--- any that arrived before the subscriber knew the id.
function Server:subscribe(id, handler)
  self.subs[id] = handler
  local held = self.held[id]
  self.held[id] = nil
  for _, message in ipairs(held or {}) do
    self.held_count = self.held_count - 1
    if self.subs[id] ~= handler then
      break
    end
    handler(message[1], message[2])
  end
end

--- Stops routing subscription `id` (and asks the server to end it when `unsubscribe`).
function Server:release(id, unsubscribe)
  if not id then
    return
  end
  self.subs[id] = nil
  self.released[id] = true
  self.held[id] = nil
  if unsubscribe and not self.dead then
    self:request("unsubscribe", { subscriptionId = id }, function() end)
  end
end

--- `fn(reason, crashed)` runs when the server process exits (`crashed`: it was not asked to).
function Server:on_exit(fn)
  table.insert(self.exit_listeners, fn)
end

--- The project root of a buffer: the nearest directory with a root marker, else the cwd.
---@param bufnr integer?
function M.root(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local root
  if vim.bo[bufnr].buftype == "" then -- a file; not a conversation, help or terminal buffer
    local ok, found = pcall(vim.fs.root, bufnr, config.options.root_markers)
    root = ok and found or nil
  end
  return vim.fs.normalize(root or vim.fn.getcwd())
end

--- The server for `root` if one runs.
---@param root string?
---@return openvaala.Server?
function M.running(root)
  if root then
    return by_root[root]
  end
  local _, server = next(by_root)
  return server
end

local client_ids = 0

--- A `clientId` for one connection: unique on this machine, so `approvalResolved.by.clientId`
--- tells this editor's answers from another's (even another Neovim's).
local function new_client_id()
  client_ids = client_ids + 1
  return ("nvim-%d-%x-%d"):format(vim.uv.os_getpid(), vim.uv.hrtime(), client_ids)
end

local function init_options(client_id)
  local opts = config.options
  local openvaala = { clientId = client_id, clientName = opts.client_name, approvals = opts.approvals == true }
  if opts.event_batch_ms then
    openvaala.eventBatchMs = opts.event_batch_ms
  end
  return { openvaala = openvaala }
end

--- The server for the project of `bufnr`, started if needed. Returns nil and a message (meant for
--- the user) when it cannot start, e.g. when `openvaala-lsp` is missing.
---@param bufnr integer?
---@param root string? the project root (default: the buffer's)
---@return openvaala.Server?, string?
function M.get(bufnr, root)
  root = root or M.root(bufnr)
  local existing = by_root[root]
  if existing and not existing.dead then
    return existing
  end
  local cmd = config.options.cmd
  local path = cmd[1] and vim.fn.exepath(cmd[1]) or ""
  if path == "" then
    return nil, util.missing_server(cmd)
  end
  local server = setmetatable({
    root = root,
    path = path,
    openvaala_id = new_client_id(),
    ready = false,
    dead = false,
    info = {},
    waiting = {},
    subs = {},
    held = {},
    held_count = 0,
    released = {},
    exit_listeners = {},
  }, Server)
  local ok, client_id = pcall(vim.lsp.start, {
    name = "openvaala",
    cmd = cmd,
    cmd_env = config.options.cmd_env,
    root_dir = root,
    init_options = init_options(server.openvaala_id),
    handlers = handlers,
    on_init = function(client, result)
      server:_on_init(client, result)
    end,
    on_exit = function(code, signal)
      server:_on_exit(code, signal)
    end,
  }, {
    attach = false, -- openvaala needs no buffers
    reuse_client = function()
      return false -- one per root, tracked here
    end,
  })
  if not ok or not client_id then
    return nil, ("could not start %s: %s"):format(table.concat(cmd, " "), ok and "see :LspLog" or client_id)
  end
  server.client_id = client_id
  by_client[client_id] = server
  by_root[root] = server
  return server
end

--- Inside a task: the initialized server for `bufnr`; reports why not and returns nil otherwise.
---@param bufnr integer?
---@return openvaala.Server?
function M.ready(bufnr)
  local server, err = M.get(bufnr)
  if not server then
    util.error(err)
    return nil
  end
  if not server:wait_ready() then
    return nil -- its exit was reported
  end
  return server
end

return M
