-- Plain Neovim (its init.lua: README's snippet, no plugin of ours) asks openvaala
-- as a user does: opens app.py, changes it without saving, and asks three times, through keys:
-- the README's key on a selection (code_action with filter and apply), Neovim's own code action
-- key `gra` and its menu (vim.ui.select, as a picker plugin answers it), and the README's prompt key
-- (client:exec_cmd). What Neovim shows (LspProgress events, :messages, vim.notify) goes to the JSON
-- file OPENVAALA_TEST_RESULT for tests/e2e/test_plain_neovim.py.
local results = { progress = {}, notifications = {}, menus = {}, messages = {} }

local function save()
  local file = assert(io.open(assert(os.getenv("OPENVAALA_TEST_RESULT")), "w"))
  file:write(vim.json.encode(results))
  file:close()
end

local function wait(what, condition)
  if not vim.wait(60000, condition, 20) then
    error("timed out waiting for " .. what)
  end
end

local function keys(typed)
  vim.api.nvim_feedkeys(vim.keycode(typed), "mtx", false)
end

vim.notify = function(message, level)
  table.insert(results.notifications, { message = tostring(message), level = level })
end
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(opts.format_item or tostring, items)
  table.insert(results.menus, { prompt = opts.prompt, labels = labels })
  local chosen = vim.iter(ipairs(labels)):find(function(_, label)
    return label:find("Explain with openvaala", 1, true) ~= nil
  end)
  vim.schedule(function()
    on_choice(items[chosen], chosen)
  end)
end
vim.ui.input = function(_, on_confirm)
  vim.schedule(function()
    on_confirm("make the tests pass")
  end)
end
vim.api.nvim_create_autocmd("LspProgress", {
  callback = function(event)
    local params = event.data.params
    local value = params.value
    table.insert(results.progress, {
      token = params.token,
      kind = value.kind,
      title = value.title,
      message = value.message,
    })
  end,
})

-- The messages Neovim shows for window/showMessage, from its message history.
local function shown()
  return vim.tbl_filter(function(line)
    return line:find("openvaala: ", 1, true) ~= nil
  end, vim.split(vim.api.nvim_exec2("messages", { output = true }).output, "\n"))
end

local function turn(ask)
  local before = #shown()
  ask()
  wait("the answer's message", function()
    return #shown() > before
  end)
end

local ok, failure = xpcall(function()
  vim.cmd.edit("app.py")
  local client
  wait("the openvaala client", function()
    client = vim.lsp.get_clients({ name = "openvaala", bufnr = 0 })[1]
    return client and client.initialized
  end)
  results.client = { name = client.name, root_dir = client.root_dir, offset_encoding = client.offset_encoding }
  keys("2GA  # checked by hand<Esc>")
  results.buffer = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  results.modified = vim.bo.modified

  turn(function()
    keys("2GV<leader>oa<Esc>") -- the README's key on the selected line
  end)
  turn(function()
    keys("1Ggra") -- Neovim's own code action key, its menu
  end)
  turn(function()
    keys("<leader>op") -- the README's prompt key
  end)
  results.messages = shown()
  results.modified_after = vim.bo.modified
end, debug.traceback)
if not ok then
  results.error = failure
end
save()
vim.cmd("qall!")
