--- `:checkhealth openvaala`: the server (found, version, protocol), a model, the sandbox (as the
--- server reports it in its capabilities), the agents' permissions and sandbox.
local client = require("openvaala.client")
local config = require("openvaala.config")
local util = require("openvaala.util")

local M = {}

local TIMEOUT_MS = 15000

--- Methods whose absence turns off a feature.
M.OPTIONAL = {
  ["openvaala/answerApproval"] = "approving tool calls (:Openvaala approve / deny)",
  ["openvaala/forkConversation"] = ":Openvaala fork",
  ["openvaala/compactContext"] = ":Openvaala compact",
  ["openvaala/query"] = ":Openvaala usage",
  ["openvaala/getTurnDiff"] = ":Openvaala changes / diff",
  ["openvaala/revertTurn"] = ":Openvaala undo / redo",
}

--- Waits (checkhealth is synchronous) for the answer of a request; returns result, err.
local function call(server, method, params)
  local done, result, err = false, nil, nil
  server:request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(TIMEOUT_MS, function()
    return done
  end, 20) then
    return nil, { message = ("no answer to %s within %d s"):format(method, TIMEOUT_MS / 1000) }
  end
  return result, err
end

local function check_server()
  local health = vim.health
  local cmd = config.options.cmd
  local path = cmd[1] and vim.fn.exepath(cmd[1]) or ""
  if path == "" then
    health.error(("%s not found"):format(cmd[1] or "(no cmd)"), {
      util.missing_server(cmd),
      "Neovim's PATH: " .. (vim.env.PATH or ""),
    })
    return nil
  end
  health.ok(("%s found: %s"):format(cmd[1], path))
  local server, err = client.get()
  if not server then
    health.error(err or "could not start the server", { "Run `" .. path .. "` in a terminal to see why, or `openvaala doctor`" })
    return nil
  end
  local ready = false
  server:when_ready(function(ok)
    ready = ok and "ok" or "dead"
  end)
  vim.wait(TIMEOUT_MS, function()
    return ready ~= false
  end, 20)
  if ready ~= "ok" then
    health.error("openvaala-lsp did not answer `initialize`", {
      "Run `openvaala doctor` in a terminal",
      "See :LspLog, and the runtime host's log (host.log in openvaala's state directory)",
    })
    return nil
  end
  local info = server.info
  if not info.protocolVersion then
    health.error("the server is not openvaala-lsp (no capabilities.experimental.openvaala)")
    return nil
  end
  health.ok(("openvaala-lsp %s, protocol %s (root %s)"):format(info.serverVersion or "?", info.protocolVersion, server.root))
  if info.protocolVersion ~= client.PROTOCOL_VERSION then
    health.warn(
      ("this plugin speaks protocol %s, the server %s"):format(client.PROTOCOL_VERSION, info.protocolVersion),
      { "Update the plugin or openvaala so that both speak the same protocol" }
    )
  end
  local methods = {}
  for method, feature in pairs(M.OPTIONAL) do
    if not server:supports(method) then
      table.insert(methods, ("%s (%s)"):format(feature, method))
    end
  end
  table.sort(methods)
  if #methods > 0 then
    health.info("not supported by this openvaala-lsp: " .. table.concat(methods, ", "))
  end
  return server
end

local function check_models(server)
  local health = vim.health
  local listed, err = call(server, "listModels")
  if err then
    health.error("listModels failed: " .. err.message, { "Run `openvaala doctor` in a terminal" })
    return
  end
  local models = listed.models or {}
  if #models == 0 then
    health.error("no model configured", {
      "Run `openvaala setup` in a terminal (or `openvaala` for a guided setup)",
      "Or add a [[models]] entry to openvaala's config.toml",
    })
    return
  end
  local names = vim.tbl_map(function(m)
    return m.ref.provider .. "/" .. m.ref.name
  end, models)
  local default = listed.agentDefaultModel
  health.ok(
    ("model configured: %s%s"):format(
      table.concat(names, ", "),
      default and (" (default " .. default.provider .. "/" .. default.name .. ")") or ""
    )
  )
  for _, model in ipairs(models) do
    local env = config.options.cmd_env or {}
    if model.apiKeyEnv and (env[model.apiKeyEnv] or vim.env[model.apiKeyEnv] or "") == "" then
      health.warn(
        ("%s/%s reads its key from $%s, which is not set in Neovim's environment"):format(model.ref.provider, model.ref.name, model.apiKeyEnv),
        { "Export " .. model.apiKeyEnv .. " before starting Neovim (the server gets Neovim's environment)" }
      )
    end
  end
end

--- The agents with their permissions and sandbox as defined (`listAgents`; absent: the defaults).
local function check_agents(server)
  local health = vim.health
  local listed, err = call(server, "listAgents")
  if err then
    health.error("listAgents failed: " .. err.message, { "Run `openvaala doctor` in a terminal" })
    return
  end
  for _, agent in ipairs(listed.agents or {}) do
    local off = type(agent.sandbox) == "table" and agent.sandbox.mode == "off"
    local permissions = util.permissions_text(agent.permissions)
      or (off and "the defaults (every call runs)" or "the defaults (the shell runs in the sandbox; leaving it asks)")
    local sandbox = util.sandbox_text(agent.sandbox) or "sandbox workspace-write, no network (the default)"
    health.info(("agent %s: permissions %s; %s"):format(agent.name, permissions, sandbox))
    if off then
      health.warn(("agent %s runs shell commands without a sandbox (sandbox.mode = \"off\")"):format(agent.name))
    end
    if util.asks(agent.permissions) and not config.options.approvals then
      health.warn(
        ("agent %s asks before some tool calls, and this Neovim does not answer approvals"):format(agent.name),
        { "Those calls are refused unless another editor that answers watches the conversation" }
      )
    end
  end
end

--- Whether shell commands can run in the sandbox: `capabilities.experimental.openvaala.sandbox =
--- {usable, reason}` of the initialize result.
local function check_sandbox(server)
  local health = vim.health
  local sandbox = server.info.sandbox
  if type(sandbox) ~= "table" or sandbox.usable == nil then
    health.warn("the server does not say whether its sandbox can start", {
      "Update openvaala; `openvaala doctor` shows the sandbox",
    })
    return
  end
  local reason = type(sandbox.reason) == "string" and sandbox.reason ~= "" and sandbox.reason or nil
  if sandbox.usable then
    health.ok("sandbox usable" .. (reason and (": " .. reason) or ""))
  else
    health.warn("sandbox not usable" .. (reason and (": " .. reason) or ""), {
      "Shell commands then ask for approval before they run without a sandbox (:Openvaala approve / deny)",
      "See `openvaala doctor`; the sandbox needs bubblewrap (shipped with openvaala) and user namespaces",
    })
  end
end

function M.check()
  local health = vim.health
  health.start("openvaala")
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.11 or newer is needed, this is " .. tostring(vim.version()))
    return
  end
  local server = check_server()
  if not server then
    return
  end
  check_models(server)
  check_sandbox(server)
  check_agents(server)
  if config.options.approvals then
    health.ok(("approvals: this Neovim answers them (as %q): :Openvaala approve / deny"):format(config.options.client_name))
  else
    health.warn("approvals = false: tool calls that ask for approval are refused unless another editor answers", {
      "Remove `approvals = false` from require(\"openvaala\").setup()",
    })
  end
end

return M
