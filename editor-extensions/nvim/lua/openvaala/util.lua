--- Messages to the user, and the advice that goes with each failure.
local M = {}

local TITLE = { title = "openvaala" }

function M.error(message)
  vim.notify("openvaala: " .. message, vim.log.levels.ERROR, TITLE)
end

function M.warn(message)
  vim.notify("openvaala: " .. message, vim.log.levels.WARN, TITLE)
end

function M.info(message)
  vim.notify("openvaala: " .. message, vim.log.levels.INFO, TITLE)
end

M.SETUP_ADVICE = "run `openvaala setup` in a terminal (or `openvaala` for a guided setup)"
M.NO_MODEL = "no model is configured: " .. M.SETUP_ADVICE .. ", then try again"

---@param command string[]
function M.missing_server(command)
  return ("`%s` was not found on PATH. Install openvaala from a checkout (a wheel built from it, as its README's Install says), or give its path: "
    .. "require(\"openvaala\").setup({ cmd = { \"/path/to/openvaala-lsp\" } })"):format(command[1])
end

---@param method string
function M.not_supported(method)
  return ("%s is not supported by this openvaala-lsp; update openvaala"):format(method)
end

--- Error kinds worth a sentence of their own; the others show the server's message.
local ADVICE = {
  noModelConfigured = function()
    return M.NO_MODEL
  end,
  methodNotFound = function(_, method)
    return M.not_supported(method)
  end,
  conversationNotFound = function()
    return "this conversation no longer exists"
  end,
  runtimeStopped = function(err)
    return "the openvaala runtime stopped (" .. err.message .. "); try again"
  end,
}

--- One sentence for a failed request: `<what> failed: <why>`.
---@param what string e.g. "sending"
---@param err openvaala.Error
---@param method string?
function M.describe(what, err, method)
  local advice = ADVICE[err.kind or ""]
  local why = advice and advice(err, method or what) or err.message
  if err.kind == "noModelConfigured" or err.kind == "methodNotFound" then
    return why
  end
  return ("%s failed: %s"):format(what, why)
end

function M.request_error(what, err, method)
  M.error(M.describe(what, err, method))
end

--- `1234` as `1.2k`, `200000` as `200k`.
---@param n number?
function M.tokens(n)
  n = tonumber(n) or 0
  if n >= 1e6 then
    return (("%.1fM"):format(n / 1e6):gsub("%.0M", "M"))
  elseif n >= 1e3 then
    return (("%.1fk"):format(n / 1e3):gsub("%.0k", "k"))
  end
  return tostring(math.floor(n))
end

--- The text of an item's content.
---@param item table
function M.text_of(item)
  local parts = {}
  for _, part in ipairs(item.content or {}) do
    if part.type == "text" then
      parts[#parts + 1] = part.text or ""
    elseif part.type == "image" then
      parts[#parts + 1] = ("[image %s]"):format(part.mimeType or "")
    end
  end
  return table.concat(parts)
end

--- An agent's `permissions` (from `listAgents`) as `shell: ask, default: allow`; nil when the
--- agent defines none (the runtime's defaults: the shell runs in the sandbox, leaving it asks).
function M.permissions_text(permissions)
  if type(permissions) ~= "table" then
    return nil
  end
  local parts = {}
  local tools = type(permissions.tools) == "table" and permissions.tools or {}
  local names = vim.tbl_keys(tools)
  table.sort(names)
  for _, name in ipairs(names) do
    parts[#parts + 1] = ("%s: %s"):format(name, tools[name])
  end
  if permissions.default then
    parts[#parts + 1] = "default: " .. permissions.default
  end
  return #parts > 0 and table.concat(parts, ", ") or nil
end

--- An agent's `sandbox` (from `listAgents`) as `sandbox read-only, network`; nil when the agent
--- defines none (the default: workspace-write without network).
function M.sandbox_text(sandbox)
  if type(sandbox) ~= "table" or not sandbox.mode then
    return nil
  end
  if sandbox.mode == "off" then
    return "no sandbox"
  end
  return ("sandbox %s%s"):format(sandbox.mode, sandbox.network and ", network" or "")
end

--- What an agent may do as defined (`shell: ask, default: allow · sandbox read-only`); nil when
--- it defines neither permissions nor a sandbox.
function M.policy_text(agent)
  local parts = {}
  parts[#parts + 1] = M.permissions_text(agent.permissions)
  parts[#parts + 1] = M.sandbox_text(agent.sandbox)
  return #parts > 0 and table.concat(parts, " · ") or nil
end

--- Whether an agent's permissions ask before some tool call.
function M.asks(permissions)
  if type(permissions) ~= "table" then
    return false
  end
  local tools = type(permissions.tools) == "table" and permissions.tools or {}
  return permissions.default == "ask" or vim.tbl_contains(vim.tbl_values(tools), "ask")
end

--- Seconds since the epoch of an RFC 3339 time (`2026-12-05T20:26:07.5Z`, `...+01:00`); nil if
--- it is not one.
function M.epoch(text)
  if type(text) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, s, rest = text:match("^(%d+)-(%d+)-(%d+)[T ](%d+):(%d+):(%d+)(.*)$")
  if not y then
    return nil
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil)
  local yy = mo <= 2 and y - 1 or y
  local era = math.floor(yy / 400)
  local yoe = yy - era * 400
  local doy = math.floor((153 * (mo + (mo > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  local offset = 0
  local sign, oh, om = rest:match("([+-])(%d%d):?(%d%d)$")
  if sign then
    offset = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "+" and 1 or -1)
  end
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s) - offset
end

--- `just now`, `5 min ago`, `3 h ago`, `yesterday`, `4 days ago`, then the date: how long ago an
--- RFC 3339 time was (`now`: seconds since the epoch, default the clock).
function M.relative_time(text, now)
  local at = M.epoch(text)
  if not at then
    return ""
  end
  local ago = (now or os.time()) - at
  if ago < 60 then
    return "just now"
  elseif ago < 3600 then
    return ("%d min ago"):format(math.floor(ago / 60))
  elseif ago < 86400 then
    return ("%d h ago"):format(math.floor(ago / 3600))
  elseif ago < 2 * 86400 then
    return "yesterday"
  elseif ago < 14 * 86400 then
    return ("%d days ago"):format(math.floor(ago / 86400))
  end
  return text:sub(1, 10)
end

--- One line of at most `max` characters (whitespace folded, `…` where it was cut).
function M.first_line(text, max)
  text = vim.trim((text or ""):gsub("%s+", " "))
  max = max or 60
  if vim.fn.strchars(text) > max then
    return vim.fn.strcharpart(text, 0, max - 1) .. "…"
  end
  return text
end

--- `path` relative to `root` when inside it, else as given (`~` for the home directory).
function M.relative(path, root)
  path = vim.fs.normalize(path)
  if root then
    root = vim.fs.normalize(root)
    local real_root = vim.uv.fs_realpath(root) or root
    for _, base in ipairs({ root, real_root }) do
      if vim.startswith(path, base .. "/") then
        return path:sub(#base + 2)
      end
    end
  end
  return vim.fn.fnamemodify(path, ":~")
end

--- `3 files`, `1 file`.
function M.plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

local counter = 0
--- A fresh idempotency key for `submitInput`.
function M.input_id()
  counter = counter + 1
  return ("nvim-%d-%x-%d"):format(vim.uv.os_getpid(), vim.uv.hrtime(), counter)
end

return M
