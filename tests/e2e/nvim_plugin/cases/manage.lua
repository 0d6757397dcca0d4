-- Managing conversations: new with an agent picker, rename (argument and prompt), list with
-- titles and a running marker, open, model picker, archive, delete with confirmation.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model, table.concat({
  "[[models]]",
  'ref = "fake/other-model"',
  'api = "openai-chat"',
  ('baseUrl = "%s"'):format(model.info.baseUrl),
  'apiKeyEnv = "FAKE_API_KEY"',
  "contextWindow = 16000",
  'displayName = "The other one"',
  "",
  "[[agents]]",
  'name = "reviewer"',
  'description = "reviews code"',
  "",
  "[[agents]]",
  'name = "writer"',
  'description = "writes code"',
}, "\n"))
require("openvaala").setup({ open = "current" })

-- new: the agent picker (answered at once, as some pickers do)
H.on_select(H.label("writer"), true)
local buf, conv = H.new_conversation()
local agents = H.picker("new conversation")
H.check("the agent picker lists the agents with descriptions", vim.tbl_contains(agents.labels, "reviewer — reviews code") and vim.tbl_contains(agents.labels, "writer — writes code"), vim.inspect(agents.labels))
H.wait_text("the header", buf, H.contains("agent writer"))
local subcommands = vim.fn.getcompletion("Openvaala ", "cmdline")
table.sort(subcommands)
H.equal("completion offers the subcommands", subcommands, { "add", "approve", "archive", "changes", "compact", "delete", "deny", "diff", "fork", "interrupt", "list", "model", "new", "open", "redo", "rename", "send", "steer", "undo", "usage", "withdraw" })
H.equal("completion of a subcommand", vim.fn.getcompletion("Openvaala ren", "cmdline"), { "rename" })
local decisions = vim.fn.getcompletion("Openvaala approve ", "cmdline")
table.sort(decisions)
H.equal("completion of approve", decisions, { "always", "once" })
H.check("completion offers the agents", vim.tbl_contains(vim.fn.getcompletion("Openvaala new w", "cmdline"), "writer"), vim.inspect(vim.fn.getcompletion("Openvaala new w", "cmdline")))

-- rename with an argument, then through vim.ui.input
vim.cmd("Openvaala rename First title")
H.wait_text("the new title", buf, H.contains("# First title"))
H.on_input("Second title")
vim.cmd("Openvaala rename")
H.wait_text("the title from the prompt", buf, H.contains("# Second title"))

-- the model picker: setSessionModel
H.on_select(H.label("The other one"))
vim.cmd("Openvaala model")
H.wait_text("the new model in the header", buf, H.contains("model fake/other-model"))
local models = H.picker("model")
H.check("the model picker marks the current one", vim.tbl_contains(models.labels, "fake/fake-model  (current)"), vim.inspect(models.labels))
model:enqueue({ { "text", "from the other model" }, { "pause", 1.5 } })
vim.cmd("Openvaala send which model?")
H.wait_text("the answer", buf, H.contains("from the other model"))
H.equal("the request used the new model", model:requests()[1].json.model, "other-model")

-- list while it runs: title and running marker; a second conversation to pick from
local second_buf = H.new_conversation("reviewer")
vim.cmd("Openvaala rename Idle one")
H.wait_text("the second title", second_buf, H.contains("# Idle one"))
H.on_select(H.label("Second title"))
vim.cmd("Openvaala list")
H.wait("the first conversation shown again", function()
  return vim.api.nvim_get_current_buf() == buf
end)
-- labels: title, first message, how long ago (replaced by <when> here: no test of the clock)
local function untimed(labels)
  return vim.tbl_map(function(label)
    return (label:gsub(" · just now", " · <when>"):gsub(" · %d+ min ago", " · <when>"))
  end, labels)
end
local listed = untimed(H.picker("conversations").labels)
H.check("the running conversation is marked, with its first message", vim.tbl_contains(listed, "● Second title · “which model?” · <when>  [writer]"), vim.inspect(listed))
H.check("the idle one is not (empty, but shown here)", vim.tbl_contains(listed, "  Idle one · <when>  [reviewer]"), vim.inspect(listed))
H.wait_text("the turn to end", buf, H.contains("✓ turn completed"))

-- open by id
vim.cmd("Openvaala open " .. require("openvaala.view").conversation_of(second_buf).id)
H.wait("the second conversation shown", function()
  return vim.api.nvim_get_current_buf() == second_buf
end)

-- archive, list archived, unarchive
vim.api.nvim_set_current_buf(buf)
vim.cmd("Openvaala archive")
H.wait_text("archived in the header", buf, H.contains("· archived"))
H.on_select(function()
  return nil -- look, then cancel
end)
vim.cmd("Openvaala list archived")
H.wait("the archived list", function()
  return H.picker("archived conversations")
end)
H.equal("the archived list (one agent: not named)", untimed(H.picker("archived conversations").labels), { "  Second title · “which model?” · <when>" })
vim.cmd("Openvaala archive!")
H.wait_text("unarchived", buf, function(t)
  return not t:find("· archived", 1, true)
end)

-- delete: kept when not confirmed, gone when confirmed
local id = conv.id
H.on_select(H.label("Keep"))
vim.cmd("Openvaala delete")
H.wait("the confirmation", function()
  return H.picker("Delete")
end)
vim.wait(200)
H.check("kept when not confirmed", vim.api.nvim_buf_is_valid(buf))
H.on_select(H.label("Delete"))
vim.cmd("Openvaala delete")
H.wait("the buffer to close", function()
  return not vim.api.nvim_buf_is_valid(buf)
end)
local server = H.server()
local done, result
server:request("listConversations", nil, function(_, r)
  done, result = true, r
end)
H.wait("the list", function()
  return done
end)
local ids = vim.tbl_map(function(e)
  return e.conversation.id
end, result.items)
H.check("the deleted conversation is gone", not vim.tbl_contains(ids, id), vim.inspect(ids))
H.equal("one conversation is left", #ids, 1)
