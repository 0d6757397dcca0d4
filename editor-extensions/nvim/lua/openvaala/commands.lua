--- `:Openvaala {subcommand} [args]`, with completion.
local actions = require("openvaala.actions")
local util = require("openvaala.util")

local M = {}

---@class openvaala.Subcommand
---@field run fun(rest: string, opts: table)
---@field complete (string[]|fun(): string[])?
---@field help string

---@type table<string, openvaala.Subcommand>
M.subcommands = {
  new = {
    help = "new [agent]: a new conversation (picks the agent)",
    run = function(rest)
      actions.new(rest ~= "" and rest or nil)
    end,
    complete = function()
      return actions.agent_names
    end,
  },
  list = {
    help = "list [archived]: pick a conversation to open",
    run = function(rest)
      actions.list(rest == "archived")
    end,
    complete = { "archived" },
  },
  open = {
    help = "open [id]: open a conversation (or reconnect this one)",
    run = function(rest)
      actions.open(rest ~= "" and rest or nil)
    end,
  },
  send = {
    help = "[range]send [text]: send text, or write it in a buffer; a range adds those lines as context",
    run = function(rest, opts)
      local context
      if opts.range > 0 then
        context = actions.selection_context(vim.api.nvim_get_current_buf(), opts.line1, opts.line2)
      end
      actions.send(rest ~= "" and rest or nil, { context = context })
    end,
  },
  add = {
    help = "[range]add[!]: the buffer, or the lines of a range, go with the next message as context (! clears)",
    run = function(_, opts)
      if opts.bang then
        return actions.clear_context()
      end
      local buf = vim.api.nvim_get_current_buf()
      if opts.range > 0 then
        actions.add(buf, opts.line1, opts.line2)
      else
        actions.add(buf)
      end
    end,
  },
  changes = {
    help = "changes [turn]: the files a turn changed (the last that changed any), in the quickfix list",
    run = function(rest)
      actions.changes(rest)
    end,
  },
  diff = {
    help = "diff [turn]: a file the turn changed, before and after (vimdiff)",
    run = function(rest)
      actions.diff(rest)
    end,
  },
  undo = {
    help = "undo[!]: the files go back to before the last turn that changed them (! overwrites changes made since)",
    run = function(_, opts)
      actions.undo(opts.bang)
    end,
  },
  redo = {
    help = "redo[!]: undo the last undo",
    run = function(_, opts)
      actions.redo(opts.bang)
    end,
  },
  steer = {
    help = "steer [text]: deliver text into the running turn (none: pick a queued input)",
    run = function(rest)
      actions.steer(rest ~= "" and rest or nil)
    end,
  },
  interrupt = {
    help = "interrupt [text]: stop the running turn (then run text)",
    run = function(rest)
      actions.interrupt(rest ~= "" and rest or nil)
    end,
  },
  withdraw = {
    help = "withdraw: pick a queued input and withdraw it",
    run = function()
      actions.withdraw()
    end,
  },
  approve = {
    help = "approve[!] [once|always]: allow the tool call waiting for approval (! or always: for the rest of the conversation)",
    run = function(rest, opts)
      if rest ~= "" and rest ~= "once" and rest ~= "always" then
        return util.error("approve takes `once` or `always`")
      end
      actions.approve(opts.bang or rest == "always")
    end,
    complete = { "once", "always" },
  },
  deny = {
    help = "deny [message]: refuse the tool call waiting for approval (the model reads the message)",
    run = function(rest)
      actions.deny(rest ~= "" and rest or nil)
    end,
  },
  fork = {
    help = "fork: a new conversation from a turn of this one",
    run = function()
      actions.fork()
    end,
  },
  compact = {
    help = "compact: compact the context",
    run = function()
      actions.compact()
    end,
  },
  rename = {
    help = "rename [title]: set the title",
    run = function(rest)
      actions.rename(rest ~= "" and rest or nil)
    end,
  },
  archive = {
    help = "archive[!]: archive the conversation (! brings it back)",
    run = function(_, opts)
      actions.archive(opts.bang)
    end,
  },
  delete = {
    help = "delete[!]: delete the conversation (! without asking)",
    run = function(_, opts)
      actions.delete(opts.bang)
    end,
  },
  model = {
    help = "model: pick the model of this conversation",
    run = function()
      actions.model()
    end,
  },
  usage = {
    help = "usage: token usage by day and model",
    run = function()
      actions.usage()
    end,
  },
}

local function names()
  local list = vim.tbl_keys(M.subcommands)
  table.sort(list)
  return list
end

--- The `:Openvaala` command's callback.
function M.run(opts)
  local name, rest = opts.args:match("^%s*(%S+)%s*(.-)%s*$")
  name = name or "list"
  if name:sub(-1) == "!" then -- `:Openvaala delete!` as well as `:Openvaala! delete`
    name = name:sub(1, -2)
    opts = vim.tbl_extend("force", opts, { bang = true })
  end
  local sub = M.subcommands[name]
  if not sub then
    local help = vim.tbl_map(function(n)
      return "  " .. M.subcommands[n].help
    end, names())
    return util.error(("unknown subcommand %q; :Openvaala\n%s"):format(name, table.concat(help, "\n")))
  end
  sub.run(rest or "", opts)
end

--- Completion of `:Openvaala`.
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline:gsub("^%S*%s*", ""), "%s+", { trimempty = false })
  -- skip a range before the command name: `:'<,'>Openvaala send`
  local candidates
  if #words <= 1 then
    candidates = names()
  else
    local sub = M.subcommands[words[1]]
    local complete = sub and sub.complete
    candidates = type(complete) == "function" and complete() or complete or {}
    if #words > 2 then
      candidates = {}
    end
  end
  return vim.tbl_filter(function(candidate)
    return vim.startswith(candidate, arglead)
  end, candidates)
end

return M
