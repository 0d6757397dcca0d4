-- What a turn changed: its files in the quickfix list when it ends and with :Openvaala changes,
-- :Openvaala diff (the file before the turn beside the file, in diff mode), :Openvaala undo
-- refused for a file changed since (as the runtime words it), then forced, and :Openvaala redo.
-- Real files, real checkpoints (the runtime's shadow git), the agent's real write_file and edit.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "vsplit" })

local original = { "def add(a, b):", "    return a + b", "", "", "print(add(1, 2))" }
vim.fn.writefile(original, "calc.py")
local root = vim.fn.getcwd()
local buf, conv = H.new_conversation()
H.require_method("getTurnDiff")
H.require_method("revertTurn")
H.check("the server can checkpoint (git)", H.server().info.checkpoints and H.server().info.checkpoints.usable, vim.inspect(H.server().info.checkpoints))

local function json(t)
  return vim.json.encode(t)
end
model:enqueue({ { "tool_call", "call_1", "edit", { json({ path = "calc.py", old_string = "return a + b", new_string = "return a - b" }) } } })
model:enqueue({ { "tool_call", "call_2", "write_file", { json({ path = "NOTES.md", content = "subtraction now\n" }) } } })
model:enqueue({ { "text", "Changed it." } })
vim.cmd("Openvaala send make it subtract")
local text = H.wait_text("the turn", buf, H.contains("✓ turn completed"))
H.check("the edit's result names its file", text:find("    ✎ M calc.py +1 −1", 1, true), text)
H.check("the footer sums the turn's files", text:find("✎ 2 files changed +2 −1 · :Openvaala changes / diff / undo\n  A NOTES.md +1 −0\n  M calc.py +1 −1", 1, true), text)
H.equal("the agent changed the file", vim.fn.readfile("calc.py")[2], "    return a - b")

-- the quickfix list, set when the turn ended (not opened)
local function quickfix()
  local qf = vim.fn.getqflist({ title = 0, items = 0 })
  local items = vim.tbl_map(function(item)
    return { vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ":t"), item.lnum, item.text }
  end, qf.items)
  return qf.title, items
end
H.wait("the quickfix list", function()
  return quickfix():find("^openvaala: turn 1")
end)
local title, items = quickfix()
H.equal("its title", title, "openvaala: turn 1 of " .. (conv.title ~= "" and conv.title or conv.id) .. ": 2 files changed +2 −1")
H.equal("its items, at the first changed line", items, { { "NOTES.md", 1, "added +1 −0" }, { "calc.py", 2, "changed +1 −1" } })
H.equal("no quickfix window opened by itself", vim.fn.getqflist({ winid = 0 }).winid, 0)

-- :Openvaala changes: the same list, opened; replaced, not stacked
local lists = vim.fn.getqflist({ nr = "$" }).nr
vim.cmd("Openvaala changes")
H.wait("the quickfix window", function()
  return vim.fn.getqflist({ winid = 0 }).winid ~= 0
end)
H.equal(":Openvaala changes replaces its own list", vim.fn.getqflist({ nr = "$" }).nr, lists)
H.equal("the same items", select(2, quickfix()), items)
vim.cmd("cclose")

-- :Openvaala diff from the changed file's buffer: before (a scratch buffer) and the file
for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do -- the window beside the conversation
  if vim.api.nvim_win_get_buf(win) ~= buf then
    vim.api.nvim_set_current_win(win)
  end
end
vim.cmd("edit calc.py")
local tabs = #vim.api.nvim_list_tabpages()
vim.cmd("Openvaala diff")
H.wait("the diff tab", function()
  return #vim.api.nvim_list_tabpages() == tabs + 1
end)
local wins = vim.api.nvim_tabpage_list_wins(0)
H.equal("two windows", #wins, 2)
local left, right = vim.api.nvim_win_get_buf(wins[1]), vim.api.nvim_win_get_buf(wins[2])
H.equal("the left is the file before the turn", vim.api.nvim_buf_get_lines(left, 0, -1, false), original)
H.check("named for the turn", vim.api.nvim_buf_get_name(left):find("openvaala://turn/1/before/calc.py", 1, true), vim.api.nvim_buf_get_name(left))
H.equal("the right is the file itself", vim.api.nvim_buf_get_name(right), vim.uv.fs_realpath(root .. "/calc.py"))
H.equal("both in diff mode", { vim.wo[wins[1]].diff, vim.wo[wins[2]].diff }, { true, true })
H.equal("the before text is the filetype's", vim.bo[left].filetype, "python")
vim.cmd("tabclose")

-- :Openvaala diff 1 from elsewhere: a picker of the turn's files; an added file's before is empty
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
H.on_select(H.label("NOTES.md"))
vim.cmd("Openvaala diff 1")
H.wait("the second diff tab", function()
  return #vim.api.nvim_list_tabpages() == tabs + 1
end)
H.equal("the picker lists the turn's files", H.picker("turn 1 changed").labels, { "A NOTES.md +1 −0", "M calc.py +1 −1" })
wins = vim.api.nvim_tabpage_list_wins(0)
H.equal("an added file was empty before", vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[1]), 0, -1, false), { "" })
H.equal("and is there now", vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[2]), 0, -1, false), { "subtraction now" })
vim.cmd("tabclose")
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])

-- the user changes the line the agent changed: undo is refused, as the runtime says; kept
vim.fn.writefile({ "def add(a, b):", "    return a * b", "", "", "print(add(1, 2))" }, "calc.py")
H.on_select(H.label("Keep them"))
vim.cmd("Openvaala undo")
H.wait("the refusal", function()
  return H.notified("undoing turn 1 refused:", vim.log.levels.ERROR)
end)
local refusal = H.notified("undoing turn 1 refused:").message
H.check("in the runtime's words, naming the file", refusal:find("the revert would overwrite: " .. vim.uv.fs_realpath(root .. "/calc.py"), 1, true), refusal)
H.wait("the question", function()
  return H.picker("Overwrite them")
end)
H.equal("the choices", H.picker("Overwrite them").labels, { "undoing turn 1 anyway: overwrite those changes", "Keep them (do nothing)" })
text = H.wait_text("the refusal in the buffer", buf, H.contains("✗ undoing turn 1 refused"))
H.check("the buffer lists the file", text:find("  M calc.py +1 −1", 1, true), text)
vim.wait(200) -- the answer "keep" has been taken: nothing more happens
H.equal("the user's change is kept", vim.fn.readfile("calc.py")[2], "    return a * b")
H.equal("the agent's new file too", vim.fn.filereadable("NOTES.md"), 1)

-- forced: the files as before the turn
H.on_select(H.label("anyway"))
vim.cmd("Openvaala undo")
text = H.wait_text("the undo", buf, H.contains("↶ undid turn 1"))
H.check("it says what it restored", text:find("↶ undid turn 1: calc.py, NOTES.md restored · :Openvaala redo brings them back", 1, true)
  or text:find("↶ undid turn 1: NOTES.md, calc.py restored", 1, true), text)
H.equal("the file as before the turn", vim.fn.readfile("calc.py"), original)
H.equal("the new file gone", vim.fn.filereadable("NOTES.md"), 0)

-- redo: the files as they were before the undo (the change it overwrote included)
vim.cmd("Openvaala redo")
text = H.wait_text("the redo", buf, H.contains("↷ redid turn 1"))
H.equal("the file as before the undo", vim.fn.readfile("calc.py")[2], "    return a * b")
H.equal("the agent's new file is back", vim.fn.readfile("NOTES.md"), { "subtraction now" })
vim.cmd("Openvaala redo")
H.wait("nothing more to redo", function()
  return H.notified("nothing to redo")
end)

-- the line the turn changed was changed again: the diff cannot be taken out, so it is shown itself
tabs = #vim.api.nvim_list_tabpages()
H.on_select(H.label("calc.py"))
vim.cmd("Openvaala diff 1")
H.wait("the diff shown as a diff", function()
  return #vim.api.nvim_list_tabpages() == tabs + 1 and vim.bo.filetype == "diff"
end)
H.check("it says why", H.notified("turn 1's change of calc.py shown as a diff: the change at line 2 no longer matches the file", vim.log.levels.WARN), vim.inspect(H.results.notifications))
H.equal("the turn's hunk", vim.api.nvim_buf_get_lines(0, 0, -1, false), { "@@ -1,5 +1,5 @@", " def add(a, b):", "-    return a + b", "+    return a - b", " ", " ", " print(add(1, 2))", "" })
vim.cmd("tabclose")
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])

-- undo! overwrites without asking (the file the turn changed holds the user's change again)
vim.cmd("Openvaala undo!")
H.wait_text("the second undo", buf, function(t)
  return H.count(t, "↶ undid turn 1") >= 1 and vim.fn.filereadable("NOTES.md") == 0
end)
H.equal("before the turn again", vim.fn.readfile("calc.py"), original)

-- taking a diff out of a file that changed elsewhere since: each hunk found where it moved to
local changes = require("openvaala.changes")
local hunks = changes.parse(table.concat({
  "@@ -1,3 +1,3 @@",
  " a",
  "-b",
  "+B",
  " c",
  "@@ -8,3 +8,4 @@",
  " h",
  " i",
  "+new",
  " j",
  "",
}, "\n"))
local now = { "a", "B", "c", "inserted", "by", "the user", "d", "e", "f", "g", "h", "i", "new", "j" }
H.equal("hunks found after lines added above them", changes.reverse(now, hunks),
  { "a", "b", "c", "inserted", "by", "the user", "d", "e", "f", "g", "h", "i", "j" })
local gone, why = changes.reverse({ "a", "X", "c" }, hunks)
H.equal("a hunk whose lines changed again is not guessed", { gone, why }, { nil, "the change at line 2 no longer matches the file" })
H.equal("a cut diff is not used", { changes.parse("@@ -1 +1 @@\n-a\n+b\n[diff cut: 3 of 10 lines left out]\n") }, { nil, "its diff was cut at the size limit" })
H.equal("a deleted file's text is its diff's", changes.reverse({}, changes.parse("@@ -1,2 +0,0 @@\n-x\n-y\n")), { "x", "y" })
