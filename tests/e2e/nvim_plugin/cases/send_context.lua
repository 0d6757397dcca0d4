-- Sending lines of a file as context (a range, as from a visual selection), and writing a message
-- in the compose buffer (`:Openvaala send` without text, or `i` in the conversation).
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "vsplit" })

vim.fn.mkdir("src/.git", "p") -- a root marker: src is the project of src/calc.py
vim.fn.writefile({ "def add(a, b):", "    return a + b", "", "print(add(1, 2))" }, "src/calc.py")
vim.cmd("edit src/calc.py")
local code = vim.api.nvim_get_current_buf()

-- no conversation yet: sending creates one (one agent: no picker)
model:enqueue({ { "text", "It adds." } })
vim.cmd("1,2Openvaala send What does this do?")
H.wait("a conversation", function()
  return #H.conversation_buffers() == 1
end)
local buf = H.conversation_buffers()[1]
H.wait_text("the answer", buf, H.contains("It adds."))
H.equal("the code buffer keeps the focus", vim.api.nvim_get_current_buf(), code)
local conv = require("openvaala.view").conversation_of(buf)
H.equal("the server runs for the file's project root", H.server().root, vim.fs.normalize(vim.fn.getcwd() .. "/src"))
H.equal("the agent works there", conv.record.executorSettings.directory, vim.uv.fs_realpath(vim.fn.getcwd() .. "/src"))
local messages = model:requests()[1].json.messages
H.equal("the selection reached the model as context, its path as the agent sees it (from the project root)", messages[#messages].content,
  "What does this do?\n\nFrom `calc.py`, lines 1-2:\n```python\ndef add(a, b):\n    return a + b\n```")

-- a range without text opens the compose buffer with the context; :w sends
vim.cmd("4Openvaala send")
local compose = vim.api.nvim_get_current_buf()
H.check("a compose buffer opened", vim.api.nvim_buf_get_name(compose):find("openvaala://compose/", 1, true), vim.api.nvim_buf_get_name(compose))
H.equal("it holds the context below two empty lines", vim.api.nvim_buf_get_lines(compose, 0, -1, false),
  { "", "", "From `calc.py`, line 4:", "```python", "print(add(1, 2))", "```" })
vim.api.nvim_buf_set_lines(compose, 0, 1, false, { "And this line?" })
model:enqueue({ { "text", "It prints 3." } })
vim.cmd("write")
H.wait_text("the second answer", buf, H.contains("It prints 3."))
H.wait("the compose buffer to close", function()
  return not vim.api.nvim_buf_is_valid(compose)
end)
messages = model:requests()[2].json.messages
H.equal("the written message was sent", messages[#messages].content, "And this line?\n\nFrom `calc.py`, line 4:\n```python\nprint(add(1, 2))\n```")

-- `i` in the conversation buffer opens the compose buffer for it; <C-s> sends
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
vim.api.nvim_feedkeys("i", "x", false)
compose = vim.api.nvim_get_current_buf()
H.check("i opens a compose buffer", vim.api.nvim_buf_get_name(compose):find("openvaala://compose/", 1, true), vim.api.nvim_buf_get_name(compose))
vim.api.nvim_buf_set_lines(compose, 0, -1, false, { "Thanks!" })
model:enqueue({ { "text", "You are welcome." } })
vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<C-s>", true, false, true), "x", false)
local text = H.wait_text("the third answer", buf, H.contains("You are welcome."))
H.check("the message is in the conversation", text:find("## You\nThanks!", 1, true), text)
