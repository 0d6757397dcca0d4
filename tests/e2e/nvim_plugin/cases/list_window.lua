-- `:Openvaala list`: each entry with its title or first message and how long ago it was active;
-- a conversation a failed send made is deleted, and empty ones made elsewhere are not listed.
-- `:Openvaala new` and opening from the list reuse the conversation window: no split each time.
local H = require("openvaala_test.harness")
local model = H.fake_model()
require("openvaala").setup({ open = "vsplit" })

-- no model yet: the send fails, and the conversation made for it goes
H.start_server()
vim.cmd("Openvaala send hello?")
H.wait("the refusal", function()
  return H.notified("no model is configured", vim.log.levels.ERROR)
end)
H.wait("the conversation made for it to go", function()
  return #H.request("listConversations").items == 0
end)
H.equal("no conversation buffer left", #H.conversation_buffers(), 0)
H.equal("no window left for it", #vim.api.nvim_list_wins(), 1)

H.request("setDefinitions", { models = { H.model_definition(model) }, agents = { { name = "default" } } })
local windows = #vim.api.nvim_list_wins()
local first_buf, first = H.new_conversation()
H.equal("the first conversation opens a window", #vim.api.nvim_list_wins(), windows + 1)
local conversation_win = vim.fn.win_findbuf(first_buf)[1]
model:enqueue({ { "text", "Forty-two." } })
vim.cmd("Openvaala send What is the answer to everything, in one long line that goes on and on?")
H.wait_text("the answer", first_buf, H.contains("✓ turn completed"))

local second_buf, second = H.new_conversation()
H.equal("a second conversation takes the same window", vim.fn.win_findbuf(second_buf), { conversation_win })
H.equal("no new window", #vim.api.nvim_list_wins(), windows + 1)
vim.cmd("Openvaala rename Second")
H.wait_text("the title", second_buf, H.contains("# Second"))
model:enqueue({ { "text", "Hi." } })
vim.cmd("Openvaala send hi there")
H.wait_text("the second answer", second_buf, H.contains("✓ turn completed"))

-- an empty conversation made by another editor is not listed
local empty = H.request("createConversation")

H.on_select(H.label("What is the answer"))
vim.cmd("Openvaala list")
H.wait("the first conversation shown again", function()
  return vim.fn.win_findbuf(first_buf)[1] ~= nil
end)
local picker = H.picker("conversations")
H.equal("the prompt says how many empty ones are not shown", picker.prompt, "openvaala: conversations (1 empty not shown)")
local labels = vim.tbl_map(function(label)
  return (label:gsub(" · just now$", " · <when>"):gsub(" · %d+ min ago$", " · <when>"))
end, picker.labels)
H.equal("newest first: the title, the first message (cut), when", labels, {
  "  Second · “hi there” · <when>",
  "  A scripted title · “What is the answer to everything, in one long line that goe…” · <when>", -- titled by the model
})
H.check("the empty one is not among them", not vim.tbl_contains(picker.labels, empty.id))
H.equal("opened in the same window", vim.fn.win_findbuf(first_buf), { conversation_win })
H.equal("still no new window", #vim.api.nvim_list_wins(), windows + 1)
H.equal("both still live", { first.status, second.status }, { "ready", "ready" })

-- an untitled conversation is named by its first message
H.equal("an untitled entry", require("openvaala.actions").list_label({ conversation = { id = "c", title = "" }, running = true }, { items = 2, first = "fix\nthe parser" }, false), "● “fix the parser”")

-- relative times, at a given now
local util = require("openvaala.util")
local now = util.epoch("2026-12-05T12:00:00Z")
H.equal("relative times", {
  util.relative_time("2026-12-05T11:59:30.5Z", now),
  util.relative_time("2026-12-05T11:55:00+00:00", now),
  util.relative_time("2026-12-05T09:00:00Z", now),
  util.relative_time("2026-12-04T08:00:00Z", now),
  util.relative_time("2026-12-01T12:00:00Z", now),
  util.relative_time("2026-10-01T12:00:00Z", now),
  util.relative_time("2026-12-05T13:00:00+02:00", now),
}, { "just now", "5 min ago", "3 h ago", "yesterday", "4 days ago", "2026-10-01", "1 h ago" })
