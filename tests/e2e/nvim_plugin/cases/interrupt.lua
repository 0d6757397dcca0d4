-- Interrupting a streaming turn: the partial answer stays, marked interrupted; the turn ends
-- interrupted; a second interrupt says no turn runs.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

model:enqueue({ { "text", "partial ", "answer" }, { "pause", 30 }, { "text", " never" } })
vim.cmd("Openvaala send go")
H.wait_text("the partial answer", buf, H.contains("partial answer"))
H.check("running", require("openvaala").statusline():find("running", 1, true), require("openvaala").statusline())
vim.cmd("Openvaala interrupt")
local text = H.wait_text("the interrupted turn", buf, H.contains("⏹ turn interrupted"))
H.check("the partial answer is kept, marked interrupted", text:find("## Assistant (interrupted)\npartial answer", 1, true), text)
H.check("the rest never came", not text:find("never", 1, true), text)
H.wait("idle", function()
  return conv.state == "idle"
end)
H.check("the statusline says idle", require("openvaala").statusline():find("^openvaala idle"), require("openvaala").statusline())

local before = #H.results.notifications
vim.cmd("Openvaala interrupt")
H.wait("the answer to the second interrupt", function()
  return #H.results.notifications > before
end)
H.equal("a second interrupt says no turn runs", H.results.notifications[before + 1].message, "openvaala: no turn is running")

-- <C-c> in the conversation buffer interrupts too
model:enqueue({ { "text", "second" }, { "pause", 30 } })
vim.cmd("Openvaala send again")
H.wait_text("the second answer", buf, H.contains("second"))
vim.api.nvim_set_current_buf(buf)
vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<C-c>", true, false, true), "x", false)
text = H.wait_text("the second interrupted turn", buf, function(t)
  return H.count(t, "⏹ turn interrupted") == 2
end)
H.check("both turns are shown", text:find("## Assistant (interrupted)\nsecond", 1, true), text)
