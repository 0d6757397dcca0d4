-- Inputs while a turn runs: a queued one shows as queued and can be withdrawn (picked from the
-- pending inputs); a steering one reaches the running turn's next model call.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

model:enqueue({ { "text", "working on it" }, { "pause", 2.0 }, { "tool_call", "c1", "glob", { '{"pattern": "*"}' } } })
model:enqueue({ { "text", "steered answer" } })
vim.cmd("Openvaala send first")
H.wait_text("the first deltas", buf, H.contains("working on it"))

vim.cmd("Openvaala send second, queued")
local text = H.wait_text("the queued input", buf, H.contains("## You (queued)\nsecond, queued"))
H.check("the statusline counts it", require("openvaala").statusline():find("1 queued", 1, true), require("openvaala").statusline())

H.on_select(H.label("second, queued"))
vim.cmd("Openvaala withdraw")
text = H.wait_text("the withdrawn input to go", buf, function(t)
  return not t:find("second, queued", 1, true)
end)
local picker = H.picker("withdraw")
H.equal("the withdraw picker lists the pending input", picker.labels, { "queue: second, queued" })
H.equal("nothing is pending", #conv.pending, 0)

vim.cmd("Openvaala steer also do this")
text = H.wait_text("the completed turn", buf, H.contains("✓ turn completed"))
H.equal("one turn ran", H.count(text, "✓ turn completed"), 1)
H.check("the steering input is part of the turn", text:find("## You\nalso do this", 1, true), text)
H.check("the steered answer came", text:find("steered answer", 1, true), text)
H.check("the withdrawn input never ran", not text:find("second, queued", 1, true), text)
local requests = model:requests()
H.equal("two model calls", #requests, 2)
local last = requests[2].json.messages[#requests[2].json.messages]
local content = type(last.content) == "string" and last.content or last.content[1].text
H.equal("the steering input reached the second model call", content, "also do this")

-- nothing running: withdraw and steer say so
local before = #H.results.notifications
vim.cmd("Openvaala withdraw")
H.wait("the answer", function()
  return #H.results.notifications > before
end)
H.equal("withdraw with nothing pending", H.results.notifications[before + 1].message, "openvaala: no input is waiting")
