-- A small harness for the plugin's end-to-end cases in real headless Neovim: checks recorded as
-- JSON for pytest (tests/e2e/test_neovim_plugin.py), waits that keep the event loop running, the
-- scripted fake model (tests/fake_model_cli.py) as a process, and stand-ins for vim.ui pickers.
local H = {}

local results = { checks = {}, notifications = {}, pickers = {}, error = nil }
H.results = results

local function env(name)
  return assert(os.getenv(name), name .. " is not set")
end

H.repo = env("OPENVAALA_TEST_REPO")
H.home = env("OPENVAALA_HOME")

local Failure = {}

--- Records a check; a failed one ends the case.
function H.check(name, ok, detail)
  table.insert(results.checks, { name = name, ok = ok and true or false, detail = detail and tostring(detail) or nil })
  if not ok then
    error(setmetatable({ message = ("%s%s"):format(name, detail and (": " .. tostring(detail)) or "") }, Failure), 2)
  end
end

function H.equal(name, actual, expected)
  H.check(name, vim.deep_equal(actual, expected), ("expected %s, got %s"):format(vim.inspect(expected), vim.inspect(actual)))
end

--- Waits for `cond()` while Neovim runs its event loop; a timeout fails the check `what`.
function H.wait(what, cond, timeout_ms, detail)
  local ok = vim.wait(timeout_ms or 20000, function()
    return cond() and true or false
  end, 10)
  if not ok then
    H.check("waiting for " .. what, false, detail and detail() or "timed out")
  end
end

-- vim.notify is recorded (and still printed, for the log).
vim.notify = function(msg, level)
  table.insert(results.notifications, { message = tostring(msg), level = level or vim.log.levels.INFO })
  io.stderr:write(("[notify %s] %s\n"):format(level or "", tostring(msg)))
end

--- The first notification containing `text` (plain text, not a pattern), at `level` if given.
function H.notified(text, level)
  for _, n in ipairs(results.notifications) do
    if n.message:find(text, 1, true) and (not level or n.level == level) then
      return n
    end
  end
end

-- vim.ui pickers: each call takes the next answer from a queue, as a user with a picker would.
local selects, inputs = {}, {}

--- Queues an answer for the next vim.ui.select: `fn(items, labels, opts)` returns an index (or
--- nil to cancel). `immediate` answers synchronously (some pickers do), else on the next tick.
function H.on_select(fn, immediate)
  table.insert(selects, { fn = fn, immediate = immediate })
end

function H.on_input(text)
  table.insert(inputs, text)
end

vim.ui.select = function(items, opts, on_choice)
  opts = opts or {}
  local labels = vim.tbl_map(function(item)
    return opts.format_item and opts.format_item(item) or tostring(item)
  end, items)
  table.insert(results.pickers, { prompt = opts.prompt, labels = labels })
  local answer = table.remove(selects, 1)
  if not answer then
    H.check("an answer queued for the picker " .. tostring(opts.prompt), false, vim.inspect(labels))
  end
  local index = answer.fn(items, labels, opts)
  local function choose()
    on_choice(index and items[index] or nil, index)
  end
  if answer.immediate then
    choose()
  else
    vim.schedule(choose)
  end
end

vim.ui.input = function(opts, on_confirm)
  local text = table.remove(inputs, 1)
  vim.schedule(function()
    on_confirm(text)
  end)
end

--- The index of the first label containing `text`.
function H.label(text)
  return function(_, labels)
    for i, label in ipairs(labels) do
      if label:find(text, 1, true) then
        return i
      end
    end
    H.check("a picker entry with " .. text, false, vim.inspect(labels))
  end
end

function H.picker(prompt_pattern)
  for i = #results.pickers, 1, -1 do
    if (results.pickers[i].prompt or ""):find(prompt_pattern) then
      return results.pickers[i]
    end
  end
end

-- Helper processes that answer one JSON line per command: the fake model, a second editor

local Lines = {}
Lines.__index = Lines

--- Starts `argv` and waits for its first line (decoded into `.info`).
local function line_process(what, argv, class)
  local proc = setmetatable({ lines = {}, partial = "", what = what }, class)
  proc.proc = vim.system(argv, {
    stdin = true,
    stdout = function(_, data)
      if data then
        proc.partial = proc.partial .. data
        while true do
          local line, rest = proc.partial:match("^([^\n]*)\n(.*)$")
          if not line then
            break
          end
          table.insert(proc.lines, line)
          proc.partial = rest
        end
      end
    end,
    stderr = function(_, data)
      if data then
        io.stderr:write(data)
      end
    end,
  })
  H.wait(what .. " to start", function()
    return #proc.lines >= 1
  end, 15000)
  proc.info = vim.json.decode(proc.lines[1])
  return proc
end

--- Sends one command and returns its answer (waits up to `timeout_ms`).
function Lines:send(command, timeout_ms)
  local before = #self.lines
  self.proc:write(vim.json.encode(command) .. "\n")
  H.wait(self.what .. "'s answer to " .. vim.json.encode(command):sub(1, 120), function()
    return #self.lines > before
  end, timeout_ms or 10000)
  return vim.json.decode(self.lines[before + 1])
end

function Lines:stop()
  if self.proc then
    pcall(self.proc.write, self.proc, nil)
    pcall(self.proc.wait, self.proc, 5000)
    self.proc = nil
  end
end

local Model = setmetatable({}, { __index = Lines })
Model.__index = Model

--- Starts tests/fake_model_cli.py and waits for its address.
function H.fake_model()
  local model = line_process("the fake model", { env("OPENVAALA_TEST_PYTHON"), H.repo .. "/tests/fake_model_cli.py" }, Model)
  H.model = model
  return model
end

function Model:send(command)
  local answer = Lines.send(self, command)
  H.check("the fake model took the command", not answer.error, answer.error)
  return answer
end

--- Queues one streamed response: steps as in tests/fake_model_cli.py.
function Model:enqueue(steps)
  self:send({ enqueue = steps })
end

function Model:requests()
  return self:send({ requests = true }).requests
end

local Peer = setmetatable({}, { __index = Lines })
Peer.__index = Peer

--- A second editor on this project (tests/e2e/nvim_plugin/peer_cli.py: the tests' Python
--- LspClient on `openvaala-lsp` in its default mode, so the same shared runtime host as this
--- Neovim's), initialized with `options` as its initializationOptions.openvaala.
function H.peer(options)
  local peer = line_process("the second editor", { env("OPENVAALA_TEST_PYTHON"), env("OPENVAALA_TEST_DIR") .. "/peer_cli.py" }, Peer)
  H.peers = H.peers or {}
  table.insert(H.peers, peer)
  local answer = Lines.send(peer, { start = { folder = vim.fn.getcwd(), options = options or vim.empty_dict() } }, 30000)
  H.check("the second editor initialized", answer.result, vim.inspect(answer.error))
  peer.initialized = answer.result
  return peer
end

--- `openvaala/<method>` from the second editor; its result (a failed request fails the case).
function Peer:call(method, params)
  local answer = Lines.send(self, { call = method, params = params or vim.empty_dict() }, 30000)
  H.check("the second editor's " .. method .. " answered", answer.result ~= nil, vim.inspect(answer.error))
  return answer.result
end

--- `openvaala/<method>` from the second editor, expecting an error: returns it.
function Peer:call_error(method, params)
  local answer = Lines.send(self, { call = method, params = params or vim.empty_dict() }, 30000)
  H.check("the second editor's " .. method .. " failed", answer.error ~= nil, vim.inspect(answer.result))
  return answer.error
end

--- The next session event of `type` the second editor got whose fields equal `match`.
function Peer:wait(kind, match, timeout_s)
  timeout_s = timeout_s or 20
  local answer = Lines.send(self, { wait = kind, match = match or vim.empty_dict(), timeout = timeout_s }, timeout_s * 1000 + 5000)
  if not answer.event then
    local seen = Lines.send(self, { events = true })
    H.check("the second editor got " .. kind, false, vim.inspect(answer.error) .. "; it got " .. vim.inspect(seen.events))
  end
  return answer.event
end

--- The fake model as a `setDefinitions` model (the one `write_config` writes as TOML).
function H.model_definition(model)
  return {
    ref = { provider = "fake", name = "fake-model" },
    api = "openai-chat",
    baseUrl = model.info.baseUrl,
    apiKeyEnv = "FAKE_API_KEY",
    contextWindow = 8000,
  }
end

--- Writes the user config with the fake model (and `extra` TOML), as `openvaala setup` would.
function H.write_config(model, extra)
  local lines = {
    "[[models]]",
    'ref = "fake/fake-model"',
    'api = "openai-chat"',
    ('baseUrl = "%s"'):format(model.info.baseUrl),
    'apiKeyEnv = "FAKE_API_KEY"',
    "contextWindow = 8000",
    "",
  }
  vim.list_extend(lines, vim.split(extra or "", "\n", { plain = true }))
  vim.fn.writefile(lines, H.home .. "/config.toml")
end

-- Buffers

--- The conversation buffers, newest last.
function H.conversation_buffers()
  local found = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_name(buf):find("^openvaala://conversation/") then
      table.insert(found, buf)
    end
  end
  return found
end

function H.text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

function H.count(text, needle)
  local n, from = 0, 1
  while true do
    local i = text:find(needle, from, true)
    if not i then
      return n
    end
    n, from = n + 1, i + #needle
  end
end

--- Waits until the buffer's text satisfies `pred(text)`; shows the text on a timeout.
function H.wait_text(what, buf, pred, timeout_ms)
  H.wait(what, function()
    return vim.api.nvim_buf_is_valid(buf) and pred(H.text(buf))
  end, timeout_ms, function()
    return vim.api.nvim_buf_is_valid(buf) and ("buffer:\n" .. H.text(buf)) or "buffer gone"
  end)
  return H.text(buf)
end

--- A `wait_text` predicate: the buffer shows `n` completed turns.
function H.turns_completed(n)
  return function(text)
    return H.count(text, "✓ turn completed") == n
  end
end

function H.contains(needle)
  return function(text)
    return text:find(needle, 1, true) ~= nil
  end
end

--- Runs `:Openvaala new` (one agent: no picker) and returns the new conversation's buffer.
function H.new_conversation(args)
  local before = #H.conversation_buffers()
  vim.cmd("Openvaala new" .. (args and (" " .. args) or ""))
  H.wait("a conversation buffer", function()
    return #H.conversation_buffers() > before
  end)
  local buf = H.conversation_buffers()[#H.conversation_buffers()]
  local conv = require("openvaala.view").conversation_of(buf)
  H.wait("the conversation to load", function()
    return conv.status == "ready"
  end)
  return buf, conv
end

--- The openvaala server of this Neovim (started by the plugin).
function H.server()
  return require("openvaala.client").running()
end

--- Starts the plugin's server for the current buffer and waits for initialize.
function H.start_server()
  local server = assert(require("openvaala.client").get())
  H.wait("initialize", function()
    return server.ready
  end)
  return server
end

--- Waits for the answer to a request sent outside the plugin's commands.
function H.request(method, params)
  local done, err, result = false, nil, nil
  H.server():request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  H.wait("the answer to " .. method, function()
    return done
  end)
  H.check(method .. " answered", not err, err and err.message)
  return result
end

--- Fails the case when the server does not advertise `method` (every method the plugin uses is
--- built now, so a missing one is a regression, not a reason to skip).
function H.require_method(method)
  H.check("the server advertises " .. method, H.server():supports(method))
end

-- Running a case

--- Globals set by the plugin's files (init.lua records who set each new global).
local function leaked_globals()
  local leaked = {}
  for key, source in pairs(package.loaded["openvaala_test.globals"] or {}) do
    if source:find("lua/openvaala/", 1, true) or source:find("plugin/openvaala.lua", 1, true) then
      table.insert(leaked, ("%s (%s)"):format(key, source))
    end
  end
  table.sort(leaked)
  return leaked
end

local function stop_everything()
  for _, client in ipairs(vim.lsp.get_clients({ name = "openvaala" })) do
    client:stop()
  end
  vim.wait(5000, function()
    return #vim.lsp.get_clients({ name = "openvaala" }) == 0
  end, 20)
  for _, peer in ipairs(H.peers or {}) do
    peer:stop()
  end
  if H.model then
    H.model:stop()
  end
end

--- Runs tests/e2e/nvim_plugin/cases/<name>.lua, writes the results for pytest, quits.
function H.run(name)
  local path = env("OPENVAALA_TEST_DIR") .. "/cases/" .. name .. ".lua"
  local started = vim.uv.hrtime()
  local ok, err = xpcall(dofile, function(e)
    if getmetatable(e) == Failure then
      return e
    end
    return debug.traceback(tostring(e), 2)
  end, path)
  if ok then
    local ok_leak, leaked = pcall(leaked_globals)
    if ok_leak then
      table.insert(results.checks, { name = "no globals leaked", ok = #leaked == 0, detail = table.concat(leaked, ", ") })
    end
  else
    results.error = type(err) == "table" and err.message or tostring(err)
  end
  pcall(stop_everything)
  results.seconds = (vim.uv.hrtime() - started) / 1e9
  local file = assert(io.open(env("OPENVAALA_TEST_RESULT"), "w"))
  file:write(vim.json.encode(results))
  file:close()
  vim.cmd("qa!")
end

return H
