-- Context from the editor: `:[range]Openvaala add` (lines of a file, a whole file) goes with the
-- next message, as the model reads it: path, line range, the text; `@file` completes workspace
-- files in the compose buffer (its 'omnifunc'), and a mentioned file's text goes with the message.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "vsplit" })

vim.fn.mkdir("src/util", "p")
vim.fn.writefile({ "def add(a, b):", "    return a + b", "", "print(add(1, 2))" }, "src/calc.py")
vim.fn.writefile({ "def shout(s):", "    return s.upper()" }, "src/util/strings.py")
vim.fn.writefile({ "# Calc" }, "README.md")
local buf = H.new_conversation()
local function last_message(n)
  local requests = model:requests()
  H.equal("the model was called", #requests, n)
  local messages = requests[n].json.messages
  return messages[#messages].content
end

-- lines 2-3 of a file, then a whole file (from its window beside the conversation)
vim.cmd("wincmd p")
vim.cmd("edit src/calc.py")
vim.cmd("2,3Openvaala add")
H.check("it says what was added", H.notified("added src/calc.py:2-3 to the next message"), vim.inspect(H.results.notifications))
vim.cmd("edit README.md")
vim.cmd("Openvaala add")
H.check("a whole file", H.notified("added README.md to the next message (src/calc.py:2-3, README.md"), vim.inspect(H.results.notifications))
H.check("the statusline counts them", require("openvaala").statusline():find("· 2 attached", 1, true), require("openvaala").statusline())

model:enqueue({ { "text", "Seen." } })
vim.cmd("Openvaala send Explain these")
H.wait_text("the answer", buf, H.contains("Seen."))
H.equal("the model read the text, then each piece with its path and lines", last_message(1), table.concat({
  "Explain these",
  "From `src/calc.py`, lines 2-3:\n```python\n    return a + b\n\n```",
  "From `README.md`, the whole file, 1 line:\n```markdown\n# Calc\n```",
}, "\n\n"))
H.check("sent once: nothing attached any more", not require("openvaala").statusline():find("attached", 1, true), require("openvaala").statusline())

-- add! takes them back; a conversation buffer cannot be added
vim.cmd("edit src/calc.py")
vim.cmd("1Openvaala add")
vim.cmd("Openvaala add!")
H.check("add! says what it removed", H.notified("removed 1 attachment from the next message"))
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
vim.cmd("Openvaala add")
H.check("a conversation buffer is not a file", H.notified("add needs a file's buffer", vim.log.levels.ERROR))

-- @ completion in the compose buffer: workspace files, by path or by name
vim.cmd("Openvaala send")
local compose = vim.api.nvim_get_current_buf()
H.check("a compose buffer", vim.api.nvim_buf_get_name(compose):find("openvaala://compose/", 1, true))
H.equal("its omnifunc completes files", vim.bo[compose].omnifunc, "v:lua.require'openvaala.context'.omnifunc")
vim.api.nvim_buf_set_lines(compose, 0, -1, false, { "Use @stri" })
vim.api.nvim_win_set_cursor(0, { 1, 9 })
local omni = require("openvaala.context").omnifunc
H.equal("the completion starts after the @", omni(1, ""), 5)
local function words(items)
  return vim.tbl_map(function(item)
    return item.word
  end, items)
end
H.equal("files whose name starts with it", words(omni(0, "stri")), { "src/util/strings.py" })
H.equal("files whose path starts with it, first", words(omni(0, "src/")), { "src/calc.py", "src/util/strings.py" })
vim.api.nvim_buf_set_lines(compose, 0, -1, false, { "mail me@home" })
vim.api.nvim_win_set_cursor(0, { 1, 12 })
H.equal("not inside a word (an address)", omni(1, ""), -3)

-- typed, as a user does: <C-x><C-o> in insert mode takes the first match
vim.api.nvim_buf_set_lines(compose, 0, -1, false, { "" })
vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("ggcc" .. "What does @calc<C-x><C-o><C-y> do?<Esc>", true, false, true), "xt", false)
H.equal("the completed mention", vim.api.nvim_buf_get_lines(compose, 0, 1, false)[1], "What does @src/calc.py do?")

-- sent: the mentioned file's text goes with it
model:enqueue({ { "text", "It adds." } })
vim.cmd("write")
H.wait_text("the second answer", buf, H.contains("It adds."))
H.equal("the mentioned file reached the model", last_message(2), table.concat({
  "What does @src/calc.py do?",
  "From `src/calc.py`, the whole file, 4 lines:\n```python\ndef add(a, b):\n    return a + b\n\nprint(add(1, 2))\n```",
}, "\n\n"))
