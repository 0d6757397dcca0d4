--- Coroutines for the callback APIs (LSP requests, vim.ui): code that reads top to bottom and
--- never blocks the editor. `run` starts a task; inside it, `await` suspends until a callback fires.
local M = {}

local unpack = unpack or table.unpack

local function pack(...)
  return { n = select("#", ...), ... }
end

local function report(co, err)
  vim.notify("openvaala: " .. debug.traceback(co, tostring(err)), vim.log.levels.ERROR, { title = "openvaala" })
end

local function resume(co, ...)
  local ok, err = coroutine.resume(co, ...)
  if not ok then
    report(co, err)
  end
end

--- Runs `fn(...)` as a task; an error in it is reported with vim.notify.
---@param fn function
function M.run(fn, ...)
  resume(coroutine.create(fn), ...)
end

--- Calls `fn(..., callback)` and returns what the callback gets, suspending the task until then.
--- A callback called at once (as some `vim.ui.select` pickers do) is fine too.
---@param fn function
function M.await(fn, ...)
  local co = coroutine.running()
  assert(co, "openvaala: await outside a task")
  local args = pack(...)
  local state = "calling" ---@type "calling"|"suspended"|"done"
  local early
  args.n = args.n + 1
  args[args.n] = function(...)
    if state == "calling" then
      state, early = "done", pack(...)
    elseif state == "suspended" then
      state = "done"
      resume(co, ...)
    end -- a second call of the callback is ignored
  end
  fn(unpack(args, 1, args.n))
  if early then
    return unpack(early, 1, early.n)
  end
  state = "suspended"
  return coroutine.yield()
end

--- Inside a task: resumes after `ms` milliseconds.
function M.sleep(ms)
  M.await(function(cb)
    vim.defer_fn(cb, ms)
  end)
end

--- `vim.ui.select` inside a task: returns the chosen item (nil when cancelled) and its index.
function M.select(items, opts)
  return M.await(vim.ui.select, items, opts)
end

--- `vim.ui.input` inside a task: returns the text (nil when cancelled).
function M.input(opts)
  return M.await(vim.ui.input, opts)
end

return M
